// Global mode: reductions keep the one-device meaning (docs/type-system.md
// §12.6 "reductions"). A reduction over a dim the axis does not shard keeps
// the shard (dims after the reduced one shift down unless keepdim); the dims
// of var/std (`x.var(1)`, `x.std({1}, true, true)`) and norm
// (`at::norm(x, 2, {1})`, p first) are read where the core says they are.
// Over the sharded dim only a sum is a pending sum; a mean, var, std, norm,
// amax, logsumexp or prod is an error naming the fix.
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
// RUN-PLUGIN: -Xclang -verify=local
// local-no-diagnostics
#include "Inputs/prelude.h"

// --- over another dim: the shard stays ----------------------------------

SPMD_TYPE(tp = R)
Tensor var_other_dim(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x) {
  auto v = x.var(1);
  return spmd::all_gather(v, tp, S(0), R);
}

SPMD_TYPE(tp = R)
Tensor std_other_dim(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x) {
  auto s = x.std(1);
  return spmd::all_gather(s, tp, S(0), R);
}

SPMD_TYPE(tp = R)
Tensor norm_other_dim(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x) {
  auto n = at::norm(x, 2, {1});
  return spmd::all_gather(n, tp, S(0), R);
}

SPMD_TYPE(tp = R)
Tensor norm_method_other_dim(SPMD_TYPE(tp = S(0), spmd::rank(2))
                                 const Tensor& x) {
  return spmd::all_gather(x.norm(2, {1}), tp, S(0), R);
}

// keepdim (the third argument of var/std) keeps the dim: still S(2).
SPMD_TYPE(tp = R)
Tensor std_keepdim(SPMD_TYPE(tp = S(2), spmd::rank(3)) const Tensor& x) {
  return spmd::all_gather(x.std({1}, true, true), tp, S(2), R);
}

// Without keepdim the shard after the reduced dim moves down: S(2) -> S(1).
SPMD_TYPE(tp = R)
Tensor var_shifts_shard(SPMD_TYPE(tp = S(2), spmd::rank(3)) const Tensor& x) {
  return spmd::all_gather(at::var(x, {1}, true), tp, S(1), R);
}

SPMD_TYPE(tp = R)
Tensor shifted_wrong_src(SPMD_TYPE(tp = S(2), spmd::rank(3)) const Tensor& x) {
  return spmd::all_gather(at::var(x, {1}, true), tp, S(2), R); // global-error {{all_gather expects its input sharded on dim 2 on axis tp (src = S(2)), but it is sharded on dim 1 (S(1))}} global-note {{did you mean src = S(1)?}}
  // global-note@-2 {{type S(1) on axis 'tp' declared here}}
}

SPMD_TYPE(tp = R)
Tensor mean_other_dim(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x) {
  return spmd::all_gather(x.mean({1}), tp, S(0), R);
}

SPMD_TYPE(tp = R)
Tensor amax_other_dim(SPMD_TYPE(tp = S(1), spmd::rank(2)) const Tensor& x) {
  return spmd::all_gather(x.amax({0}), tp, S(0), R);
}

// A sum over the shard is the pending sum of the sum.
SPMD_TYPE(tp = R)
Tensor sum_over_shard(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x) {
  return spmd::all_reduce(x.sum({0}), tp, P, R);
}

// --- over the sharded dim: only a sum --------------------------------------

void mean_over_shard(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x) { // global-note {{'x' has type S(0) on axis 'tp' declared here}}
  auto m = x.mean({0}); // global-error {{No valid sharding strategy for x.mean on axis tp: it averages over dim 0, which tp shards (S(0)): each rank averages its own shard, so the per-rank means add up to tp-size times the global mean, not to the mean (there is no pending-mean type, DTensor's Partial(avg))}} global-note {{suggestion: sum over the dim, then divide by the global size: sum / (the global count of the averaged elements) is the pending sum (P) of the mean; or all_gather args[0] first}}
}

void mean_of_all(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x) { // global-note {{'x' has type S(0) on axis 'tp' declared here}}
  auto m = x.mean(); // global-error {{No valid sharding strategy for x.mean on axis tp: it averages over dim 0}} global-note {{suggestion: sum over the dim}}
}

void var_over_shard(SPMD_TYPE(tp = S(1), spmd::rank(2)) const Tensor& x) { // global-note {{'x' has type S(1) on axis 'tp' declared here}}
  auto v = x.var(1); // global-error {{No valid sharding strategy for x.var on axis tp: it reduces over dim 1, which tp shards (S(1)), and var is not a sum: the per-rank results cannot be combined by a pending sum}} global-note {{suggestion: all_gather args[0] first: spmd::all_gather(t, tp, S(1), R)}}
}

void std_over_shard(SPMD_TYPE(tp = S(1), spmd::rank(2)) const Tensor& x) { // global-note {{'x' has type S(1) on axis 'tp' declared here}}
  auto s = x.std(-1); // global-error {{No valid sharding strategy for x.std on axis tp: it reduces over dim 1, which tp shards (S(1)), and std is not a sum}} global-note {{suggestion: all_gather args[0] first}}
}

void norm_over_shard(SPMD_TYPE(tp = S(1), spmd::rank(2)) const Tensor& x) { // global-note {{'x' has type S(1) on axis 'tp' declared here}}
  auto n = at::norm(x, 2, {1}); // global-error {{No valid sharding strategy for at::norm on axis tp: it reduces over dim 1, which tp shards (S(1)), and norm is not a sum}} global-note {{suggestion: all_gather args[0] first}}
}

void amax_over_shard(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x) { // global-note {{'x' has type S(0) on axis 'tp' declared here}}
  auto m = x.amax({0}); // global-error {{No valid sharding strategy for x.amax on axis tp: it reduces over dim 0, which tp shards (S(0)), and amax is not a sum: the per-rank results cannot be combined by a pending sum (they combine by a max or a min, and spmd::all_reduce only sums)}} global-note {{suggestion: all_gather args[0] first}}
}

void logsumexp_over_shard(SPMD_TYPE(tp = S(1), spmd::rank(2)) const Tensor& x) { // global-note {{'x' has type S(1) on axis 'tp' declared here}}
  auto l = x.logsumexp({1}); // global-error {{No valid sharding strategy for x.logsumexp on axis tp: it reduces over dim 1, which tp shards (S(1)), and logsumexp is not a sum}} global-note {{suggestion: all_gather args[0] first}}
}

void prod_over_shard(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x) { // global-note {{'x' has type S(0) on axis 'tp' declared here}}
  auto p = x.prod(0); // global-error {{No valid sharding strategy for x.prod on axis tp: it reduces over dim 0, which tp shards (S(0)), and prod is not a sum}} global-note {{suggestion: all_gather args[0] first}}
}
