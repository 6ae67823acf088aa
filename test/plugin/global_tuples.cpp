// Several axes on one tensor dim (spec §12.1's tuple entry, docs/plugin.md
// "Global mode"): spmd::spec({dp, tp}, None) shards dim 0 by dp (outer) and
// tp (inner). The plugin keeps each axis's dim and its position in the
// tuple: ops that move dims keep the tuple, a collective may act only on the
// innermost axis of its dim's tuple (spec §12.4), all_gather over it removes
// it, a reduce_scatter onto a dim appends the axis as the innermost, and
// operands that order one dim's axes differently are rejected (spec §12.2).
// A branch where an axis has one rank (a size-1 guard) drops that axis from
// the tuples (spec §12.1's normalisation). The second run shows that none of
// this fires in local mode, where S(i) reads as V.
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
// RUN-PLUGIN: -Xclang -verify=local
// local-no-diagnostics
#include "Inputs/prelude.h"

using spmd::None;

// --- the innermost-axis rule -------------------------------------------------

// Gathering the inner axis first, then the outer one: legal.
SPMD_TYPE(dp = R, tp = R)
Tensor gather_inner_then_outer(SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& x) {
  auto y = spmd::all_gather(x, tp, S(0), R); // tp leaves the tuple: (dp)
  return spmd::all_gather(y, dp, S(0), R);
}

// Gathering the outer axis while the inner one still shards the dim.
SPMD_TYPE(dp = R, tp = S(0))
Tensor gather_outer(SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& x) {
  return spmd::all_gather(x, dp, S(0), R); // global-error {{all_gather on axis dp is not allowed because it is not the innermost axis in its PartitionSpec group (dp, tp) (dim 0); only the innermost axis (tp) can be redistributed directly}} global-note {{suggestion: first move tp off the dim (e.g. all_gather on tp), or use local_map}}
  // global-note@-2 {{type S(0) on axis 'dp' declared here}}
}

// Three axes: only the last may move; all_to_all is a redistribution too.
SPMD_AXIS(ep);
SPMD_TYPE(dp = S(1), tp = S(1), ep = S(0))
Tensor three_axes(SPMD_TYPE(spmd::spec(None, {dp, tp, ep})) const Tensor& x) {
  auto a = spmd::all_to_all(x, tp, S(1), S(0)); // global-error {{all_to_all on axis tp is not allowed because it is not the innermost axis in its PartitionSpec group (dp, tp, ep) (dim 1)}} global-note {{suggestion: first move ep off the dim}}
  // global-note@-2 {{type S(1) on axis 'tp' declared here}}
  return spmd::all_to_all(x, ep, S(1), S(0));
}

// --- all_gather removes the axis, reduce_scatter appends it -------------------

// A partial sum scattered onto a dim dp already shards: (dp, tp).
SPMD_TYPE(dp = R, tp = R)
Tensor scatter_appends(SPMD_TYPE(dp = S(0), tp = P) const Tensor& p) {
  auto y = spmd::reduce_scatter(p, tp, P, S(0)); // y: ({dp, tp}, ...)
  auto bad = spmd::all_gather(y, dp, S(0), R); // global-error {{all_gather on axis dp is not allowed because it is not the innermost axis in its PartitionSpec group (dp, tp) (dim 0)}} global-note {{suggestion: first move tp off the dim}}
  // global-note@-3 {{type S(0) on axis 'dp' declared here}}
  auto z = spmd::all_gather(y, tp, S(0), R);
  return spmd::all_gather(z, dp, S(0), R);
}

// all_to_all moves the axis to the end of the target dim's tuple.
SPMD_TYPE(dp = S(1), tp = R)
Tensor all_to_all_appends(SPMD_TYPE(spmd::spec(tp, dp)) const Tensor& x) {
  auto y = spmd::all_to_all(x, tp, S(0), S(1)); // y: (None, {dp, tp})
  auto bad = spmd::all_gather(y, dp, S(1), R); // global-error {{all_gather on axis dp is not allowed because it is not the innermost axis in its PartitionSpec group (dp, tp) (dim 1)}} global-note {{suggestion: first move tp off the dim}}
  // global-note@-3 {{type S(1) on axis 'dp' declared here}}
  return spmd::all_gather(y, tp, S(1), R);
}

// --- ops that move dims keep the tuple --------------------------------------

