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
