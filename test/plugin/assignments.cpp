// A declared variable keeps its declared type: its initializer and every
// assignment to it are checked. An undeclared variable takes the type of
// what was assigned, flow-sensitively.
#include "Inputs/prelude.h"

void declared_locals(SPMD_TYPE(tp = P) const Tensor& p, // #p
                     SPMD_TYPE(tp = R) const Tensor& r) { // #r
  SPMD_TYPE(tp = R) Tensor a = spmd::all_reduce(p, tp, P, R); // #a
  SPMD_TYPE(tp = R) Tensor b = p; // expected-error {{initializer of 'b' has type P on axis 'tp', but 'b' is declared R there}} expected-note {{declared type is {tp: R}}} expected-note {{insert spmd::all_reduce(..., tp, spmd::P, spmd::R) to make 'p' R on axis 'tp'}}
  // expected-note@#p {{type P on axis 'tp' declared here}}
  a = r;
  a = p; // expected-error {{value assigned to 'a' has type P on axis 'tp', but 'a' is declared R there}} expected-note {{insert spmd::all_reduce}}
  // expected-note@#p {{type P on axis 'tp' declared here}}
  // expected-note@#a {{declared type is {tp: R}}}
  a = opaque(p); // unknown: accepted
  // After a failed assignment the variable still has its declared type.
  spmd::all_reduce(a, tp, P, R); // expected-error {{expected input type P on axis tp, got R}} expected-note {{remove this spmd::all_reduce ('a' is R already)}}
  // expected-note@#a {{type R on axis 'tp' declared here}}
}

void declared_without_initializer(SPMD_TYPE(tp = V) const Tensor& v) {
  SPMD_TYPE(dp = R, tp = V) Tensor acc;
  acc = v;
  acc += v;
  acc.add_(v);
}

void compound_assignment_on_declared(SPMD_TYPE(tp = R) const Tensor& r,
                                     SPMD_TYPE(tp = V) const Tensor& v) { // #v
  SPMD_TYPE(tp = R) Tensor acc = r; // expected-note {{declared type is {tp: R}}}
  acc += v; // expected-error {{result of the in-place operation has type V on axis 'tp', but 'acc' is declared R there}}
  // expected-note@#v {{type V on axis 'tp' declared here}}
}

SPMD_TYPE(tp = R)
Tensor undeclared_follow_assignments(SPMD_TYPE(tp = P) const Tensor& p) {
  auto x = p;                          // P
  x = spmd::all_reduce(x, tp, P, R);   // now R
  auto y = x;                          // R
  y = torch::relu(y);                  // R
  return y;
}

struct Block {
  SPMD_TYPE(tp = V) Tensor w; // #w
  void update(SPMD_TYPE(tp = V) const Tensor& g,
              SPMD_TYPE(tp = I) const Tensor& bad) { // #bad
    w = w - g * 0.1;
    this->w = bad; // expected-error {{value assigned to 'w' has type I on axis 'tp', but 'w' is declared V there}} expected-note {{insert spmd::convert(..., tp, spmd::I, spmd::V)}}
    // expected-note@#bad {{type I on axis 'tp' declared here}}
    // expected-note@#w {{declared type is {tp: V}}}
  }
};

// Constructor member initializers are checked against the field's type.
struct Shard {
  SPMD_TYPE(tp = V) Tensor w; // #shard_w
  SPMD_TYPE(tp = R) Tensor b; // #shard_b
  Shard(SPMD_TYPE(tp = V) const Tensor& weight,
        SPMD_TYPE(tp = P) const Tensor& bias) // #bias
      : w(weight),
        b(bias) {} // expected-error {{initializer of 'b' has type P on axis 'tp', but 'b' is declared R there}} expected-note {{insert spmd::all_reduce}}
  // expected-note@#bias {{type P on axis 'tp' declared here}}
  // expected-note@#shard_b {{declared type is {tp: R}}}
};
