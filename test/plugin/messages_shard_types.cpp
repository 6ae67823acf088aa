// Diagnostics name a known shard by its dim (docs/plugin.md "Diagnostics"):
// in global mode a value whose shard dim is known is S(k) in every message
// and note that shows a per-axis type (mismatches, assert_type, a
// collective's input, path conflicts, an op's operands), and a repair gathers
// along that dim. A reduce over an axis where the value is no pending sum,
// of a value that is P on one other axis, names that axis (a dp gradient
// reduced over tp). The local run shows the same code in local mode: S(k)
// reads as V there, and a V is reduced as a pending sum.
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
// RUN-PLUGIN: -Xclang -verify=local
// RUN-FILECHECK: -fplugin-arg-spmd-check-global -fdiagnostics-parseable-fixits
#include "Inputs/prelude.h"

// --- a declared type -----------------------------------------------------

SPMD_TYPE(tp = R)
Tensor returned_shard(SPMD_TYPE(tp = S(0)) const Tensor& x) { // global-note {{type S(0) on axis 'tp' declared here}} local-note {{type V on axis 'tp' declared here}}
  return x; // global-error {{returned value has type S(0) on axis 'tp', but 'returned_shard' is declared to return R there}} local-error {{returned value has type V on axis 'tp'}}
  // global-note@-3 {{declared type is {tp: R}}} local-note@-3 {{declared type is {tp: R}}}
  // global-note@-2 {{insert spmd::all_gather(..., tp, spmd::S(0), spmd::R) to make 'x' R on axis 'tp'}}
  // CHECK: fix-it:"{{.*}}messages_shard_types.cpp":{18:10-18:10}:"spmd::all_gather("
  // CHECK: fix-it:"{{.*}}messages_shard_types.cpp":{18:11-18:11}:", tp, spmd::S(0), spmd::R)"
}

void takes_rows(SPMD_TYPE(tp = S(0)) const Tensor& a); // global-note {{declared type is {tp: S(0)}}}
void passes_columns(SPMD_TYPE(tp = S(1)) const Tensor& x) { // global-note {{type S(1) on axis 'tp' declared here}}
  takes_rows(x); // global-error {{argument 'x' of 'takes_rows' has type S(1) on axis 'tp', but parameter 'a' is declared S(0) there}}
}

// The outer axis of a tuple cannot be gathered first: no gather fix-it.
SPMD_TYPE(tp = R)
Tensor outer_of_tuple(SPMD_TYPE(spmd::spec({tp, dp}, spmd::None)) const Tensor& x) { // global-note {{type S(0) on axis 'tp' declared here}} local-note {{type V on axis 'tp' declared here}}
  return x; // global-error {{has type S(0) on axis 'tp', but 'outer_of_tuple' is declared to return R there}} local-error {{has type V on axis 'tp'}}
  // global-note@-3 {{declared type is {tp: R}}} local-note@-3 {{declared type is {tp: R}}}
  // CHECK-NOT: fix-it:"{{.*}}messages_shard_types.cpp":{33:
}

// --- assert_type -----------------------------------------------------------

void asserted(SPMD_TYPE(tp = S(0)) const Tensor& x) { // global-note {{type S(0) on axis 'tp' declared here}} local-note {{type V on axis 'tp' declared here}}
  spmd::assert_type(x, {tp = R}); // global-error {{spmd::assert_type: 'x' has type S(0) on axis 'tp', but the assertion says R (SPMD type mismatch on axis tp: tensor has S(0), expected R)}} local-error {{'x' has type V on axis 'tp', but the assertion says R (SPMD type mismatch on axis tp: tensor has V, expected R)}}
  // global-note@-1 {{insert spmd::all_gather(..., tp, spmd::S(0), spmd::R) to make 'x' R on axis 'tp'}}
}

// --- a collective's input --------------------------------------------------

SPMD_TYPE(tp = R)
Tensor convert_of_shard(SPMD_TYPE(tp = S(1)) const Tensor& x) { // global-note {{type S(1) on axis 'tp' declared here}} local-note {{type V on axis 'tp' declared here}}
  return spmd::convert(x, tp, I, R); // global-error {{convert: expected input type I on axis tp, got S(1)}} local-error {{convert: expected input type I on axis tp, got V}}
  // global-note@-1 {{suggestion: The tensor is S(1) here; to make it I first use spmd::all_gather(x, tp, S(1), I)}}
  // local-note@-2 {{suggestion: The tensor is V here; to make it I first use spmd::all_gather(x, tp, V, I)}}
}

// --- paths and operands ----------------------------------------------------

Tensor conflict(SPMD_TYPE(tp = S(1)) const Tensor& x, // global-note {{type S(1) on axis 'tp' declared here}} local-note {{type V on axis 'tp' declared here}}
                SPMD_TYPE(tp = P) const Tensor& y, bool c) { // global-note {{type P on axis 'tp' declared here}} local-note {{type P on axis 'tp' declared here}}
  Tensor z = x;
  if (c)
    z = y;
  return z * 2; // global-error {{'z' has type S(1) on axis 'tp' on one path and P on another}} local-error {{'z' has type V on axis 'tp' on one path and P on another}}
}

