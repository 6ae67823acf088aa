// FIRST TRY: layers.cpp as first annotated from the docs, before the
// workarounds (mutants.py records its false alarms and strict unknowns, so
// that the harness says when the plugin learns these idioms).
//
// Port of apex/transformer/tensor_parallel/layers.py (NVIDIA/apex,
// BSD-3-Clause, commit 01c675f3f538922c2c53a233257df0dc2cef56f0) to
// libtorch C++, line by line (the project is Python only):
// VocabParallelEmbedding, LinearWithGradAccumulationAndAsyncCommunication
// (forward and backward), ColumnParallelLinear and RowParallelLinear.
// Trimmed: weight initialisation (_initialize_affine_weight_*), the fused
// wgrad GEMM extension (declared opaque below), autocast. `x[mask] = 0`
// becomes masked_fill_ (the harness's libtorch stand-in has no index_put_).
// See PROVENANCE.md.
#include "apex.h"

namespace apex {

using parallel_state::get_tensor_model_parallel_rank;
using parallel_state::get_tensor_model_parallel_world_size;

/// fused_weight_gradient_mlp_cuda.wgrad_gemm_accum_fp32 (apex's CUDA
/// extension): main_grad += grad_output^T total_input.
void wgrad_gemm_accum_fp32(const Tensor& total_input,
                           const Tensor& grad_output, Tensor& main_grad);

/// Embedding parallelized in the vocabulary dimension.
class VocabParallelEmbedding : public torch::nn::Module {
 public:
  VocabParallelEmbedding(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {
    tensor_model_parallel_size_ = get_tensor_model_parallel_world_size();
    // Divide the weight matrix along the vocabulary dimension.
    std::tie(vocab_start_index_, vocab_end_index_) =
        vocab_range_from_global_vocab_size(num_embeddings_,
                                           get_tensor_model_parallel_rank(),
                                           tensor_model_parallel_size_);
    num_embeddings_per_partition_ = vocab_end_index_ - vocab_start_index_;
    weight_ = register_parameter(
        "weight", torch::empty({num_embeddings_per_partition_, embedding_dim_}));
  }

  /// input_: token ids [s, b]; result [s, b, h].
  SPMD_TYPE(tp = I, spmd::rank(3))
  Tensor forward(SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& input_) {
    Tensor input_mask;
    Tensor masked_input;
    if (tensor_model_parallel_size_ > 1) {
      // Build the mask.
      input_mask =
          (input_ < vocab_start_index_).logical_or(input_.ge(vocab_end_index_));
      // Mask the input.
      masked_input = input_.clone() - vocab_start_index_;
      masked_input.masked_fill_(input_mask, 0);
    } else {
      masked_input = input_;
    }
    // Get the embeddings.
    Tensor output_parallel = at::embedding(weight_, masked_input);
    // Mask the output embedding.
    if (tensor_model_parallel_size_ > 1) {
      output_parallel.masked_fill_(input_mask.unsqueeze(-1), 0.0);
    }
    // Reduce across all the model parallel GPUs.
    Tensor output = reduce_from_tensor_model_parallel_region(output_parallel);
    return output;
  }

 private:
  int64_t num_embeddings_;
  int64_t embedding_dim_;
  SPMD_AXIS_SIZE(tp) int64_t tensor_model_parallel_size_;
  int64_t vocab_start_index_ = 0;
  int64_t vocab_end_index_ = 0;
  int64_t num_embeddings_per_partition_ = 0;
  SPMD_TYPE(tp = S(0), spmd::rank(2)) Tensor weight_;
};

/// LinearWithGradAccumulationAndAsyncCommunication.forward:
/// input_ [s, b, in] (the sequence shard with sequence_parallel_enabled),
/// weight [out_p, in], bias [out_p].
SPMD_TYPE(tp = S(-1), spmd::rank(3))
Tensor linear_with_grad_accumulation_and_async_allreduce(
    SPMD_TYPE(tp = R, spmd::rank(3)) const Tensor& input,
    SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& weight,
    SPMD_TYPE(tp = S(0), spmd::rank(1)) const std::optional<Tensor>& bias,
    bool gradient_accumulation_fusion, bool async_grad_allreduce,
    bool sequence_parallel_enabled) {
  Tensor total_input;
  if (sequence_parallel_enabled) {
    total_input = spmd::all_gather(input, tp, S(0), R);
  } else {
    total_input = input;
  }
  Tensor output = at::matmul(total_input, weight.t());
  if (bias.has_value()) {
    output = output + *bias;
  }
  return output;
}

/// LinearWithGradAccumulationAndAsyncCommunication.backward, written out:
/// grad_output [s, b, out_p]; returns (grad_input, grad_weight, grad_bias).
std::tuple<Tensor, Tensor, Tensor> linear_backward(
    SPMD_TYPE(tp = R, spmd::rank(3)) const Tensor& input,
    SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& weight,
    SPMD_TYPE(tp = S(-1), spmd::rank(3)) Tensor grad_output, bool use_bias,
    bool gradient_accumulation_fusion, bool async_grad_allreduce,
    bool sequence_parallel_enabled) {
  Tensor total_input;
  if (sequence_parallel_enabled) {
    total_input = spmd::all_gather(input, tp, S(0), R);
  } else {
    total_input = input;
  }
  Tensor grad_input = grad_output.matmul(weight);

  // Convert the tensor shapes to 2D for execution compatibility
  grad_output = grad_output.view(
      {grad_output.size(0) * grad_output.size(1), grad_output.size(2)});
  total_input = total_input.view(
      {total_input.size(0) * total_input.size(1), total_input.size(2)});
  Tensor sub_grad_input;
  if (async_grad_allreduce) {
    // Asynchronous all-reduce
    grad_input = spmd::all_reduce(grad_input, tp, P, R);
  }
  if (sequence_parallel_enabled) {
    TORCH_CHECK(!async_grad_allreduce);
    sub_grad_input = spmd::reduce_scatter(grad_input, tp, P, S(0));
  }
  Tensor grad_weight;
  if (!gradient_accumulation_fusion) {
    grad_weight = grad_output.t().matmul(total_input);
  }
  Tensor grad_bias;
  if (use_bias) {
    grad_bias = grad_output.sum({0});
  }
  if (sequence_parallel_enabled) {
    return {sub_grad_input, grad_weight, grad_bias};
  }
  return {grad_input, grad_weight, grad_bias};
}

/// Linear layer with column parallelism: Y = XA + b, A split along its
/// second dimension (weight [out / tp, in]).
class ColumnParallelLinear : public torch::nn::Module {
 public:
  ColumnParallelLinear(int64_t input_size, int64_t output_size,
                       bool bias = true, bool gather_output = true,
                       bool skip_bias_add = false,
                       bool no_async_tensor_model_parallel_allreduce = false,
                       bool gradient_accumulation_fusion = false,
                       bool sequence_parallel_enabled = false)
      : input_size_(input_size),
        output_size_(output_size),
        gather_output_(gather_output),
        skip_bias_add_(skip_bias_add) {
    int64_t world_size = get_tensor_model_parallel_world_size();
    output_size_per_partition_ = divide(output_size, world_size);
    weight_ = register_parameter(
        "weight", torch::empty({output_size_per_partition_, input_size_}));
    if (bias) {
      bias_ = register_parameter("bias",
                                 torch::zeros({output_size_per_partition_}));
    }
    async_tensor_model_parallel_allreduce_ =
        !no_async_tensor_model_parallel_allreduce && world_size > 1;
    if (sequence_parallel_enabled && world_size <= 1) {
      sequence_parallel_enabled = false;
    }
    sequence_parallel_enabled_ = sequence_parallel_enabled;
    gradient_accumulation_fusion_ = gradient_accumulation_fusion;
    TORCH_CHECK(!(async_tensor_model_parallel_allreduce_ &&
                  sequence_parallel_enabled_));
  }

