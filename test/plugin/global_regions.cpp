// Global mode per axis and local regions (docs/plugin.md "Global mode"):
// local-axes=dp keeps dp local (spec §12.5); an [[spmd::local]] function is a
// local_map region (spec §12.3): its body is typed locally, its annotations
// are checked at calls (a known shard against S(k)) and stamp its result;
// spmd::assert_type with S(k) gives a value its shard dim.
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-local-axes=dp
#include "Inputs/prelude.h"

// --- local-axes: dp keeps local semantics ----------------------------------

SPMD_TYPE(dp = R, tp = R)
Tensor local_axis(SPMD_TYPE(dp = S(0), tp = S(0)) const Tensor& x) {
  auto a = spmd::all_reduce(x, dp, P, R); // dp is local: S(0) reads as V
  return spmd::all_reduce(a, tp, P, R); // global-error {{all_reduce with src = P on a tensor sharded on dim 0 on axis tp (S(0)): a shard is not a pending sum}} global-note {{suggestion: gather along dim 0}}
  // global-note@-3 {{type S(0) on axis 'tp' declared here}}
}

// --- [[spmd::local]] regions -----------------------------------------------

// Inside the region the local rules apply: the partial sum is declared by
// hand, as in local mode.
SPMD_LOCAL
SPMD_TYPE(tp = P)
Tensor region_partial(SPMD_TYPE(tp = S(1)) const Tensor& x,
                      SPMD_TYPE(tp = S(0)) const Tensor& w) {
  return spmd::reinterpret(x.mm(w), tp, V, P);
}

SPMD_TYPE(tp = R)
Tensor call_region(SPMD_TYPE(tp = S(1)) const Tensor& x,
                   SPMD_TYPE(tp = S(0)) const Tensor& w) {
  return spmd::all_reduce(region_partial(x, w), tp, P, R);
}

// The boundary checks shard dims: x is sharded on the wrong dim.
SPMD_TYPE(tp = R)
Tensor call_region_wrong_dim(SPMD_TYPE(tp = S(0)) const Tensor& x,
                             SPMD_TYPE(tp = S(0)) const Tensor& w) {
  return spmd::all_reduce(region_partial(x, w), tp, P, R); // global-error {{argument 'x' of 'region_partial' has type S(0) on axis 'tp'}}
  // global-note@-3 {{type S(0) on axis 'tp' declared here}} global-note@24 {{declared type is {tp: S(1)}}}
}

// The region's declared result stamps the shard dim in global code.
SPMD_LOCAL
SPMD_TYPE(tp = S(-1))
Tensor region_shard(SPMD_TYPE(tp = V) const Tensor& x) { return x.relu(); }

SPMD_TYPE(tp = R)
Tensor gather_region_result(SPMD_TYPE(tp = V) const Tensor& x) {
  auto y = region_shard(x); // global-note {{type S(-1) on axis 'tp' returned by this call (the callee's declared result type)}}
  return spmd::all_gather(y, tp, S(-2), R); // global-error {{sharded on dim -1 (S(-1))}} global-note {{did you mean src = S(-1)?}}
}

// --- assert_type with S(k) -------------------------------------------------

SPMD_TYPE(tp = R)
Tensor assert_gives_dim(SPMD_TYPE(tp = V) const Tensor& x) {
  auto y = torch::relu(x);
  spmd::assert_type(y, {tp = S(-1)}); // global-note {{type S(-1) on axis 'tp' set by this spmd::assert_type}}
  return spmd::all_gather(y, tp, S(-2), R); // global-error {{sharded on dim -1 (S(-1))}} global-note {{did you mean src = S(-1)?}}
}

SPMD_TYPE(tp = V)
Tensor assert_other_dim(SPMD_TYPE(tp = S(0)) const Tensor& x) {
  spmd::assert_type(x, {tp = S(1)}); // global-error {{it is sharded on dim 0, not 1}}
  // global-note@-2 {{type S(0) on axis 'tp' declared here}}
  return x;
}

// --- tuples with a local axis, and inside a local region -------------------

// dp is local (local-axes=dp): it is not part of the innermost rule, so
// gathering it while tp is the inner axis of dim 0 is not checked.
SPMD_TYPE(dp = R, tp = S(0))
Tensor tuple_local_axis(SPMD_TYPE(spmd::spec({dp, tp}, spmd::None)) const Tensor& x) {
  return spmd::all_gather(x, dp, S(0), R);
}

// Inside a local region nothing is global: gathering tp, the outer axis of
// dim 1, is not checked there; in global code it is.
SPMD_AXIS(ep);
SPMD_LOCAL
SPMD_TYPE(tp = R)
Tensor region_tuple(SPMD_TYPE(spmd::spec(spmd::None, {tp, ep})) const Tensor& x) {
  return spmd::all_gather(x, tp, S(1), R);
}

SPMD_TYPE(tp = R)
Tensor tuple_outer_in_global_code(SPMD_TYPE(spmd::spec(spmd::None, {tp, ep})) const Tensor& x) { // global-note {{type S(1) on axis 'tp' declared here}}
  return spmd::all_gather(x, tp, S(1), R); // global-error {{all_gather on axis tp is not allowed because it is not the innermost axis in its PartitionSpec group (tp, ep) (dim 1)}} global-note {{suggestion: first move ep off the dim}}
}
