// Control flow goes through clang::CFG: branches join (different types at a
// merge make a conflict, reported where the value is used), loops iterate to
// a fixed point, early returns, break/continue, switch, ?: and && / ||.
#include "Inputs/prelude.h"

Tensor if_else_conflict(SPMD_TYPE(tp = P) const Tensor& p, bool c) { // #p
  Tensor y;
  if (c)
    y = spmd::all_reduce(p, tp, P, R); // #r
  else
    y = p;
  return y.relu(); // expected-error {{'y' has type R on axis 'tp' on one path and P on another}}
  // expected-note@#r {{type R on axis 'tp' set by this collective}}
  // expected-note@#p {{type P on axis 'tp' declared here}}
}

Tensor conflict_reported_once(SPMD_TYPE(tp = P) const Tensor& p, bool c) { // #p2
  Tensor y = p;
  if (c)
    y = spmd::all_reduce(p, tp, P, R); // #r2
  auto a = y + y; // expected-error {{'y' has type R on axis 'tp' on one path and P on another}}
  auto b = y * 2.0;
  // expected-note@#r2 {{set by this collective}}
  // expected-note@#p2 {{declared here}}
  return a + b;
}

// A merge that is never used is not an error.
void unused_conflict(SPMD_TYPE(tp = P) const Tensor& p, bool c) {
  Tensor y = p;
  if (c)
    y = spmd::all_reduce(p, tp, P, R);
}

// Unknown on one path: the result is unknown, and unknown flows silently.
Tensor unknown_on_one_path(SPMD_TYPE(tp = P) const Tensor& p, bool c) {
  Tensor y = p;
  if (c)
    y = opaque(p);
  return torch::relu(y);
}

SPMD_TYPE(tp = R)
Tensor early_return(SPMD_TYPE(tp = P) const Tensor& p, bool c) { // #p3
  if (c)
    return spmd::all_reduce(p, tp, P, R);
  return p; // expected-error {{returned value has type P on axis 'tp', but 'early_return' is declared to return R there}} expected-note {{insert spmd::all_reduce}}
  // expected-note@#p3 {{type P on axis 'tp' declared here}}
  // expected-note@-6 {{declared type is {tp: R}}}
}

Tensor loop_break_continue(SPMD_TYPE(tp = V) const Tensor& v, int n) {
  Tensor x = v;
  for (int i = 0; i < n; ++i) {
    if (i == 1)
      continue;
    x = torch::relu(x);          // stays V
    if (i == 7)
      break;
  }
  while (n-- > 0)
    x = x * 2.0;
  do {
    x = x.t();
  } while (n > 10);
  return spmd::all_gather(x, tp, V, R);
}

Tensor loop_conflict(SPMD_TYPE(tp = V) const Tensor& v, int n) { // #v4
  Tensor x = v;
  while (n-- > 0)
    x = spmd::all_gather(x, tp, V, R); // expected-error {{'x' has type R on axis 'tp' on one path and V on another}}
  // expected-note@-1 {{set by this collective}}
  // expected-note@#v4 {{declared here}}
  return x;
}

Tensor short_circuit(SPMD_TYPE(tp = P) const Tensor& p, bool a, bool b) { // #p5
  Tensor y = p;
  if (a && (y = spmd::all_reduce(p, tp, P, R)).defined() && b) { // #r5
  }
  return torch::gelu(y); // expected-error {{'y' has type R on axis 'tp' on one path and P on another}}
  // expected-note@#r5 {{set by this collective}}
  // expected-note@#p5 {{declared here}}
}

Tensor switch_merge(SPMD_TYPE(tp = P) const Tensor& p, int k) { // #p6
  Tensor y;
  switch (k) {
  case 0:
    y = spmd::all_reduce(p, tp, P, R);
    break;
  case 1:
    y = spmd::all_reduce(p, tp, P, I); // #i6
    break;
  default:
    y = spmd::all_reduce(p, tp, P, R); // #r6
  }
  return y.exp(); // expected-error {{'y' has type R on axis 'tp' on one path and I on another}}
  // expected-note@#r6 {{set by this collective}}
  // expected-note@#i6 {{set by this collective}}
}

Tensor conditional_operator(SPMD_TYPE(tp = P) const Tensor& p, // #p7
                            SPMD_TYPE(tp = R) const Tensor& r, bool c) { // #r7
  auto y = c ? p : r;
  return y.sum(); // expected-error {{'y' has type R on axis 'tp' on one path and P on another}}
  // expected-note@#p7 {{declared here}}
  // expected-note@#r7 {{declared here}}
}

// The value of an assignment expression is the assigned value.
void assignment_value(SPMD_TYPE(tp = P) const Tensor& p) {
  Tensor y = p;
  Tensor z = (y = spmd::all_reduce(p, tp, P, R)); // #z
  spmd::all_reduce(z, tp, P, R); // expected-error {{expected input type P on axis tp, got R}} expected-note {{remove this spmd::all_reduce ('z' is R already)}}
  // expected-note@#z {{reduced on axis 'tp' here already (type R)}}
}
