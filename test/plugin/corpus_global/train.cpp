// train.cpp - the training step (loss, data-parallel gradient reduction,
// SGD), a sequence-parallel block and the fused MLP "kernel" path written
// with raw matmuls, as engines do for their fast paths.
#include "engine.h"

namespace engine {

/// Sequence-parallel variant of the block's MLP half: the tokens are split on
/// tp between blocks.
SPMD_TYPE(dp = V, tp = S(0))
Tensor sp_mlp_block(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) const Tensor& x,
                    SPMD_TYPE(dp = R, tp = R) const Tensor& norm_w,
                    SPMD_TYPE(dp = R, tp = R) const Tensor& norm_b,
                    SPMD_TYPE(dp = R, tp = S(0), spmd::rank(2)) const Tensor& w_up,
                    SPMD_TYPE(dp = R, tp = S(1), spmd::rank(2)) const Tensor& w_down) {
  auto h = at::layer_norm(x, {x.size(-1)}, norm_w, norm_b, 1e-5);
  auto h_full = spmd::all_gather(h, tp, S(0), R);
  auto a = torch::gelu(torch::matmul(h_full, w_up.t()));
  auto y = torch::matmul(a, w_down.t()); // P by propagation
  auto out = spmd::reduce_scatter(y, tp, P, S(0));
  return x + out;
}

/// Each rank's gate_up shard holds its own gate and up slices (the fused
/// layout), so splitting it is a local operation: a local region (global
/// mode would read chunk(2, -1) as a split of the global sharded dim).
SPMD_LOCAL
SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(3))
Tensor swiglu_local(SPMD_TYPE(dp = V, tp = S(-1)) const Tensor& gate_up) {
  auto pieces = gate_up.chunk(2, -1);
  return torch::silu(pieces[0]) * pieces[1];
}

/// The fused gated-MLP fast path: one matmul for gate and up, one for down.
SPMD_TYPE(dp = V, tp = I)
Tensor fused_mlp(SPMD_TYPE(dp = V, tp = I, spmd::rank(3)) const Tensor& x,
                 SPMD_TYPE(dp = R, tp = S(0), spmd::rank(2)) const Tensor& w_gate_up,
                 SPMD_TYPE(dp = R, tp = S(1), spmd::rank(2)) const Tensor& w_down,
                 SPMD_TYPE(dp = R, tp = I) const Tensor& b_down) {
  auto x_tp = spmd::convert(x, tp, I, R);
  auto gate_up = torch::matmul(x_tp, w_gate_up.t());
  auto act = swiglu_local(gate_up);
  auto y = torch::matmul(act, w_down.t());
  auto y_partial = y; // P by propagation
  auto y_sum = spmd::all_reduce(y_partial, tp, P, I);
  return y_sum + b_down;
}

/// The row-parallel projection with its bias, written out.
SPMD_TYPE(dp = V, tp = I)
Tensor row_parallel_with_bias(SPMD_TYPE(dp = V, tp = S(-1)) const Tensor& a,
                              SPMD_TYPE(dp = R, tp = S(1), spmd::rank(2)) const Tensor& w,
                              SPMD_TYPE(dp = R, tp = I) const Tensor& b) {
  auto partial = torch::linear(a, w); // P by propagation
  auto reduced = spmd::all_reduce(partial, tp, P, I);
  return reduced + b;
}

namespace {

/// SGD on one parameter with an already reduced gradient.
void sgd_update(SPMD_TYPE(dp = R, tp = V) const Tensor& param,
                SPMD_TYPE(dp = R, tp = V) const Tensor& grad, double lr) {
  param.sub_(grad * lr);
}

}  // namespace

SPMD_TYPE(dp = I, tp = I)
Tensor train_step(CausalLM& model, LayerParams& params,
                  SPMD_TYPE(dp = V, tp = R) const Tensor& tokens,
                  SPMD_TYPE(dp = V, tp = R) const Tensor& targets,
                  SPMD_TYPE(dp = V, tp = R) const Tensor& mask, double lr,
                  double global_tokens) {
  auto logits = model.forward(tokens, mask);
  auto loss = lm_loss(logits, targets, model.vocab_start(), model.vocab_end(),
                      global_tokens);
  // (loss.backward() runs here.)

  // Column- and row-parallel weights: reduce over dp, then step.
  Tensor g_qkv = spmd::assert_type(grad_of(params.qkv_w), {dp = P, tp = V});
  sgd_update(params.qkv_w, all_reduce_dp_gradient(g_qkv), lr);
  SPMD_TYPE(dp = P, tp = S(1), spmd::rank(2))
  Tensor g_o = spmd::assert_type(grad_of(params.o_w), {dp = P, tp = S(1)});
  auto d_o = spmd::all_reduce(g_o, dp, P, R);
  params.o_w.sub_(d_o * lr);

  // A norm on duplicated activations: its gradient is whole on every tp rank.
  Tensor g_norm = spmd::assert_type(grad_of(params.norm_w), {dp = P, tp = I});
  auto d_norm = spmd::all_reduce(g_norm, dp, P, R);
  params.norm_w.sub_(d_norm * lr);

  // A sequence-parallel norm: one gradient term per tp rank as well.
  Tensor g_sp = spmd::assert_type(grad_of(params.sp_norm_w), {dp = P, tp = P});
  params.sp_norm_w.sub_(sync_sp_norm_grad(g_sp) * lr);

  // The loss for printing: sum of the dp ranks' shares.
  return spmd::all_reduce(loss.detach(), dp, P, I);
}

}  // namespace engine
