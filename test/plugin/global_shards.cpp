// Global mode (-fplugin-arg-spmd-check-global, docs/plugin.md "Global mode"):
// S(i) keeps its shard dim; collectives check it against src; a shard is not
// a pending sum (no all_reduce with src P, no reinterpret as P); ops move the
// shard by core/sharding_propagation.h. The second run (no opt-in) shows that
// none of these fire in local mode, where S(i) reads as V.
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
// RUN-PLUGIN: -Xclang -verify=local
// local-no-diagnostics
#include "Inputs/prelude.h"

// --- src = S(i) against the input's shard ----------------------------------

SPMD_TYPE(tp = R)
Tensor gather_right_dim(SPMD_TYPE(tp = S(0)) const Tensor& x) {
  return spmd::all_gather(x, tp, S(0), R);
}

SPMD_TYPE(tp = R)
Tensor gather_wrong_dim(SPMD_TYPE(tp = S(-1)) const Tensor& x) {
  return spmd::all_gather(x, tp, S(-2), R); // global-error {{all_gather expects its input sharded on dim -2 on axis tp (src = S(-2)), but it is sharded on dim -1 (S(-1))}} global-note {{did you mean src = S(-1)?}}
  // global-note@-2 {{type S(-1) on axis 'tp' declared here}}
}

// S(-1) and S(0) may be one dim (rank 1): without the rank, no verdict.
SPMD_TYPE(tp = R)
Tensor gather_mixed_sign(SPMD_TYPE(tp = S(-1)) const Tensor& x) {
  return spmd::all_gather(x, tp, S(0), R);
}

// --- a shard is not a pending sum ------------------------------------------

SPMD_TYPE(tp = R)
Tensor reduce_feature_shard(SPMD_TYPE(tp = S(-1)) const Tensor& x) {
  return spmd::all_reduce(x, tp, P, R); // global-error {{all_reduce with src = P on a tensor sharded on dim -1 on axis tp (S(-1)): a shard is not a pending sum}} global-note {{suggestion: gather along dim -1 (spmd::all_gather(x, tp, S(-1), R))}}
  // global-note@-2 {{type S(-1) on axis 'tp' declared here}}
}

// A plain V (shard unknown) is still accepted where src is P.
SPMD_TYPE(tp = R)
Tensor reduce_varying(SPMD_TYPE(tp = V) const Tensor& x) {
  return spmd::all_reduce(x, tp, P, R);
}

SPMD_TYPE(tp = P)
Tensor reinterpret_shard(SPMD_TYPE(tp = S(1)) const Tensor& x) {
  return spmd::reinterpret(x, tp, V, P); // global-error {{reinterpret as P of a tensor sharded on dim 1 on axis tp (S(1)): a shard is not a pending sum}} global-note {{suggestion: gather along dim}}
  // global-note@-2 {{type S(1) on axis 'tp' declared here}}
}

SPMD_TYPE(tp = P)
Tensor reinterpret_shard_expert(SPMD_TYPE(tp = S(1)) const Tensor& x) {
  return spmd::reinterpret(x, tp, V, P,
                           spmd::CollectiveOptions{{}, {}, {}, false, true});
}

// --- collective results carry their shard dims -----------------------------

SPMD_TYPE(tp = R)
Tensor reduce_scatter_then_gather(SPMD_TYPE(tp = P) const Tensor& p) {
  auto y = spmd::reduce_scatter(p, tp, P, S(1)); // y: S(1) global-note {{type S(1) on axis 'tp' set by this collective}}
  auto ok = spmd::all_gather(y, tp, S(1), R);
  return ok + spmd::all_gather(y, tp, S(0), R); // global-error {{sharded on dim 1 (S(1))}} global-note {{did you mean src = S(1)?}}
}

SPMD_TYPE(tp = R)
Tensor all_to_all_moves_shard(SPMD_TYPE(tp = S(1)) const Tensor& x) {
  auto y = spmd::all_to_all(x, tp, S(1), S(0)); // y: S(0) global-note {{set by this collective}}
  return spmd::all_reduce(y, tp, P, R); // global-error {{sharded on dim 0 on axis tp}} global-note {{suggestion: gather along dim 0}}
}

// --- shards through ops (core sharding propagation) ------------------------

