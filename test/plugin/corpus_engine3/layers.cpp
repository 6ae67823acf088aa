// Tensor-parallel linear layers and the sequence-parallel LayerNorm
// (tensor_parallel/layers.py, fused_layer_norm.py).
#include "engine3.h"

namespace mcore {

ColumnParallelLinearImpl::ColumnParallelLinearImpl(int64_t input_size,
                                                   int64_t output_size,
                                                   bool bias,
                                                   bool sequence_parallel,
                                                   const ParallelState& ps)
    : sequence_parallel_(sequence_parallel), ps_(ps) {
  const int64_t output_per_partition = output_size / ps.tp_world_size();
  weight_ = register_parameter(
      "weight", torch::empty({output_per_partition, input_size}));
  if (bias) {
    bias_ = register_parameter("bias", torch::zeros({output_per_partition}));
  }
}

Tensor ColumnParallelLinearImpl::forward(const Tensor& input) {
  Tensor input_parallel;
  if (sequence_parallel_) {
    input_parallel = gather_from_sequence_parallel_region(input, ps_);
  } else {
    input_parallel = copy_to_tensor_model_parallel_region(input, ps_);
  }
  return at::linear(input_parallel, weight_, bias_);
}

RowParallelLinearImpl::RowParallelLinearImpl(int64_t input_size,
                                             int64_t output_size, bool bias,
                                             bool sequence_parallel,
                                             const ParallelState& ps)
    : sequence_parallel_(sequence_parallel), ps_(ps) {
  const int64_t input_per_partition = input_size / ps.tp_world_size();
  weight_ = register_parameter(
      "weight", torch::empty({output_size, input_per_partition}));
  if (bias) {
    bias_ = register_parameter("bias", torch::zeros({output_size}));
  }
}

Tensor RowParallelLinearImpl::forward(const Tensor& input) {
  auto output_parallel = at::linear(input, weight_);
  Tensor output;
  if (sequence_parallel_) {
    output = reduce_scatter_to_sequence_parallel_region(output_parallel, ps_);
  } else {
    output = reduce_from_tensor_model_parallel_region(output_parallel, ps_);
  }
  if (bias_.has_value()) {
    if (sequence_parallel_) {
      // Added on this rank's tokens only: the gradient is a partial sum.
      output = output + spmd::convert(bias_.value(), tp, I, R);
    } else {
      output = output + bias_.value();
    }
  }
  return output;
}

SequenceParallelLayerNormImpl::SequenceParallelLayerNormImpl(
    int64_t hidden_size, double eps)
    : hidden_size_(hidden_size), eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({hidden_size}));
  bias_ = register_parameter("bias", torch::zeros({hidden_size}));
}

Tensor SequenceParallelLayerNormImpl::forward(const Tensor& x) {
  return at::layer_norm(x, {hidden_size_}, weight_, bias_, eps_);
}

}  // namespace mcore
