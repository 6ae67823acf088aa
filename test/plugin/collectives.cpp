// Collectives: legality of src/dst (core::check_arguments), the input type
// against src (core::transfer, V accepted where src is P), the result type
// dst on the collective's axis, other axes carried over.
#include "Inputs/prelude.h"

SPMD_TYPE(dp = V, tp = R)
Tensor legal(SPMD_TYPE(dp = V, tp = P) const Tensor& p,
             SPMD_TYPE(dp = V, tp = V) const Tensor& v,
             SPMD_TYPE(dp = V, tp = I) const Tensor& i) {
  auto a = spmd::all_reduce(p, tp, P, R);        // P -> R
  auto b = spmd::all_reduce(v, tp, P, I);        // V taken as P
  auto c = spmd::all_gather(v, tp, S(0), R);     // V -> R
  auto d = spmd::reduce_scatter(p, tp, P, S(1)); // P -> V
  auto e = spmd::all_to_all(d, tp, S(1), S(0));  // V -> V
  auto f = spmd::convert(c, tp, R, S(0));        // R -> V
  auto g = spmd::reinterpret(f, tp, V, P);       // V -> P
  auto h = spmd::redistribute(g, tp, P, R);      // P -> R
  auto k = spmd::shard(h, tp, R, S(0));          // R -> V
  auto l = spmd::unshard(k, tp, S(0), I);        // V -> I
  auto m = spmd::invariant_to_replicate(l, tp);  // I -> R
  auto n = spmd::convert(i, tp, I, R);
  auto o = spmd::redistribute(e, tp, S(0), R);
  auto bad = n + b; // expected-error {{Invariant type on axis tp cannot mix}}
  // expected-note@-13 {{'b' has type I on axis 'tp' set by this collective}}
  // expected-note@-4 {{'n' has type R on axis 'tp' set by this collective}}
  // expected-note@-3 {{insert spmd::convert(..., tp, spmd::I, spmd::R) to make 'b' R on axis 'tp'}}
  return a + c + h + m + n + o;
}

void wrong_input(SPMD_TYPE(tp = R) const Tensor& r,
                 SPMD_TYPE(tp = P) const Tensor& p,
                 SPMD_TYPE(tp = I) const Tensor& i) { // expected-note {{type I on axis 'tp' declared here}}
  // expected-note@-3 {{type R on axis 'tp' declared here}}
  // expected-note@-3 2 {{type P on axis 'tp' declared here}}
  spmd::all_reduce(r, tp, P, R); // expected-error {{all_reduce: expected input type P on axis tp, got R}} expected-note {{remove this spmd::all_reduce ('r' is R already)}}
  spmd::all_gather(p, tp, V, R); // expected-error {{all_gather: expected input type V on axis tp, got P}} expected-note {{suggestion: The tensor is P here; to make it V first use}}
  spmd::convert(p, tp, V, R); // expected-error {{not supported}} expected-note {{suggestion: use all_gather}}
  spmd::invariant_to_replicate(p, tp); // expected-error {{expected input type I on axis tp, got P}} expected-note {{suggestion: The tensor is P here; to make it I first use}}
  // An input of another type: the checker offers the src that fits.
  spmd::convert(i, tp, R, S(0)); // expected-error {{convert: expected input type R on axis tp, got I}}
  // expected-note@-1 {{did you mean src = I?}}
}

void illegal_arguments(const Tensor& x) {
  spmd::all_reduce(x, tp, R, R);      // expected-error {{must be P}} expected-note {{suggestion: reducing replicated data is usually a bug}}
  spmd::all_reduce(x, tp, P, V);      // expected-error {{must be R or I}} expected-note {{suggestion: use reduce_scatter for a V or S(i) result}}
  spmd::all_gather(x, tp, P, R);      // expected-error {{must be V or S(i)}}
  spmd::reduce_scatter(x, tp, P, R);  // expected-error {{must be V or S(i)}} expected-note {{suggestion: use all_reduce for an R or I result}}
  spmd::reinterpret(x, tp, P, R);     // expected-error {{reinterpret}} expected-note {{suggestion: all_reduce (or reduce_scatter) it first}}
  spmd::reinterpret(x, tp, S(0), P);  // expected-error {{does not support S(i)}} expected-note {{suggestion: use V, or convert to change the shard layout}}
  spmd::convert(x, tp, S(0), S(1));   // expected-error {{convert cannot change the shard dimension}} expected-note {{suggestion: use all_to_all(x, axis, S(0), S(1))}}
  spmd::convert(x, tp, R, I);         // expected-error {{expert_mode}} expected-note {{suggestion: pass}}
  spmd::shard(x, tp, R, V);           // expected-error {{S(i)}} expected-note {{suggestion: use convert for other destinations}}
  spmd::unshard(x, tp, V, R);         // expected-error {{S(i)}} expected-note {{suggestion: use all_gather for src=V}}
}

void options(const Tensor& x) {
  // Options written in place are read; expert_mode lifts the gate.
  spmd::convert(x, tp, R, I, spmd::CollectiveOptions{{}, {}, {}, false, true});
  spmd::convert(x, tp, R, I, spmd::CollectiveOptions{}); // expected-error {{expert_mode}} expected-note {{suggestion: pass}}
  // Options in a variable set before the call are read too
  // (collective_options_variables.cpp).
  spmd::CollectiveOptions opts;
  opts.expert_mode = true;
  spmd::convert(x, tp, R, I, opts);
}

SPMD_TYPE(dp = V, tp = R)
Tensor other_axes_carry_over(SPMD_TYPE(dp = V, tp = P) const Tensor& p) {
  auto y = spmd::all_reduce(p, tp, P, R);
  return y; // {dp: V, tp: R}
}

SPMD_TYPE(dp = R, tp = R)
Tensor other_axes_carry_over_bad(SPMD_TYPE(dp = V, tp = P) const Tensor& p) { // expected-note {{type V on axis 'dp' declared here}}
  return spmd::all_reduce(p, tp, P, R); // expected-error {{returned value has type V on axis 'dp', but 'other_axes_carry_over_bad' is declared to return R there}}
  // expected-note@-3 {{declared type is {dp: R, tp: R}}}
}

SPMD_TYPE(tp = R)
Tensor unknown_input_gets_dst(const Tensor& x) {
  auto y = spmd::all_reduce(opaque(x), tp, P, R); // the checker learns tp: R
  return y;
}

void unknown_input_then_misuse(const Tensor& x) {
  auto y = spmd::all_gather(x, tp, V, R); // expected-note {{type R on axis 'tp' set by this collective}}
  spmd::all_reduce(y, tp, P, R);          // expected-error {{expected input type P on axis tp, got R}} expected-note {{remove this spmd::all_reduce ('y' is R already)}}
}

void not_constant(const Tensor& x, spmd::PerAxisType t) {
  spmd::all_reduce(x, tp, t, R); // expected-error {{src of spmd::all_reduce must be a constant expression}}
  spmd::Axis runtime_axis{"tp"};
  spmd::all_reduce(x, runtime_axis, P, R); // expected-error {{the axis of spmd::all_reduce must be a constant spmd::Axis}}
}
