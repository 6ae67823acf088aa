// sp_block.cpp - a Megatron-style attention block whose projections switch
// between tensor and sequence parallelism with a constructor flag
// (`sequence_parallel_`): under sequence parallelism the activations between
// blocks are split on the tokens (S(0) on tp), the column-parallel input is
// all-gathered first and the row-parallel output is reduce-scattered back.
#include "engine.h"

namespace engine {

namespace sp {

/// The fused q, k, v projection with a sequence-parallel input.
class SPColumnLinearImpl : public torch::nn::Module {
 public:
  SPColumnLinearImpl(int64_t in, int64_t out, bool sequence_parallel,
                     const ParallelArgs& args)
      : sequence_parallel_(sequence_parallel), args_(args) {
    weight_ = register_parameter(
        "weight", torch::empty({out / args.tp_size(), in}));
    bias_ = register_parameter("bias", torch::zeros({out / args.tp_size()}));
  }

  SPMD_TYPE(dp = V, tp = S(-1))
  Tensor forward(SPMD_TYPE(dp = V, tp = I)
                     SPMD_WHEN(sequence_parallel_, tp = S(0)) const Tensor& x) {
    Tensor total;
    if (sequence_parallel_) {
      total = spmd::all_gather(x, tp, S(0), R);  // the whole sequence
    } else {
      total = spmd::convert(x, tp, I, R);  // copy to the tp region
    }
    return torch::linear(total, weight_, bias_);
  }

 private:
  SPMD_TYPE(dp = R, tp = S(0)) Tensor weight_;
  SPMD_TYPE(dp = R, tp = S(0)) c10::optional<Tensor> bias_;
  bool sequence_parallel_;
  ParallelArgs args_;
};
TORCH_MODULE(SPColumnLinear);

/// The output projection: reduce-scatter onto the tokens under sequence
/// parallelism, all-reduce otherwise; nothing to reduce on one rank.
class SPRowLinearImpl : public torch::nn::Module {
 public:
  SPRowLinearImpl(int64_t in, int64_t out, bool sequence_parallel,
                  const ParallelArgs& args)
      : sequence_parallel_(sequence_parallel), args_(args) {
    weight_ = register_parameter(
        "weight", torch::empty({out, in / args.tp_size()}));
  }

  SPMD_TYPE(dp = V, tp = I) SPMD_WHEN(sequence_parallel_, tp = S(0))
  Tensor forward(SPMD_TYPE(dp = V, tp = S(-1)) const Tensor& x) {
    auto partial = spmd::reinterpret(torch::linear(x, weight_), tp, V, P);
    if (args_.tp_size() == 1) return partial;
    if (sequence_parallel_) {
      return spmd::reduce_scatter(partial, tp, P, S(0));
    }
    return spmd::all_reduce(partial, tp, P, I);
  }

 private:
  SPMD_TYPE(dp = R, tp = S(1)) Tensor weight_;
  bool sequence_parallel_;
  ParallelArgs args_;
};
TORCH_MODULE(SPRowLinear);

/// Norm, attention over the local heads, residual; tokens split on tp.
class SPBlockImpl : public torch::nn::Module {
 public:
  SPBlockImpl(const ModelArgs& model, const ParallelArgs& args) {
    qkv_ = register_module(
        "qkv", SPColumnLinear(model.hidden, 3 * model.hidden,
                              /*sequence_parallel=*/true, args));
    out_ = register_module(
        "out", SPRowLinear(model.hidden, model.hidden,
                           /*sequence_parallel=*/true, args));
  }

  SPMD_TYPE(dp = V, tp = S(0))
  Tensor forward(SPMD_TYPE(dp = V, tp = S(0)) const Tensor& x,
                 SPMD_TYPE(dp = R, tp = R) const Tensor& norm_w) {
    auto h = sp_rms_norm(x, norm_w, 1e-6);
    auto qkv = qkv_(h);
    auto pieces = qkv.chunk(3, /*dim=*/-1);
    auto q = pieces[0];
    auto k = pieces[1];
    auto v = pieces[2];
    auto probs = torch::softmax(torch::matmul(q, k.transpose(-2, -1)), -1);
    auto context = torch::matmul(probs, v);
    return x + out_->forward(context);
  }

 private:
  SPColumnLinear qkv_{nullptr};
  SPRowLinear out_{nullptr};
};
TORCH_MODULE(SPBlock);

}  // namespace sp

using sp::SPBlock;

/// The blocks of a sequence-parallel stack, applied in turn.
SPMD_TYPE(dp = V, tp = S(0))
Tensor sp_stack(const ModelArgs& model, const ParallelArgs& args,
                SPMD_TYPE(dp = V, tp = S(0)) Tensor x,
                SPMD_TYPE(dp = R, tp = R) const Tensor& norm_w) {
  std::vector<SPBlock> blocks;
  for (int64_t i = 0; i < model.n_layers; ++i) blocks.emplace_back(model, args);
  for (auto& block : blocks) x = block->forward(x, norm_w);
  return x;
}

}  // namespace engine
