// Global mode: expand with sizes that are not constants (GQA's kv-head
// repeat written inline, sizes held in variables) keeps the shard: the
// result's rank is the number of sizes, and the size at the sharded dim is
// read as its local extent (the only size torch's expand takes there unless
// the extent is 1, a repeat in place that keeps each rank's block). The
// reshape that merges the repeated heads still needs constant sizes (or the
// assert_type the docs ask for after a view).
// RUN-PLUGIN: -Xclang -verify=strict -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

// ScaleLLM's repeat_kv inline, with the assert_type after the reshape: clean.
SPMD_TYPE(tp = S(1), spmd::rank(3))
Tensor repeat_kv(SPMD_TYPE(tp = S(1), spmd::rank(3)) Tensor k, int64_t n_tokens,
                 int64_t kv_heads, int64_t n_rep, int64_t head_dim) {
  return spmd::assert_type(
      k.unsqueeze(2)
          .expand({n_tokens, kv_heads, n_rep, head_dim})
          .reshape({n_tokens, kv_heads * n_rep, head_dim}),
      {tp = S(1)});
}

// The same with repeat_interleave by a count held in a variable: clean.
SPMD_TYPE(tp = S(1), spmd::rank(3))
Tensor repeat_kv_interleave(SPMD_TYPE(tp = S(1), spmd::rank(3)) Tensor k,
                            int64_t n_rep) {
  return k.repeat_interleave(n_rep, /*dim=*/1);
}

// The shard is known after the expand: a new leading dim moves it to dim 2.
SPMD_TYPE(tp = S(2), spmd::rank(4))
Tensor expand_leading(SPMD_TYPE(tp = S(1), spmd::rank(3)) const Tensor& k,
                      int64_t b, int64_t t, int64_t h, int64_t d) {
  return k.expand({b, t, h, d});
}

SPMD_TYPE(tp = S(1), spmd::rank(4)) // strict-note {{declared type is {tp: S(1)}}}
Tensor expand_leading_wrong(SPMD_TYPE(tp = S(1), spmd::rank(3)) const Tensor& k, // strict-note {{on axis 'tp' declared here}}
                            int64_t b, int64_t t, int64_t h, int64_t d) {
  return k.expand({b, t, h, d}); // strict-error {{returned value has type S(2) on axis 'tp', but 'expand_leading_wrong' is declared to return S(1) there}}
}

// Without the assert_type, the merge of non-constant sizes leaves the dim
// unknown, and strict mode says so where it matters.
SPMD_TYPE(tp = S(1), spmd::rank(3))
Tensor repeat_kv_no_assert(SPMD_TYPE(tp = S(1), spmd::rank(3)) Tensor k,
                           int64_t n_tokens, int64_t kv_heads, int64_t n_rep,
                           int64_t head_dim) {
  auto r = k.unsqueeze(2)
               .expand({n_tokens, kv_heads, n_rep, head_dim})
               .reshape({n_tokens, kv_heads * n_rep, head_dim}); // strict-note {{type V on axis 'tp' inferred from this operation}}
  return r; // strict-warning {{'r' is sharded on axis 'tp' on an unknown dim}}
}
