// Global mode with ranks (docs/plugin.md "Global mode"): spmd::rank(n) in
// [[spmd::type]], ranks of factories and shape ops, negative dims resolved
// against them, shard dims moved by transpose/permute/unsqueeze; strict mode
// reports a V whose shard dim is unknown where it matters, with a note at the
// op that lost it and why.
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

// --- spmd::rank: S(-1) and S(2) are one dim of a rank-3 tensor -------------

SPMD_TYPE(tp = R)
Tensor rank_resolves(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& x) {
  return spmd::all_gather(x, tp, S(2), R);
}

SPMD_TYPE(tp = R)
Tensor rank_wrong_dim(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& x) {
  return spmd::all_gather(x, tp, S(1), R); // global-error {{all_gather expects its input sharded on dim 1 on axis tp (src = S(1)), but it is sharded on dim -1 (S(-1))}} global-note {{did you mean src = S(-1)?}}
  // global-note@-2 {{type S(-1) on axis 'tp' declared here}}
}

// --- shard dims through shape ops ------------------------------------------

SPMD_TYPE(tp = R)
Tensor transpose_moves(SPMD_TYPE(tp = S(0), spmd::rank(3)) const Tensor& x) {
  auto y = x.transpose(0, 2); // y: S(2), rank 3
  auto ok = spmd::all_gather(y, tp, S(-1), R);
  return ok + spmd::all_gather(y, tp, S(0), R); // global-error {{sharded on dim 2 (S(2))}} global-note {{did you mean src = S(2)?}}
  // global-note@-4 {{type S(2) on axis 'tp' declared here}}
}

SPMD_TYPE(tp = R)
Tensor unsqueeze_shifts(SPMD_TYPE(tp = S(-1), spmd::rank(2)) const Tensor& x) {
  auto y = x.unsqueeze(0); // y: S(2), rank 3
  auto ok = spmd::all_gather(y, tp, S(2), R);
  return ok + spmd::all_gather(y, tp, S(1), R); // global-error {{sharded on dim 2 (S(2))}} global-note {{did you mean src = S(2)?}}
  // global-note@-4 {{type S(2) on axis 'tp' declared here}}
}

// A factory's shape gives the rank; convert keeps it.
SPMD_MESH(tp)
SPMD_TYPE(tp = R)
Tensor factory_rank() {
  auto z = torch::zeros({2, 4, 8});
  auto s = spmd::convert(z, tp, R, S(-1)); // s: S(-1) of rank 3
  auto t = s.permute({2, 0, 1});           // t: S(0)
  auto ok = spmd::all_gather(t, tp, S(-3), R);
  return ok + spmd::all_gather(t, tp, S(1), R); // global-error {{sharded on dim 0 (S(0))}} global-note {{did you mean src = S(0)?}}
  // global-note@-4 {{type S(0) on axis 'tp' set by this collective}}
}

// With both ranks known, broadcasting places the shard exactly.
SPMD_TYPE(tp = R)
Tensor broadcast_exact(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& x,
                       SPMD_TYPE(tp = S(0), spmd::rank(1)) const Tensor& b) {
  auto y = x + b; // y: S(2)
  return spmd::all_gather(y, tp, S(-1), R);
}

// --- strict mode: unknown shards -------------------------------------------

// No rank: transpose(0, 1) (dims from the front) cannot place S(-1), so y's
// shard is unknown. (relu could: a pointwise op of one tensor keeps S(-1)
// whatever the rank, global_shape_facts.cpp.)
SPMD_TYPE(tp = R)
Tensor transpose_without_rank(SPMD_TYPE(tp = S(-1)) const Tensor& x) {
  auto y = x.transpose(0, 1); // global-note {{type V on axis 'tp' inferred from this operation}}
  return spmd::all_gather(y, tp, S(0), R); // global-warning {{'y' is sharded on axis 'tp' on an unknown dim (global mode): args[0] is S(-1) but its rank is unknown, so transpose cannot place the shard; annotate the operand's rank, e.g. [[spmd::type(tp = S(-1), spmd::rank(3))]]}}
}

