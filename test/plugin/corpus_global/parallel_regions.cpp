// parallel_regions.cpp - the engine's wrappers around the tp/dp collectives.
#include "engine.h"

namespace engine {

SPMD_TYPE(dp = V, tp = R)
Tensor copy_to_tp_region(SPMD_TYPE(dp = V, tp = I) const Tensor& x) {
  return spmd::convert(x, tp, I, R);
}

SPMD_TYPE(dp = V, tp = I)
Tensor reduce_from_tp_region(SPMD_TYPE(dp = V, tp = P) const Tensor& x,
                             const ParallelArgs& args) {
  // Bypass for a single rank: nothing to sum.
  if (args.tp_size() == 1) {
    return x;
  }
  return spmd::all_reduce(x, tp, P, I);
}

SPMD_TYPE(dp = V, tp = I)
Tensor gather_from_tp_region(SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(3)) const Tensor& x,
                             const ParallelArgs& args) {
  if (args.tp_size() == 1) return x;
  return spmd::all_gather(x, tp, S(-1), I);
}

SPMD_TYPE(dp = R, tp = V)
Tensor all_reduce_dp_gradient(SPMD_TYPE(dp = P, tp = V) const Tensor& grad) {
  return spmd::all_reduce(grad, dp, P, R);
}

}  // namespace engine
