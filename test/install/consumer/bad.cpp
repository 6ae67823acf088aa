// A classic tensor-parallel bug: all_reduce of a replicated tensor (every
// rank would add n copies). The check must reject it.
#include <spmd/collectives.h>
#include <spmd/type_annotations.h>
#include <torch/torch.h>

using namespace spmd::types;
using torch::Tensor;
SPMD_AXIS(tp);

Tensor all_reduce_replicated(SPMD_TYPE(tp = R) const Tensor& x) {
  return spmd::all_reduce(x, tp, P, R);
}
