// PartitionSpec annotations (docs/plugin.md "Global mode"): spmd::spec(...)
// in [[spmd::type]] gives dim i's axis the type S(i) and the tensor its rank
// (spec §12.1); the other axes are written as `axis = type` beside it. A
// tuple {dp, tp} shards one dim by several axes in order (global_tuples.cpp);
// an axis given twice and a spec whose length is not the rank are rejected. The second run shows the spec is accepted in local mode (S(i) as V).
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=local
#include "Inputs/prelude.h"

using spmd::None;

// --- a spec is S(i) per axis, with the rank --------------------------------

SPMD_TYPE(tp = R)
Tensor spec_last_dim(SPMD_TYPE(spmd::spec(None, None, tp)) const Tensor& x) {
  auto ok = spmd::all_gather(x, tp, S(-1), R); // S(2) of rank 3 is S(-1)
  return ok + spmd::all_gather(x, tp, S(0), R); // global-error {{sharded on dim 2 (S(2))}} global-note {{did you mean src = S(2)?}}
  // global-note@-3 {{type S(2) on axis 'tp' declared here}}
}

// Row-parallel matmul from specs: the contraction dim is sharded on both.
SPMD_TYPE(dp = S(0), tp = R)
Tensor row_parallel(SPMD_TYPE(spmd::spec(dp, tp)) const Tensor& x,
                    SPMD_TYPE(spmd::spec(tp, None), dp = R) const Tensor& w) {
  return spmd::all_reduce(x.mm(w), tp, P, R);
}

// The same with the full (unsplit) input: rejected at the matmul.
SPMD_TYPE(dp = S(0), tp = R)
Tensor full_input(SPMD_TYPE(spmd::spec(dp, None), tp = R) const Tensor& x,
                  SPMD_TYPE(spmd::spec(tp, None), dp = R) const Tensor& w) {
  return spmd::all_reduce(x.mm(w), tp, P, R); // global-error {{No valid sharding strategy for x.mm on axis tp: args[1] is sharded on dim 0, the contraction dim (j), but args[0] is replicated on its dim 1}} global-note {{suggestion: shard args[0] on dim 1 as well}}
  // global-note@-3 {{'x' has type R on axis 'tp' declared here}} global-note@-2 {{'w' has type S(0) on axis 'tp' declared here}}
}

// A spec with only None entries: a rank, no shard.
SPMD_TYPE(tp = R)
Tensor spec_none(SPMD_TYPE(spmd::spec(None, None), tp = R) const Tensor& x) {
  return x;
}

// --- bad specs ---------------------------------------------------------------

void axis_twice(SPMD_TYPE(spmd::spec(tp, tp)) const Tensor& x); // global-error {{axis 'tp' appears twice in 'spmd::type'}} global-note {{axis 'tp' first given here}} local-error {{axis 'tp' appears twice in 'spmd::type'}} local-note {{axis 'tp' first given here}}

void axis_in_spec_and_map(SPMD_TYPE(spmd::spec(tp, None), tp = R) const Tensor& x); // global-error {{axis 'tp' appears twice in 'spmd::type'}} global-note {{axis 'tp' first given here}} local-error {{axis 'tp' appears twice}} local-note {{first given here}}

// A tuple entry is accepted: dp and tp both shard dim 0, dp outer.
SPMD_TYPE(dp = R, tp = R)
Tensor tuple_dim(SPMD_TYPE(spmd::spec({dp, tp}, None)) const Tensor& x) {
  return spmd::all_gather(spmd::all_gather(x, tp, S(0), R), dp, S(0), R);
}

void tuple_axis_twice(SPMD_TYPE(spmd::spec({dp, tp}, tp)) const Tensor& x); // global-error {{axis 'tp' appears twice in 'spmd::type'}} global-note {{axis 'tp' first given here}} local-error {{axis 'tp' appears twice}} local-note {{first given here}}

void rank_mismatch(SPMD_TYPE(spmd::spec(tp, None), spmd::rank(3)) const Tensor& x); // global-error {{'spmd::spec' has 2 entries but 'spmd::rank(3)' says the tensor has 3 dims; a PartitionSpec has one entry per dim (write spmd::None for unsharded dims)}} local-error {{has 2 entries}}

void spec_twice(SPMD_TYPE(spmd::spec(tp), spmd::spec(dp)) const Tensor& x); // global-error {{'spmd::spec' given twice in 'spmd::type'}} local-error {{given twice}}

void unknown_axis(SPMD_TYPE(spmd::spec(ep, None)) const Tensor& x); // global-error {{unknown mesh axis 'ep' in 'spmd::type': no spmd::Axis constant of that name is in scope (declare it with SPMD_AXIS(ep))}} local-error {{unknown mesh axis 'ep'}}

void unnamed_axis(SPMD_TYPE(spmd::spec(spmd::Axis{""})) const Tensor& x); // global-error {{'spmd::spec' in 'spmd::type' must be a constant expression whose entries are spmd::None, an spmd::Axis constant (SPMD_AXIS) or a tuple {dp, tp}}} local-error {{must be a constant expression}}

// A tuple entry is printed as written, with its order (spec §12.1's
// PartitionSpec notation), in the declared-type note and the message; an
// annotation without a tuple keeps the `axis: type` form.
SPMD_AXIS(ep);
SPMD_TYPE(spmd::spec({tp, dp}, ep)) // global-note {{declared type is {spec((tp, dp), ep)}}} local-note {{declared type is {spec((tp, dp), ep)}}}
Tensor returns_tuple(SPMD_TYPE(dp = R, tp = V, ep = V) const Tensor& x) { // global-note {{type R on axis 'dp' declared here}} local-note {{type R on axis 'dp' declared here}}
  return x; // global-error {{returned value has type R on axis 'dp', but 'returns_tuple' is declared to return S(0) (dim 0 split by (tp, dp), outer to inner) there}} local-error {{returned value has type R on axis 'dp', but 'returns_tuple' is declared to return S(0) (dim 0 split by (tp, dp), outer to inner) there}}
  // global-note@-1 {{insert spmd::convert(..., dp, spmd::R, spmd::S(0))}} local-note@-1 {{insert spmd::convert(..., dp, spmd::R, spmd::S(0))}}
}
SPMD_TYPE(spmd::spec(tp, None), dp = R) // global-note {{declared type is {tp: S(0), dp: R}}} local-note {{declared type is {tp: S(0), dp: R}}}
Tensor returns_single(SPMD_TYPE(dp = R, tp = R) const Tensor& x) { // global-note {{type R on axis 'tp' declared here}} local-note {{type R on axis 'tp' declared here}}
  return x; // global-error {{returned value has type R on axis 'tp', but 'returns_single' is declared to return S(0) there}} local-error {{returned value has type R on axis 'tp', but 'returns_single' is declared to return S(0) there}}
  // global-note@-1 {{insert spmd::convert(..., tp, spmd::R, spmd::S(0))}} local-note@-1 {{insert spmd::convert(..., tp, spmd::R, spmd::S(0))}}
}
