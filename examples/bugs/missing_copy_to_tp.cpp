// Bug: the copy-to-tensor-parallel region is missing.
//
// Megatron's column-parallel linear starts with f = copy_to_tensor_model_
// parallel_region: identity forward, all-reduce of the gradient backward.
// Without it the forward is identical, but each tp rank's gradient of h holds
// only its own W1 shard's contribution, so the LayerNorm gradients (and
// everything upstream) are wrong. The types say so at compile time: h is I on
// tp (duplicated) and w1 is V (split); a matmul cannot mix I with V. The fix
// is one call, `spmd::convert(h, tp, I, R)` (see tensor_parallel.cpp).
#include <ATen/ATen.h>

#include "model.h"

namespace tp_example {

using namespace spmd::types;

TpLayout tp_layout() { return TpLayout{/*w1_dim=*/0, /*w2_dim=*/1}; }

SPMD_TYPE(dp = V, tp = I)
at::Tensor mlp_block(SPMD_TYPE(dp = V, tp = I) const at::Tensor& x,
                     SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_w,
                     SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_b,
                     SPMD_TYPE(dp = R, tp = S(0)) const at::Tensor& w1,
                     SPMD_TYPE(dp = R, tp = S(1)) const at::Tensor& w2) {
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b);  // {dp: V, tp: I}
  auto a = at::gelu(at::matmul(h, w1.t()));              // BUG: h is I, w1 is V
  auto y_partial = spmd::reinterpret(at::matmul(a, w2.t()), tp, V, P);
  auto z = spmd::all_reduce(y_partial, tp, P, I);
  return x + z;
}

}  // namespace tp_example
