// Vocab-parallel and embedding-dim-parallel embeddings.
#include "engine2.h"

namespace llm {
namespace F = torch::nn::functional;

VocabParallelEmbeddingImpl::VocabParallelEmbeddingImpl(
    int64_t num_embeddings, int64_t embedding_dim, const ParallelArgs& args)
    : args_(args) {
  const int64_t per_partition = num_embeddings / args_.world_size();
  start_index_ = per_partition * args_.rank();
  end_index_ = start_index_ + per_partition;
  weight_ = register_parameter("weight",
                               torch::empty({per_partition, embedding_dim}));
}

torch::Tensor VocabParallelEmbeddingImpl::forward(torch::Tensor input) {
  if (args_.world_size() == 1) {
    return F::embedding(input, weight_);
  }
  // ids outside [start, end) belong to another rank: look up row 0 and zero it
  auto masked_input = input - start_index_;
  const auto input_mask = (input < start_index_) | (input >= end_index_);
  masked_input.masked_fill_(input_mask, 0);
  auto output = F::embedding(masked_input, weight_);
  output.masked_fill_(input_mask.unsqueeze(-1), 0);
  // the masked rows are this rank's term of the sum: P (first_try.cpp (2))
  return reduce_from_tp_region(output, args_);
}

ParallelEmbeddingImpl::ParallelEmbeddingImpl(int64_t num_embeddings,
                                             int64_t embedding_dim,
                                             const ParallelArgs& args)
    : args_(args) {
  const int64_t dim_per_partition = embedding_dim / args_.world_size();
  weight_ = register_parameter(
      "weight", torch::empty({num_embeddings, dim_per_partition}));
}

torch::Tensor ParallelEmbeddingImpl::forward(torch::Tensor input) {
  auto output = F::embedding(input, weight_);
  if (args_.world_size() > 1) {
    output = gather_from_tp_region(output, args_);
  }
  return output;
}

}  // namespace llm
