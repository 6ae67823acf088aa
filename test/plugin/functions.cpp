// Calls of annotated functions: each argument is checked against its
// parameter's declared type, the result has the declared result type;
// unannotated functions are opaque; [[spmd::op(kind)]] types an opaque
// function by its op class; [[spmd::unchecked]] skips a body.
#include "Inputs/prelude.h"

SPMD_TYPE(tp = V) // #decl_f
Tensor column_parallel(SPMD_TYPE(tp = R) const Tensor& x, // #param_x
                       SPMD_TYPE(tp = V) const Tensor& w); // #param_w

void call_arguments(SPMD_TYPE(tp = I) const Tensor& i, // #i
                    SPMD_TYPE(tp = V) const Tensor& w,
                    SPMD_TYPE(tp = P) const Tensor& p) { // #p
  column_parallel(spmd::convert(i, tp, I, R), w);
  column_parallel(i, w); // expected-error {{argument 'i' of 'column_parallel' has type I on axis 'tp', but parameter 'x' is declared R there}} expected-note {{insert spmd::convert(..., tp, spmd::I, spmd::R) to make 'i' R on axis 'tp'}}
  // expected-note@#i {{type I on axis 'tp' declared here}}
  // expected-note@#param_x {{declared type is {tp: R}}}
  column_parallel(spmd::all_reduce(p, tp, P, R), p); // expected-error {{argument 'p' of 'column_parallel' has type P on axis 'tp', but parameter 'w' is declared V there}} expected-note {{insert spmd::reduce_scatter(..., tp, spmd::P, spmd::V)}}
  // expected-note@#p {{declared here}}
  // expected-note@#param_w {{declared type is {tp: V}}}
  // An unnamed argument is named by its position.
  column_parallel(i.contiguous(), w); // expected-error {{argument #1 of 'column_parallel' has type I on axis 'tp'}} expected-note {{insert spmd::convert}}
  // expected-note@#i {{declared here}}
  // expected-note@#param_x {{declared type is {tp: R}}}
}

SPMD_TYPE(tp = V)
Tensor result_type_flows(SPMD_TYPE(tp = R) const Tensor& x,
                         SPMD_TYPE(tp = V) const Tensor& w) {
  auto y = column_parallel(x, w); // {tp: V}
  spmd::all_reduce(y, tp, P, R);  // V taken as P: fine
  spmd::all_gather(y, tp, P, R);  // expected-error {{must be V or S(i)}}
  return y;
}

// Definition without annotations: the declaration's annotations apply.
Tensor column_parallel(const Tensor& x, const Tensor& w) {
  return torch::matmul(x, w).relu();
}

// Member functions.
struct Layer {
  SPMD_TYPE(tp = V) Tensor weight; // #weight
  SPMD_TYPE(tp = V) Tensor forward(SPMD_TYPE(tp = R) const Tensor& x) const; // #fwd_x
  void set(SPMD_TYPE(tp = P) const Tensor& g) {
    weight = g; // expected-error {{value assigned to 'weight' has type P on axis 'tp', but 'weight' is declared V there}} expected-note {{insert spmd::reduce_scatter}}
    // expected-note@-2 {{declared here}}
    // expected-note@#weight {{declared type is {tp: V}}}
  }
};
Tensor Layer::forward(const Tensor& x) const { return torch::matmul(x, weight); }

void methods(const Layer& l, SPMD_TYPE(tp = P) const Tensor& p) { // #p2
  auto y = l.forward(p); // expected-error {{argument 'p' of 'forward' has type P on axis 'tp', but parameter 'x' is declared R there}} expected-note {{insert spmd::all_reduce}}
  // expected-note@#p2 {{declared here}}
  // expected-note@#fwd_x {{declared type is {tp: R}}}
  spmd::all_reduce(y, tp, P, R);
  spmd::all_reduce(l.weight, tp, P, R);
}

// Opaque helpers declared by their op class (e.g. Megatron-style wrappers).
[[spmd::op(linear)]] Tensor my_scale(const Tensor& x);
[[spmd::op("nonlinear")]] Tensor my_act(const Tensor& x);
[[spmd::op(multilinear)]] Tensor my_proj(const Tensor& x, const Tensor& w);

SPMD_TYPE(tp = P)
Tensor op_classes(SPMD_TYPE(tp = P) const Tensor& p, // #p3
                  SPMD_TYPE(tp = R) const Tensor& r) {
  auto a = my_scale(p);    // linear(P) -> P
  auto b = my_proj(a, r);  // P @ R -> P
  my_act(b); // expected-error {{my_act: Partial type on axis tp cannot propagate through non-linear ops}} expected-note {{insert}}
  // expected-note@#p3 {{'b' has type P on axis 'tp' declared here}}
  return b;
}

// Unannotated functions are opaque: unknown flows silently.
SPMD_TYPE(tp = R)
Tensor opaque_calls(const Tensor& x) {
  auto y = opaque(x);
  return y;
}

// [[spmd::unchecked]] skips the body.
[[spmd::unchecked]] SPMD_TYPE(tp = R)
Tensor trust_me(SPMD_TYPE(tp = P) const Tensor& p) {
  return torch::relu(p);
}

SPMD_TYPE(tp = R)
Tensor uses_trusted(SPMD_TYPE(tp = P) const Tensor& p) {
  return trust_me(p);  // its declared result type is used
}