  /// input_: [s, b, in]; returns (output, output_bias).
  SPMD_TYPE(tp = S(-1), spmd::rank(3))
  SPMD_WHEN(gather_output_, tp = I)
  std::pair<Tensor, std::optional<Tensor>> forward(
      SPMD_TYPE(tp = I, spmd::rank(3))
          SPMD_WHEN(sequence_parallel_enabled_, tp = S(0))
              const Tensor& input_) {
    std::optional<Tensor> bias;
    if (!skip_bias_add_) {
      bias = bias_;
    }
    Tensor input_parallel;
    if (async_tensor_model_parallel_allreduce_ || sequence_parallel_enabled_) {
      input_parallel = input_;
    } else {
      input_parallel = copy_to_tensor_model_parallel_region(input_);
    }
    // Matrix multiply.
    Tensor output_parallel = linear_with_grad_accumulation_and_async_allreduce(
        input_parallel, weight_, bias, gradient_accumulation_fusion_,
        async_tensor_model_parallel_allreduce_, sequence_parallel_enabled_);
    Tensor output;
    if (gather_output_) {
      // All-gather across the partitions.
      TORCH_CHECK(!sequence_parallel_enabled_);
      output = gather_from_tensor_model_parallel_region(output_parallel);
    } else {
      output = output_parallel;
    }
    std::optional<Tensor> output_bias;
    if (skip_bias_add_) {
      output_bias = bias_;
    }
    return {output, output_bias};
  }

