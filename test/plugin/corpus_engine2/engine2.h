// A second engine-style corpus (global mode, strict), written by a "new
// user" in the style of C++ libtorch inference engines (ScaleLLM-like):
// ParallelArgs with rank/world_size, region helpers that bypass on one rank,
// Impl classes behind TORCH_MODULE holders, layout flags (gather_output,
// input_is_parallelized), fused QKV with GQA kv-head replication, fused
// gate_up MLP, vocab-parallel embedding, LM head with gather. Activations
// between layers are replicated (tp = R): an inference engine has no
// backward, so no Megatron copy-to region (convert(I, R)) is needed.
#pragma once

#include <spmd/collectives.h>
#include <spmd/type_annotations.h>
#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

namespace llm {

using namespace spmd::types;
SPMD_AXIS(tp);
SPMD_AXIS(dp);

/// The tensor-parallel group of this process (and the data-parallel one).
class ParallelArgs {
 public:
  ParallelArgs(int32_t rank, int32_t world_size, int32_t dp_size = 1)
      : rank_(rank), world_size_(world_size), dp_size_(dp_size) {}

  int32_t rank() const { return rank_; }
  SPMD_AXIS_SIZE(tp) int32_t world_size() const { return world_size_; }
  SPMD_AXIS_SIZE(dp) int32_t dp_size() const { return dp_size_; }

 private:
  int32_t rank_ = 0;
  int32_t world_size_ = 1;
  int32_t dp_size_ = 1;
};

/// Model hyper-parameters.
struct ModelArgs {
  int64_t vocab_size = 32000;
  int64_t hidden_size = 4096;
  int64_t intermediate_size = 11008;
  int64_t n_layers = 32;
  int64_t n_heads = 32;
  int64_t n_kv_heads = 8;
  int64_t head_dim = 128;
  int64_t max_position = 4096;
  float rms_norm_eps = 1e-6f;
  bool vocab_parallel_embedding = true;
};

// ---- communication regions (parallel.cpp) ----------------------------------

/// All-gather of the last dim; bypassed on one rank.
SPMD_TYPE(tp = R)
torch::Tensor gather_from_tp_region(SPMD_TYPE(tp = S(-1)) torch::Tensor input,
                                    const ParallelArgs& args);
/// All-reduce of the pending sum; bypassed on one rank.
SPMD_TYPE(tp = R)
torch::Tensor reduce_from_tp_region(SPMD_TYPE(tp = P) torch::Tensor input,
                                    const ParallelArgs& args);
/// This rank's slice of the last dim; bypassed on one rank.
SPMD_TYPE(tp = S(-1))
torch::Tensor scatter_to_tp_region(SPMD_TYPE(tp = R) torch::Tensor input,
                                   const ParallelArgs& args);

// ---- linear layers (linear.cpp) ----------------------------------------------

/// Y = X A^T + b with A split by rows (output features) across ranks.
class ColumnParallelLinearImpl : public torch::nn::Module {
 public:
  ColumnParallelLinearImpl(int64_t in_features, int64_t out_features,
                           bool bias, bool gather_output,
                           const ParallelArgs& args);

  SPMD_TYPE(tp = S(-1), spmd::rank(2)) SPMD_WHEN(gather_output_, tp = R)
  torch::Tensor forward(SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor input);

 private:
  SPMD_TYPE(tp = S(0), spmd::rank(2)) torch::Tensor weight_;
  SPMD_TYPE(tp = S(0), spmd::rank(1)) torch::Tensor bias_;
  bool gather_output_;
  ParallelArgs args_;
};
TORCH_MODULE(ColumnParallelLinear);

/// Y = X A^T + b with A split by columns (input features) across ranks.
class RowParallelLinearImpl : public torch::nn::Module {
 public:
  RowParallelLinearImpl(int64_t in_features, int64_t out_features, bool bias,
                        bool input_is_parallelized, const ParallelArgs& args);

  SPMD_TYPE(tp = R, spmd::rank(2))
  torch::Tensor forward(SPMD_TYPE(tp = S(-1), spmd::rank(2))
                            SPMD_UNLESS(input_is_parallelized_, tp = R)
                                torch::Tensor input);

 private:
  SPMD_TYPE(tp = S(1), spmd::rank(2)) torch::Tensor weight_;
  SPMD_TYPE(tp = R, spmd::rank(1)) torch::Tensor bias_;
  bool input_is_parallelized_;
  ParallelArgs args_;
};
TORCH_MODULE(RowParallelLinear);

/// Fused q/k/v projection. Each rank holds [q_r | k_r | v_r] rows; with
/// fewer kv heads than ranks, the kv heads are replicated so that every rank
/// holds one (done by the checkpoint loader).
class QKVParallelLinearImpl : public torch::nn::Module {
 public:
  QKVParallelLinearImpl(int64_t hidden_size, int64_t n_heads,
                        int64_t n_kv_heads, int64_t head_dim,
                        const ParallelArgs& args);

  SPMD_TYPE(tp = S(-1), spmd::rank(2))
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> forward(
      SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor input);

  int64_t n_local_heads() const { return n_local_heads_; }
  int64_t n_local_kv_heads() const { return n_local_kv_heads_; }

