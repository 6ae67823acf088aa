// Global mode: the shape-preserving ops of attention and causal-mask code
// (core's sharding rules). triu / tril keep a shard of a batch or heads dim
// and reject one of the last two dims (the triangle is cut at a global
// index); roll and flip reject moving elements along the sharded dim (roll
// without dims moves every dim); repeat_interleave by a constant count keeps
// the shard even along the sharded dim (GQA's repeated KV heads); softmax
// and cumsum along the sharded dim are rejected, along another dim kept.
// scaled_dot_product_attention keeps a heads shard that q, k and v share
// and rejects a shard of the features or one q, k and v do not share.
// Ranks counted from the end (S(-1) without spmd::rank) resolve for triu /
// tril and for flip / roll along negative dims. The second run: local mode
// (S(i) reads as V) has none of these rules.
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=local
// local-no-diagnostics
#include "Inputs/prelude.h"

// --- kept: no diagnostic ---------------------------------------------------

// Scores [b, heads, s, s] sharded on the heads: the causal triangle of
// each head, its softmax over the keys.
SPMD_TYPE(tp = S(1), spmd::rank(4))
Tensor causal_scores(SPMD_TYPE(tp = S(1), spmd::rank(4)) const Tensor& scores) {
  auto masked = scores.tril();
  auto upper = at::triu(scores, 1);
  return (masked + upper).softmax(-1);
}

// The triangle of the last two dims, counted from the end: S(-3) of a
// tensor of rank 3 or more is never one of them.
SPMD_TYPE(tp = S(-3))
Tensor triangle_from_end(SPMD_TYPE(tp = S(-3)) const Tensor& scores) {
  return scores.triu(1);
}

// GQA: KV heads [b, kv_heads, s, d] repeated in place, sharded on the
// heads: each rank's repeated block is its block of the repeated heads.
SPMD_TYPE(tp = S(1), spmd::rank(4))
Tensor repeat_kv(SPMD_TYPE(tp = S(1), spmd::rank(4)) const Tensor& kv) {
  return kv.repeat_interleave(4, 1);
}

// Rolled and flipped along the sequence, sharded on the features.
SPMD_TYPE(tp = S(-1))
Tensor shift_sequence(SPMD_TYPE(tp = S(-1)) const Tensor& x) {
  return x.roll({1}, {-2}).flip({-2});
}

// A cumulative sum over the sequence of feature-sharded activations.
SPMD_TYPE(tp = S(2), spmd::rank(3))
Tensor cumulative(SPMD_TYPE(tp = S(2), spmd::rank(3)) const Tensor& x) {
  return x.cumsum(1);
}

// Attention over each rank's heads (q, k, v [b, heads, s, d] from a
// column-parallel projection), with a causal [s, s] mask.
SPMD_TYPE(tp = S(1), spmd::rank(4))
Tensor attend(SPMD_TYPE(tp = S(1), spmd::rank(4)) const Tensor& q,
              SPMD_TYPE(tp = S(1), spmd::rank(4)) const Tensor& k,
              SPMD_TYPE(tp = S(1), spmd::rank(4)) const Tensor& v,
              SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& causal) {
  return at::scaled_dot_product_attention(q, k, v, causal);
}

// --- rejected: an op along the sharded dim ---------------------------------

// Attention with q, k, v sharded on the head features: the scores would be
// each rank's part of a sum.
SPMD_TYPE(tp = S(3))
Tensor attend_feature_shards(SPMD_TYPE(tp = S(3), spmd::rank(4)) const Tensor& q, // global-note {{'q' has type S(3) on axis 'tp' declared here}}
                             SPMD_TYPE(tp = S(3), spmd::rank(4)) const Tensor& k, // global-note {{'k' has type S(3) on axis 'tp' declared here}}
                             SPMD_TYPE(tp = S(3), spmd::rank(4)) const Tensor& v) {
  return at::scaled_dot_product_attention(q, k, v); // global-error {{No valid sharding strategy for at::scaled_dot_product_attention on axis tp: args[0] is sharded on its last dim (S(3)): the scores are a sum over the features, and each rank holds only its part}} global-note {{shard the heads instead}}
}

