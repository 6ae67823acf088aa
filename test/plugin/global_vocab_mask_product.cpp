// Global mode: the rows of a vocab-parallel lookup (a table sharded by rows)
// become this rank's term of the pending sum once the rows of indices
// outside the rank's shard are zeroed. Real engines zero them with
// masked_fill (Megatron, ScaleLLM), or multiply by the mask of the indices
// the rank holds, or use where with a 0 branch. A product zeroes rows only
// when its other factor is a 0/1 mask the function computes from
// comparisons (core::mask_result): a comparison, its logical combinations
// (|, &, ~ of a bool, logical_not), its conversions (.to(dtype), type_as),
// 1 - mask, moves of its elements (unsqueeze, expand_as, ...). A factor of
// unknown values (a parameter, a scaled mask, ~ of an integer mask) zeroes
// nothing for sure, and the sum is rejected. The second run: local mode has
// no such rule (S(0) reads as V).
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
// RUN-PLUGIN: -Xclang -verify=local
// local-no-diagnostics
#include "Inputs/prelude.h"

// --- zeroed: pending sums, no diagnostic ----------------------------------

// Megatron / ScaleLLM: masked_fill of the ids and of the rows.
SPMD_TYPE(tp = I)
Tensor masked_fill_form(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                        SPMD_TYPE(tp = R) const Tensor& ids, int64_t start,
                        int64_t end) {
  auto mask = (ids < start) | (ids >= end);
  auto local_ids = ids - start;
  local_ids.masked_fill_(mask, 0);
  auto out = at::embedding(weight, local_ids);
  out.masked_fill_(mask.unsqueeze(-1), 0);
  return spmd::all_reduce(out, tp, P, I);
}

// Multiplied by the bool mask of the indices this rank holds.
SPMD_TYPE(tp = I)
Tensor times_bool_mask(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                       SPMD_TYPE(tp = R) const Tensor& ids, int64_t start,
                       int64_t end) {
  auto mask = (ids < start) | (ids >= end);
  auto out = at::embedding(weight, (ids - start).masked_fill(mask, 0));
  out = out * (~mask).unsqueeze(-1);
  return spmd::all_reduce(out, tp, P, I);
}

// ... converted to the rows' dtype first.
SPMD_TYPE(tp = I)
Tensor times_converted_mask(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                            SPMD_TYPE(tp = R) const Tensor& ids,
                            int64_t start, int64_t end) {
  auto mask = ids.lt(start).logical_or(ids.ge(end));
  auto out = at::embedding(weight, (ids - start).masked_fill(mask, 0));
  out = out * (~mask).unsqueeze(-1).to(out.scalar_type());
  return spmd::all_reduce(out, tp, P, I);
}

// A float mask of the held indices (1 - outside), in place.
SPMD_TYPE(tp = I)
Tensor times_float_mask_in_place(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                                 SPMD_TYPE(tp = R) const Tensor& ids,
                                 int64_t start, int64_t end) {
  auto outside = (ids < start) | (ids >= end);
  auto keep = 1.0 - outside.to(at::kFloat);
  auto out = at::embedding(weight, (ids - start).masked_fill(outside, 0));
  out *= keep.unsqueeze(-1);
  return spmd::all_reduce(out, tp, P, I);
}

// vLLM: the mask of the held indices, combined with &, its logical_not
// zeroes the rows; the factor first.
SPMD_TYPE(tp = I)
Tensor vllm_form(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                 SPMD_TYPE(tp = R) const Tensor& ids, int64_t start,
                 int64_t end) {
  auto vocab_mask = (ids >= start) & (ids < end);
  auto out = at::embedding(weight, (ids - start).masked_fill(~vocab_mask, 0));
  auto keep = vocab_mask.unsqueeze(-1).type_as(out);
  out = keep * out;
  return spmd::all_reduce(out, tp, P, I);
}

// mul_ with a mask expanded to the rows' shape.
SPMD_TYPE(tp = I)
Tensor mul_expanded_mask(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                         SPMD_TYPE(tp = R) const Tensor& ids, int64_t start,
                         int64_t end) {
  auto held = at::logical_not((ids < start) | (ids >= end));
  auto out = at::embedding(weight, ids - start);
  out.mul_(held.unsqueeze(-1).expand_as(out));
  return spmd::all_reduce(out, tp, P, I);
}

// where with a 0 branch.
SPMD_TYPE(tp = I)
Tensor where_zero(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                  SPMD_TYPE(tp = R) const Tensor& ids, int64_t start,
                  int64_t end) {
  auto outside = (ids < start) | (ids >= end);
  auto out = at::embedding(weight, (ids - start).masked_fill(outside, 0));
  return spmd::all_reduce(at::where(outside.unsqueeze(-1), 0.0, out), tp, P,
                          I);
}

// A mask on both paths of a branch is a mask.
SPMD_TYPE(tp = I)
Tensor mask_on_both_paths(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                          SPMD_TYPE(tp = R) const Tensor& ids, int64_t start,
                          int64_t end, bool half) {
  auto outside = (ids < start) | (ids >= end);
  auto keep = (~outside).to(at::kFloat);
  if (half)
    keep = (~outside).to(at::kHalf);
  auto out = at::embedding(weight, (ids - start).masked_fill(outside, 0));
  return spmd::all_reduce(out * keep.unsqueeze(-1), tp, P, I);
}