 private:
  SPMD_TYPE(tp = S(0), spmd::rank(2)) torch::Tensor weight_;
  int64_t n_local_heads_;
  int64_t n_local_kv_heads_;
  int64_t head_dim_;
  ParallelArgs args_;
};
TORCH_MODULE(QKVParallelLinear);

// ---- embeddings (embedding.cpp) ------------------------------------------------

/// Embedding table split along the vocabulary; out-of-shard ids masked.
class VocabParallelEmbeddingImpl : public torch::nn::Module {
 public:
  VocabParallelEmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim,
                             const ParallelArgs& args);
  SPMD_TYPE(tp = R, spmd::rank(2))
  torch::Tensor forward(SPMD_TYPE(tp = R, spmd::rank(1)) torch::Tensor input);

 private:
  SPMD_TYPE(tp = S(0), spmd::rank(2)) torch::Tensor weight_;
  int64_t start_index_ = 0;
  int64_t end_index_ = 0;
  ParallelArgs args_;
};
TORCH_MODULE(VocabParallelEmbedding);

/// Embedding table split along the embedding dim; gathered after lookup.
class ParallelEmbeddingImpl : public torch::nn::Module {
 public:
  ParallelEmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim,
                        const ParallelArgs& args);
  SPMD_TYPE(tp = R, spmd::rank(2))
  torch::Tensor forward(SPMD_TYPE(tp = R, spmd::rank(1)) torch::Tensor input);

 private:
  SPMD_TYPE(tp = S(1), spmd::rank(2)) torch::Tensor weight_;
  ParallelArgs args_;
};
TORCH_MODULE(ParallelEmbedding);

// ---- model (model.cpp) -----------------------------------------------------------

class RMSNormImpl : public torch::nn::Module {
 public:
  RMSNormImpl(int64_t dim, float eps);
  SPMD_TYPE(tp = R, spmd::rank(2))
  torch::Tensor forward(SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor x);

 private:
  SPMD_TYPE(tp = R, spmd::rank(1)) torch::Tensor weight_;
  float eps_;
};
TORCH_MODULE(RMSNorm);

/// Keys and values of one layer's past tokens, this rank's kv heads:
/// [tokens, local kv heads, head_dim].
class KVCache {
 public:
  /// Appends this step's keys and values; returns every token's.
  SPMD_TYPE(tp = S(1), spmd::rank(3))
  std::tuple<torch::Tensor, torch::Tensor> append(
      SPMD_TYPE(tp = S(1), spmd::rank(3)) const torch::Tensor& k,
      SPMD_TYPE(tp = S(1), spmd::rank(3)) const torch::Tensor& v);
  void clear();

 private:
  SPMD_TYPE(tp = S(1), spmd::rank(3)) torch::Tensor key_cache_;
  SPMD_TYPE(tp = S(1), spmd::rank(3)) torch::Tensor value_cache_;
};

class LlamaAttentionImpl : public torch::nn::Module {
 public:
  LlamaAttentionImpl(const ModelArgs& margs, const ParallelArgs& args);
  SPMD_TYPE(tp = R, spmd::rank(2))
  torch::Tensor forward(SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor x,
                        SPMD_TYPE(tp = R, spmd::rank(1)) torch::Tensor positions,
                        KVCache& kv_cache);

 private:
  QKVParallelLinear qkv_proj_{nullptr};
  RowParallelLinear o_proj_{nullptr};
  SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor cos_sin_cache_;
  SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor mask_cache_;
  int64_t n_local_heads_;
  int64_t n_local_kv_heads_;
  int64_t head_dim_;
  float scale_;
};
TORCH_MODULE(LlamaAttention);

class LlamaMLPImpl : public torch::nn::Module {
 public:
  LlamaMLPImpl(const ModelArgs& margs, const ParallelArgs& args);
  SPMD_TYPE(tp = R, spmd::rank(2))
  torch::Tensor forward(SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor x);

 private:
  ColumnParallelLinear gate_up_proj_{nullptr};
  RowParallelLinear down_proj_{nullptr};
};
TORCH_MODULE(LlamaMLP);

class LlamaDecoderLayerImpl : public torch::nn::Module {
 public:
  LlamaDecoderLayerImpl(const ModelArgs& margs, const ParallelArgs& args);
  SPMD_TYPE(tp = R, spmd::rank(2))
  torch::Tensor forward(SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor x,
                        SPMD_TYPE(tp = R, spmd::rank(1)) torch::Tensor positions,
                        KVCache& kv_cache);

 private:
  LlamaAttention self_attn_{nullptr};
  LlamaMLP mlp_{nullptr};
  RMSNorm input_layernorm_{nullptr};
  RMSNorm post_attention_layernorm_{nullptr};
};
TORCH_MODULE(LlamaDecoderLayer);

class LlamaForCausalLMImpl : public torch::nn::Module {
 public:
  LlamaForCausalLMImpl(const ModelArgs& margs, const ParallelArgs& args);
  /// Logits of the last token of each sequence, whole vocabulary.
  SPMD_TYPE(tp = R, spmd::rank(2))
  torch::Tensor forward(SPMD_TYPE(tp = R, spmd::rank(1)) torch::Tensor tokens,
                        SPMD_TYPE(tp = R, spmd::rank(1)) torch::Tensor positions,
                        std::vector<KVCache>& kv_caches);
  /// Greedy sampling of the next tokens.
  SPMD_TYPE(tp = R, spmd::rank(1))
  torch::Tensor sample(SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor logits);

 private:
  VocabParallelEmbedding embed_tokens_{nullptr};
  ParallelEmbedding embed_dims_{nullptr};
  std::vector<LlamaDecoderLayer> layers_;
  RMSNorm norm_{nullptr};
  ColumnParallelLinear lm_head_{nullptr};
  bool vocab_parallel_;
};
TORCH_MODULE(LlamaForCausalLM);

}  // namespace llm
