// A structured binding of a tuple-like value is a variable: an assignment to
// it (`k = assert_type(k.view(...), ...)`) updates its type and rank as for
// any unannotated local, flow-sensitively; a binding reassigned on one path
// only is a conflict where the paths meet. A binding of an array element or
// of a struct member without a declared type is such a local too, starting
// from the element's type; a binding of a typed member is that member (an
// assignment to it is checked against its declared type).
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
// RUN-PLUGIN: -Xclang -verify=global -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

#include <tuple>

SPMD_TYPE(tp = P)
std::tuple<Tensor, Tensor> partial_pair(SPMD_TYPE(tp = V) const Tensor& x);

SPMD_TYPE(tp = S(-1), spmd::rank(2))
std::tuple<Tensor, Tensor, Tensor> qkv_proj(SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& x);

// Both bindings reduced after the declaration: R, nothing to report.
SPMD_TYPE(tp = R)
Tensor reduced_bindings(SPMD_TYPE(tp = V) const Tensor& x) {
  auto [a, b] = partial_pair(x);
  a = spmd::all_reduce(a, tp, P, R);
  b = spmd::all_reduce(b, tp, P, R);
  return a + b;
}

// A real bug: one binding left a pending sum.
SPMD_TYPE(tp = R)
Tensor one_binding_not_reduced(SPMD_TYPE(tp = V) const Tensor& x) {
  auto [a, b] = partial_pair(x);
  a = spmd::all_reduce(a, tp, P, R);
  return b; // expected-error {{returned value has type P on axis 'tp', but 'one_binding_not_reduced' is declared to return R there}} global-error {{returned value has type P on axis 'tp'}}
}

// Reassigned on one path only: the paths disagree where they meet.
SPMD_TYPE(tp = R)
Tensor reduced_on_one_path(SPMD_TYPE(tp = V) const Tensor& x, bool c) {
  auto [a, b] = partial_pair(x);
  a = spmd::all_reduce(a, tp, P, R);
  if (c)
    b = spmd::all_reduce(b, tp, P, R);
  return a + b; // expected-error {{'b' has type R on axis 'tp' on one path and P on another}} global-error {{'b' has type R on axis 'tp' on one path and P on another}}
}

// Global mode: the per-head views take the rank and shard of their
// assert_type, so the transposes below move the shard where it belongs.
SPMD_TYPE(tp = S(0), spmd::rank(3))
Tensor per_head_scores(SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& x,
                       int64_t heads, int64_t head_dim) {
  const int64_t n = x.size(0);
  auto [q, k, v] = qkv_proj(x);
  q = spmd::assert_type(q.view({n, heads, head_dim}), {tp = S(1)});
  k = spmd::assert_type(k.view({n, heads, head_dim}), {tp = S(1)});
  return torch::matmul(q.transpose(0, 1), k.transpose(0, 1).transpose(-2, -1));
}

// The same with the views' shard on the wrong dim: reported at the matmul.
SPMD_TYPE(tp = S(0), spmd::rank(3))
Tensor per_head_scores_wrong(SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& x,
                             int64_t heads, int64_t head_dim) {
  const int64_t n = x.size(0);
  auto [q, k, v] = qkv_proj(x);
  q = spmd::assert_type(q.view({n, heads, head_dim}), {tp = S(1)});
  k = spmd::assert_type(k.view({n, heads, head_dim}), {tp = S(2)});
  return torch::matmul(q.transpose(0, 1), k.transpose(0, 1).transpose(-2, -1)); // global-error {{No valid sharding strategy for torch::matmul}}
}

// assert_type refines the binding itself (strict mode would report an
// unknown 'b' otherwise).
std::tuple<Tensor, Tensor> opaque_pair(const Tensor& x);

SPMD_TYPE(tp = R)
Tensor binding_refined(SPMD_TYPE(tp = V) const Tensor& x) {
  auto [a, b] = opaque_pair(x);
  spmd::assert_type(b, {tp = P});
  return spmd::all_reduce(b, tp, P, R);
}

