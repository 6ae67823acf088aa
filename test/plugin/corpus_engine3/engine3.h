// A third engine-style corpus (global mode, strict), written by a "new user"
// from the user docs only, in the style of a Megatron-LM training engine
// ported to C++/libtorch: sequence parallelism (activations S(0) on the
// tokens between blocks, all_gather before a column-parallel linear,
// reduce_scatter after a row-parallel one), LayerNorms in the
// sequence-parallel region whose weight gradients are summed over tp by the
// optimizer, a Mixture-of-Experts layer with expert parallelism (top-k
// router, capacity dispatch, all_to_all dispatch / combine, batched expert
// GEMMs), a TransformerConfig with layout flags, Impl classes behind
// TORCH_MODULE holders and size-1 guards.
//
// Mesh: dp x ep x tp. ep is carved out of the data-parallel ranks (each ep
// rank reads its own micro-batch), so dense weights are replicated on dp and
// ep and their gradients summed over both; expert weights are sharded on ep
// (dim 0: the experts) and their gradients summed over dp only.
// Activations are [s, b, h] (sequence first, as in Megatron).
#pragma once

#include <spmd/collectives.h>
#include <spmd/type_annotations.h>
#include <torch/torch.h>

#include <cstdint>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace mcore {

using namespace spmd::types;
using torch::Tensor;
SPMD_AXIS(dp);
SPMD_AXIS(ep);
SPMD_AXIS(tp);

/// Megatron's TransformerConfig (the fields this engine uses).
struct TransformerConfig {
  int64_t hidden_size = 1024;
  int64_t num_attention_heads = 16;
  int64_t num_moe_experts = 8;
  int64_t moe_router_topk = 2;
  double moe_capacity_factor = 1.25;
  double moe_aux_loss_coeff = 1e-2;
  int64_t moe_ffn_hidden_size = 2816;
  double layernorm_epsilon = 1e-5;
  bool sequence_parallel = true;  // checked at construction: see below
  bool add_bias_linear = true;
};

/// This engine always runs the blocks with sequence parallelism: the layers'
/// layout flag is this constant (the plugin types a layer in the layout its
/// constructor argument chooses, which must be a compile-time constant).
inline constexpr bool kSequenceParallel = true;

/// The process groups of this rank (Megatron's parallel_state).
class ParallelState {
 public:
  SPMD_AXIS_SIZE(tp) int64_t tp_world_size() const { return tp_size_; }
  SPMD_AXIS_SIZE(ep) int64_t ep_world_size() const { return ep_size_; }
  SPMD_AXIS_SIZE(dp) int64_t dp_world_size() const { return dp_size_; }
  int64_t tp_rank() const { return tp_rank_; }
  int64_t ep_rank() const { return ep_rank_; }

 private:
  int64_t tp_size_ = 1, ep_size_ = 1, dp_size_ = 1;
  int64_t tp_rank_ = 0, ep_rank_ = 0;
};

// ---- tensor-parallel mappings (mappings.cpp) --------------------------------

/// The residual stream entering a column-parallel layer without sequence
/// parallelism: identity forward, all-reduce of the gradient backward.
SPMD_TYPE(tp = R)
Tensor copy_to_tensor_model_parallel_region(SPMD_TYPE(tp = I) const Tensor& input,
                                            const ParallelState& ps);
/// Sum of the row-parallel partial outputs.
SPMD_TYPE(tp = I)
Tensor reduce_from_tensor_model_parallel_region(
    SPMD_TYPE(tp = P) const Tensor& input, const ParallelState& ps);
/// [s/tp, b, h] -> [s, b, h].
SPMD_TYPE(tp = R, spmd::rank(3))
Tensor gather_from_sequence_parallel_region(
    SPMD_TYPE(tp = S(0), spmd::rank(3)) const Tensor& input,
    const ParallelState& ps);
/// [s, b, h] partial sums -> [s/tp, b, h].
SPMD_TYPE(tp = S(0), spmd::rank(3))
Tensor reduce_scatter_to_sequence_parallel_region(
    SPMD_TYPE(tp = P, spmd::rank(3)) const Tensor& input,
    const ParallelState& ps);
