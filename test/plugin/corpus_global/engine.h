// engine.h - a small tensor-parallel LLM engine in the style of public
// libtorch inference/training engines, annotated with SPMD types as a careful
// first-time user would. It is the clean input of the mutation harness
// (run_corpus.py): it must compile through the plugin with no error, and each
// single-point bug of corpus_mutants.py must be reported.
//
// Layout conventions (Megatron): activations between layers are
// [tokens, hidden], duplicated on tp (I) and split by batch on dp (V). Column-
// parallel weights are split by output rows (S(0)), row-parallel ones by
// input columns (S(1)); the vocabulary is split on tp.
//
// The code is plain libtorch (compiled against test/plugin/Inputs/mini-torch)
// with the runtime's typed collectives from <spmd/collectives.h>.
#pragma once

#include <spmd/collectives.h>
#include <spmd/type_annotations.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace engine {

using namespace spmd::types;
using torch::Tensor;

SPMD_AXIS(dp);  // data parallel: batch split, weights replicated
SPMD_AXIS(tp);  // tensor parallel: weights split

// Marks an accessor that returns the number of ranks of an axis, so that
// size-1 bypass guards (`if (args.tp_size() == 1) return x;`) type-check.
#if defined(SPMD_CHECK_PLUGIN_LOADED)
#define ENGINE_AXIS_SIZE(axis) [[spmd::axis_size(axis)]]
#else
#define ENGINE_AXIS_SIZE(axis)
#endif

/// Sizes of the process groups of this rank (an engine's ParallelArgs).
class ParallelArgs {
 public:
  ParallelArgs(int64_t rank, int64_t tp_size, int64_t dp_size)
      : rank_(rank), tp_size_(tp_size), dp_size_(dp_size) {}
  int64_t tp_rank() const { return rank_ % tp_size_; }
  ENGINE_AXIS_SIZE(tp) int64_t tp_size() const { return tp_size_; }
  ENGINE_AXIS_SIZE(dp) int64_t dp_size() const { return dp_size_; }

 private:
  int64_t rank_;
  int64_t tp_size_;
  int64_t dp_size_;
};

/// Model hyper-parameters.
struct ModelArgs {
  int64_t hidden = 64;
  int64_t intermediate = 256;
  int64_t n_heads = 8;
  int64_t n_kv_heads = 8;
  int64_t head_dim = 8;
  int64_t vocab = 1024;
  int64_t n_layers = 2;
  double norm_eps = 1e-6;
  bool sequence_parallel = false;
};

// ---- parallel regions (parallel_regions.cpp) -------------------------------

/// Megatron's f: identity forward, all-reduce of the gradient in backward.
SPMD_TYPE(dp = V, tp = R)
Tensor copy_to_tp_region(SPMD_TYPE(dp = V, tp = I) const Tensor& x);

/// Megatron's g: sums the partial results of the tp ranks. Skipped when tp
/// has one rank.
SPMD_TYPE(dp = V, tp = I)
Tensor reduce_from_tp_region(SPMD_TYPE(dp = V, tp = P) const Tensor& x,
                             const ParallelArgs& args);

/// Concatenates the tp ranks' slices of the last dim.
SPMD_TYPE(dp = V, tp = I)
Tensor gather_from_tp_region(SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(3)) const Tensor& x,
                             const ParallelArgs& args);

/// Sums the dp ranks' gradients.
SPMD_TYPE(dp = R, tp = V)
Tensor all_reduce_dp_gradient(SPMD_TYPE(dp = P, tp = V) const Tensor& grad);

// ---- linear layers (linear.cpp) --------------------------------------------

/// Y = X A^T + b with A split by output rows: A_i is [out/tp, in].
class ColumnParallelLinearImpl : public torch::nn::Module {
 public:
  ColumnParallelLinearImpl(int64_t in, int64_t out, bool bias,
                           bool gather_output, const ParallelArgs& args);

