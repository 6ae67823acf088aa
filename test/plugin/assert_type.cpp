// spmd::assert_type(x, {axis = type, ...}) refines an unknown type and checks
// a known one (spec §8.1: V asserted P refines to P).
#include "Inputs/prelude.h"

SPMD_TYPE(tp = R)
Tensor refine_unknown(const Tensor& raw) {
  auto x = opaque(raw);
  spmd::assert_type(x, {tp = P});
  return spmd::all_reduce(x, tp, P, R);
}

void refine_then_misuse(const Tensor& raw) {
  auto x = opaque(raw);
  spmd::assert_type(x, {tp = R}); // expected-note {{type R on axis 'tp' set by this spmd::assert_type}}
  spmd::all_reduce(x, tp, P, R);  // expected-error {{expected input type P on axis tp, got R}} expected-note {{remove this spmd::all_reduce ('x' is R already)}}
}

void check_known(SPMD_TYPE(tp = R) const Tensor& r, // #r
                 SPMD_TYPE(tp = V) const Tensor& v) {
  spmd::assert_type(r, {tp = R});
  spmd::assert_type(r, {tp = V}); // expected-error {{spmd::assert_type: 'r' has type R on axis 'tp', but the assertion says V}} expected-note {{insert spmd::convert(..., tp, spmd::R, spmd::V)}}
  // expected-note@#r {{type R on axis 'tp' declared here}}
  auto w = v;
  spmd::assert_type(w, {tp = P}); // V asserted P: w becomes P
  torch::relu(w); // expected-error {{cannot propagate through non-linear ops}} expected-note {{insert}}
  // expected-note@-2 {{'w' has type P on axis 'tp' set by this spmd::assert_type}}
}

SPMD_TYPE(dp = V, tp = R)
Tensor partial_assertion(const Tensor& raw) {
  auto x = spmd::assert_type(opaque(raw), {dp = V, tp = P});
  spmd::assert_type(x, {tp = P});  // other axes kept
  auto y = spmd::all_reduce(x, tp, P, R);
  return y;
}

void assert_conflict(SPMD_TYPE(tp = P) const Tensor& p, bool c) { // #p
  Tensor y = p;
  if (c)
    y = spmd::all_reduce(p, tp, P, R); // #r2
  spmd::assert_type(y, {tp = R}); // expected-error {{'y' has type R on axis 'tp' on one path and P on another}}
  // expected-note@#r2 {{set by this collective}}
  // expected-note@#p {{declared here}}
}
