// Global mode, the full-reduction rule (docs/plugin.md "Global mode"): a
// sum over every dim of a tensor that is V on an axis is a pending sum P on
// that axis, whichever dim the axis shards, known or not (each rank's sum of
// its shard is a partial of the global sum). So a V whose dim is unknown (a
// callee declared `dp = V`, a dim lost by a view) summed to a scalar needs no
// reinterpret, strict mode no longer asks for its dim, and a hand-written
// reinterpret(sum, V, P) is an error, as for a known shard. Not claimed: a
// sum over some dims (the shard may be on a kept dim), a mean (each rank's
// mean adds up to axis-size times the global mean, for even shards only),
// nonlinear reductions, dims the plugin cannot read, unmasked
// vocab-parallel rows (not a shard), local regions and local mode.
// RUN-PLUGIN: -Xclang -verify=global,strict -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
// RUN-PLUGIN: -Xclang -verify=local -Xclang -verify-ignore-unexpected=note
#include "Inputs/prelude.h"

SPMD_TYPE(dp = V, tp = I)
Tensor per_token_loss(SPMD_TYPE(dp = V, tp = I) const Tensor& x);

// --- fires: a sum over every dim is P --------------------------------------

// The new user's case: no warning in strict mode any more.
SPMD_TYPE(dp = I, tp = I)
Tensor reduced_loss(SPMD_TYPE(dp = V, tp = I) const Tensor& x) {
  auto per_token = per_token_loss(x);
  return spmd::all_reduce(per_token.sum(), dp, P, I);
}

// The pending sum returned as such (local mode sees V).
SPMD_TYPE(dp = P, tp = I)
Tensor loss_share(SPMD_TYPE(dp = V, tp = I) const Tensor& x, double n) {
  auto per_token = per_token_loss(x); // local-note {{type V on axis 'dp' returned by this call}}
  return per_token.sum() / n; // local-error {{returned value has type V on axis 'dp', but 'loss_share' is declared to return P there}}
}

// A hand-written reinterpret of the full sum: its input is already P.
SPMD_TYPE(dp = I, tp = I)
Tensor reinterpreted(SPMD_TYPE(dp = V, tp = I) const Tensor& x) {
  auto per_token = per_token_loss(x);
  auto s = per_token.sum(); // global-note {{type P on axis 'dp' inferred from this operation}}
  auto p = spmd::reinterpret(s, dp, V, P); // global-error {{reinterpret: expected input type V on axis dp, got P: 's' is P already; remove this reinterpret}} global-note {{remove this spmd::reinterpret ('s' is P already)}}
  return spmd::all_reduce(p, dp, P, I);
}

// A nonlinear op on the full sum is the usual error on P.
SPMD_TYPE(dp = V, tp = I)
Tensor nonlinear(SPMD_TYPE(dp = V, tp = I) const Tensor& x) {
  auto s = x.sum(); // global-note {{'s' has type P on axis 'dp' inferred from this operation}}
  return at::relu(s); // global-error {{at::relu: Partial type on axis dp cannot propagate through non-linear ops}} global-note {{reduce 's' before at::relu}}
}

// Every dim listed (the rank known), and keepdim: P.
SPMD_TYPE(dp = I)
Tensor every_dim_listed(SPMD_TYPE(dp = V, spmd::rank(2)) const Tensor& x) {
  auto a = spmd::all_reduce(x.sum({0, 1}), dp, P, I);
  auto b = spmd::all_reduce(x.sum({-1, 0}, /*keepdim=*/true), dp, P, I);
  return a + b;
}

// Every axis of the operand: an unknown dim on dp, a known one on tp.
SPMD_TYPE(dp = I, tp = I)
Tensor both_axes(SPMD_TYPE(dp = V, tp = S(0)) const Tensor& x) {
  auto s = x.sum();
  return spmd::all_reduce(spmd::all_reduce(s, tp, P, I), dp, P, I);
}

// A known shard of unknown rank: every dim reduced, so its dim too.
SPMD_TYPE(tp = I)
Tensor known_dim_unknown_rank(SPMD_TYPE(tp = S(1)) const Tensor& x) {
  return spmd::all_reduce(x.sum(), tp, P, I);
}

// A dim lost by a view: the full sum does not need it (strict says nothing).
SPMD_TYPE(tp = I)
Tensor lost_then_summed(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& x,
                        int64_t n) {
  auto v = x.view({n, 2, -1});
  return spmd::all_reduce(v.pow(2).sum(), tp, P, I);
}

