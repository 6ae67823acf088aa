// sequence_parallel.cpp - the same block with sequence parallelism: between
// blocks the activation is split along the sequence on tp (S(0)) instead of
// duplicated, so LayerNorm and the residual run on 1/tp of the tokens.
// Written for global mode (spec §12), like tensor_parallel.cpp, and checked
// by the spmd-check plugin in it: its build passes
// -fplugin-arg-spmd-check-global and -fplugin-arg-spmd-check-strict.
// The runtime checker types it in global mode on tp too (checker_options).
// docs/walkthrough.md explains the annotations.
#include <ATen/ATen.h>

#include "bugs.h"
#include "model.h"

namespace tp_example {

using namespace spmd::types;

TpLayout sp_layout() {
  return TpLayout{/*w1_dim=*/0, /*w2_dim=*/1, /*global=*/true};
}

// The LayerNorm parameters are R on tp here, not I: each tp rank applies them
// to different tokens, so their gradients are partial sums over tp (P) that
// must be reduced, exactly like the dp reduction. With I the checker would
// reject `layer_norm(x, ..., ln_w, ...)` (I cannot mix with the sharded x).
//
// spmd::rank gives global mode the tensors' ranks (x: [seq/tp, batch/dp,
// hidden], w1: [ffn/tp, hidden], w2: [hidden, ffn/tp]), so that it follows
// each tp shard through the gather, transpose and matmul to the exact dim
// (and tells a shard named from the end, S(-1), apart from S(0)).
SPMD_TYPE(dp = V, tp = S(0))
at::Tensor mlp_block_sp(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
                            const at::Tensor& x,
                        SPMD_TYPE(dp = R, tp = R) const at::Tensor& ln_w,
                        SPMD_TYPE(dp = R, tp = R) const at::Tensor& ln_b,
                        SPMD_TYPE(dp = R, tp = S(0), spmd::rank(2))
                            const at::Tensor& w1,
                        SPMD_TYPE(dp = R, tp = S(1), spmd::rank(2))
                            const at::Tensor& w2) {
  // LayerNorm on this rank's tokens: the shard stays on the sequence dim.
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b);  // {dp: V, tp: S(0)}

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

  // Column-parallel, then row-parallel linear, as in tensor_parallel.cpp:
  // the second contracts the sharded ffn dim (a: S(2), w2.t(): S(0)), so
  // global mode infers the pending sum; nothing is declared by hand.
  auto a = at::gelu(at::matmul(h_full, w1.t()));  // {dp: V, tp: S(2)}
  auto y_partial = at::matmul(a, w2.t());         // {dp: V, tp: P}

#if TP_BLOCK_BUG_IS(missing_reduce_scatter)
  return x + y_partial;  // BUG(missing_reduce_scatter)
#endif
  // Reduce-scatter to the sequence-parallel region: sum the partial outputs
  // and keep this rank's tokens (src P, as inferred). Backward all-gathers
  // the gradient.
  auto z = spmd::reduce_scatter(y_partial, tp, P, S(0));  // {dp: V, tp: S(0)}
  return x + z;
}

AppliedGrads sgd_step_sp(const LocalParams& params, double lr) {
  at::NoGradGuard no_grad;
  // The parameters' types, as mlp_block_sp declares them. LocalParams is a
  // plain struct, so assert_type states what its fields hold (and checks it
  // under the runtime checker); the weights' ranks come with the declaration.
  SPMD_TYPE(dp = R, tp = R)
  const at::Tensor& ln_w = spmd::assert_type(params.ln_w, {dp = R, tp = R});
  SPMD_TYPE(dp = R, tp = R)
  const at::Tensor& ln_b = spmd::assert_type(params.ln_b, {dp = R, tp = R});
  SPMD_TYPE(dp = R, tp = S(0), spmd::rank(2))
  const at::Tensor& w1 = spmd::assert_type(params.w1, {dp = R, tp = S(0)});
  SPMD_TYPE(dp = R, tp = S(1), spmd::rank(2))
  const at::Tensor& w2 = spmd::assert_type(params.w2, {dp = R, tp = S(1)});

  // The gradient of a parameter has the backward type of the parameter
  // (spec §2.1): R -> P, S(i) -> S(i). The loss is P on dp. A weight's
  // gradient has the weight's rank.
  at::Tensor g_ln_w = spmd::assert_type(grad_of(ln_w), {dp = P, tp = P});
  at::Tensor g_ln_b = spmd::assert_type(grad_of(ln_b), {dp = P, tp = P});
  SPMD_TYPE(dp = P, tp = S(0), spmd::rank(2))
  at::Tensor g_w1 = spmd::assert_type(grad_of(w1), {dp = P, tp = S(0)});
  SPMD_TYPE(dp = P, tp = S(1), spmd::rank(2))
  at::Tensor g_w2 = spmd::assert_type(grad_of(w2), {dp = P, tp = S(1)});

  // Sequence parallelism adds the tp reduction of the LayerNorm gradients
  // (Megatron: allreduce of "sequence_parallel" parameters).
  auto d_ln_w = spmd::all_reduce(spmd::all_reduce(g_ln_w, tp, P, R), dp, P, R);
  auto d_ln_b = spmd::all_reduce(spmd::all_reduce(g_ln_b, tp, P, R), dp, P, R);
  auto d_w1 = spmd::all_reduce(g_w1, dp, P, R);  // {dp: R, tp: S(0)}
  auto d_w2 = spmd::all_reduce(g_w2, dp, P, R);  // {dp: R, tp: S(1)}

  ln_w.sub_(d_ln_w * lr);  // R - R: every replica takes the same step
  ln_b.sub_(d_ln_b * lr);
  w1.sub_(d_w1 * lr);  // S(0) - S(0): each tp rank steps its own shard
  w2.sub_(d_w2 * lr);
  return AppliedGrads{d_ln_w, d_ln_b, d_w1, d_w2};
}

}  // namespace tp_example
