// Megatron's tensor-parallel mappings (tensor_parallel/mappings.py), with
// the size-1 shortcuts of the C++ port.
#include "engine3.h"

namespace mcore {

SPMD_TYPE(tp = R)
Tensor copy_to_tensor_model_parallel_region(SPMD_TYPE(tp = I) const Tensor& input,
                                            const ParallelState& ps) {
  if (ps.tp_world_size() == 1) {
    return input;
  }
  return spmd::convert(input, tp, I, R);
}

SPMD_TYPE(tp = I)
Tensor reduce_from_tensor_model_parallel_region(
    SPMD_TYPE(tp = P) const Tensor& input, const ParallelState& ps) {
  if (ps.tp_world_size() == 1) {
    return input;
  }
  return spmd::all_reduce(input, tp, P, I);
}

SPMD_TYPE(tp = R, spmd::rank(3))
Tensor gather_from_sequence_parallel_region(
    SPMD_TYPE(tp = S(0), spmd::rank(3)) const Tensor& input,
    const ParallelState& ps) {
  if (ps.tp_world_size() == 1) {
    return input;
  }
  return spmd::all_gather(input, tp, S(0), R);
}

SPMD_TYPE(tp = S(0), spmd::rank(3))
Tensor reduce_scatter_to_sequence_parallel_region(
    SPMD_TYPE(tp = P, spmd::rank(3)) const Tensor& input,
    const ParallelState& ps) {
  const int64_t world_size = ps.tp_world_size();
  if (world_size == 1) {
    return input;
  }
  return spmd::reduce_scatter(input, tp, P, S(0));
}

SPMD_TYPE(tp = S(0), spmd::rank(3))
Tensor scatter_to_sequence_parallel_region(
    SPMD_TYPE(tp = I, spmd::rank(3)) const Tensor& input,
    const ParallelState& ps) {
  if (ps.tp_world_size() == 1) {
    return input;
  }
  return spmd::convert(input, tp, I, S(0));
}

}  // namespace mcore
