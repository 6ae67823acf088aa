// Global mode: a lookup in a table sharded by rows (vocab-parallel
// embedding) is each rank's rows, V; it becomes a pending sum, P, once the
// rows of indices outside this rank's shard are zeroed (masked_fill with 0;
// global_masked_lookup_partial.cpp). Summing (src = P) or reinterpreting as
// P before that is rejected, through any number of ops. at::embedding takes the table first; a replicated table
// with sequence-sharded indices keeps the indices' shard. The second run
// shows that local mode (S(i) reads as V) has no such rule.
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
// RUN-PLUGIN: -Xclang -verify=local
// local-no-diagnostics
#include "Inputs/prelude.h"

// --- masked: a pending sum (as examples/gpt/model.cpp writes it) -----------

SPMD_TYPE(tp = S(0))
Tensor masked(SPMD_TYPE(tp = S(0)) const Tensor& weight,
              SPMD_TYPE(tp = R) const Tensor& tokens, int64_t v0, int64_t v1) {
  auto outside = tokens.lt(v0) | tokens.ge(v1);
  auto ids = (tokens - v0).masked_fill(outside, 0);
  auto rows = at::embedding(weight, ids);
  rows = rows.masked_fill(outside.unsqueeze(-1), 0.0);
  return spmd::reduce_scatter(rows, tp, P, S(0));
}

SPMD_TYPE(tp = I)
Tensor masked_in_place(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                       SPMD_TYPE(tp = R) const Tensor& tokens, int64_t v0,
                       int64_t v1) {
  auto outside = tokens.lt(v0) | tokens.ge(v1);
  auto rows = torch::embedding(weight, (tokens - v0).masked_fill(outside, 0));
  rows.masked_fill_(outside.unsqueeze(-1), 0);  // an int 0 zeroes too
  return spmd::all_reduce(rows, tp, P, I);
}

// Scaled after the mask: still masked.
SPMD_TYPE(tp = I)
Tensor masked_then_scaled(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                          SPMD_TYPE(tp = R) const Tensor& ids,
                          SPMD_TYPE(tp = R) const Tensor& outside) {
  auto rows = at::embedding(weight, ids).masked_fill(outside, 0.0) * 2.0;
  return spmd::all_reduce(rows, tp, P, I);
}

// --- unmasked: rejected where it is summed ---------------------------------

SPMD_TYPE(tp = S(0))
Tensor unmasked(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                SPMD_TYPE(tp = R) const Tensor& tokens, int64_t v0,
                int64_t v1) {
  auto outside = tokens.lt(v0) | tokens.ge(v1);
  auto ids = (tokens - v0).masked_fill(outside, 0);
  auto rows = at::embedding(weight, ids); // global-note {{type V on axis 'tp' inferred from this operation}}
  auto partial = spmd::reinterpret(rows, tp, V, P); // global-error {{reinterpret as P of rows looked up in a table sharded by rows on axis tp (S(0)) whose rows for indices outside this rank's shard are not zeroed: the sum over tp would add every rank's row, not only the owner's}} global-note {{suggestion: zero them first, e.g. rows.masked_fill(outside.unsqueeze(-1), 0.0)}}
  return spmd::reduce_scatter(partial, tp, P, S(0));
}

// Through other ops, the mark stays: scaling is not masking.
SPMD_TYPE(tp = I)
Tensor unmasked_scaled(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                       SPMD_TYPE(tp = R) const Tensor& ids) {
  auto rows = at::embedding(weight, ids) * 2.0; // global-note {{type V on axis 'tp' inferred from this operation}}
  auto z = rows + 1.0;
  return spmd::all_reduce(spmd::reinterpret(z, tp, V, P), tp, P, I); // global-error {{reinterpret as P of rows looked up in a table sharded by rows}} global-note {{zero them first}}
}

// Filled with something other than 0: the other ranks' rows still add up.
SPMD_TYPE(tp = I)
Tensor filled_with_one(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                       SPMD_TYPE(tp = R) const Tensor& ids,
                       SPMD_TYPE(tp = R) const Tensor& outside) {
  auto rows = at::embedding(weight, ids); // global-note {{type V on axis 'tp' inferred from this operation}}
  rows.masked_fill_(outside, 1.0);
  return spmd::all_reduce(spmd::reinterpret(rows, tp, V, P), tp, P, I); // global-error {{not zeroed}} global-note {{zero them first}}
}

// Masked on one path only: the unmasked rows (V) on one path, their pending
// sum (P) on the other.
SPMD_TYPE(tp = I)
Tensor masked_on_one_path(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                          SPMD_TYPE(tp = R) const Tensor& ids,
                          SPMD_TYPE(tp = R) const Tensor& outside, bool mask) {
  auto rows = at::embedding(weight, ids); // global-note {{type V on axis 'tp' inferred from this operation}}
  if (mask)
    rows = rows.masked_fill(outside, 0.0); // global-note {{type P on axis 'tp' inferred from this operation}}
  return spmd::all_reduce(spmd::reinterpret(rows, tp, V, P), tp, P, I); // global-error {{'rows' has type V on axis 'tp' on one path and P on another}}
}

// --- the other layouts of the table and the indices ------------------------

// A replicated table and sequence-sharded indices: the rows keep the
// indices' shard (the table is the first argument of at::embedding).
SPMD_TYPE(tp = S(0))
Tensor sharded_indices(SPMD_TYPE(tp = R) const Tensor& weight,
                       SPMD_TYPE(tp = S(0)) const Tensor& ids) {
  return at::embedding(weight, ids);
}

// A table sharded by columns (hidden): the rows are sharded on their last
// dim, no mask needed.
SPMD_TYPE(tp = R)
Tensor column_table(SPMD_TYPE(tp = S(1)) const Tensor& weight,
                    SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& ids) {
  return spmd::all_gather(at::embedding(weight, ids), tp, S(2), R);
}