Tensor operands(SPMD_TYPE(tp = S(1)) const Tensor& x, // global-note {{'x' has type S(1) on axis 'tp' declared here}} local-note {{'x' has type V on axis 'tp' declared here}}
                SPMD_TYPE(tp = I) const Tensor& y) { // global-note {{'y' has type I on axis 'tp' declared here}} local-note {{'y' has type I on axis 'tp' declared here}}
  return x + y; // global-error {{cannot mix}} local-error {{cannot mix}}
  // global-note@-1 {{insert spmd::convert(..., tp, spmd::I, spmd::R) to make 'y' R on axis 'tp'}} local-note@-1 {{insert spmd::convert}}
}

// --- a reduce over the wrong axis ------------------------------------------

Tensor grad_of(const Tensor& w);

// The row-parallel weight's gradient: sharded on tp, pending on dp.
SPMD_TYPE(dp = R, tp = S(1))
Tensor dp_grad_reduced_on_tp(SPMD_TYPE(dp = R, tp = S(1)) const Tensor& w) {
  Tensor g = spmd::assert_type(grad_of(w), {dp = P, tp = S(1)}); // global-note {{type P on axis 'dp' set by this spmd::assert_type}} global-note {{type S(1) on axis 'tp' set by this spmd::assert_type}}
  // One error: the result is typed as the reduce over dp (no follow-on
  // error at the return).
  return spmd::all_reduce(g, tp, P, R); // global-error {{all_reduce over axis 'tp' of 'g', which is S(1) there (no pending sum): 'g' is P on axis 'dp', not 'tp'; reduce over 'dp'}}
  // global-note@-1 {{reduce over 'dp': pass dp as the axis}}
  // CHECK: fix-it:"{{.*}}messages_shard_types.cpp":{80:30-80:32}:"dp"
  // In local mode a V is reduced as a pending sum (spec §7.3): the reduce
  // over tp is legal there, and the gradient still pending on dp is
  // reported where it is returned.
  // local-error@-6 {{returned value has type P on axis 'dp', but 'dp_grad_reduced_on_tp' is declared to return R there}}
  // local-error@-7 {{returned value has type R on axis 'tp', but 'dp_grad_reduced_on_tp' is declared to return S(1) there}}
  // local-note@-11 {{type P on axis 'dp' set by this spmd::assert_type}} local-note@-8 {{type R on axis 'tp' set by this collective}}
  // local-note@-14 2 {{declared type is {dp: R, tp: S(1)}}}
}

// A replicated-on-tp gradient (a norm's weight): I on tp, P on dp.
SPMD_TYPE(dp = R, tp = I)
Tensor norm_grad_reduced_on_tp(const Tensor& w) {
  Tensor g = spmd::assert_type(grad_of(w), {dp = P, tp = I}); // global-note {{type P on axis 'dp'}} global-note {{type I on axis 'tp'}} local-note {{type P on axis 'dp'}} local-note {{type I on axis 'tp'}}
  return spmd::all_reduce(g, tp, P, R); // global-error {{'g' is P on axis 'dp', not 'tp'; reduce over 'dp'}} global-note {{reduce over 'dp'}} local-error {{'g' is P on axis 'dp', not 'tp'; reduce over 'dp'}} local-note {{reduce over 'dp'}}
}

// Where it must not fire: the right axis; a value pending on two other
// axes (which one was meant is unclear); a double reduce (reduced on this
// axis already: the double reduce's own report).
SPMD_TYPE(dp = R, tp = S(1))
Tensor right_axis(SPMD_TYPE(dp = R, tp = S(1)) const Tensor& w) {
  Tensor g = spmd::assert_type(grad_of(w), {dp = P, tp = S(1)});
  return spmd::all_reduce(g, dp, P, R);
}

SPMD_AXIS(ep);
Tensor pending_on_two(const Tensor& w) {
  Tensor g = spmd::assert_type(grad_of(w), {dp = P, ep = P, tp = I}); // global-note {{type I on axis 'tp' set by this spmd::assert_type}} local-note {{type I on axis 'tp' set by this spmd::assert_type}}
  return spmd::all_reduce(g, tp, P, I); // global-error {{'g' is no pending sum}} global-note {{remove this spmd::all_reduce}} local-error {{'g' is no pending sum}} local-note {{remove this spmd::all_reduce}}
}

Tensor double_reduce(const Tensor& w) {
  Tensor g = spmd::assert_type(grad_of(w), {dp = P, tp = P});
  auto once = spmd::all_reduce(g, tp, P, I); // global-note {{reduced on axis 'tp' here already}} local-note {{reduced on axis 'tp' here already}}
  return spmd::all_reduce(once, tp, P, I); // global-error {{'once' is already reduced}} global-note {{remove this spmd::all_reduce}} local-error {{'once' is already reduced}} local-note {{remove this spmd::all_reduce}}
}
