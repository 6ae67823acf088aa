// optimizer.cpp - the data-parallel gradient reduction and one SGD step for
// the tensor-parallel block, annotated and checked by the spmd-check plugin.
#include <ATen/ATen.h>

#include "model.h"

namespace tp_example {

using namespace spmd::types;

AppliedGrads sgd_step(const LocalParams& params, double lr) {
  at::NoGradGuard no_grad;
  // The parameters' types, as mlp_block declares them.
  SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_w = params.ln_w;
  SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_b = params.ln_b;
  SPMD_TYPE(dp = R, tp = S(0)) const at::Tensor& w1 = params.w1;
  SPMD_TYPE(dp = R, tp = S(1)) const at::Tensor& w2 = params.w2;

  // Autograd is invisible to the static checker, so the gradients' types are
  // stated: the backward type of each parameter's type (spec §2.1), R -> P on
  // dp (each dp rank differentiated its share of the batch), I -> I and
  // V -> V on tp. assert_type is a refinement point for the plugin and, under
  // the runtime checker (--typecheck), sets the type of the untyped gradient.
  at::Tensor g_ln_w = spmd::assert_type(grad_of(ln_w), {dp = P, tp = I});
  at::Tensor g_ln_b = spmd::assert_type(grad_of(ln_b), {dp = P, tp = I});
  at::Tensor g_w1 = spmd::assert_type(grad_of(w1), {dp = P, tp = S(0)});
  at::Tensor g_w2 = spmd::assert_type(grad_of(w2), {dp = P, tp = S(1)});

  // Sum the partial gradients over dp. dst is R, like the parameters: every
  // replica must apply the same update.
  auto d_ln_w = spmd::all_reduce(g_ln_w, dp, P, R);  // {dp: R, tp: I}
  auto d_ln_b = spmd::all_reduce(g_ln_b, dp, P, R);
  auto d_w1 = spmd::all_reduce(g_w1, dp, P, R);  // {dp: R, tp: V}
  auto d_w2 = spmd::all_reduce(g_w2, dp, P, R);

  ln_w.sub_(d_ln_w * lr);  // R - R stays R
  ln_b.sub_(d_ln_b * lr);
  w1.sub_(d_w1 * lr);
  w2.sub_(d_w2 * lr);
  return AppliedGrads{d_ln_w, d_ln_b, d_w1, d_w2};
}

}  // namespace tp_example