 private:
  int64_t input_size_;
  int64_t output_size_;
  bool gather_output_;
  bool skip_bias_add_;
  int64_t output_size_per_partition_ = 0;
  bool async_tensor_model_parallel_allreduce_ = false;
  bool sequence_parallel_enabled_ = false;
  bool gradient_accumulation_fusion_ = false;
  SPMD_TYPE(tp = S(0), spmd::rank(2)) Tensor weight_;
  SPMD_TYPE(tp = S(0), spmd::rank(1)) std::optional<Tensor> bias_;
};

/// Linear layer with row parallelism: Y = XA + b, A split along its first
/// dimension and X along its second (weight [out, in / tp]).
class RowParallelLinear : public torch::nn::Module {
 public:
  RowParallelLinear(int64_t input_size, int64_t output_size, bool bias = true,
                    bool input_is_parallel = false, bool skip_bias_add = false,
                    bool gradient_accumulation_fusion = false,
                    bool sequence_parallel_enabled = false)
      : input_size_(input_size),
        output_size_(output_size),
        input_is_parallel_(input_is_parallel),
        skip_bias_add_(skip_bias_add),
        gradient_accumulation_fusion_(gradient_accumulation_fusion),
        sequence_parallel_enabled_(sequence_parallel_enabled) {
    int64_t world_size = get_tensor_model_parallel_world_size();
    input_size_per_partition_ = divide(input_size, world_size);
    TORCH_CHECK(!(sequence_parallel_enabled_ && !input_is_parallel_),
                "To enable `sequence_parallel_enabled`, `input_is_parallel` "
                "must be `True`");
    weight_ = register_parameter(
        "weight", torch::empty({output_size_, input_size_per_partition_}));
    if (bias) {
      bias_ = register_parameter("bias", torch::zeros({output_size_}));
    }
  }

  /// input_: [s, b, in / tp] (or [s, b, in] without input_is_parallel);
  /// returns (output, output_bias).
  SPMD_TYPE(tp = I, spmd::rank(3))
  SPMD_WHEN(sequence_parallel_enabled_, tp = S(0))
  std::pair<Tensor, std::optional<Tensor>> forward(
      SPMD_TYPE(tp = S(-1), spmd::rank(3))
          SPMD_UNLESS(input_is_parallel_, tp = I) const Tensor& input_) {
    // Set up backprop all-reduce.
    Tensor input_parallel;
    if (input_is_parallel_) {
      input_parallel = input_;
    } else {
      TORCH_CHECK(!sequence_parallel_enabled_);
      input_parallel = scatter_to_tensor_model_parallel_region(input_);
    }
    // Matrix multiply.
    Tensor output_parallel = at::matmul(input_parallel, weight_.t());
    // All-reduce across all the partitions.
    Tensor output_;
    if (sequence_parallel_enabled_) {
      output_ = reduce_scatter_to_sequence_parallel_region(output_parallel);
    } else {
      output_ = reduce_from_tensor_model_parallel_region(output_parallel);
    }
    Tensor output;
    std::optional<Tensor> output_bias;
    if (!skip_bias_add_) {
      output = bias_.has_value() ? output_ + *bias_ : output_;
    } else {
      output = output_;
      output_bias = bias_;
    }
    return {output, output_bias};
  }

 private:
  int64_t input_size_;
  int64_t output_size_;
  bool input_is_parallel_;
  bool skip_bias_add_;
  bool gradient_accumulation_fusion_;
  bool sequence_parallel_enabled_;
  int64_t input_size_per_partition_ = 0;
  SPMD_TYPE(tp = S(1), spmd::rank(2)) Tensor weight_;
  SPMD_TYPE(tp = I, spmd::rank(1)) std::optional<Tensor> bias_;
};

}  // namespace apex
