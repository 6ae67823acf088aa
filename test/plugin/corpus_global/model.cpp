// model.cpp - attention, MLP, decoder layer and the Llama-style model, with
// the module plumbing of libtorch engines: TORCH_MODULE holders called with
// operator() and ->forward, a vector of layers, the engine's own holder and a
// virtual forward.
#include <cmath>

#include "engine.h"

namespace engine {

namespace {

/// Splits the fused projection [tokens, local q|k|v] into q, k and v (the
/// local heads). Each rank's shard holds its own heads' q, k and v (the fused
/// layout), so the split is a local operation: a local region (global mode
/// would read narrow(-1) as a slice of the global sharded dim).
SPMD_LOCAL
SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(2))
std::tuple<Tensor, Tensor, Tensor> split_qkv(SPMD_TYPE(dp = V, tp = S(-1))
                                                 const Tensor& qkv,
                                             int64_t q_size, int64_t kv_size) {
  auto q = qkv.narrow(-1, 0, q_size);
  auto k = qkv.narrow(-1, q_size, kv_size);
  auto v = qkv.narrow(-1, q_size + kv_size, kv_size);
  return {q, k, v};
}

/// Multi-head attention: the fused projection in three equal parts, a local
/// split as in split_qkv.
SPMD_LOCAL
SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(2))
std::vector<Tensor> chunk_qkv(SPMD_TYPE(dp = V, tp = S(-1)) const Tensor& qkv) {
  return qkv.chunk(3, /*dim=*/-1);
}

/// The gated MLP's fused gate/up output: each rank's shard holds its own gate
/// and up slices, so splitting it is a local operation (as in split_qkv).
SPMD_LOCAL
SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(2))
Tensor swiglu_local(SPMD_TYPE(dp = V, tp = S(-1)) const Tensor& gate_up) {
  auto [gate, up] =
      std::make_pair(gate_up.chunk(2, -1)[0], gate_up.chunk(2, -1)[1]);
  return torch::silu(gate) * up;
}

}  // namespace

SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
std::tuple<Tensor, Tensor> KVCache::append(SPMD_TYPE(dp = V, tp = S(0))
                                               const Tensor& k,
                                           SPMD_TYPE(dp = V, tp = S(0))
                                               const Tensor& v) {
  keys = torch::cat({keys, k}, /*dim=*/1);
  values = torch::cat({values, v}, /*dim=*/1);
  return {keys, values};
}

SPMD_TYPE(dp = V, tp = S(0))
Tensor decode_attention(
    SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) const Tensor& q,
    SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) const Tensor& k_new,
    SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) const Tensor& v_new,
    KVCache& cache,
    SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) std::optional<Tensor> alibi_bias) {
  Tensor k, v;
  std::tie(k, v) = cache.append(k_new, v_new);
  auto scores = torch::matmul(q, k.transpose(-2, -1));
  if (alibi_bias.has_value()) {
    scores = scores + alibi_bias.value();
  }
  return torch::matmul(torch::softmax(scores, -1), v);
}

AttentionImpl::AttentionImpl(const ModelArgs& model, const ParallelArgs& args)
    : local_heads_(model.n_heads / args.tp_size()),
      local_kv_heads_(model.n_kv_heads / args.tp_size()),
      head_dim_(model.head_dim) {
  qkv_proj_ = register_module("qkv_proj", QKVParallelLinear(model, args));
  o_proj_ = register_module(
      "o_proj", RowParallelLinear(model.n_heads * model.head_dim, model.hidden,
                                  /*bias=*/false, /*input_is_parallel=*/true,
                                  /*reduce_results=*/true, args));
}

