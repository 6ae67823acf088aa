// Options of a collective held in a local variable are read when the
// variable is set by its initializer and by field assignments among the
// statements of its block before the call (`opts.inplace = true;`). Anything
// else done to it (an assignment in a branch, a copy, a call that takes it)
// leaves it unread: expert_mode is assumed and the call is not in place.
// An in-place all_reduce updates its input: an undeclared variable or a
// by-value parameter takes the dst type; a declared variable or a reference
// parameter is checked like an in-place op's destination.
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
// RUN-PLUGIN: -Xclang -verify=strict -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

// ScaleLLM's in-place reduce: `input` is R after it.
SPMD_TYPE(tp = R)
Tensor reduce_in_place(SPMD_TYPE(tp = P) Tensor input) {
  spmd::CollectiveOptions options;
  options.inplace = true;
  spmd::all_reduce(input, tp, P, R, options);
  return input;
}

// Written in place, the same.
SPMD_TYPE(tp = R)
Tensor reduce_in_place_braced(SPMD_TYPE(tp = P) const Tensor& p) {
  auto x = p * 2;
  spmd::all_reduce(x, tp, P, R, spmd::CollectiveOptions{{}, {}, {}, true});
  return x;
}

// Not in place: the result is dropped, `input` is still a pending sum.
SPMD_TYPE(tp = R)
Tensor result_dropped(SPMD_TYPE(tp = P) Tensor input) {
  spmd::CollectiveOptions options;
  options.inplace = false;
  spmd::all_reduce(input, tp, P, R, options);
  return input; // expected-error {{returned value has type P on axis 'tp', but 'result_dropped' is declared to return R there}} strict-error {{returned value has type P}}
}

// The field set after the call does not reach it.
SPMD_TYPE(tp = R)
Tensor set_after_the_call(SPMD_TYPE(tp = P) Tensor input) {
  spmd::CollectiveOptions options;
  spmd::all_reduce(input, tp, P, R, options);
  options.inplace = true;
  return input; // expected-error {{returned value has type P on axis 'tp'}} strict-error {{returned value has type P}}
}

// A declared local updated in place to another type: reported there.
void declared_in_place(SPMD_TYPE(tp = P) const Tensor& p) {
  SPMD_TYPE(tp = P) Tensor acc = p * 2;
  spmd::CollectiveOptions options;
  options.inplace = true;
  spmd::all_reduce(acc, tp, P, R, options); // expected-error {{result of the in-place operation has type R on axis 'tp', but 'acc' is declared P there}} strict-error {{result of the in-place operation}}
}

// expert_mode from a variable lifts the convert gate; without it, the gate.
void expert_from_variable(SPMD_TYPE(tp = R) const Tensor& x) {
  spmd::CollectiveOptions opts;
  opts.expert_mode = true;
  spmd::convert(x, tp, R, I, opts);
  spmd::CollectiveOptions plain;
  spmd::convert(x, tp, R, I, plain); // expected-error {{expert_mode}} strict-error {{expert_mode}}
}

// Set in a branch: not read (permissive: no gate error, not in place).
void set_in_a_branch(SPMD_TYPE(tp = R) const Tensor& x, bool c) {
  spmd::CollectiveOptions opts;
  if (c)
    opts.expert_mode = true;
  spmd::convert(x, tp, R, I, opts);
}

// In place by a value the checker cannot read: `input`'s type on the axis is
// unknown afterwards (strict mode says so at its use).
bool runtime_flag();
SPMD_TYPE(tp = R)
Tensor in_place_maybe(SPMD_TYPE(tp = P) Tensor input) {
  spmd::CollectiveOptions options;
  options.inplace = runtime_flag();
  spmd::all_reduce(input, tp, P, R, options);
  return input; // strict-warning {{'input' has an unknown SPMD type}}
}
