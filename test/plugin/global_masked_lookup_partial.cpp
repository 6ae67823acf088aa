// Global mode: rows looked up in a table sharded by rows (vocab-parallel)
// whose rows for indices outside this rank's shard are zeroed are the
// pending sum of the lookup, P (core::zeroed_rows_type; the core's embedding
// rule, DTensor's masked partial; docs/type-system.md "Masked lookups are
// P"). So they are accepted where P is declared (a reduce wrapper's
// parameter, a return), and rejected where a shard or V is expected (an
// all_gather, a gather wrapper's S(-1) parameter, a reinterpret from V) and
// by the rules of P (a bias added before the reduce). The second run: local
// mode has no such rule (S(0) reads as V; the lookup stays V).
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
// RUN-PLUGIN: -Xclang -verify=local
#include "Inputs/prelude.h"

namespace F = torch::nn::functional;

SPMD_TYPE(tp = R)
Tensor reduce_region(SPMD_TYPE(tp = P) Tensor input); // global-note {{declared type is {tp: P}}} local-note 2 {{declared type is {tp: P}}}
SPMD_TYPE(tp = R)
Tensor gather_region(SPMD_TYPE(tp = S(-1)) Tensor input); // global-note {{declared type is {tp: S(-1)}}}

// --- accepted: the masked lookup handed to a wrapper that takes P ---------

// ScaleLLM's shape: ids shifted and masked, the lookup zeroed in place.
SPMD_TYPE(tp = R)
Tensor lookup_in_place(SPMD_TYPE(tp = R, spmd::rank(1)) Tensor input,
                       SPMD_TYPE(tp = S(0), spmd::rank(2)) Tensor weight, // local-note {{type V on axis 'tp' declared here}}
                       int64_t start, int64_t end) {
  auto masked_input = input - start;
  const auto input_mask = (input < start) | (input >= end);
  masked_input.masked_fill_(input_mask, 0);
  auto output = F::embedding(masked_input, weight);
  output.masked_fill_(input_mask.unsqueeze(-1), 0);
  return reduce_region(output); // local-error {{argument 'output' of 'reduce_region' has type V on axis 'tp', but parameter 'input' is declared P there}}
}

// Zeroed by a product with the mask, returned as the pending sum.
SPMD_TYPE(tp = P) // local-note {{declared type is {tp: P}}}
Tensor lookup_product(SPMD_TYPE(tp = S(0)) const Tensor& weight, // local-note {{type V on axis 'tp' declared here}}
                      SPMD_TYPE(tp = R) const Tensor& tokens, int64_t v0,
                      int64_t v1) {
  auto outside = tokens.lt(v0) | tokens.ge(v1);
  auto rows = at::embedding(weight, (tokens - v0).masked_fill(outside, 0));
  return rows * (~outside).unsqueeze(-1); // local-error {{returned value has type V on axis 'tp', but 'lookup_product' is declared to return P there}}
}

// A declared V destination keeps its V through the in-place fill.
SPMD_TYPE(tp = R)
Tensor lookup_declared_v(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                         SPMD_TYPE(tp = R) const Tensor& ids,
                         SPMD_TYPE(tp = R) const Tensor& tokens) {
  auto outside = tokens.lt(0) | tokens.ge(8);
  SPMD_TYPE(tp = V) Tensor rows = at::embedding(weight, ids);
  rows.masked_fill_(outside.unsqueeze(-1), 0.0);
  return spmd::all_reduce(rows, tp, P, R);
}

// --- rejected: what a pending sum is not ----------------------------------

// Not masked: each rank's rows, V, are no pending sum.
SPMD_TYPE(tp = R)
Tensor unmasked_to_wrapper(SPMD_TYPE(tp = S(0)) const Tensor& weight, // local-note {{type V on axis 'tp' declared here}}
                           SPMD_TYPE(tp = R) const Tensor& ids) {
  auto rows = at::embedding(weight, ids); // global-note {{type V on axis 'tp' inferred from this operation}}
  return reduce_region(rows); // global-error {{argument 'rows' of 'reduce_region' has type V on axis 'tp', but parameter 'input' is declared P there}} local-error {{argument 'rows' of 'reduce_region' has type V on axis 'tp', but parameter 'input' is declared P there}}
}

// Gathered (concatenated) instead of summed.
SPMD_TYPE(tp = R)
Tensor masked_gathered(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                       SPMD_TYPE(tp = R) const Tensor& ids,
                       SPMD_TYPE(tp = R) const Tensor& tokens) {
  auto outside = tokens.lt(0) | tokens.ge(8);
  auto rows = at::embedding(weight, ids).masked_fill(outside.unsqueeze(-1), 0.0); // global-note {{type P on axis 'tp' inferred from this operation}}
  return spmd::all_gather(rows, tp, S(0), R); // global-error {{all_gather: expected input type V on axis tp, got P}} global-note {{to make it V first use spmd::reduce_scatter(x, tp, P, V)}}
}

SPMD_TYPE(tp = R)
Tensor masked_to_gather_region(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                               SPMD_TYPE(tp = R) const Tensor& ids,
                               SPMD_TYPE(tp = R) const Tensor& tokens) {
  auto outside = tokens.lt(0) | tokens.ge(8);
  auto rows = at::embedding(weight, ids);
  rows.masked_fill_(outside.unsqueeze(-1), 0); // global-note {{type P on axis 'tp' inferred from this operation}}
  return gather_region(rows); // global-error {{argument 'rows' of 'gather_region' has type P on axis 'tp', but parameter 'input' is declared S(-1) there}} global-note {{insert spmd::reduce_scatter(..., tp, spmd::P, spmd::S(-1))}}
}

// A bias added to every rank's term of the sum.
SPMD_TYPE(tp = R)
Tensor masked_plus_bias(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                        SPMD_TYPE(tp = R) const Tensor& ids,
                        SPMD_TYPE(tp = R) const Tensor& tokens,
                        SPMD_TYPE(tp = R) const Tensor& bias) { // global-note {{'bias' has type R on axis 'tp' declared here}}
  auto outside = tokens.lt(0) | tokens.ge(8);
  auto rows = at::embedding(weight, ids).masked_fill(outside.unsqueeze(-1), 0.0); // global-note {{'rows' has type P on axis 'tp' inferred from this operation}}
  return spmd::all_reduce(rows + bias, tp, P, R); // global-error {{operator+: Partial type on axis tp cannot be added to a non-partial term}} global-note {{reduce 'rows' before operator+, not after it}}
}

// The reinterpret the user wrote before the rule: the rows are P already.
SPMD_TYPE(tp = R)
Tensor masked_reinterpreted(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                            SPMD_TYPE(tp = R) const Tensor& ids,
                            SPMD_TYPE(tp = R) const Tensor& tokens) {
  auto outside = tokens.lt(0) | tokens.ge(8);
  auto rows = at::embedding(weight, ids).masked_fill(outside.unsqueeze(-1), 0.0); // global-note {{type P on axis 'tp' inferred from this operation}}
  return spmd::all_reduce(spmd::reinterpret(rows, tp, V, P), tp, P, R); // global-error {{reinterpret: expected input type V on axis tp, got P}} global-note {{remove this spmd::reinterpret ('rows' is P already)}}
}