// Not checked: which mask. Multiplying by the mask of the indices this rank
// does NOT hold keeps exactly the wrong rows, and passes (as masked_fill
// with the held mask would): the rule knows that rows are zeroed, not
// which ones (docs/plugin.md "Vocab-parallel lookups").
SPMD_TYPE(tp = I)
Tensor wrong_polarity_not_caught(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                                 SPMD_TYPE(tp = R) const Tensor& ids,
                                 int64_t start, int64_t end) {
  auto outside = (ids < start) | (ids >= end);
  auto out = at::embedding(weight, (ids - start).masked_fill(outside, 0));
  return spmd::all_reduce(out * outside.unsqueeze(-1), tp, P, I);
}

// --- not zeroed: rejected where summed ------------------------------------

// The ids are masked, the rows are not.
SPMD_TYPE(tp = I)
Tensor rows_not_masked(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                       SPMD_TYPE(tp = R) const Tensor& ids, int64_t start,
                       int64_t end) {
  auto mask = (ids < start) | (ids >= end);
  auto local_ids = ids - start;
  local_ids.masked_fill_(mask, 0);
  auto out = at::embedding(weight, local_ids); // global-note {{type V on axis 'tp' inferred from this operation}}
  return spmd::all_reduce(out, tp, P, I); // global-error {{all_reduce with src = P on rows looked up in a table sharded by rows on axis tp (S(0)) whose rows for indices outside this rank's shard are not zeroed}} global-note {{suggestion: zero them first, e.g. rows.masked_fill(outside.unsqueeze(-1), 0.0) where outside marks the indices this rank does not hold, or multiply by a 0/1 mask of the indices it holds that this function computes by comparisons (rows * (~outside).unsqueeze(-1)); a mask passed in as a parameter is not known to be 0/1}}
}

// A factor passed in: its values are not known to be 0 and 1.
SPMD_TYPE(tp = I)
Tensor times_parameter(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                       SPMD_TYPE(tp = R) const Tensor& ids,
                       SPMD_TYPE(tp = R) const Tensor& keep) {
  auto out = at::embedding(weight, ids); // global-note {{type V on axis 'tp' inferred from this operation}}
  return spmd::all_reduce(out * keep, tp, P, I); // global-error {{not zeroed}} global-note {{a mask passed in as a parameter is not known to be 0/1}}
}

// A scaled mask is not a mask.
SPMD_TYPE(tp = I)
Tensor times_scaled_mask(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                         SPMD_TYPE(tp = R) const Tensor& ids, int64_t start,
                         int64_t end) {
  auto outside = (ids < start) | (ids >= end);
  auto keep = (~outside).to(at::kFloat) * 2.0;
  auto out = at::embedding(weight, (ids - start).masked_fill(outside, 0)); // global-note {{type V on axis 'tp' inferred from this operation}}
  return spmd::all_reduce(out * keep.unsqueeze(-1), tp, P, I); // global-error {{not zeroed}} global-note {{zero them first}}
}

// ~ of an integer 0/1 mask is -1 / -2, not a mask.
SPMD_TYPE(tp = I)
Tensor times_inverted_integer_mask(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                                   SPMD_TYPE(tp = R) const Tensor& ids,
                                   int64_t start, int64_t end) {
  auto outside = ((ids < start) | (ids >= end)).to(at::kLong);
  auto out = at::embedding(weight, ids - start); // global-note {{type V on axis 'tp' inferred from this operation}}
  return spmd::all_reduce(out * (~outside).unsqueeze(-1), tp, P, I); // global-error {{not zeroed}} global-note {{zero them first}}
}

// Adding a mask does not zero anything; nor does where with a 1 branch.
SPMD_TYPE(tp = I)
Tensor plus_mask(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                 SPMD_TYPE(tp = R) const Tensor& ids, int64_t start,
                 int64_t end) {
  auto outside = (ids < start) | (ids >= end);
  auto keep = (~outside).to(at::kFloat).unsqueeze(-1);
  auto out = at::embedding(weight, ids - start); // global-note 2 {{type V on axis 'tp' inferred from this operation}}
  auto a = spmd::all_reduce(out + keep, tp, P, I); // global-error {{not zeroed}} global-note {{zero them first}}
  auto b = spmd::all_reduce(at::where(outside.unsqueeze(-1), 1.0, out), tp, P, I); // global-error {{not zeroed}} global-note {{zero them first}}
  return a + b;
}

// A mask on one path only.
SPMD_TYPE(tp = I)
Tensor mask_on_one_path(SPMD_TYPE(tp = S(0)) const Tensor& weight,
                        SPMD_TYPE(tp = R) const Tensor& ids, int64_t start,
                        int64_t end, bool masked) {
  auto outside = (ids < start) | (ids >= end);
  auto keep = (~outside).to(at::kFloat);
  if (!masked)
    keep = at::sigmoid(keep);
  auto out = at::embedding(weight, (ids - start).masked_fill(outside, 0)); // global-note {{type V on axis 'tp' inferred from this operation}}
  return spmd::all_reduce(out * keep.unsqueeze(-1), tp, P, I); // global-error {{not zeroed}} global-note {{zero them first}}
}
