// References alias what they bind to: reading a reference reads the
// variable or field, and assigning or updating in place through it changes
// the variable (and is checked against its declaration).
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
#include "Inputs/prelude.h"

Tensor update_through_reference(SPMD_TYPE(tp = R) const Tensor& r,
                                SPMD_TYPE(tp = V) const Tensor& v) {
  Tensor x = r;
  Tensor& alias = x;
  alias = spmd::reinterpret(v, tp, V, P);
  return torch::relu(x); // expected-error {{relu: Partial type on axis tp cannot propagate through non-linear ops}}
}

Tensor read_through_reference(SPMD_TYPE(tp = P) const Tensor& p) {
  Tensor x;
  Tensor& alias = x;
  x = p;
  return torch::relu(alias); // expected-error {{relu: Partial type on axis tp cannot propagate through non-linear ops}}
}

// In-place through a reference: the residual stream updated in a layer is
// the declared parameter, and is checked against its declaration.
SPMD_TYPE(tp = V)
Tensor residual_inplace(SPMD_TYPE(tp = R) Tensor hidden,
                        SPMD_TYPE(tp = R) const Tensor& r,
                        SPMD_TYPE(tp = V) const Tensor& v) {
  Tensor& residual = hidden;
  residual.add_(r);
  residual.add_(v); // expected-error {{result of the in-place operation has type V on axis 'tp'}}
  return hidden + v;
}

struct Layer {
  SPMD_TYPE(tp = R) Tensor weight;
  void step(SPMD_TYPE(tp = P) const Tensor& g, SPMD_TYPE(tp = R) const Tensor& d) {
    Tensor& w = weight;
    w.sub_(d);
    w.sub_(g); // expected-error {{Partial type on axis tp cannot be added to a non-partial term}}
  }
};

// A const reference to a temporary is just a value.
Tensor bound_to_temporary(SPMD_TYPE(tp = P) const Tensor& p) {
  const Tensor& t = p * 2.0;
  return torch::relu(t); // expected-error {{relu: Partial type}}
}
