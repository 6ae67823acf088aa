// Bug: the data-parallel gradient all-reduce is forgotten.
//
// Each dp rank differentiated only its share of the batch, so its gradients
// are partial sums (P on dp). Stepping with them makes every replica take a
// different step from a fraction of the gradient: the replicas drift apart
// and none follows the one-device program. The types reject subtracting a P
// gradient from an R parameter. The fix: spmd::all_reduce(g, dp, P, R) first
// (see optimizer.cpp).
#include <ATen/ATen.h>

#include "model.h"

namespace tp_example {

using namespace spmd::types;

AppliedGrads sgd_step(const LocalParams& params, double lr) {
  at::NoGradGuard no_grad;
  SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_w = params.ln_w;
  SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_b = params.ln_b;
  SPMD_TYPE(dp = R, tp = S(0)) const at::Tensor& w1 = params.w1;
  SPMD_TYPE(dp = R, tp = S(1)) const at::Tensor& w2 = params.w2;

  at::Tensor g_ln_w = spmd::assert_type(grad_of(ln_w), {dp = P, tp = I});
  at::Tensor g_ln_b = spmd::assert_type(grad_of(ln_b), {dp = P, tp = I});
  at::Tensor g_w1 = spmd::assert_type(grad_of(w1), {dp = P, tp = S(0)});
  at::Tensor g_w2 = spmd::assert_type(grad_of(w2), {dp = P, tp = S(1)});

  // No spmd::all_reduce(g, dp, P, R) before the update:
  ln_w.sub_(g_ln_w * lr);  // BUG: R parameter minus P gradient
  ln_b.sub_(g_ln_b * lr);
  w1.sub_(g_w1 * lr);
  w2.sub_(g_w2 * lr);
  return AppliedGrads{g_ln_w, g_ln_b, g_w1, g_w2};
}

}  // namespace tp_example
