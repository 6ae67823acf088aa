// Bug: a nonlinear op applied before the pending sum.
//
// This variant splits the first linear by its input features (row-parallel:
// W1 is S(1) on tp), so each rank's product is one term of the
// pre-activation, a pending sum (P). It must be reduced before GeLU: the sum
// of gelu(u_r) is not gelu of the sum. Here GeLU runs on the partial terms,
// then they are reduce-scattered; forward and backward are both wrong. The
// types reject gelu on a P tensor. The fix:
//   auto a = at::gelu(spmd::reduce_scatter(u, tp, P, S(-1)));
#include <ATen/ATen.h>

#include "model.h"

namespace tp_example {

using namespace spmd::types;

TpLayout tp_layout() { return TpLayout{/*w1_dim=*/1, /*w2_dim=*/1}; }

SPMD_TYPE(dp = V, tp = I)
at::Tensor mlp_block(SPMD_TYPE(dp = V, tp = I) const at::Tensor& x,
                     SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_w,
                     SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_b,
                     SPMD_TYPE(dp = R, tp = S(1)) const at::Tensor& w1,
                     SPMD_TYPE(dp = R, tp = S(1)) const at::Tensor& w2) {
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b);  // {dp: V, tp: I}
  // Scatter to the tensor-parallel region: this rank's hidden features.
  auto h_s = spmd::convert(h, tp, I, S(-1));  // {dp: V, tp: V}
  auto u = spmd::reinterpret(at::matmul(h_s, w1.t()), tp, V, P);
  auto a = spmd::reduce_scatter(at::gelu(u), tp, P, S(-1));  // BUG
  auto y_partial = spmd::reinterpret(at::matmul(a, w2.t()), tp, V, P);
  auto z = spmd::all_reduce(y_partial, tp, P, I);
  return x + z;
}

}  // namespace tp_example