// --- bindings of arrays and structs ------------------------------------------

struct Halves {
  Tensor lo;
  Tensor hi;
};
Halves opaque_halves(const Tensor& x);

struct TypedHalves {
  SPMD_TYPE(tp = P) Tensor lo;
  SPMD_TYPE(tp = P) Tensor hi;
};

// An array element binding reassigned: its new type is what is returned
// (the array itself is not tracked: its elements are unknown).
SPMD_TYPE(tp = R)
Tensor array_binding_reduced(SPMD_TYPE(tp = P) const Tensor& x,
                             SPMD_TYPE(tp = P) const Tensor& y) {
  Tensor parts[2] = {x, y};
  auto& [q, k] = parts;
  q = spmd::all_reduce(x, tp, P, R);
  return q;
}

// The same binding reassigned a pending sum: reported (it was unknown, so
// silent, before bindings of arrays were updated).
SPMD_TYPE(tp = R)
Tensor array_binding_partial(SPMD_TYPE(tp = P) const Tensor& x,
                             SPMD_TYPE(tp = R) const Tensor& r) {
  Tensor parts[2] = {r, r};
  auto [q, k] = parts;
  q = x;
  return q; // expected-error {{returned value has type P on axis 'tp', but 'array_binding_partial' is declared to return R there}} global-error {{returned value has type P on axis 'tp'}}
}

// Reassigned on one path only.
SPMD_TYPE(tp = R)
Tensor array_binding_one_path(SPMD_TYPE(tp = P) const Tensor& x,
                              SPMD_TYPE(tp = R) const Tensor& r, bool c) {
  Tensor parts[2] = {r, r};
  auto [q, k] = parts;
  q = r;
  if (c)
    q = x;
  return q; // expected-error {{'q' has type R on axis 'tp' on one path and P on another}} global-error {{'q' has type R on axis 'tp' on one path and P on another}}
}

// Members of an unannotated struct: stated by assert_type, as an assignment
// or in place (strict mode would report unknown 'lo' and 'hi' otherwise).
SPMD_TYPE(tp = R)
Tensor struct_bindings_stated(SPMD_TYPE(tp = V) const Tensor& x) {
  auto [lo, hi] = opaque_halves(x);
  lo = spmd::assert_type(lo, {tp = P});
  spmd::assert_type(hi, {tp = R});
  return spmd::all_reduce(lo, tp, P, R) + hi;
}

SPMD_TYPE(tp = R)
Tensor struct_binding_not_reduced(SPMD_TYPE(tp = V) const Tensor& x) {
  auto [lo, hi] = opaque_halves(x);
  spmd::assert_type(lo, {tp = P});
  return lo; // expected-error {{returned value has type P on axis 'tp'}} global-error {{returned value has type P on axis 'tp'}}
}

// An in-place update of a binding is checked with the binding's new type.
SPMD_TYPE(tp = R)
Tensor struct_binding_in_place(SPMD_TYPE(tp = V) const Tensor& x,
                               SPMD_TYPE(tp = P) const Tensor& p) {
  auto&& [lo, hi] = opaque_halves(x);
  lo = spmd::assert_type(lo, {tp = R});
  lo.add_(p); // expected-error {{lo.add_: Partial type on axis tp cannot be added to a non-partial term}} global-error {{Partial type on axis tp cannot be added}}
  return lo;
}

// A binding of a typed member is that member: an assignment is checked
// against the member's declared type, and reads give that type.
SPMD_TYPE(tp = R)
Tensor typed_member_binding(SPMD_TYPE(tp = P) const Tensor& x) {
  TypedHalves h{x, x};
  auto& [lo, hi] = h;
  lo = spmd::all_reduce(lo, tp, P, R); // expected-error {{value assigned to 'lo' has type R on axis 'tp', but 'lo' is declared P there}} global-error {{value assigned to 'lo' has type R on axis 'tp'}}
  return spmd::all_reduce(hi, tp, P, R);
}
