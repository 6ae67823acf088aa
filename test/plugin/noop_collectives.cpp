// A collective whose input is not its src but already has its dst type: the
// src that would accept the input (the "did you mean src = ..." advice) makes
// the call a no-op, so the advice is to remove it, with a fix-it replacing
// the call by its input. Where another src gives a different result, the
// src advice stays. Both modes; global mode adds shard dims.
// RUN-PLUGIN: -Xclang -verify=both,local
// RUN-PLUGIN: -Xclang -verify=both,global -fplugin-arg-spmd-check-global
// RUN-FILECHECK: -fdiagnostics-parseable-fixits
#include "Inputs/prelude.h"

// A hand-written reinterpret of a value that is P already.
SPMD_TYPE(tp = P)
Tensor reinterpret_partial(SPMD_TYPE(tp = P) const Tensor& x) { // both-note {{type P on axis 'tp' declared here}}
  return spmd::reinterpret(x, tp, V, P); // both-error {{reinterpret: expected input type V on axis tp, got P: 'x' is P already; remove this reinterpret}} both-note {{remove this spmd::reinterpret ('x' is P already)}}
}
// CHECK: fix-it:"{{.*}}noop_collectives.cpp":{[[@LINE-2]]:10-[[@LINE-2]]:40}:"x"

// A conversion to what the value is.
SPMD_TYPE(tp = V)
Tensor convert_varying(SPMD_TYPE(tp = V) const Tensor& x) { // both-note {{type V on axis 'tp' declared here}}
  return spmd::convert(x, tp, R, V); // both-error {{convert: expected input type R on axis tp, got V: 'x' is V already; remove this convert}} both-note {{remove this spmd::convert ('x' is V already)}}
}

// A gather of a value that is replicated already.
SPMD_TYPE(tp = R)
Tensor gather_replicated(SPMD_TYPE(tp = R) const Tensor& x) { // both-note {{type R on axis 'tp' declared here}}
  auto y = spmd::all_gather(x * 2, tp, V, R); // both-error {{all_gather: expected input type V on axis tp, got R: this value is R already; remove this all_gather}} both-note {{remove this spmd::all_gather (this value is R already)}}
  return y;
}
// CHECK: fix-it:"{{.*}}noop_collectives.cpp":{[[@LINE-3]]:12-[[@LINE-3]]:45}:"x * 2"

// Local mode reads S(0) as V: the conversion to S(0) of a V is a no-op
// there; in global mode the value is S(0), the dst itself.
SPMD_TYPE(tp = S(0))
Tensor convert_to_own_shard(SPMD_TYPE(tp = S(0)) const Tensor& x) { // local-note {{type V on axis 'tp' declared here}} global-note {{type S(0) on axis 'tp' declared here}}
  return spmd::convert(x, tp, R, S(0)); // local-error {{'x' is V already; remove this convert}} local-note {{remove this spmd::convert ('x' is V already)}}
  // global-error@-1 {{convert: expected input type R on axis tp, got S(0): 'x' is S(0) already; remove this convert}} global-note@-1 {{remove this spmd::convert ('x' is S(0) already)}}
}

// Global mode: an all_to_all to the dim the value is sharded on already
// (local mode: src V and dst V, no verdict on the dims).
SPMD_TYPE(tp = S(0))
Tensor all_to_all_to_own_dim(SPMD_TYPE(tp = S(0)) const Tensor& x) { // global-note {{type S(0) on axis 'tp' declared here}}
  return spmd::all_to_all(x, tp, S(1), S(0)); // global-error {{all_to_all expects its input sharded on dim 1 on axis tp (src = S(1)), but it is sharded on dim 0 (S(0)): 'x' is S(0) already; remove this all_to_all}} global-note {{remove this spmd::all_to_all ('x' is S(0) already)}}
}

// --- where the src advice stays ----------------------------------------------

// Another src gives a different result: I -> V is a real conversion.
SPMD_TYPE(tp = V)
Tensor convert_invariant(SPMD_TYPE(tp = I) const Tensor& x) { // both-note {{type I on axis 'tp' declared here}}
  return spmd::convert(x, tp, R, V); // both-error {{convert: expected input type R on axis tp, got I}} both-note {{did you mean src = I?}}
}
// CHECK: fix-it:"{{.*}}noop_collectives.cpp":{[[@LINE-2]]:31-[[@LINE-2]]:32}:"spmd::I"

// Global mode: a gather along another dim than the shard's.
SPMD_TYPE(tp = R)
Tensor all_to_all_other_dim(SPMD_TYPE(tp = S(0)) const Tensor& x) { // global-note {{type S(0) on axis 'tp' declared here}}
  auto y = spmd::all_to_all(x, tp, S(1), S(2)); // global-error {{expects its input sharded on dim 1}} global-note {{did you mean src = S(0)?}}
  return spmd::all_gather(y, tp, S(2), R);
}

// A reduce of a value that is reduced already keeps its own words.
SPMD_TYPE(tp = R)
Tensor reduce_replicated(SPMD_TYPE(tp = R) const Tensor& x) { // both-note {{type R on axis 'tp' declared here}}
  return spmd::all_reduce(x, tp, P, R); // both-error {{'x' is no pending sum (reducing it would add up tp-size copies of it); remove this all_reduce}} both-note {{remove this spmd::all_reduce ('x' is R already)}}
}

// The right src: no diagnostic.
SPMD_TYPE(tp = P)
Tensor reinterpret_varying(SPMD_TYPE(tp = V) const Tensor& x) {
  return spmd::reinterpret(x, tp, V, P);
}