// mm(S(1), S(0)): the contraction dim is sharded on both: a pending sum.
SPMD_TYPE(tp = R)
Tensor row_parallel_mm(SPMD_TYPE(tp = S(1)) const Tensor& x,
                       SPMD_TYPE(tp = S(0)) const Tensor& w) {
  auto y = x.mm(w); // y: P, no reinterpret needed
  return spmd::all_reduce(y, tp, P, R);
}

// Bias added to the partial product before the reduce.
SPMD_TYPE(tp = R)
Tensor bias_before_reduce(SPMD_TYPE(tp = S(1)) const Tensor& x,
                          SPMD_TYPE(tp = S(0)) const Tensor& w,
                          SPMD_TYPE(tp = R) const Tensor& b) {
  auto y = x.mm(w) + b; // global-error {{Partial type on axis tp cannot be added to a non-partial term}}
  // global-note@-1 {{type P on axis 'tp' inferred from this operation}}
  // global-note@-2 {{insert spmd::all_reduce(..., tp, spmd::P, spmd::R)}}
  // global-note@-4 {{'b' has type R on axis 'tp' declared here}}
  return spmd::all_reduce(y, tp, P, R);
}

// mm(S(0), R) keeps the row shard.
SPMD_TYPE(tp = R)
Tensor row_shard_through_mm(SPMD_TYPE(tp = S(0)) const Tensor& x,
                            SPMD_TYPE(tp = R) const Tensor& w) {
  auto y = x.mm(w); // y: S(0)
  return spmd::all_gather(y, tp, S(1), R); // global-error {{sharded on dim 0 (S(0))}} global-note {{did you mean src = S(0)?}}
  // global-note@-4 {{type S(0) on axis 'tp' declared here}}
}

// A shard on a free dim of one operand and the contraction dim of the other.
SPMD_TYPE(tp = V)
Tensor illegal_mm_mix(SPMD_TYPE(tp = S(0)) const Tensor& x,
                      SPMD_TYPE(tp = S(0)) const Tensor& w) {
  return x.mm(w); // global-error {{No valid sharding strategy for x.mm on axis tp: args[0] is sharded on dim 0 (i) and args[1] on dim 0 (j)}}
  // global-note@-1 {{suggestion: keep one operand sharded and all_gather the other}}
  // global-note@-4 {{'x' has type S(0) on axis 'tp' declared here}}
  // global-note@-4 {{'w' has type S(0) on axis 'tp' declared here}}
}

// Without ranks, a pointwise op gives an unknown shard: no verdict.
SPMD_TYPE(tp = R)
Tensor rank_unknown(SPMD_TYPE(tp = S(-1)) const Tensor& x) {
  auto y = torch::relu(x);
  return spmd::all_gather(y, tp, S(0), R);
}

// --- linear: x's last dim is contracted whatever its rank ------------------

namespace F = torch::nn::functional;

// Row-parallel linear: x sharded on its features, w [out, in] on `in`.
SPMD_TYPE(tp = R)
Tensor row_parallel_linear(SPMD_TYPE(tp = S(-1)) const Tensor& x,
                           SPMD_TYPE(tp = S(1)) const Tensor& w) {
  return spmd::all_reduce(F::linear(x, w), tp, P, R);
}

// The bias inside the row-parallel linear is added on every rank.
SPMD_TYPE(tp = R)
Tensor row_parallel_bias(SPMD_TYPE(tp = S(-1)) const Tensor& x,
                         SPMD_TYPE(tp = S(1)) const Tensor& w,
                         SPMD_TYPE(tp = R) const Tensor& b) {
  return spmd::all_reduce(F::linear(x, w, b), tp, P, R); // global-error {{No valid sharding strategy for F::linear on axis tp: the product args[0] @ args[1]^T contracts a sharded dim, so it is a pending sum (P) on tp, and args[2] (R) would be added to every rank's partial sum}}
  // global-note@-1 {{suggestion: add args[2] after the all_reduce}}
  // global-note@-5 {{'x' has type S(-1) on axis 'tp' declared here}}
  // global-note@-5 {{'w' has type S(1) on axis 'tp' declared here}}
}