SPMD_TYPE(dp = V, tp = I)
Tensor AttentionImpl::forward(SPMD_TYPE(dp = V, tp = I) const Tensor& x,
                              SPMD_TYPE(dp = V, tp = R, spmd::rank(2))
                                  const Tensor& mask) {
  const int64_t tokens = x.size(0);
  SPMD_TYPE(dp = V, tp = S(-1)) Tensor qkv = qkv_proj_->forward(x);
  Tensor q, k, v;
  if (local_kv_heads_ == local_heads_) {
    // Multi-head attention: three equal parts.
    auto parts = chunk_qkv(qkv);
    q = parts[0];
    k = parts[1];
    v = parts[2];
  } else {
    std::tie(q, k, v) =
        split_qkv(qkv, qkv_proj_->q_size(), qkv_proj_->kv_size());
  }
  // [tokens, heads, head_dim], split on the heads (the view cannot tell).
  q = q.view({tokens, local_heads_, head_dim_});
  k = k.view({tokens, local_kv_heads_, head_dim_});
  v = v.view({tokens, local_kv_heads_, head_dim_});
  spmd::assert_type(q, {tp = S(1)});
  spmd::assert_type(k, {tp = S(1)});
  spmd::assert_type(v, {tp = S(1)});
  q = q.transpose(0, 1);
  k = k.transpose(0, 1);
  v = v.transpose(0, 1);

  const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim_));
  auto scores = torch::matmul(q, k.transpose(-2, -1)) * scale;
  scores = scores + mask;
  auto probs = torch::softmax(scores, -1);
  auto context = torch::matmul(probs, v).transpose(0, 1).reshape(
      {tokens, local_heads_ * head_dim_});
  spmd::assert_type(context, {tp = S(1)});  // the heads, merged back
  return o_proj_->forward(context);
}

MLPImpl::MLPImpl(const ModelArgs& model, const ParallelArgs& args) {
  gate_up_proj_ = register_module(
      "gate_up_proj",
      ColumnParallelLinear(model.hidden, 2 * model.intermediate,
                           /*bias=*/false, /*gather_output=*/false, args));
  down_proj_ = register_module(
      "down_proj", RowParallelLinear(model.intermediate, model.hidden,
                                     /*bias=*/false,
                                     /*input_is_parallel=*/true,
                                     /*reduce_results=*/true, args));
}

SPMD_TYPE(dp = V, tp = I)
Tensor MLPImpl::forward(SPMD_TYPE(dp = V, tp = I) const Tensor& x) {
  auto gate_up = gate_up_proj_(x);
  auto act = swiglu_local(gate_up);
  return down_proj_(act);
}

DecoderLayerImpl::DecoderLayerImpl(const ModelArgs& model,
                                   const ParallelArgs& args) {
  input_norm_ =
      register_module("input_norm", RMSNorm(model.hidden, model.norm_eps));
  attn_ = register_module("attn", Attention(model, args));
  post_attn_norm_ =
      register_module("post_attn_norm", RMSNorm(model.hidden, model.norm_eps));
  mlp_ = register_module("mlp", MLP(model, args));
}

SPMD_TYPE(dp = V, tp = I)
Tensor DecoderLayerImpl::forward(SPMD_TYPE(dp = V, tp = I) Tensor hidden,
                                 SPMD_TYPE(dp = V, tp = R) const Tensor& mask) {
  Tensor& residual = hidden;
  auto h = attn_->forward(input_norm_->forward(hidden), mask);
  residual.add_(h);
  auto out = mlp_->forward(post_attn_norm_(residual));
  return hidden + out;
}

LlamaModelImpl::LlamaModelImpl(const ModelArgs& model,
                               const ParallelArgs& args) {
  embed_tokens_ = register_module(
      "embed_tokens", VocabParallelEmbedding(model.vocab, model.hidden, args));
  for (int64_t i = 0; i < model.n_layers; ++i)
    layers_.push_back(register_module("layers." + std::to_string(i),
                                      DecoderLayer(model, args)));
  norm_ = register_module("norm", RMSNorm(model.hidden, model.norm_eps));
  lm_head_ = register_module(
      "lm_head", ColumnParallelLinear(model.hidden, model.vocab,
                                      /*bias=*/false,
                                      /*gather_output=*/false, args));
}

SPMD_TYPE(dp = V, tp = S(-1))
Tensor LlamaModelImpl::forward(SPMD_TYPE(dp = V, tp = R) const Tensor& tokens,
                               SPMD_TYPE(dp = V, tp = R) const Tensor& mask) {
  SPMD_TYPE(dp = V, tp = I) Tensor h = embed_tokens_->forward(tokens);
  for (auto& layer : layers_) {
    h = layer(h, mask);
  }
  auto normed = norm_(h);
  return lm_head_->forward(normed);
}

LlamaForCausalLM::LlamaForCausalLM(const ModelArgs& model,
                                   const ParallelArgs& args)
    : model_(model, args) {}

Tensor LlamaForCausalLM::forward(const Tensor& tokens, const Tensor& mask) {
  return model_->forward(tokens, mask);
}

}  // namespace engine
