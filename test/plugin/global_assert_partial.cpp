// Global mode: spmd::assert_type(x, {tp = P}) of a tensor known to be sharded
// on tp is an error, as reinterpret(x, tp, V, P) of it is (a shard is not a
// pending sum, spec §12.2; §8.1's V -> P refinement is for a V whose shard
// dim is unknown). The note says what to write, with a fix-it asserting the
// shard. Not an error: a plain V, a P, a local axis, local mode. The second
// run (no opt-in) shows that local mode accepts every case (S(i) reads as V).
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
// RUN-PLUGIN: -Xclang -verify=local
// RUN-FILECHECK: -fplugin-arg-spmd-check-global -fdiagnostics-parseable-fixits
// local-no-diagnostics
#include "Inputs/prelude.h"

// A declared shard asserted P: the same verdict as reinterpret's.
SPMD_TYPE(tp = P)
Tensor assert_declared_shard(SPMD_TYPE(tp = S(1)) const Tensor& x) {
  return spmd::assert_type(x, {tp = P}); // global-error {{spmd::assert_type: 'x' has type S(1) on axis 'tp', but the assertion says P (it is sharded on dim 1: a shard is not a pending sum)}}
  // global-note@-2 {{type S(1) on axis 'tp' declared here}}
  // global-note@-2 {{suggestion: assert what it is (tp = S(1)), or gather it along dim 1 first (spmd::all_gather(x, tp, S(1), R)); a value is P only where its producer makes it one}}
}
// CHECK: fix-it:"{{.*}}global_assert_partial.cpp":{[[@LINE-4]]:37-[[@LINE-4]]:38}:"spmd::S(1)"

SPMD_TYPE(tp = P)
Tensor reinterpret_declared_shard(SPMD_TYPE(tp = S(1)) const Tensor& x) {
  return spmd::reinterpret(x, tp, V, P); // global-error {{reinterpret as P of a tensor sharded on dim 1 on axis tp (S(1)): a shard is not a pending sum}} global-note {{suggestion: gather along dim}}
  // global-note@-2 {{type S(1) on axis 'tp' declared here}}
}

// A shard an op moved (rank known), asserted as a statement: after the
// error the value is P (the assertion's word), so the return is no second
// error.
SPMD_TYPE(tp = P)
Tensor assert_moved_shard(SPMD_TYPE(tp = S(-1), spmd::rank(2)) const Tensor& x) { // global-note {{type S(0) on axis 'tp' declared here}}
  auto y = x.t(); // y: S(0)
  spmd::assert_type(y, {tp = P}); // global-error {{'y' has type S(0) on axis 'tp', but the assertion says P (it is sharded on dim 0: a shard is not a pending sum)}} global-note {{assert what it is (tp = S(0))}}
  return y;
}

// A pointwise op keeps a shard counted from the end.
SPMD_TYPE(tp = P)
Tensor assert_kept_shard(SPMD_TYPE(tp = S(-1)) const Tensor& x) { // global-note {{type S(-1) on axis 'tp' declared here}}
  return spmd::assert_type(torch::relu(x), {tp = P}); // global-error {{this value has type S(-1) on axis 'tp', but the assertion says P}} global-note {{assert what it is (tp = S(-1))}}
}

// A collective's result shard.
SPMD_TYPE(tp = P)
Tensor assert_scattered(SPMD_TYPE(tp = P) const Tensor& p) {
  auto y = spmd::reduce_scatter(p, tp, P, S(0)); // global-note {{type S(0) on axis 'tp' set by this collective}}
  spmd::assert_type(y, {tp = P}); // global-error {{'y' has type S(0) on axis 'tp', but the assertion says P}} global-note {{suggestion: assert what it is (tp = S(0))}}
  return y;
}

// --- where it must not fire --------------------------------------------------

// A V whose shard dim is unknown may be asserted P (spec §8.1 step 8).
SPMD_TYPE(tp = P)
Tensor assert_plain_varying(SPMD_TYPE(tp = V) const Tensor& x) {
  return spmd::assert_type(x, {tp = P});
}

// A pending sum asserted P; a shard asserted as what it is.
SPMD_TYPE(tp = P)
Tensor assert_partial(SPMD_TYPE(tp = S(1)) const Tensor& x,
                      SPMD_TYPE(tp = S(0)) const Tensor& w) {
  spmd::assert_type(x, {tp = S(1)});
  return spmd::assert_type(x.mm(w), {tp = P});
}

// An untyped value: the assertion sets P.
SPMD_TYPE(tp = P)
Tensor assert_untyped(const Tensor& x) {
  return spmd::assert_type(x * 2, {tp = P});
}

// A shard whose dim a pointwise op lost (S(1), rank unknown): V, may be P.
SPMD_TYPE(tp = P)
Tensor assert_lost_dim(SPMD_TYPE(tp = S(1)) const Tensor& x) {
  return spmd::assert_type(torch::relu(x), {tp = P});
}

// A local region keeps local semantics (spec §12.5): S(i) reads as V there.
SPMD_LOCAL
SPMD_TYPE(tp = P)
Tensor assert_in_local_region(SPMD_TYPE(tp = S(1)) const Tensor& x) {
  return spmd::assert_type(x, {tp = P});
}