/// [s, b, h] -> [s/tp, b, h] (this rank's tokens of a replicated tensor).
SPMD_TYPE(tp = S(0), spmd::rank(3))
Tensor scatter_to_sequence_parallel_region(
    SPMD_TYPE(tp = I, spmd::rank(3)) const Tensor& input,
    const ParallelState& ps);

// ---- layers (layers.cpp) ----------------------------------------------------

/// Y = X A^T + b with A split by rows (output features) over tp.
class ColumnParallelLinearImpl : public torch::nn::Module {
 public:
  ColumnParallelLinearImpl(int64_t input_size, int64_t output_size, bool bias,
                           bool sequence_parallel, const ParallelState& ps);
  SPMD_TYPE(tp = S(-1), spmd::rank(3))
  Tensor forward(SPMD_TYPE(tp = I, spmd::rank(3))
                     SPMD_WHEN(sequence_parallel_, tp = S(0))
                         const Tensor& input);

 private:
  SPMD_TYPE(tp = S(0), spmd::rank(2)) Tensor weight_;
  SPMD_TYPE(tp = S(0), spmd::rank(1)) c10::optional<Tensor> bias_;
  bool sequence_parallel_;
  ParallelState ps_;
};
TORCH_MODULE(ColumnParallelLinear);

/// Y = X A^T + b with A split by columns (input features) over tp.
class RowParallelLinearImpl : public torch::nn::Module {
 public:
  RowParallelLinearImpl(int64_t input_size, int64_t output_size, bool bias,
                        bool sequence_parallel, const ParallelState& ps);
  SPMD_TYPE(tp = I, spmd::rank(3)) SPMD_WHEN(sequence_parallel_, tp = S(0))
  Tensor forward(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& input);

 private:
  SPMD_TYPE(tp = S(1), spmd::rank(2)) Tensor weight_;
  // I: its gradient is whole on tp without sequence parallelism; with it,
  // forward converts it to R (the backward sums the gradient over tp).
  SPMD_TYPE(tp = I, spmd::rank(1)) c10::optional<Tensor> bias_;
  bool sequence_parallel_;
  ParallelState ps_;
};
TORCH_MODULE(RowParallelLinear);

/// LayerNorm over the hidden dim, on this rank's tokens (sequence parallel):
/// its weight and bias are replicated and their gradients are partial on tp.
class SequenceParallelLayerNormImpl : public torch::nn::Module {
 public:
  SequenceParallelLayerNormImpl(int64_t hidden_size, double eps);
  SPMD_TYPE(tp = S(0), spmd::rank(3))
  Tensor forward(SPMD_TYPE(tp = S(0), spmd::rank(3)) const Tensor& x);

 private:
  SPMD_TYPE(tp = R, spmd::rank(1)) Tensor weight_;
  SPMD_TYPE(tp = R, spmd::rank(1)) Tensor bias_;
  int64_t hidden_size_;
  double eps_;
};
TORCH_MODULE(SequenceParallelLayerNorm);

// ---- attention (attention.cpp) ---------------------------------------------

class SelfAttentionImpl : public torch::nn::Module {
 public:
  SelfAttentionImpl(const TransformerConfig& config, const ParallelState& ps);
  SPMD_TYPE(tp = S(0), spmd::rank(3))
  Tensor forward(SPMD_TYPE(tp = S(0), spmd::rank(3)) const Tensor& hidden);

 private:
  ColumnParallelLinear linear_qkv_{nullptr};
  RowParallelLinear linear_proj_{nullptr};
  int64_t heads_per_partition_;
  int64_t head_dim_;
};
TORCH_MODULE(SelfAttention);

// ---- mixture of experts (moe.cpp) ------------------------------------------

/// Top-k router: per token, the k experts and their probabilities.
class TopKRouterImpl : public torch::nn::Module {
 public:
  TopKRouterImpl(const TransformerConfig& config, const ParallelState& ps);
  /// tokens [T, h] -> (probs [T, k], expert indices [T, k]).
  SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2))
  std::tuple<Tensor, Tensor> forward(
      SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2)) const Tensor& tokens);
  /// GShard load-balancing loss of this micro-batch's routing.
  SPMD_TYPE(tp = I, ep = P)
  Tensor aux_loss(SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2))
                      const Tensor& tokens,
                  SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2))
                      const Tensor& top_indices);

 private:
  SPMD_TYPE(tp = R, ep = R, spmd::rank(2)) Tensor weight_;
  int64_t topk_;
  int64_t num_experts_;
  double aux_loss_coeff_;
  ParallelState ps_;
};
TORCH_MODULE(TopKRouter);