// A plain V in global mode has no dim: reduced as P as it is declared, it
// needs none (strict_declared_v_reduce.cpp); gathered as S(0), it does.
SPMD_TYPE(tp = R)
Tensor plain_varying(SPMD_TYPE(tp = V) const Tensor& x) {
  return spmd::all_reduce(x, tp, P, R);
}

SPMD_TYPE(tp = R)
Tensor plain_varying_gathered(SPMD_TYPE(tp = V) const Tensor& x) { // global-note {{type V on axis 'tp' declared here}}
  return spmd::all_gather(x, tp, S(0), R); // global-warning {{'x' is sharded on axis 'tp' on an unknown dim (global mode): its type says V, not S(i)}}
}

// S(-1) against src S(0): one dim only for rank 1.
SPMD_TYPE(tp = R)
Tensor mixed_sign(SPMD_TYPE(tp = S(-1)) const Tensor& x) { // global-note {{type S(-1) on axis 'tp' declared here}}
  return spmd::all_gather(x, tp, S(0), R); // global-warning {{'x' is sharded on axis 'tp' on an unknown dim (global mode): src S(0) and its shard S(-1) are one dim only for some ranks, and its rank is unknown}}
}

// An unknown shard meeting a known one in an op is reported there, once.
SPMD_TYPE(tp = V)
Tensor unknown_operand(SPMD_TYPE(tp = V) const Tensor& a, // global-note {{type V on axis 'tp' declared here}}
                       SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& b) {
  auto c = a * b; // global-warning {{'a' is sharded on axis 'tp' on an unknown dim (global mode): its type says V, not S(i)}}
  return c * a;
}

// Known shards: nothing to report in strict mode.
SPMD_TYPE(tp = R)
Tensor all_known(SPMD_TYPE(tp = S(1)) const Tensor& x,
                 SPMD_TYPE(tp = S(0)) const Tensor& w) {
  return spmd::all_reduce(x.mm(w), tp, P, R);
}

// --- ranks through a tuple-returning helper (std::tie, bindings, get) -------
// The helper's annotation types every element, rank included, so S(-1) of an
// element is told apart from its S(0) (docs/plugin.md, "Annotating an
// existing engine").

SPMD_TYPE(tp = S(0), spmd::rank(3))
std::tuple<Tensor, Tensor> kv_pair(SPMD_TYPE(tp = S(0)) const Tensor& k,
                                   SPMD_TYPE(tp = S(0)) const Tensor& v);

SPMD_TYPE(tp = R)
Tensor tuple_ranks(SPMD_TYPE(tp = S(0)) const Tensor& k,
                   SPMD_TYPE(tp = S(0)) const Tensor& v) {
  Tensor a, b;
  std::tie(a, b) = kv_pair(k, v);
  auto [c, d] = kv_pair(k, v); // global-note {{type S(0) on axis 'tp' returned by this call (the callee's declared result type)}}
  auto e = std::get<1>(kv_pair(k, v)); // global-note {{type S(0) on axis 'tp' returned by this call (the callee's declared result type)}}
  // transpose(-2, -1) needs a's rank (strict mode would warn without it).
  auto ok = spmd::all_gather(a.transpose(-2, -1), tp, S(0), R);
  auto x = spmd::all_gather(c, tp, S(-1), R); // global-error {{all_gather expects its input sharded on dim -1 on axis tp (src = S(-1)), but it is sharded on dim 0 (S(0))}} global-note {{did you mean src = S(0)?}}
  return ok + x + spmd::all_gather(e, tp, S(2), R); // global-error {{all_gather expects its input sharded on dim 2 on axis tp (src = S(2)), but it is sharded on dim 0 (S(0))}} global-note {{did you mean src = S(0)?}}
}

// --- malformed rank entries ------------------------------------------------

SPMD_TYPE(tp = R)
Tensor bad_rank(SPMD_TYPE(tp = S(0), spmd::rank(70)) const Tensor& x); // global-error {{'spmd::rank' in 'spmd::type' must be a constant between 0 and 63, given once}}
SPMD_TYPE(tp = R)
Tensor rank_only(SPMD_TYPE(spmd::rank(2)) const Tensor& x); // global-error {{'spmd::type' with 'spmd::rank' needs at least one 'axis = type' argument}}