SPMD_TYPE(dp = R, tp = R)
Tensor transpose_keeps_order(SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& x) {
  auto y = x.transpose(0, 1).relu(); // (None, {dp, tp})
  auto bad = spmd::all_gather(y, dp, S(1), R); // global-error {{all_gather on axis dp is not allowed because it is not the innermost axis in its PartitionSpec group (dp, tp) (dim 1)}} global-note {{suggestion: first move tp off the dim}}
  // global-note@-3 {{type S(1) on axis 'dp' declared here}}
  auto z = spmd::all_gather(y, tp, S(1), R);
  return spmd::all_gather(z, dp, S(1), R);
}

// Pointwise ops on operands with the same tuple keep it.
SPMD_TYPE(dp = S(0), tp = R)
Tensor add_same_order(SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& a,
                      SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& b) {
  return spmd::all_gather(a + b, tp, S(0), R);
}

// Operands that order one dim's axes differently.
SPMD_TYPE(dp = V, tp = V)
Tensor add_other_order(SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& a,
                       SPMD_TYPE(spmd::spec({tp, dp}, None)) const Tensor& b) {
  return a + b; // global-error {{operator+: PartitionSpec axis order conflict: one operand shards a dim by (dp outer to tp) and another by (tp outer to dp)}} global-note {{suggestion: redistribute one operand so both use the same order}}
  // global-note@-3 {{'a' has type S(0) on axis 'tp' declared here}} global-note@-2 {{'b' has type S(0) on axis 'tp' declared here}}
}

// spmd::assert_type of the same dim keeps the axis's place in the tuple.
SPMD_TYPE(dp = R, tp = S(0))
Tensor assert_keeps_position(SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& x) {
  auto y = x.relu();
  spmd::assert_type(y, {tp = S(0)});
  return spmd::all_gather(y, dp, S(0), R); // global-error {{all_gather on axis dp is not allowed because it is not the innermost axis in its PartitionSpec group (dp, tp) (dim 0)}} global-note {{suggestion: first move tp off the dim}}
  // global-note@-4 {{type S(0) on axis 'dp' declared here}}
}

// Map entries `dp = S(0), tp = S(0)` give no order: not checked.
SPMD_TYPE(dp = R, tp = S(0))
Tensor map_entries_unordered(SPMD_TYPE(dp = S(0), tp = S(0)) const Tensor& x) {
  return spmd::all_gather(x.relu(), dp, S(0), R);
}

// --- size-1 axes leave the tuple (spec §12.1 normalisation) ------------------

struct Parallel {
  [[spmd::axis_size(tp)]] int64_t tp_size() const;
};

// Where tp has one rank, (dp, tp) normalises to (dp): dp is innermost.
SPMD_TYPE(dp = R, tp = S(0))
Tensor size_one_inner(SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& x,
                      const Parallel& p) {
  if (p.tp_size() == 1)
    return spmd::all_gather(x, dp, S(0), R);
  return spmd::all_gather(x, dp, S(0), R); // global-error {{not the innermost axis in its PartitionSpec group (dp, tp) (dim 0)}} global-note {{suggestion: first move tp off the dim}}
  // global-note@-5 {{type S(0) on axis 'dp' declared here}}
}

// And operands whose orders differ only by tp agree there (b + a would
// report the conflict on axis dp).
SPMD_TYPE(dp = V, tp = V)
Tensor size_one_order(SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& a,
                      SPMD_TYPE(spmd::spec({tp, dp}, None)) const Tensor& b,
                      const Parallel& p) {
  if (p.tp_size() == 1)
    return b + a;
  return a - b; // global-error {{operator-: PartitionSpec axis order conflict}} global-note {{suggestion: redistribute one operand so both use the same order}}
  // global-note@-6 {{'a' has type S(0) on axis 'tp' declared here}} global-note@-5 {{'b' has type S(0) on axis 'tp' declared here}}
}

// --- a declared tuple's order is checked ---------------------------------------

// Returned as (dp, tp), declared (tp, dp): reported once per dim, with both
// orders; the same order, or map entries that give no order, pass.
SPMD_TYPE(spmd::spec({tp, dp}, None)) // global-note {{declared type is {spec((tp, dp), None)}}}
Tensor order_swapped(SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& x) { // global-note {{type S(0) on axis 'tp' declared here}}
  return x; // global-error {{returned value has type S(0) (dim 0 split by (dp, tp), outer to inner) on axis 'tp', but 'order_swapped' is declared to return S(0) (dim 0 split by (tp, dp), outer to inner) there}}
}
SPMD_TYPE(spmd::spec({dp, tp}, None))
Tensor order_kept(SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& x) {
  return x;
}
SPMD_TYPE(spmd::spec({tp, dp}, None))
Tensor order_not_given(SPMD_TYPE(dp = S(0), tp = S(0)) const Tensor& x) {
  return x;
}
