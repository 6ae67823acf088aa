// embedding.cpp - vocab-parallel embedding, the vocab-parallel cross-entropy
// loss and next-token probabilities from vocab-split logits.
#include "engine.h"

namespace engine {

VocabParallelEmbeddingImpl::VocabParallelEmbeddingImpl(int64_t vocab,
                                                       int64_t hidden,
                                                       const ParallelArgs& args)
    : args_(args) {
  const int64_t per_rank = vocab / args.tp_size();
  start_ = per_rank * args.tp_rank();
  end_ = start_ + per_rank;
  weight_ = register_parameter("weight", torch::empty({per_rank, hidden}));
}

SPMD_TYPE(dp = V, tp = I)
Tensor VocabParallelEmbeddingImpl::forward(SPMD_TYPE(dp = V, tp = R)
                                               const Tensor& tokens) {
  if (args_.tp_size() == 1) {
    return torch::embedding(weight_, tokens);
  }
  // Tokens outside [start_, end_) belong to another rank: look up row 0 and
  // zero the result, so that the sum over tp picks the owner's row.
  auto outside = tokens.lt(start_) | tokens.ge(end_);
  auto local_tokens = (tokens - start_).masked_fill(outside, 0);
  auto rows = torch::embedding(weight_, local_tokens);
  rows.masked_fill_(outside.unsqueeze(-1), 0.0);
  // Zeroed outside the shard: the pending sum of the lookup (P), no
  // reinterpret (docs/plugin.md "Vocab-parallel lookups").
  auto partial = rows;
  return spmd::all_reduce(partial, tp, P, I);
}

/// Each rank's maximum over its own slice of the vocabulary (keepdim): a
/// local operation, so a local region (global mode would read max(-1) as a
/// max over the whole sharded dim, which a pending sum cannot combine). Its
/// last dim holds one entry per rank, to be gathered.
SPMD_LOCAL
SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(2))
Tensor local_vocab_max(SPMD_TYPE(dp = V, tp = S(-1)) const Tensor& logits) {
  return std::get<0>(logits.max(-1, /*keepdim=*/true)).detach();
}

/// Each rank's part of the targets' logits: the logit of a target in this
/// rank's slice of the vocabulary, 0 for the others (looked up with local
/// indices: a local operation, so a local region). The parts add up to the
/// targets' logits.
SPMD_LOCAL
SPMD_TYPE(dp = V, tp = P)
Tensor local_target_logit(SPMD_TYPE(dp = V, tp = S(-1)) const Tensor& shifted,
                          SPMD_TYPE(dp = V, tp = R) const Tensor& targets,
                          int64_t vocab_start, int64_t vocab_end) {
  auto not_here = targets.lt(vocab_start) | targets.ge(vocab_end);
  auto local_targets = (targets - vocab_start).masked_fill(not_here, 0);
  auto picked = shifted.gather(-1, local_targets.unsqueeze(-1)).squeeze(-1);
  picked = picked.masked_fill(not_here, 0.0);
  return spmd::reinterpret(picked, tp, V, P);
}

SPMD_TYPE(dp = V, tp = I)
Tensor vocab_parallel_cross_entropy(SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(2))
                                        const Tensor& logits,
                                    SPMD_TYPE(dp = V, tp = R)
                                        const Tensor& targets,
                                    int64_t vocab_start, int64_t vocab_end) {
  // Subtract the global max for stability (no gradient flows through it).
  auto local_max = local_vocab_max(logits);
  auto all_max = spmd::all_gather(local_max, tp, S(-1), R);
  Tensor global_max, unused;
  std::tie(global_max, unused) = all_max.max(-1, /*keepdim=*/true);
  auto shifted = logits - global_max;

  // The denominator: sum of exp over the whole vocabulary (a sum over the
  // sharded dim: P by propagation).
  auto local_sum_exp = shifted.exp().sum({-1});
  auto sum_exp = spmd::all_reduce(local_sum_exp, tp, P, I);

  // The target's logit, found on exactly one rank.
  auto picked = local_target_logit(shifted, targets, vocab_start, vocab_end);
  auto target_logit = spmd::all_reduce(picked, tp, P, I);

  return sum_exp.log() - target_logit;
}

SPMD_TYPE(dp = P, tp = I)
Tensor lm_loss(SPMD_TYPE(dp = V, tp = S(-1)) const Tensor& logits,
               SPMD_TYPE(dp = V, tp = R) const Tensor& targets,
               int64_t vocab_start, int64_t vocab_end, double global_tokens) {
  auto per_token =
      vocab_parallel_cross_entropy(logits, targets, vocab_start, vocab_end);
  // Divide by the global token count: the dp ranks' sums add up to the mean.
  // A sum over every dim of the dp-sharded losses is a pending sum over dp
  // by inference in global mode (whichever dim dp shards): no reinterpret.
  return per_token.sum() / global_tokens;
}

SPMD_TYPE(dp = V, tp = I)
Tensor next_token_probs(SPMD_TYPE(dp = V, tp = S(-1)) const Tensor& logits,
                        const ParallelArgs& args, double temperature) {
  auto full = gather_from_tp_region(logits, args);
  auto scaled = full / temperature;
  return torch::softmax(scaled, -1);
}

}  // namespace engine
