// Local regions with inferred input types (docs/plugin.md "Global mode"):
// [[spmd::local(spmd::Infer)]] (SPMD_LOCAL_INFER) is spec §12.3's
// local_map(in_types = Infer): the arguments are not checked at the calls;
// the body, checked with local semantics, starts from the join of the
// arguments' types at the calls in the translation unit (a shard S(i) is V
// there); the result annotation still stamps the result (out_types).
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
#include "Inputs/prelude.h"

// The body sees x as P on tp (from the call): relu of a partial sum.
SPMD_LOCAL_INFER
SPMD_TYPE(tp = V)
Tensor region_relu(const Tensor& x) {
  return x.relu(); // global-error {{x.relu: Partial type on axis tp cannot propagate through non-linear ops; operand types [P]}} global-note {{insert spmd::all_reduce(..., tp, spmd::P, spmd::R) to make 'x' R on axis 'tp'}}
}

SPMD_TYPE(tp = V)
Tensor call_with_partial(SPMD_TYPE(tp = P) const Tensor& p) {
  return region_relu(p); // global-note {{'x' has type P on axis 'tp' passed here (the local region's input types are inferred from the arguments at its calls)}}
}

// The body sees S(1) from the call as V, and its hand-written partial sum is
// trusted (local semantics); the declared result stamps P.
SPMD_LOCAL_INFER
SPMD_TYPE(tp = P)
Tensor region_matmul(const Tensor& x, const Tensor& w) {
  return spmd::reinterpret(x.mm(w), tp, V, P);
}

SPMD_TYPE(tp = R)
Tensor call_matmul(SPMD_TYPE(tp = S(1)) const Tensor& x,
                   SPMD_TYPE(tp = S(0)) const Tensor& w) {
  return spmd::all_reduce(region_matmul(x, w), tp, P, R);
}

// Two calls: the body starts from their join. Both R: the all_reduce's src
// P does not match.
SPMD_LOCAL_INFER
SPMD_TYPE(tp = R)
Tensor region_reduce(const Tensor& x) {
  return spmd::all_reduce(x, tp, P, R); // global-error {{all_reduce: expected input type P on axis tp, got R}} global-note {{remove this spmd::all_reduce ('x' is R already)}}
}

SPMD_TYPE(tp = R)
Tensor call_reduce_twice(SPMD_TYPE(tp = R) const Tensor& a,
                         SPMD_TYPE(tp = R) const Tensor& b) {
  return region_reduce(a) + region_reduce(b); // global-note {{type R on axis 'tp' passed here}}
}

// Calls that disagree: the body's input is R from one call, P from the
// other, a conflict (reported like one of paths).
SPMD_LOCAL_INFER
SPMD_TYPE(tp = V)
Tensor region_mixed(const Tensor& x) {
  return x * 2; // global-error {{'x' has type R on axis 'tp' on one path and P on another}}
}

SPMD_TYPE(tp = V)
Tensor call_mixed(SPMD_TYPE(tp = R) const Tensor& r,
                  SPMD_TYPE(tp = P) const Tensor& p) {
  return region_mixed(r) + region_mixed(p); // global-note {{type R on axis 'tp' passed here}} global-note {{type P on axis 'tp' passed here}}
}

// A region nobody calls: its inputs are unknown, nothing is reported.
SPMD_LOCAL_INFER
SPMD_TYPE(tp = R)
Tensor region_uncalled(const Tensor& x) {
  return spmd::all_reduce(x, tp, P, R);
}

// --- attribute errors ----------------------------------------------------------

SPMD_LOCAL_INFER
SPMD_TYPE(tp = R)
Tensor typed_input(SPMD_TYPE(tp = R) const Tensor& x); // global-error {{parameter 'x' of a local region with inferred input types ([[spmd::local(spmd::Infer)]]) must not have [[spmd::type]]: its type is inferred from the arguments at the calls; remove the annotation, or drop spmd::Infer to declare every input}}

[[spmd::local(tp)]] Tensor bad_argument(const Tensor& x); // global-error {{the argument of 'spmd::local' must be spmd::Infer}}
