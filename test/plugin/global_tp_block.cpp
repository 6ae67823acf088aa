// The MLP of examples/tp_transformer_block in global mode (mini libtorch):
// with S(i) and ranks on the weights, the row-parallel product is a pending
// sum by propagation (no hand-written reinterpret), and four shard-specific
// bugs a local-mode annotation cannot see are rejected at their line.
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
#include "Inputs/prelude.h"

// x: [B, S, H] (duplicated over tp); w1: [F/tp, H] (column-parallel);
// w2: [H, F/tp] (row-parallel).
#define MLP_PARAMS                                                            \
  SPMD_TYPE(dp = V, tp = I, spmd::rank(3)) const Tensor &x,                   \
      SPMD_TYPE(dp = R, tp = I) const Tensor &ln_w,                           \
      SPMD_TYPE(dp = R, tp = I) const Tensor &ln_b,                           \
      SPMD_TYPE(dp = R, tp = S(0), spmd::rank(2)) const Tensor &w1,           \
      SPMD_TYPE(dp = R, tp = S(1), spmd::rank(2)) const Tensor &w2

// The example, ported: 0 diagnostics.
SPMD_TYPE(dp = V, tp = I)
Tensor mlp_block(MLP_PARAMS) {
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b); // {dp: V, tp: I}
  auto h_r = spmd::convert(h, tp, I, R);                // {tp: R}
  auto a = at::gelu(at::matmul(h_r, w1.t()));           // {tp: S(2)}
  auto y = at::matmul(a, w2.t());                       // {tp: P}
  auto z = spmd::all_reduce(y, tp, P, I);
  return x + z;
}

// Bug 1: the column-parallel activations gathered along the batch dim.
SPMD_TYPE(dp = V, tp = R)
Tensor gather_wrong_dim(MLP_PARAMS) {
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b);
  auto h_r = spmd::convert(h, tp, I, R);
  auto a = at::gelu(at::matmul(h_r, w1.t()));
  return spmd::all_gather(a, tp, S(0), R); // global-error {{all_gather expects its input sharded on dim 0 on axis tp (src = S(0)), but it is sharded on dim 2 (S(2))}} global-note {{did you mean src = S(2)?}}
  // global-note@-5 {{type S(2) on axis 'tp' declared here}}
}

// Bug 2: a reduce_scatter of the (sharded, not partial) activations.
SPMD_TYPE(dp = V, tp = V)
Tensor reduce_scatter_shard(MLP_PARAMS) {
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b);
  auto h_r = spmd::convert(h, tp, I, R);
  auto a = at::gelu(at::matmul(h_r, w1.t()));
  return spmd::reduce_scatter(a, tp, P, S(-1)); // global-error {{reduce_scatter with src = P on a tensor sharded on dim 2 on axis tp (S(2)): a shard is not a pending sum}} global-note {{suggestion: gather along dim 2}}
  // global-note@-5 {{type S(2) on axis 'tp' declared here}}
}

// Bug 3: the bias added to the partial product before the reduce.
SPMD_TYPE(dp = V, tp = I)
Tensor bias_on_partial(MLP_PARAMS, SPMD_TYPE(dp = R, tp = R) const Tensor& b2) {
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b);
  auto h_r = spmd::convert(h, tp, I, R);
  auto a = at::gelu(at::matmul(h_r, w1.t()));
  auto y = at::matmul(a, w2.t()) + b2; // global-error {{Partial type on axis tp cannot be added to a non-partial term}}
  // global-note@-1 {{type P on axis 'tp' inferred from this operation}}
  // global-note@-2 {{insert spmd::all_reduce(..., tp, spmd::P, spmd::R)}}
  // global-note@-7 {{'b2' has type R on axis 'tp' declared here}}
  auto z = spmd::all_reduce(y, tp, P, I);
  return x + z;
}

// Bug 4: the full (unsplit) input fed to the row-parallel weight.
SPMD_TYPE(dp = V, tp = I)
Tensor full_input_row_parallel(MLP_PARAMS) {
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b);
  auto h_r = spmd::convert(h, tp, I, R);
  auto y = at::matmul(h_r, w2.t()); // global-error {{No valid sharding strategy for at::matmul on axis tp: args[1] is sharded on dim 0, the contraction dim (j), but args[0] is replicated}}
  // global-note@-1 {{suggestion: shard args[0]}}
  // global-note@-3 {{'h_r' has type R on axis 'tp' set by this collective}}
  // global-note@-6 {{this value has type S(0) on axis 'tp' declared here}}
  auto z = spmd::all_reduce(y, tp, P, I);
  return x + z;
}

// A bias typed I inside the row-parallel linear: the local rule's mixing
// error, and no convert(I, R) fix-it (an R bias would be added to every
// rank's partial sum too): the sharding rule's advice instead. An I bias
// beside a V operand that is no shard keeps the fix-it.
SPMD_TYPE(tp = R)
Tensor row_parallel_invariant_bias(SPMD_TYPE(tp = S(-1)) const Tensor& x,
                                   SPMD_TYPE(tp = S(1)) const Tensor& w,
                                   SPMD_TYPE(tp = I) const Tensor& b) {
  return spmd::all_reduce(torch::nn::functional::linear(x, w, b), tp, P, R); // global-error {{torch::nn::functional::linear: Invariant type on axis tp cannot mix with other types; operand types [V, V, I]}}
  // global-note@-1 {{suggestion: add args[2] after the all_reduce (spmd::all_reduce(y, tp, P, R) + bias), or drop it from this op}}
  // global-note@-5 {{'x' has type S(-1) on axis 'tp' declared here}}
  // global-note@-5 {{'w' has type S(1) on axis 'tp' declared here}}
}
SPMD_TYPE(tp = V)
Tensor varying_plus_invariant_bias(SPMD_TYPE(tp = V) const Tensor& h,
                                   SPMD_TYPE(tp = I) const Tensor& b) {
  return h + b; // global-error {{operator+: Invariant type on axis tp cannot mix}} global-note {{insert spmd::convert(..., tp, spmd::I, spmd::R) to make 'b' R on axis 'tp'}}
  // global-note@-3 {{'h' has type V on axis 'tp' declared here}}
  // global-note@-3 {{'b' has type I on axis 'tp' declared here}}
}
