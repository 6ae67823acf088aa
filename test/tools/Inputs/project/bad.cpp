// Two classic tensor-parallel bugs: spmd-check reports both.
#include "prelude.h"

// all_reduce of a replicated tensor: every rank would add n copies.
Tensor all_reduce_replicated(SPMD_TYPE(tp = R) const Tensor& x) {
  return spmd::all_reduce(x, tp, P, R);
}

// The invariant input used where a replicated one is needed.
SPMD_TYPE(tp = V)
Tensor missing_copy_to_tp(SPMD_TYPE(tp = I) const Tensor& x,
                          SPMD_TYPE(tp = V) const Tensor& w1) {
  return torch::matmul(x, w1);
}
