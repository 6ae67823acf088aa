// Fix-its: where one collective fixes the error, a note carries the edit.
// RUN-PLUGIN: -Xclang -verify
// RUN-FILECHECK: -fdiagnostics-parseable-fixits
#include "Inputs/prelude.h"

SPMD_TYPE(tp = V)
Tensor copy_to_tp(SPMD_TYPE(tp = I) const Tensor& x, // expected-note {{'x' has type I}}
                  SPMD_TYPE(tp = V) const Tensor& w) { // expected-note {{'w' has type V}}
  return torch::matmul(x, w); // expected-error {{cannot mix}} expected-note {{insert spmd::convert(..., tp, spmd::I, spmd::R) to make 'x' R on axis 'tp'}}
  // CHECK: fix-it:"{{.*}}fixits.cpp":{9:24-9:24}:"spmd::convert("
  // CHECK: fix-it:"{{.*}}fixits.cpp":{9:25-9:25}:", tp, spmd::I, spmd::R)"
}

SPMD_TYPE(tp = R)
Tensor missing_all_reduce(SPMD_TYPE(tp = P) const Tensor& partial_sum) { // expected-note {{declared here}}
  return partial_sum; // expected-error {{returned value has type P}} expected-note@-2 {{declared type}} expected-note {{insert spmd::all_reduce(..., tp, spmd::P, spmd::R)}}
  // CHECK: fix-it:"{{.*}}fixits.cpp":{16:10-16:10}:"spmd::all_reduce("
  // CHECK: fix-it:"{{.*}}fixits.cpp":{16:21-16:21}:", tp, spmd::P, spmd::R)"
}

void wrong_src(SPMD_TYPE(tp = I) const Tensor& x) { // expected-note {{declared here}}
  spmd::convert(x, tp, R, S(0)); // expected-error {{expected input type R on axis tp, got I}} expected-note {{did you mean src = I?}}
  // CHECK: fix-it:"{{.*}}fixits.cpp":{22:24-22:25}:"spmd::I"
}

// No fix-it where the data movement is ambiguous (V -> R: stack or concat?).
SPMD_TYPE(tp = R)
Tensor no_fixit(SPMD_TYPE(tp = V) const Tensor& v) { // expected-note {{declared here}}
  return v; // expected-error {{returned value has type V}} expected-note@-2 {{declared type}}
  // CHECK-NOT: fix-it:"{{.*}}fixits.cpp":{29:
}

// A second reduce of a reduced value: the advice is to drop it (the fix-it
// replaces the call by its input), with a note at the first reduce.
SPMD_TYPE(tp = R)
Tensor double_reduce(SPMD_TYPE(tp = P) const Tensor& p) {
  auto y = spmd::all_reduce(p, tp, P, R); // expected-note {{reduced on axis 'tp' here already (type R)}}
  return spmd::all_reduce(y, tp, P, R); // expected-error {{all_reduce: expected input type P on axis tp, got R: 'y' is already reduced (reducing it again would add up tp-size copies of it); remove this all_reduce}} expected-note {{remove this spmd::all_reduce ('y' is R already)}}
  // CHECK: fix-it:"{{.*}}fixits.cpp":{38:10-38:39}:"y"
}

// Reduced to I, then reduced to R: the repair is the I -> R conversion.
SPMD_TYPE(tp = R)
Tensor double_reduce_to_r(SPMD_TYPE(tp = P) const Tensor& p) {
  auto y = spmd::all_reduce(p, tp, P, I); // expected-note {{reduced on axis 'tp' here already (type I)}}
  return spmd::all_reduce(y, tp, P, R); // expected-error {{got I: 'y' is already reduced}} expected-note {{replace this spmd::all_reduce by spmd::convert(..., tp, spmd::I, spmd::R), which makes 'y' R without reducing it}}
  // CHECK: fix-it:"{{.*}}fixits.cpp":{46:10-46:39}:"spmd::convert(y, tp, spmd::I, spmd::R)"
}

// Gathered, not reduced: no pending sum either, no note at a reduce.
SPMD_TYPE(tp = R)
Tensor reduce_after_gather(SPMD_TYPE(tp = V) const Tensor& v) {
  auto y = spmd::all_gather(v, tp, V, R); // expected-note {{type R on axis 'tp' set by this collective}}
  return spmd::all_reduce(y, tp, P, R); // expected-error {{got R: 'y' is no pending sum (reducing it would add up tp-size copies of it); remove this all_reduce}} expected-note {{remove this spmd::all_reduce}}
  // CHECK: fix-it:"{{.*}}fixits.cpp":{54:10-54:39}:"y"
}

// One reduce of a pending sum (also after a reinterpret): no diagnostic.
SPMD_TYPE(tp = R)
Tensor single_reduce(SPMD_TYPE(tp = V) const Tensor& v) {
  auto p = spmd::reinterpret(v, tp, V, P);
  return spmd::all_reduce(p, tp, P, R);
}

// gelu of a pending sum: reduce first. Where the gelu's result goes straight
// into the all_reduce, the fix-it moves that all_reduce onto the operand
// (inserting a second one would make it a double reduce).
SPMD_TYPE(tp = R)
Tensor gelu_then_reduce(SPMD_TYPE(tp = P) const Tensor& h) { // expected-note {{'h' has type P on axis 'tp' declared here}}
  return spmd::all_reduce(torch::gelu(h), tp, P, R); // expected-error {{torch::gelu: Partial type on axis tp cannot propagate through non-linear ops}} expected-note {{reduce 'h' before torch::gelu, not after it: move the enclosing spmd::all_reduce onto 'h'}}
  // CHECK: fix-it:"{{.*}}fixits.cpp":{70:10-70:27}:""
  // CHECK: fix-it:"{{.*}}fixits.cpp":{70:39-70:39}:"spmd::all_reduce("
  // CHECK: fix-it:"{{.*}}fixits.cpp":{70:40-70:40}:", tp, P, R)"
  // CHECK: fix-it:"{{.*}}fixits.cpp":{70:41-70:52}:""
}

// Reduced later, through a variable: the fix-it inserts the reduce before
// the gelu and moves nothing.
SPMD_TYPE(tp = R)
Tensor gelu_stored(SPMD_TYPE(tp = P) const Tensor& h) { // expected-note {{'h' has type P on axis 'tp' declared here}}
  auto g = torch::gelu(h); // expected-error {{cannot propagate through non-linear ops}} expected-note {{reduce 'h' before torch::gelu: insert spmd::all_reduce(..., tp, spmd::P, spmd::R) to make 'h' R on axis 'tp'}}
  // CHECK: fix-it:"{{.*}}fixits.cpp":{81:24-81:24}:"spmd::all_reduce("
  // CHECK: fix-it:"{{.*}}fixits.cpp":{81:25-81:25}:", tp, spmd::P, spmd::R)"
  // CHECK-NOT: fix-it:"{{.*}}fixits.cpp":{85:
  return spmd::all_reduce(g, tp, P, R);
}