/// This rank's experts: [E/ep, h, f] and [E/ep, f, h] (a grouped GEMM).
class GroupedMLPImpl : public torch::nn::Module {
 public:
  GroupedMLPImpl(const TransformerConfig& config, const ParallelState& ps);
  /// [E/ep, slots, h] -> [E/ep, slots, h].
  SPMD_TYPE(tp = V, ep = S(0), spmd::rank(3))
  Tensor forward(SPMD_TYPE(tp = V, ep = S(0), spmd::rank(3))
                     const Tensor& dispatched);

 private:
  SPMD_TYPE(tp = R, ep = S(0), spmd::rank(3)) Tensor weight1_;
  SPMD_TYPE(tp = R, ep = S(0), spmd::rank(3)) Tensor weight2_;
};
TORCH_MODULE(GroupedMLP);

class MoELayerImpl : public torch::nn::Module {
 public:
  MoELayerImpl(const TransformerConfig& config, const ParallelState& ps);
  /// [s/tp, b, h] -> ([s/tp, b, h], the load-balancing loss).
  SPMD_TYPE(tp = S(0), ep = V, spmd::rank(3))
  Tensor forward(SPMD_TYPE(tp = S(0), ep = V, spmd::rank(3))
                     const Tensor& hidden,
                 SPMD_TYPE(tp = I, ep = P) Tensor& aux_loss);

 private:
  TopKRouter router_{nullptr};
  GroupedMLP experts_{nullptr};
  int64_t num_experts_;
  int64_t topk_;
  double capacity_factor_;
  ParallelState ps_;
};
TORCH_MODULE(MoELayer);

// ---- the block (model.cpp) --------------------------------------------------

class TransformerLayerImpl : public torch::nn::Module {
 public:
  TransformerLayerImpl(const TransformerConfig& config, const ParallelState& ps);
  SPMD_TYPE(tp = S(0), ep = V, spmd::rank(3))
  Tensor forward(SPMD_TYPE(tp = S(0), ep = V, spmd::rank(3)) Tensor hidden,
                 SPMD_TYPE(tp = I, ep = P) Tensor& aux_loss);

 private:
  SequenceParallelLayerNorm input_layernorm_{nullptr};
  SelfAttention self_attention_{nullptr};
  SequenceParallelLayerNorm pre_mlp_layernorm_{nullptr};
  MoELayer mlp_{nullptr};
};
TORCH_MODULE(TransformerLayer);

// ---- training (train.cpp) ---------------------------------------------------

/// The parameters of one layer as the optimizer sees them (loaded from the
/// modules by name). Dense weights: replicated on dp and ep; experts: sharded
/// on ep.
struct LayerParams {
  SPMD_TYPE(dp = R, ep = R, tp = R, spmd::rank(1)) Tensor ln1_weight;
  SPMD_TYPE(dp = R, ep = R, tp = R, spmd::rank(1)) Tensor ln1_bias;
  SPMD_TYPE(dp = R, ep = R, tp = S(0), spmd::rank(2)) Tensor qkv_weight;
  SPMD_TYPE(dp = R, ep = R, tp = S(0), spmd::rank(1)) Tensor qkv_bias;
  SPMD_TYPE(dp = R, ep = R, tp = S(1), spmd::rank(2)) Tensor proj_weight;
  SPMD_TYPE(dp = R, ep = R, tp = I, spmd::rank(1)) Tensor proj_bias;
  SPMD_TYPE(dp = R, ep = R, tp = R, spmd::rank(2)) Tensor router_weight;
  SPMD_TYPE(dp = R, ep = S(0), tp = R, spmd::rank(3)) Tensor expert_w1;
  SPMD_TYPE(dp = R, ep = S(0), tp = R, spmd::rank(3)) Tensor expert_w2;
};

/// The gradient autograd accumulated into a parameter (out of line).
Tensor grad_of(const Tensor& param);

}  // namespace mcore
