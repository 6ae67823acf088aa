// Bug: all_reduce(dst=R) where dst=I was needed.
//
// The row-parallel output is summed over tp and then feeds duplicated work
// (the residual and the loss, identical on every tp rank). With dst=R the
// backward of the all-reduce all-reduces the gradient again: every tp rank
// already holds the whole gradient, so it is multiplied by tp and W1, W2 and
// the LayerNorm get tp times their true gradient. The types catch it where R
// meets the invariant residual x: I cannot mix with R. The fix: dst=I.
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
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b);
  auto h_r = spmd::convert(h, tp, I, R);
  auto a = at::gelu(at::matmul(h_r, w1.t()));
  auto y_partial = spmd::reinterpret(at::matmul(a, w2.t()), tp, V, P);
  auto z = spmd::all_reduce(y_partial, tp, P, R);  // BUG: should be dst=I
  return x + z;                                    // I + R
}

}  // namespace tp_example
