// Column-, row- and QKV-parallel linear layers.
#include "engine2.h"

#include <stdexcept>

namespace llm {
namespace F = torch::nn::functional;

ColumnParallelLinearImpl::ColumnParallelLinearImpl(int64_t in_features,
                                                   int64_t out_features,
                                                   bool bias,
                                                   bool gather_output,
                                                   const ParallelArgs& args)
    : gather_output_(gather_output), args_(args) {
  const int64_t world_size = args_.world_size();
  if (out_features % world_size != 0) {
    throw std::invalid_argument("out_features not divisible by world_size");
  }
  const int64_t out_per_partition = out_features / world_size;
  // F::linear computes x A^T + b, so the weight is stored transposed.
  weight_ = register_parameter(
      "weight", torch::empty({out_per_partition, in_features}));
  if (bias) {
    bias_ = register_parameter("bias", torch::empty({out_per_partition}));
  }
}

torch::Tensor ColumnParallelLinearImpl::forward(torch::Tensor input) {
  auto output = F::linear(input, weight_, bias_);
  if (args_.world_size() > 1 && gather_output_) {
    output = gather_from_tp_region(output, args_);
  }
  return output;
}

RowParallelLinearImpl::RowParallelLinearImpl(int64_t in_features,
                                             int64_t out_features, bool bias,
                                             bool input_is_parallelized,
                                             const ParallelArgs& args)
    : input_is_parallelized_(input_is_parallelized), args_(args) {
  const int64_t in_per_partition = in_features / args_.world_size();
  weight_ = register_parameter(
      "weight", torch::empty({out_features, in_per_partition}));
  if (bias) {
    bias_ = register_parameter("bias", torch::empty({out_features}));
  }
}

torch::Tensor RowParallelLinearImpl::forward(torch::Tensor input) {
  // a new local, not `input = scatter(input)`: a declared parameter keeps its
  // declared type (first_try.cpp)
  auto input_parallel = input;
  if (!input_is_parallelized_) {
    input_parallel = scatter_to_tp_region(input, args_);
  }
  auto output = F::linear(input_parallel, weight_);
  if (args_.world_size() > 1) {
    output = reduce_from_tp_region(output, args_);
  }
  // the bias goes in after the reduce, once
  if (bias_.defined()) {
    output.add_(bias_);
  }
  return output;
}

QKVParallelLinearImpl::QKVParallelLinearImpl(int64_t hidden_size,
                                             int64_t n_heads,
                                             int64_t n_kv_heads,
                                             int64_t head_dim,
                                             const ParallelArgs& args)
    : head_dim_(head_dim), args_(args) {
  const int64_t world_size = args_.world_size();
  // MQA/GQA: with fewer kv heads than ranks, replicate the kv heads so that
  // each rank holds exactly one.
  int64_t effective_kv_heads = n_kv_heads;
  if (n_kv_heads < world_size) {
    if (world_size % n_kv_heads != 0) {
      throw std::invalid_argument("kv heads can't be replicated evenly");
    }
    effective_kv_heads = world_size;
  }
  n_local_heads_ = n_heads / world_size;
  n_local_kv_heads_ = effective_kv_heads / world_size;
  const int64_t local_out = (n_local_heads_ + 2 * n_local_kv_heads_) * head_dim;
  weight_ = register_parameter("weight", torch::empty({local_out, hidden_size}));
}

/// This rank's q, k and v, from its own [q_r | k_r | v_r] slice.
SPMD_LOCAL
SPMD_TYPE(tp = S(-1), spmd::rank(2))
std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> split_qkv_local(
    SPMD_TYPE(tp = S(-1)) const torch::Tensor& qkv, int64_t q_size,
    int64_t kv_size) {
  auto q = qkv.narrow(-1, 0, q_size);
  auto k = qkv.narrow(-1, q_size, kv_size);
  auto v = qkv.narrow(-1, q_size + kv_size, kv_size);
  return std::make_tuple(q, k, v);
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor>
QKVParallelLinearImpl::forward(torch::Tensor input) {
  auto qkv = F::linear(input, weight_);
  const int64_t q_size = n_local_heads_ * head_dim_;
  const int64_t kv_size = n_local_kv_heads_ * head_dim_;
  return split_qkv_local(qkv, q_size, kv_size);
}

}  // namespace llm
