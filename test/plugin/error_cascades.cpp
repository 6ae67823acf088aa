// An error is reported once: the value it leaves unknown (an op the core
// rejected, a collective whose axis is not a constant), and every value
// computed from it, get no follow-on unknown-type warning in strict mode
// (as Clang's expressions that contain errors). A value unknown for any other
// reason is still reported, once: at its first use, not again at the values
// computed from it. In global mode with strict-shards, a shard lost
// by a rejected op is not reported again where the dim matters.
// RUN-PLUGIN: -Xclang -verify=strict -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict-shards
#include "Inputs/prelude.h"

SPMD_TYPE(tp = R)
Tensor after_op_error(SPMD_TYPE(tp = P) const Tensor& h, SPMD_TYPE(tp = V) const Tensor& w) { // strict-note {{'h' has type P}} global-note {{'h' has type P}}
  auto g = torch::gelu(h); // strict-error {{torch::gelu: Partial type on axis tp cannot propagate through non-linear ops}} strict-note {{reduce 'h' before torch::gelu}} global-error {{cannot propagate through non-linear ops}} global-note {{reduce 'h' before torch::gelu}}
  auto y = torch::matmul(g, w); // no warning: 'g' comes from the error
  auto z = y * 2;
  return spmd::all_reduce(z, tp, P, R);
}

SPMD_TYPE(tp = R)
Tensor unknown_is_still_reported(SPMD_TYPE(tp = V) const Tensor& w, const Tensor& x) {
  auto y = torch::matmul(x, w); // strict-warning {{'x' has an unknown SPMD type}} global-warning {{'x' has an unknown SPMD type}}
  return spmd::all_reduce(y, tp, P, R); // 'y' is computed from 'x': not again
}

// One path from an error, one from an unannotated call: the join silenced.
SPMD_TYPE(tp = R)
Tensor joined_paths(SPMD_TYPE(tp = I) const Tensor& b, SPMD_TYPE(tp = V) const Tensor& v, bool c) { // strict-note {{'b' has type I}} strict-note {{'v' has type V}} global-note {{'b' has type I}} global-note {{'v' has type V}}
  Tensor t = opaque(v);
  if (c)
    t = v + b; // strict-error {{operator+: Invariant type on axis tp cannot mix}} strict-note {{insert spmd::convert}} global-error {{cannot mix}} global-note {{insert spmd::convert}}
  return spmd::all_reduce(t, tp, P, R);
}

// Global mode: the shard of 'qkv' is lost by the rejected chunk; its pieces
// are not reported again as V of an unknown dim.
SPMD_TYPE(tp = R)
Tensor after_shard_error(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& qkv) { // global-note {{'qkv' has type S(-1)}}
  auto parts = qkv.chunk(3, -1); // global-error {{No valid sharding strategy for qkv.chunk on axis tp: it splits along dim 2, which tp shards (S(2)): local indices are not global indices}} global-note {{SPMD_LOCAL}}
  auto s = parts[0].sum(-1);
  return spmd::all_gather(s, tp, S(1), R);
}