// Accumulated into a pending sum (the GPT's gradient norm).
SPMD_MESH(tp)
SPMD_TYPE(tp = R)
Tensor sum_of_squares(SPMD_TYPE(tp = V) const Tensor& a,
                      SPMD_TYPE(tp = V) const Tensor& b) {
  auto acc = spmd::convert(at::zeros({}), tp, R, P);
  acc += a.pow(2).sum(); // local-error {{operator+=: Partial type on axis tp cannot combine with Varying}}
  acc += b.pow(2).sum(); // local-error {{operator+=: Partial type on axis tp cannot combine with Varying}}
  return spmd::all_reduce(acc, tp, P, R);
}

// An accumulator started as R: R + P is the affine error.
SPMD_MESH(tp)
SPMD_TYPE(tp = R)
Tensor replicated_accumulator(SPMD_TYPE(tp = V) const Tensor& a) {
  auto acc = at::zeros({}); // global-note 2 {{type R on axis 'tp' inferred from this operation}}
  acc += a.pow(2).sum(); // global-error {{operator+=: Partial type on axis tp cannot be added to a non-partial term}} global-note {{this value has type P on axis 'tp' inferred from this operation}} global-note {{reduce this value before operator+=}}
  return spmd::all_reduce(acc, tp, P, R); // global-error {{all_reduce: expected input type P on axis tp, got R}} global-note {{remove this spmd::all_reduce}}
}

// --- does not fire ----------------------------------------------------------

// A sum over some dims: the shard may be on the dim that is kept.
SPMD_TYPE(dp = I, tp = I)
Tensor some_dims(SPMD_TYPE(dp = V, tp = I) const Tensor& x) {
  auto per_token = per_token_loss(x); // strict-note {{type V on axis 'dp' returned by this call}}
  return spmd::all_reduce(per_token.sum(0), dp, P, I); // strict-warning {{this value is sharded on axis 'dp' on an unknown dim}}
}

SPMD_TYPE(dp = V)
Tensor some_dims_ranked(SPMD_TYPE(dp = V, spmd::rank(2)) const Tensor& x) {
  auto s = x.sum({1});
  // Still V (a sum over dim 1 only): the reinterpret is accepted, and the
  // relu of its P is the error in both modes.
  return spmd::reinterpret(s, dp, V, P).relu(); // global-error {{Partial type on axis dp cannot propagate through non-linear ops}} local-error {{Partial type on axis dp cannot propagate through non-linear ops}} global-note {{this value has type P on axis 'dp' set by this collective}} global-note {{reduce this value before}}
}

// A mean is not claimed: V, so a reinterpret is still accepted (and strict
// mode asks for the dim of a mean reduced as a pending sum).
SPMD_TYPE(dp = I, tp = I)
Tensor mean_loss(SPMD_TYPE(dp = V, tp = I) const Tensor& x) {
  auto per_token = per_token_loss(x); // strict-note {{type V on axis 'dp' returned by this call}}
  auto a = spmd::all_reduce(spmd::reinterpret(per_token.mean(), dp, V, P), dp, P, I);
  return a + spmd::all_reduce(per_token.mean(), dp, P, I); // strict-warning {{this value is sharded on axis 'dp' on an unknown dim}}
}

// Nonlinear reductions: not a sum.
SPMD_TYPE(dp = V)
Tensor nonlinear_reduction(SPMD_TYPE(dp = V) const Tensor& x) {
  return at::relu(x.max());
}

// Dims the plugin cannot read: not "every dim".
SPMD_TYPE(dp = V)
Tensor unread_dims(SPMD_TYPE(dp = V) const Tensor& x, c10::IntArrayRef dims,
                   int64_t d) {
  return at::relu(x.sum(dims)) + at::relu(x.sum(d));
}

// Unmasked vocab-parallel rows are no shard: their sum stays marked.
SPMD_TYPE(tp = I)
Tensor unmasked_rows(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                     SPMD_TYPE(tp = R) const Tensor& ids) {
  auto rows = at::embedding(weight, ids); // global-note {{type V on axis 'tp' inferred from this operation}}
  return spmd::all_reduce(rows.sum(), tp, P, I); // global-error {{all_reduce with src = P on rows looked up in a table sharded by rows on axis tp (S(0))}} global-note {{suggestion: zero them first}}
}

// A local region keeps local semantics: the reinterpret is trusted there.
SPMD_LOCAL
SPMD_TYPE(dp = P, tp = I)
Tensor local_share(SPMD_TYPE(dp = V, tp = I) const Tensor& per_token) {
  return spmd::reinterpret(per_token.sum(), dp, V, P);
}
