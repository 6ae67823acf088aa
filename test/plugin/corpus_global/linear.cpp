// linear.cpp - column-, row- and QKV-parallel linear layers.
#include "engine.h"
#include <stdexcept>

namespace engine {

namespace {

/// Allocates a parameter and registers it with the module (the engines'
/// helper; the checkpoint loader fills it later).
Tensor& make_param(torch::nn::Module& m, const std::string& name,
                   std::vector<int64_t> shape) {
  return m.register_parameter(name, torch::empty({shape[0], shape[1]}));
}

}  // namespace

ColumnParallelLinearImpl::ColumnParallelLinearImpl(int64_t in, int64_t out,
                                                   bool bias,
                                                   bool gather_output,
                                                   const ParallelArgs& args)
    : gather_output_(gather_output), args_(args) {
  const int64_t out_per_rank = out / args.tp_size();
  weight_ = make_param(*this, "weight", {out_per_rank, in});
  if (bias) {
    bias_ = register_parameter("bias", torch::zeros({out_per_rank}));
  }
}

SPMD_TYPE(dp = V, tp = S(-1))
Tensor ColumnParallelLinearImpl::forward(SPMD_TYPE(dp = V, tp = I)
                                             Tensor input) {
  auto input_parallel = spmd::convert(input, tp, I, R);  // copy to tp region
  auto output = torch::linear(input_parallel, weight_, bias_);
  if (gather_output_) {
    output = gather_from_tp_region(output, args_);
  }
  return output;
}

RowParallelLinearImpl::RowParallelLinearImpl(int64_t in, int64_t out, bool bias,
                                             bool input_is_parallel,
                                             bool reduce_results,
                                             const ParallelArgs& args)
    : input_is_parallel_(input_is_parallel),
      reduce_results_(reduce_results),
      args_(args) {
  if (bias && !reduce_results)
    throw std::invalid_argument(
        "a bias without reduce_results would be summed tp times");
  weight_ = make_param(*this, "weight", {out, in / args.tp_size()});
  if (bias) bias_ = register_parameter("bias", torch::zeros({out}));
}

SPMD_TYPE(dp = V, tp = I)
Tensor RowParallelLinearImpl::forward(SPMD_TYPE(dp = V, tp = S(-1))
                                          Tensor input) {
  Tensor input_parallel = input;
  if (!input_is_parallel_) {
    // Keep this rank's slice of the features.
    input_parallel = spmd::convert(input, tp, I, S(-1));
  }
  auto output_parallel = torch::linear(input_parallel, weight_);
  auto partial = output_parallel; // P by propagation (global mode)
  Tensor output;
  if (reduce_results_ && args_.tp_size() > 1) {
    output = spmd::all_reduce(partial, tp, P, I);
  } else {
    output = partial;
  }
  if (reduce_results_ && bias_.defined()) {  // see the constructor
    output = output + bias_;
  }
  return output;
}

QKVParallelLinearImpl::QKVParallelLinearImpl(const ModelArgs& model,
                                             const ParallelArgs& args) {
  const int64_t heads = model.n_heads / args.tp_size();
  const int64_t kv_heads =
      std::max<int64_t>(1, model.n_kv_heads / args.tp_size());
  q_size_ = heads * model.head_dim;
  kv_size_ = kv_heads * model.head_dim;
  qkv_weight_ = register_parameter(
      "qkv_weight", torch::empty({q_size_ + 2 * kv_size_, model.hidden}));
  qkv_bias_ =
      register_parameter("qkv_bias", torch::zeros({q_size_ + 2 * kv_size_}));
}

SPMD_TYPE(dp = V, tp = S(-1))
Tensor QKVParallelLinearImpl::forward(SPMD_TYPE(dp = V, tp = I)
                                          const Tensor& input) {
  const Tensor input_parallel = copy_to_tp_region(input);
  return torch::linear(input_parallel, qkv_weight_, qkv_bias_);
}

}  // namespace engine
