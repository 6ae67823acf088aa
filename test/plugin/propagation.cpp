// Ordinary tensor ops: free functions in torch::/at::, Tensor methods and
// overloaded operators, classified by the core's op table (spec §6.4-§6.5).
#include "Inputs/prelude.h"

// Annotations written through a macro work like any other.
#define DECL_P SPMD_TYPE(tp = P)
#define DECL_R SPMD_TYPE(tp = R)

SPMD_TYPE(tp = V)
Tensor free_functions(SPMD_TYPE(tp = R) const Tensor& r,
                      SPMD_TYPE(tp = V) const Tensor& v) {
  auto a = torch::matmul(r, v); // R @ V -> V
  auto b = torch::relu(a);      // nonlinear V -> V
  auto c = torch::add(b, r);    // V + R -> V
  auto d = at::mm(c, r.t());    // V
  return torch::nn::functional::linear(d, r); // nonlinear(V, R) -> V
}

SPMD_TYPE(tp = P)
Tensor partial_rules(DECL_P const Tensor& p, DECL_P const Tensor& q,
                     DECL_R const Tensor& r) {
  auto a = p + q;         // LINEAR, all P -> P
  auto b = a * r;         // MULTILINEAR, one P -> P
  auto c = b * 2.0;       // scaling -> P
  auto d = c / r;         // division by R -> P
  auto e = -d;            // negation -> P
  auto f = e.sum();       // reduction -> P
  auto g = torch::matmul(f, r);
  auto h = torch::cat({g, g}, 0); // LINEAR over a list -> P
  return at::addmm(h, p, r); // LINEAR(MULTILINEAR(P, R), P) -> P
}

void partial_errors(SPMD_TYPE(tp = P) const Tensor& p, // #p
                    SPMD_TYPE(tp = R) const Tensor& r, // #r
                    SPMD_TYPE(tp = V) const Tensor& v) { // #v
  p + r;           // expected-error {{affine}} expected-note {{insert spmd::all_reduce}}
  p + 1.0;         // expected-error {{affine}} expected-note {{insert spmd::all_reduce}}
  p * v;           // expected-error {{Partial type on axis tp cannot combine with Varying}} expected-note {{insert spmd::all_reduce}}
  r / p;           // expected-error {{nonlinear argument}} expected-note {{insert spmd::all_reduce}}
  p.relu();        // expected-error {{cannot propagate through non-linear ops}} expected-note {{insert}}
  p.exp();         // expected-error {{cannot propagate through non-linear ops}} expected-note {{insert}}
  p[0];            // expected-error {{cannot propagate through non-linear ops}} expected-note {{insert}}
  torch::nn::functional::linear(p, r); // expected-error {{non-linear}} expected-note {{insert}}
  torch::cat({p, r}); // expected-error {{affine}} expected-note {{insert}}
  // expected-note@#p 9 {{'p' has type P on axis 'tp' declared here}}
  // expected-note@#r 4 {{'r' has type R on axis 'tp' declared here}}
  // expected-note@#v {{'v' has type V on axis 'tp' declared here}}
}

void invariant_mixing(SPMD_TYPE(tp = I) const Tensor& i, // #i
                      SPMD_TYPE(tp = R) const Tensor& r) { // #r2
  auto ok = i * 2.0 + i;  // I with I and numbers -> I
  auto bad = ok + r; // expected-error {{Invariant type on axis tp cannot mix}} expected-note {{insert spmd::convert(..., tp, spmd::I, spmd::R) to make 'ok' R}}
  // expected-note@#i {{'ok' has type I on axis 'tp' declared here}}
  // expected-note@#r2 {{'r' has type R on axis 'tp' declared here}}
}

// Each axis is decided independently (spec §6.8).
SPMD_TYPE(dp = P, tp = V)
Tensor multi_axis(SPMD_TYPE(dp = P, tp = V) const Tensor& a, // #a
                  SPMD_TYPE(dp = R, tp = V) const Tensor& b,
                  SPMD_TYPE(dp = R, tp = R) const Tensor& c) { // #c
  auto ok = a * b; // {dp: P, tp: V}
  auto bad = spmd::all_reduce(ok, tp, P, R) + c; // expected-error {{Partial type on axis dp cannot be added to a non-partial term}} expected-note {{insert}}
  // expected-note@#a {{this value has type P on axis 'dp' declared here}}
  // expected-note@#c {{'c' has type R on axis 'dp' declared here}}
  return ok;
}

// In-place methods and compound assignment update the variable's type
// (spec §6.11): widening R -> V is allowed, other changes are not.
SPMD_TYPE(tp = V)
Tensor in_place(SPMD_TYPE(tp = R) const Tensor& r0,
                SPMD_TYPE(tp = V) const Tensor& v,
                DECL_P const Tensor& p) {
  Tensor x = r0;
  x.add_(v);        // x becomes V
  Tensor y = r0;
  y.mul_(p);        // expected-error {{in-place/out operation would change SPMD type on axis tp from R to P}} expected-note {{suggestion: Use the out-of-place op, or convert the}}
  Tensor z = p;
  z += p;           // stays P
  z *= 2.0;
  return x;
}

// Factories under a mesh are replicated on every mesh axis (spec §6.10);
// a typed operand missing a mesh axis is an error (mesh completeness).
SPMD_TYPE(dp = V, tp = V)
SPMD_MESH(dp, tp) // expected-note {{mesh declared here}}
Tensor factories(SPMD_TYPE(dp = V, tp = V) const Tensor& x,
                 SPMD_TYPE(tp = V) const Tensor& w) {
  auto bias = torch::zeros({4});     // {dp: R, tp: R}
  auto y = torch::matmul(x, w);      // expected-error {{'w' has no type for axis 'dp' of the function's mesh}} expected-note {{suggestion: annotate it on every mesh axis, e.g.}}
  return x + bias;
}

// Ops on unannotated tensors stay silent.
Tensor unannotated(const Tensor& a, const Tensor& b) {
  return torch::relu(a * b).sum() / a.mean();
}

// Calls that return no tensor are not typed.
int64_t sizes(DECL_P const Tensor& p) { return p.size(0) + p.dim(); }