  /// Split on the features, or gathered when built with gather_output.
  SPMD_TYPE(dp = V, tp = S(-1)) SPMD_WHEN(gather_output_, tp = I)
  Tensor forward(SPMD_TYPE(dp = V, tp = I) Tensor input);

 private:
  SPMD_TYPE(dp = R, tp = S(0), spmd::rank(2)) Tensor weight_;
  SPMD_TYPE(dp = R, tp = S(0)) c10::optional<Tensor> bias_;
  bool gather_output_;
  ParallelArgs args_;
};
TORCH_MODULE(ColumnParallelLinear);

/// Y = X A^T + b with A split by input columns: A_i is [out, in/tp].
class RowParallelLinearImpl : public torch::nn::Module {
 public:
  RowParallelLinearImpl(int64_t in, int64_t out, bool bias,
                        bool input_is_parallel, bool reduce_results,
                        const ParallelArgs& args);

  /// Reduced over tp, or the pending sum when built without reduce_results;
  /// the input is the split features, or the whole activation when built
  /// without input_is_parallel.
  SPMD_TYPE(dp = V, tp = I) SPMD_UNLESS(reduce_results_, tp = P)
  Tensor forward(SPMD_TYPE(dp = V, tp = S(-1))
                     SPMD_UNLESS(input_is_parallel_, tp = I) Tensor input);

 private:
  SPMD_TYPE(dp = R, tp = S(1), spmd::rank(2)) Tensor weight_;
  SPMD_TYPE(dp = R, tp = I) Tensor bias_;
  bool input_is_parallel_;
  bool reduce_results_;
  ParallelArgs args_;
};
TORCH_MODULE(RowParallelLinear);

/// The fused q, k, v projection: column-parallel over the heads.
class QKVParallelLinearImpl : public torch::nn::Module {
 public:
  QKVParallelLinearImpl(const ModelArgs& model, const ParallelArgs& args);

  /// The local heads' q, k and v, concatenated on the last dim.
  SPMD_TYPE(dp = V, tp = S(-1))
  Tensor forward(SPMD_TYPE(dp = V, tp = I) const Tensor& input);

  int64_t q_size() const { return q_size_; }
  int64_t kv_size() const { return kv_size_; }

 private:
  SPMD_TYPE(dp = R, tp = S(0), spmd::rank(2)) Tensor qkv_weight_;
  SPMD_TYPE(dp = R, tp = S(0)) Tensor qkv_bias_;
  int64_t q_size_;
  int64_t kv_size_;
};
TORCH_MODULE(QKVParallelLinear);

// ---- embedding and loss (embedding.cpp) ------------------------------------

/// The vocabulary split on tp: rows [start, end) on this rank.
class VocabParallelEmbeddingImpl : public torch::nn::Module {
 public:
  VocabParallelEmbeddingImpl(int64_t vocab, int64_t hidden,
                             const ParallelArgs& args);

  SPMD_TYPE(dp = V, tp = I)
  Tensor forward(SPMD_TYPE(dp = V, tp = R) const Tensor& tokens);

  int64_t vocab_start() const { return start_; }
  int64_t vocab_end() const { return end_; }

 private:
  SPMD_TYPE(dp = R, tp = S(0), spmd::rank(2)) Tensor weight_;
  int64_t start_;
  int64_t end_;
  ParallelArgs args_;
};
TORCH_MODULE(VocabParallelEmbedding);

/// Per-token cross-entropy of logits split on the vocabulary (last dim).
SPMD_TYPE(dp = V, tp = I)
Tensor vocab_parallel_cross_entropy(SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(2))
                                        const Tensor& logits,
                                    SPMD_TYPE(dp = V, tp = R)
                                        const Tensor& targets,
                                    int64_t vocab_start, int64_t vocab_end);

/// The training loss: mean over the global batch, a pending sum over dp.
SPMD_TYPE(dp = P, tp = I)
Tensor lm_loss(SPMD_TYPE(dp = V, tp = S(-1)) const Tensor& logits,
               SPMD_TYPE(dp = V, tp = R) const Tensor& targets,
               int64_t vocab_start, int64_t vocab_end, double global_tokens);