// gelu on the partial product (the local rule's nonlinear-on-P error).
SPMD_TYPE(tp = R)
Tensor gelu_before_reduce(SPMD_TYPE(tp = S(-1)) const Tensor& x,
                          SPMD_TYPE(tp = S(1)) const Tensor& w) {
  return spmd::all_reduce(F::gelu(F::linear(x, w)), tp, P, R); // global-error {{gelu: Partial type on axis tp cannot propagate through non-linear ops}}
  // global-note@-1 {{this value has type P on axis 'tp' inferred from this operation}}
  // global-note@-2 {{reduce this value before F::gelu, not after it: move the enclosing spmd::all_reduce onto this value}}
}

// The full input fed to the row-parallel weight.
SPMD_TYPE(tp = R)
Tensor unsplit_input(SPMD_TYPE(tp = R) const Tensor& x,
                     SPMD_TYPE(tp = S(1)) const Tensor& w) {
  return spmd::all_reduce(F::linear(x, w), tp, P, R); // global-error {{No valid sharding strategy for F::linear on axis tp: args[1] is sharded on dim 1, the contraction dim (k), but args[0] is replicated}}
  // global-note@-1 {{suggestion: shard args[0] on dim 1 as well}}
  // global-note@-4 {{'x' has type R on axis 'tp' declared here}}
  // global-note@-4 {{'w' has type S(1) on axis 'tp' declared here}}
}

// Column-parallel linear: the output is sharded on its last dim.
SPMD_TYPE(tp = R)
Tensor column_parallel(SPMD_TYPE(tp = R) const Tensor& x,
                       SPMD_TYPE(tp = S(0)) const Tensor& w) {
  auto y = F::linear(x, w); // y: S(-1)
  auto ok = spmd::all_gather(y, tp, S(-1), R);
  return ok + spmd::all_gather(y, tp, S(-2), R); // global-error {{sharded on dim -1 (S(-1))}} global-note {{did you mean src = S(-1)?}}
  // global-note@-4 {{type S(-1) on axis 'tp' declared here}}
}

// linear's weight is 2-D and its bias 1-D whatever the annotations say: a
// column-parallel bias annotated S(0) without spmd::rank(1) keeps the
// output's shard (an unknown bias rank used to make it "shard unknown", which
// all_reduce accepts).
SPMD_TYPE(tp = R)
Tensor column_parallel_bias(SPMD_TYPE(tp = R) const Tensor& x,
                            SPMD_TYPE(tp = S(0)) const Tensor& w,
                            SPMD_TYPE(tp = S(0)) const Tensor& b) {
  auto y = F::linear(x, w, b); // y: S(-1)
  return spmd::all_reduce(y, tp, P, R); // global-error {{all_reduce with src = P on a tensor sharded on dim -1 on axis tp (S(-1)): a shard is not a pending sum}}
  // global-note@-1 {{suggestion: gather along dim -1 (spmd::all_gather(x, tp, S(-1), R))}}
  // global-note@-5 {{type S(-1) on axis 'tp' declared here}}
}

// The same with the weight's and the bias's shards counted from the end.
SPMD_TYPE(tp = R)
Tensor column_parallel_from_end(SPMD_TYPE(tp = R) const Tensor& x,
                                SPMD_TYPE(tp = S(-2)) const Tensor& w,
                                SPMD_TYPE(tp = S(-1)) const Tensor& b) {
  auto y = F::linear(x, w, b);
  auto ok = spmd::all_gather(y, tp, S(-1), R);
  return ok + spmd::all_gather(y, tp, S(-2), R); // global-error {{sharded on dim -1 (S(-1))}} global-note {{did you mean src = S(-1)?}}
  // global-note@-5 {{type S(-1) on axis 'tp' declared here}}
}

// A port that kept the hand-written reinterpret of a known shard.
SPMD_TYPE(tp = R)
Tensor stale_reinterpret(SPMD_TYPE(tp = S(-1)) const Tensor& x,
                         SPMD_TYPE(tp = S(1)) const Tensor& w) {
  auto y = spmd::reinterpret(F::linear(x, w), tp, V, P); // global-error {{reinterpret: expected input type V on axis tp, got P}}
  // global-note@-1 {{type P on axis 'tp' inferred from this operation}}
  // global-note@-2 {{remove this spmd::reinterpret (this value is P already)}}
  return spmd::all_reduce(y, tp, P, R);
}
