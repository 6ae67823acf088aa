// Port of apex/transformer/tensor_parallel/cross_entropy.py (NVIDIA/apex,
// BSD-3-Clause, commit 16fadfe71c0d57312351c2d8b056251a0c8ce1ef) to
// libtorch C++, line by line (the project is Python only): the forward of
// _VocabParallelCrossEntropy, without label smoothing. Logits [s, b, v / tp]
// split on the vocabulary (tp = S(-1)), target ids [s, b]. Workarounds: the
// all-reduce MAX (spmd has sum collectives only) is a gather of the
// per-rank maxima; the masked target lookup is a local region returning the
// pending sum (plugin.md, "Annotating an existing engine"). See
// PROVENANCE.md.
#include "apex.h"

namespace apex {

using parallel_state::get_tensor_model_parallel_rank;
using parallel_state::get_tensor_model_parallel_world_size;

/// VocabUtility.vocab_range_from_per_partition_vocab_size.
std::pair<int64_t, int64_t> vocab_range_from_per_partition_vocab_size(
    int64_t per_partition_vocab_size, int64_t rank, int64_t world_size);

namespace {

/// This rank's maximum over its vocabulary slice, [s, b, 1] (workaround for
/// the all-reduce MAX: gathered, then the max of the maxima).
SPMD_LOCAL
SPMD_TYPE(tp = S(-1), spmd::rank(3))
Tensor local_logits_max(
    SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& vocab_parallel_logits) {
  return vocab_parallel_logits.amax({-1}, /*keepdim=*/true);
}

/// logits[target] where the target is in this rank's slice, else 0: one
/// term of the predicted logit, [s, b].
SPMD_LOCAL
SPMD_TYPE(tp = P, spmd::rank(2))
Tensor local_predicted_logits(
    SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& vocab_parallel_logits,
    SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& target,
    int64_t vocab_start_index, int64_t vocab_end_index) {
  int64_t partition_vocab_size = vocab_parallel_logits.size(-1);
  // Create a mask of valid vocab ids (1 means it needs to be masked).
  Tensor target_mask =
      (target < vocab_start_index).logical_or(target.ge(vocab_end_index));
  Tensor masked_target = target.clone() - vocab_start_index;
  masked_target.masked_fill_(target_mask, 0);
  // Get predicted-logits = logits[target].
  Tensor logits_2d = vocab_parallel_logits.view({-1, partition_vocab_size});
  Tensor masked_target_1d = masked_target.view({-1});
  Tensor predicted_logits_1d =
      logits_2d.gather(1, masked_target_1d.unsqueeze(1)).squeeze(1);
  Tensor predicted_logits =
      predicted_logits_1d.contiguous().view({target.size(0), target.size(1)});
  predicted_logits.masked_fill_(target_mask, 0.0);
  return spmd::reinterpret(predicted_logits, tp, V, P);
}

}  // namespace

/// _VocabParallelCrossEntropy.forward: the loss per token, [s, b].
SPMD_TYPE(tp = R, spmd::rank(2))
Tensor vocab_parallel_cross_entropy(
    SPMD_TYPE(tp = S(-1), spmd::rank(3)) Tensor vocab_parallel_logits,
    SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& target) {
  // Maximum value along vocab dimension across all GPUs.
  Tensor logits_max = spmd::all_gather(local_logits_max(vocab_parallel_logits),
                                       tp, S(-1), R)
                          .amax({-1});
  // Subtract the maximum value.
  vocab_parallel_logits = vocab_parallel_logits - logits_max.unsqueeze(-1);

  // Get the partition's vocab indices
  int64_t partition_vocab_size = vocab_parallel_logits.size(-1);
  int64_t rank = get_tensor_model_parallel_rank();
  int64_t world_size = get_tensor_model_parallel_world_size();
  auto [vocab_start_index, vocab_end_index] =
      vocab_range_from_per_partition_vocab_size(partition_vocab_size, rank,
                                                world_size);

  Tensor predicted_logits = local_predicted_logits(
      vocab_parallel_logits, target, vocab_start_index, vocab_end_index);
  // All reduce is needed to get the chunks from other GPUs.
  predicted_logits = spmd::all_reduce(predicted_logits, tp, P, R);

  // Sum of exponential of logits along vocab dimension across all GPUs.
  Tensor exp_logits = vocab_parallel_logits.exp();
  Tensor sum_exp_logits = exp_logits.sum({-1});
  sum_exp_logits = spmd::all_reduce(sum_exp_logits, tp, P, R);

  // Loss = log(sum(exp(logits))) - predicted-logit.
  Tensor loss = sum_exp_logits.log() - predicted_logits;

  // Store softmax for the backward pass.
  exp_logits.div_(sum_exp_logits.unsqueeze(-1));
  return loss;
}

}  // namespace apex