/// Next-token probabilities of the last position (sampling).
SPMD_TYPE(dp = V, tp = I)
Tensor next_token_probs(SPMD_TYPE(dp = V, tp = S(-1)) const Tensor& logits,
                        const ParallelArgs& args, double temperature);

// ---- norms (norm.cpp) -------------------------------------------------------

/// RMSNorm over the hidden dim, on duplicated activations.
class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t hidden, double eps);
  SPMD_TYPE(dp = V, tp = I)
  Tensor forward(SPMD_TYPE(dp = V, tp = I) const Tensor& x);

 private:
  SPMD_TYPE(dp = R, tp = I) Tensor weight_;
  double eps_;
};
TORCH_MODULE(RMSNorm);

/// LayerNorm with optional affine parameters, on duplicated activations.
class LayerNormImpl : public torch::nn::Module {
 public:
  LayerNormImpl(int64_t hidden, double eps, bool affine);
  SPMD_TYPE(dp = V, tp = I)
  Tensor forward(SPMD_TYPE(dp = V, tp = I) const Tensor& x);

 private:
  SPMD_TYPE(dp = R, tp = I) c10::optional<Tensor> weight_;
  SPMD_TYPE(dp = R, tp = I) c10::optional<Tensor> bias_;
  int64_t hidden_;
  double eps_;
};
TORCH_MODULE(LayerNorm);

/// Norms under sequence parallelism: the tokens are split on tp, so every tp
/// rank applies the weights to different tokens (R, gradient P on tp).
SPMD_TYPE(dp = V, tp = S(0))
Tensor sp_rms_norm(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(2)) const Tensor& x,
                   SPMD_TYPE(dp = R, tp = R, spmd::rank(1)) const Tensor& weight,
                   double eps);

SPMD_TYPE(dp = V, tp = S(0))
Tensor sp_layer_norm(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(2)) const Tensor& x,
                     SPMD_TYPE(dp = R, tp = R) const Tensor& weight,
                     SPMD_TYPE(dp = R, tp = R) const Tensor& bias, double eps);

/// The gradients of sequence-parallel norm weights: one term per tp rank and
/// per dp rank.
SPMD_TYPE(dp = R, tp = R)
Tensor sync_sp_norm_grad(SPMD_TYPE(dp = P, tp = P) const Tensor& grad);

// ---- the model (model.cpp) -------------------------------------------------

/// One layer's KV cache of the local heads: [local_kv_heads, cached,
/// head_dim], grown at every decoding step.
struct KVCache {
  SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) Tensor keys;
  SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) Tensor values;
  /// Appends this step's keys and values; returns the whole cache.
  SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
  std::tuple<Tensor, Tensor> append(SPMD_TYPE(dp = V, tp = S(0))
                                        const Tensor& k,
                                    SPMD_TYPE(dp = V, tp = S(0))
                                        const Tensor& v);
};

/// One decoding step of attention over the cache, per local head (heads on
/// dim 0); `alibi_bias` holds the local heads' position biases.
SPMD_TYPE(dp = V, tp = S(0))
Tensor decode_attention(
    SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) const Tensor& q,
    SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) const Tensor& k_new,
    SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) const Tensor& v_new,
    KVCache& cache,
    SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) std::optional<Tensor> alibi_bias);

/// Self-attention with heads split on tp.
class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const ModelArgs& model, const ParallelArgs& args);
  SPMD_TYPE(dp = V, tp = I)
  Tensor forward(SPMD_TYPE(dp = V, tp = I) const Tensor& x,
                 SPMD_TYPE(dp = V, tp = R, spmd::rank(2)) const Tensor& mask);

 private:
  QKVParallelLinear qkv_proj_{nullptr};
  RowParallelLinear o_proj_{nullptr};
  int64_t local_heads_;
  int64_t local_kv_heads_;
  int64_t head_dim_;
};
TORCH_MODULE(Attention);

