// The classic tensor-parallel bugs, each caught at compile time.
#include "Inputs/prelude.h"

// 1. Missing copy-to-tensor-parallel region: the invariant input is used
//    where a replicated one is required (its gradient would not be summed).
SPMD_TYPE(tp = V)
Tensor missing_copy_to_tp(SPMD_TYPE(tp = I) const Tensor& x,
                          SPMD_TYPE(tp = V) const Tensor& w1) {
  return torch::matmul(x, w1); // expected-error {{matmul: Invariant type on axis tp cannot mix with other types}}
  // expected-note@-3 {{'x' has type I on axis 'tp' declared here}}
  // expected-note@-3 {{'w1' has type V on axis 'tp' declared here}}
  // expected-note@-3 {{insert spmd::convert(..., tp, spmd::I, spmd::R) to make 'x' R on axis 'tp'}}
}

// 2. all_reduce on a replicated tensor (every rank would add n copies).
Tensor all_reduce_replicated(SPMD_TYPE(tp = R) const Tensor& x) {
  return spmd::all_reduce(x, tp, P, R); // expected-error {{all_reduce: expected input type P on axis tp, got R}} expected-note {{remove this spmd::all_reduce ('x' is R already)}}
  // expected-note@-2 {{type R on axis 'tp' declared here}}
}
Tensor all_reduce_replicated_src(SPMD_TYPE(tp = R) const Tensor& x) {
  return spmd::all_reduce(x, tp, R, R); // expected-error {{must be P}} expected-note {{suggestion: reducing replicated data is usually a bug}}
}

// 3. A nonlinear op on a partial sum (relu of a sum is not a sum of relus).
Tensor nonlinear_on_partial(SPMD_TYPE(tp = P) const Tensor& p) {
  return torch::gelu(p); // expected-error {{gelu: Partial type on axis tp cannot propagate through non-linear ops}}
  // expected-note@-2 {{'p' has type P on axis 'tp' declared here}}
  // expected-note@-2 {{insert spmd::all_reduce(..., tp, spmd::P, spmd::R) to make 'p' R on axis 'tp'}}
}

// 4. Two partial sums multiplied (a product of sums is not a sum of
//    products).
Tensor partial_times_partial(SPMD_TYPE(tp = P) const Tensor& a,
                             SPMD_TYPE(tp = P) const Tensor& b) {
  return a * b; // expected-error {{Partial in multiple factors of multilinear op}}
  // expected-note@-3 {{'a' has type P on axis 'tp' declared here}}
  // expected-note@-3 {{'b' has type P on axis 'tp' declared here}}
  // expected-note@-3 {{insert spmd::all_reduce(..., tp, spmd::P, spmd::R) to make 'a' R on axis 'tp'}}
}

// 5. A varying tensor returned where the signature says replicate.
SPMD_TYPE(tp = R) // expected-note {{declared type is {tp: R}}}
Tensor varying_returned(SPMD_TYPE(tp = V) const Tensor& x) { // expected-note {{type V on axis 'tp' declared here}}
  auto y = torch::relu(x);
  return y; // expected-error {{returned value has type V on axis 'tp', but 'varying_returned' is declared to return R there}}
}

// 6. Branches that leave a tensor R on one path and P on the other.
Tensor branches_disagree(SPMD_TYPE(tp = P) const Tensor& p, bool c) {
  Tensor y = p;
  if (c)
    y = spmd::all_reduce(p, tp, P, R); // expected-note {{type R on axis 'tp' set by this collective}}
  return torch::relu(y); // expected-error {{'y' has type R on axis 'tp' on one path and P on another}}
  // expected-note@-5 {{type P on axis 'tp' declared here}}
}

// 7. A loop whose body changes the tensor's type every iteration.
Tensor loop_changes_type(SPMD_TYPE(tp = P) const Tensor& p, int n) {
  Tensor x = p;
  for (int i = 0; i < n; ++i)
    x = spmd::all_reduce(x, tp, P, R); // expected-error {{'x' has type R on axis 'tp' on one path and P on another}}
  // expected-note@-1 {{type R on axis 'tp' set by this collective}}
  // expected-note@-5 {{type P on axis 'tp' declared here}}
  return x;
}
