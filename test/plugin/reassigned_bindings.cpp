// A structured binding of a tuple-like value is a variable: an assignment to
// it (`k = assert_type(k.view(...), ...)`) updates its type and rank as for
// any unannotated local, flow-sensitively; a binding reassigned on one path
// only is a conflict where the paths meet.
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
