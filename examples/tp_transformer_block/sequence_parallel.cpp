// sequence_parallel.cpp - the same block with sequence parallelism: between
// blocks the activation is split along the sequence on tp (S(0)) instead of
// duplicated, so LayerNorm and the residual run on 1/tp of the tokens.
// Annotated and checked by the spmd-check plugin; docs/walkthrough.md.
#include <ATen/ATen.h>

#include "bugs.h"
#include "model.h"

namespace tp_example {

using namespace spmd::types;

// The LayerNorm parameters are R on tp here, not I: each tp rank applies them
// to different tokens, so their gradients are partial sums over tp (P) that
// must be reduced, exactly like the dp reduction. With I the checker would
// reject `layer_norm(x, ..., ln_w, ...)` (I cannot mix with the varying x).
//
// x is [seq/tp, batch/dp, hidden]: spmd::rank(3) gives global mode its rank,
// so that a shard named from the end (S(-1)) is told apart from S(0).
SPMD_TYPE(dp = V, tp = S(0))
at::Tensor mlp_block_sp(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
                            const at::Tensor& x,
                        SPMD_TYPE(dp = R, tp = R) const at::Tensor& ln_w,
                        SPMD_TYPE(dp = R, tp = R) const at::Tensor& ln_b,
                        SPMD_TYPE(dp = R, tp = S(0)) const at::Tensor& w1,
                        SPMD_TYPE(dp = R, tp = S(1)) const at::Tensor& w2) {
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b);  // {dp: V, tp: V}

  // Gather from the sequence-parallel region: every tp rank needs every
  // token for its W1 shard and uses them differently, so dst is R; backward
  // reduce-scatters the gradient back onto the sequence shards.
#if TP_BLOCK_BUG_IS(gather_wrong_dim)
  auto h_full = spmd::all_gather(h, tp, S(-1), R);  // BUG(gather_wrong_dim)
#elif TP_BLOCK_BUG_IS(all_reduce_not_gather)
  auto h_full = spmd::all_reduce(h, tp, P, R);  // BUG(all_reduce_not_gather)
#else
  auto h_full = spmd::all_gather(h, tp, S(0), R);  // {dp: V, tp: R}
#endif

  auto a = at::gelu(at::matmul(h_full, w1.t()));    // {dp: V, tp: V}
  auto y = at::matmul(a, w2.t());                   // {dp: V, tp: V}
  auto y_partial = spmd::reinterpret(y, tp, V, P);  // pending sum

  // Reduce-scatter to the sequence-parallel region: sum the partial outputs
  // and keep this rank's tokens. Backward all-gathers the gradient.
  auto z = spmd::reduce_scatter(y_partial, tp, P, S(0));  // {dp: V, tp: V}
  return x + z;
}

AppliedGrads sgd_step_sp(const LocalParams& params, double lr) {
  at::NoGradGuard no_grad;
  SPMD_TYPE(dp = R, tp = R) const at::Tensor& ln_w = params.ln_w;
  SPMD_TYPE(dp = R, tp = R) const at::Tensor& ln_b = params.ln_b;
  SPMD_TYPE(dp = R, tp = S(0)) const at::Tensor& w1 = params.w1;
  SPMD_TYPE(dp = R, tp = S(1)) const at::Tensor& w2 = params.w2;

  // The gradient of a parameter has the backward type of the parameter
  // (spec §2.1): R -> P, V -> V. The loss is P on dp.
  at::Tensor g_ln_w = spmd::assert_type(grad_of(ln_w), {dp = P, tp = P});
  at::Tensor g_ln_b = spmd::assert_type(grad_of(ln_b), {dp = P, tp = P});
  at::Tensor g_w1 = spmd::assert_type(grad_of(w1), {dp = P, tp = S(0)});
  at::Tensor g_w2 = spmd::assert_type(grad_of(w2), {dp = P, tp = S(1)});

  // Sequence parallelism adds the tp reduction of the LayerNorm gradients
  // (Megatron: allreduce of "sequence_parallel" parameters).
  auto d_ln_w = spmd::all_reduce(spmd::all_reduce(g_ln_w, tp, P, R), dp, P, R);
  auto d_ln_b = spmd::all_reduce(spmd::all_reduce(g_ln_b, tp, P, R), dp, P, R);
  auto d_w1 = spmd::all_reduce(g_w1, dp, P, R);  // {dp: R, tp: V}
  auto d_w2 = spmd::all_reduce(g_w2, dp, P, R);  // {dp: R, tp: V}

  ln_w.sub_(d_ln_w * lr);  // R - R: every replica takes the same step
  ln_b.sub_(d_ln_b * lr);
  w1.sub_(d_w1 * lr);
  w2.sub_(d_w2 * lr);
  return AppliedGrads{d_ln_w, d_ln_b, d_w1, d_w2};
}

}  // namespace tp_example