/// Gated MLP: fused gate/up projection (column), SiLU, down projection (row).
class MLPImpl : public torch::nn::Module {
 public:
  MLPImpl(const ModelArgs& model, const ParallelArgs& args);
  SPMD_TYPE(dp = V, tp = I)
  Tensor forward(SPMD_TYPE(dp = V, tp = I) const Tensor& x);

 private:
  ColumnParallelLinear gate_up_proj_{nullptr};
  RowParallelLinear down_proj_{nullptr};
};
TORCH_MODULE(MLP);

class DecoderLayerImpl : public torch::nn::Module {
 public:
  DecoderLayerImpl(const ModelArgs& model, const ParallelArgs& args);
  SPMD_TYPE(dp = V, tp = I)
  Tensor forward(SPMD_TYPE(dp = V, tp = I) Tensor hidden,
                 SPMD_TYPE(dp = V, tp = R) const Tensor& mask);

 private:
  RMSNorm input_norm_{nullptr};
  Attention attn_{nullptr};
  RMSNorm post_attn_norm_{nullptr};
  MLP mlp_{nullptr};
};
TORCH_MODULE(DecoderLayer);

/// The interface every causal LM of the engine implements.
class CausalLM {
 public:
  virtual ~CausalLM() = default;
  /// Logits split on the vocabulary.
  SPMD_TYPE(dp = V, tp = S(-1))
  virtual Tensor forward(SPMD_TYPE(dp = V, tp = R) const Tensor& tokens,
                         SPMD_TYPE(dp = V, tp = R) const Tensor& mask) = 0;
  virtual int64_t vocab_start() const = 0;
  virtual int64_t vocab_end() const = 0;
};

class LlamaModelImpl : public torch::nn::Module {
 public:
  LlamaModelImpl(const ModelArgs& model, const ParallelArgs& args);
  SPMD_TYPE(dp = V, tp = S(-1))
  Tensor forward(SPMD_TYPE(dp = V, tp = R) const Tensor& tokens,
                 SPMD_TYPE(dp = V, tp = R) const Tensor& mask);
  int64_t vocab_start() const { return embed_tokens_->vocab_start(); }
  int64_t vocab_end() const { return embed_tokens_->vocab_end(); }

 private:
  VocabParallelEmbedding embed_tokens_{nullptr};
  std::vector<DecoderLayer> layers_;
  RMSNorm norm_{nullptr};
  ColumnParallelLinear lm_head_{nullptr};
};
TORCH_MODULE(LlamaModel);

/// The engine's own holder around the model implementation.
class LlamaForCausalLM : public CausalLM {
 public:
  LlamaForCausalLM(const ModelArgs& model, const ParallelArgs& args);
  Tensor forward(const Tensor& tokens, const Tensor& mask) override;
  int64_t vocab_start() const override { return model_->vocab_start(); }
  int64_t vocab_end() const override { return model_->vocab_end(); }

 private:
  LlamaModel model_{nullptr};
};

// ---- training (train.cpp) ---------------------------------------------------

/// The parameters of one layer as the optimizer sees them.
struct LayerParams {
  SPMD_TYPE(dp = R, tp = S(0)) Tensor qkv_w;
  SPMD_TYPE(dp = R, tp = S(1), spmd::rank(2)) Tensor o_w;
  SPMD_TYPE(dp = R, tp = I) Tensor norm_w;
  SPMD_TYPE(dp = R, tp = R) Tensor sp_norm_w;
};

/// One step of the engine's training loop; returns the loss for printing.
SPMD_TYPE(dp = I, tp = I)
Tensor train_step(CausalLM& model, LayerParams& params,
                  SPMD_TYPE(dp = V, tp = R) const Tensor& tokens,
                  SPMD_TYPE(dp = V, tp = R) const Tensor& targets,
                  SPMD_TYPE(dp = V, tp = R) const Tensor& mask, double lr,
                  double global_tokens);

/// The gradient autograd left in a parameter (opaque to the checker).
Tensor grad_of(const Tensor& param);

}  // namespace engine