// Head-sharded queries against every key head.
SPMD_TYPE(tp = S(1))
Tensor attend_all_keys(SPMD_TYPE(tp = S(1), spmd::rank(4)) const Tensor& q, // global-note {{'q' has type S(1) on axis 'tp' declared here}}
                       SPMD_TYPE(tp = R, spmd::rank(4)) const Tensor& k, // global-note {{'k' has type R on axis 'tp' declared here}}
                       SPMD_TYPE(tp = R, spmd::rank(4)) const Tensor& v) {
  return at::scaled_dot_product_attention(q, k, v); // global-error {{must be sharded on the same batch or heads dim; args[1] is R}} global-note {{shard q, k and v on the same heads dim}}
}

// A causal mask built on the sequence shard: each rank cuts its block of
// rows at its own row 0.
SPMD_TYPE(tp = S(0))
Tensor causal_on_sequence_shard(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& scores) { // global-note {{'scores' has type S(0) on axis 'tp' declared here}}
  return scores.triu(1); // global-error {{No valid sharding strategy for scores.triu on axis tp: it keeps a triangle of the last two dims, cut at the diagonal (a global row - column index), and tp shards dim 0 (S(0)): each rank's block counts its rows and columns from 0, so its triangle is cut in the wrong place}} global-note {{suggestion: all_gather args[0] first: spmd::all_gather(t, tp, S(0), R) (or redistribute the other operands to the same sharding), or build this rank's block of the mask with its global offset}}
}

// Key-sharded scores of unknown rank (S(-1)): still the last dim.
SPMD_TYPE(tp = S(-1))
Tensor causal_on_key_shard(SPMD_TYPE(tp = S(-1)) const Tensor& scores) { // global-note {{'scores' has type S(-1) on axis 'tp' declared here}}
  return at::tril(scores); // global-error {{No valid sharding strategy for at::tril on axis tp: it keeps a triangle of the last two dims}} global-note {{all_gather}}
}

// Rolling the sharded dim moves elements across ranks; so does a roll
// without dims (the flattened tensor).
SPMD_TYPE(tp = S(-1))
Tensor roll_features(SPMD_TYPE(tp = S(-1)) const Tensor& x) { // global-note 2 {{'x' has type S(-1) on axis 'tp' declared here}}
  auto a = x.roll({1}, {-1}); // global-error {{No valid sharding strategy for x.roll on axis tp: it moves elements across dim}} global-note {{all_gather}}
  auto b = x.roll({1}); // global-error {{No valid sharding strategy for x.roll on axis tp: it moves elements across dim}} global-note {{all_gather}}
  return a;
}

// softmax over the vocabulary shard (the corpus's softmax_sharded_vocab).
SPMD_TYPE(tp = S(-1))
Tensor softmax_over_vocab_shard(SPMD_TYPE(tp = S(-1)) const Tensor& logits) { // global-note {{'logits' has type S(-1) on axis 'tp' declared here}}
  return torch::softmax(logits, -1); // global-error {{No valid sharding strategy for torch::softmax on axis tp: it works along dim}} global-note {{vocab-parallel}}
}

// A cumulative sum along the shard sums only this rank's part.
SPMD_TYPE(tp = S(1), spmd::rank(2))
Tensor cumsum_along_shard(SPMD_TYPE(tp = S(1), spmd::rank(2)) const Tensor& x) { // global-note {{'x' has type S(1) on axis 'tp' declared here}}
  return x.cumsum(1); // global-error {{No valid sharding strategy for x.cumsum on axis tp: it works along dim 1}} global-note {{all_gather}}
}

// Counts per element along the shard do not split evenly.
SPMD_TYPE(tp = S(0))
Tensor repeat_by_counts(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& x, // global-note {{'x' has type S(0) on axis 'tp' declared here}}
                        SPMD_TYPE(tp = R, spmd::rank(1)) const Tensor& counts) { // global-note {{'counts' has type R on axis 'tp' declared here}}
  return x.repeat_interleave(counts, 0); // global-error {{No valid sharding strategy for x.repeat_interleave on axis tp: it repeats by per-element counts along dim 0}} global-note {{all_gather}}
}
