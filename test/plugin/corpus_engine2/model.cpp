// A Llama-style decoder: RMSNorm, rotary, GQA attention, gated MLP.
#include "engine2.h"

#include <cmath>

namespace llm {
namespace F = torch::nn::functional;

RMSNormImpl::RMSNormImpl(int64_t dim, float eps) : eps_(eps) {
  weight_ = register_parameter("weight", torch::ones({dim}));
}

torch::Tensor RMSNormImpl::forward(torch::Tensor x) {
  auto variance = x.pow(2).mean({-1}, /*keepdim=*/true);
  return x * torch::rsqrt(variance + eps_) * weight_;
}

/// Rotates pairs of x's head dims by the positions' angles (neox style).
/// x: [tokens, heads, head_dim], cos/sin: [tokens, head_dim / 2].
SPMD_TYPE(tp = S(1), spmd::rank(3))
torch::Tensor apply_rotary(SPMD_TYPE(tp = S(1), spmd::rank(3)) torch::Tensor x,
                           SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor cos,
                           SPMD_TYPE(tp = R, spmd::rank(2)) torch::Tensor sin) {
  // (tokens, 1, head_dim / 2): broadcast over the heads
  auto c = cos.unsqueeze(1);
  auto s = sin.unsqueeze(1);
  auto halves = x.chunk(2, -1);
  const auto& x1 = halves[0];
  const auto& x2 = halves[1];
  return torch::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1);
}

/// GQA: each of this rank's kv heads repeated for the query heads sharing it.
/// x: [tokens, kv_heads, head_dim] -> [tokens, kv_heads * n_rep, head_dim].
SPMD_LOCAL
SPMD_TYPE(tp = S(1), spmd::rank(3))
torch::Tensor repeat_kv(SPMD_TYPE(tp = S(1)) const torch::Tensor& x,
                        int64_t n_rep) {
  const int64_t n_tokens = x.size(0);
  const int64_t n_kv_heads = x.size(1);
  const int64_t head_dim = x.size(2);
  return x.unsqueeze(2)
      .expand({n_tokens, n_kv_heads, n_rep, head_dim})
      .reshape({n_tokens, n_kv_heads * n_rep, head_dim});
}

std::tuple<torch::Tensor, torch::Tensor> KVCache::append(
    const torch::Tensor& k, const torch::Tensor& v) {
  if (key_cache_.defined()) {
    key_cache_ = torch::cat({key_cache_, k}, /*dim=*/0);
    value_cache_ = torch::cat({value_cache_, v}, /*dim=*/0);
  } else {
    key_cache_ = k;
    value_cache_ = v;
  }
  return std::make_tuple(key_cache_, value_cache_);
}

void KVCache::clear() {
  key_cache_ = torch::Tensor();
  value_cache_ = torch::Tensor();
}

LlamaAttentionImpl::LlamaAttentionImpl(const ModelArgs& margs,
                                       const ParallelArgs& args)
    : head_dim_(margs.head_dim) {
  qkv_proj_ = register_module(
      "qkv_proj", QKVParallelLinear(margs.hidden_size, margs.n_heads,
                                    margs.n_kv_heads, margs.head_dim, args));
  o_proj_ = register_module(
      "o_proj", RowParallelLinear(margs.n_heads * margs.head_dim,
                                  margs.hidden_size, /*bias=*/false,
                                  /*input_is_parallelized=*/true, args));
  n_local_heads_ = qkv_proj_->n_local_heads();
  n_local_kv_heads_ = qkv_proj_->n_local_kv_heads();
  scale_ = 1.0f / std::sqrt(static_cast<float>(head_dim_));
  cos_sin_cache_ = register_buffer(
      "cos_sin_cache", torch::empty({margs.max_position, head_dim_}));
  mask_cache_ = register_buffer(
      "mask_cache", torch::zeros({margs.max_position, margs.max_position}));
}

torch::Tensor LlamaAttentionImpl::forward(torch::Tensor x,
                                          torch::Tensor positions,
                                          KVCache& kv_cache) {
  const int64_t n_tokens = x.size(0);
  auto [q_flat, k_flat, v_flat] = qkv_proj_(x);
  // (tokens, heads * head_dim) -> (tokens, heads, head_dim)
  auto q = spmd::assert_type(q_flat.view({n_tokens, n_local_heads_, head_dim_}),
                             {tp = S(1)});
  auto k = spmd::assert_type(
      k_flat.view({n_tokens, n_local_kv_heads_, head_dim_}), {tp = S(1)});
  auto v = spmd::assert_type(
      v_flat.view({n_tokens, n_local_kv_heads_, head_dim_}), {tp = S(1)});

  auto cos_sin = cos_sin_cache_.index_select(0, positions);
  auto cs = cos_sin.chunk(2, -1);
  q = apply_rotary(q, cs[0], cs[1]);
  k = apply_rotary(k, cs[0], cs[1]);
  // attend to the past tokens too
  std::tie(k, v) = kv_cache.append(k, v);
  const int64_t n_kv_tokens = k.size(0);

  // GQA: repeat each kv head for the query heads that share it
  if (n_local_kv_heads_ != n_local_heads_) {
    const int64_t n_rep = n_local_heads_ / n_local_kv_heads_;
    k = repeat_kv(k, n_rep);
    v = repeat_kv(v, n_rep);
  }

  // (heads, tokens, head_dim)
  auto qt = q.transpose(0, 1);
  auto kt = k.transpose(0, 1);
  auto vt = v.transpose(0, 1);
  auto scores = torch::matmul(qt, kt.transpose(-2, -1)) * scale_;
  auto mask = mask_cache_.narrow(0, n_kv_tokens - n_tokens, n_tokens)
                  .narrow(1, 0, n_kv_tokens);
  scores = scores + mask;
  auto probs = torch::softmax(scores, -1);
  auto context = torch::matmul(probs, vt).transpose(0, 1);
  context = spmd::assert_type(
      context.reshape({n_tokens, n_local_heads_ * head_dim_}), {tp = S(1)});
  return o_proj_(context);
}

/// silu(gate) * up on this rank's [gate_r | up_r] slice.
SPMD_LOCAL
SPMD_TYPE(tp = S(-1), spmd::rank(2))
torch::Tensor silu_and_mul(SPMD_TYPE(tp = S(-1)) const torch::Tensor& gate_up) {
  auto chunks = gate_up.chunk(2, -1);
  return F::silu(chunks[0]) * chunks[1];
}

LlamaMLPImpl::LlamaMLPImpl(const ModelArgs& margs, const ParallelArgs& args) {
  // gate and up fused: each rank holds its own [gate_r | up_r] rows
  gate_up_proj_ = register_module(
      "gate_up_proj",
      ColumnParallelLinear(margs.hidden_size, 2 * margs.intermediate_size,
                           /*bias=*/false, /*gather_output=*/false, args));
  down_proj_ = register_module(
      "down_proj",
      RowParallelLinear(margs.intermediate_size, margs.hidden_size,
                        /*bias=*/false, /*input_is_parallelized=*/true, args));
}

torch::Tensor LlamaMLPImpl::forward(torch::Tensor x) {
  auto gate_up = gate_up_proj_(x);
  return down_proj_(silu_and_mul(gate_up));
}

LlamaDecoderLayerImpl::LlamaDecoderLayerImpl(const ModelArgs& margs,
                                             const ParallelArgs& args) {
  self_attn_ = register_module("self_attn", LlamaAttention(margs, args));
  mlp_ = register_module("mlp", LlamaMLP(margs, args));
  input_layernorm_ = register_module(
      "input_layernorm", RMSNorm(margs.hidden_size, margs.rms_norm_eps));
  post_attention_layernorm_ = register_module(
      "post_attention_layernorm", RMSNorm(margs.hidden_size, margs.rms_norm_eps));
}

torch::Tensor LlamaDecoderLayerImpl::forward(torch::Tensor x,
                                             torch::Tensor positions,
                                             KVCache& kv_cache) {
  auto h = x + self_attn_(input_layernorm_(x), positions, kv_cache);
  return h + mlp_(post_attention_layernorm_(h));
}

LlamaForCausalLMImpl::LlamaForCausalLMImpl(const ModelArgs& margs,
                                           const ParallelArgs& args)
    : vocab_parallel_(margs.vocab_parallel_embedding) {
  if (vocab_parallel_) {
    embed_tokens_ = register_module(
        "embed_tokens",
        VocabParallelEmbedding(margs.vocab_size, margs.hidden_size, args));
  } else {
    embed_dims_ = register_module(
        "embed_tokens",
        ParallelEmbedding(margs.vocab_size, margs.hidden_size, args));
  }
  for (int64_t i = 0; i < margs.n_layers; ++i) {
    auto layer = LlamaDecoderLayer(margs, args);
    register_module("layers." + std::to_string(i), layer);
    layers_.push_back(layer);
  }
  norm_ = register_module("norm",
                          RMSNorm(margs.hidden_size, margs.rms_norm_eps));
  lm_head_ = register_module(
      "lm_head", ColumnParallelLinear(margs.hidden_size, margs.vocab_size,
                                      /*bias=*/false, /*gather_output=*/true,
                                      args));
}

torch::Tensor LlamaForCausalLMImpl::forward(torch::Tensor tokens,
                                            torch::Tensor positions,
                                            std::vector<KVCache>& kv_caches) {
  torch::Tensor h;
  if (vocab_parallel_) {
    h = embed_tokens_(tokens);
  } else {
    h = embed_dims_(tokens);
  }
  for (size_t i = 0; i < layers_.size(); ++i) {
    h = layers_[i](h, positions, kv_caches[i]);
  }
  h = norm_(h);
  return lm_head_(h);
}

torch::Tensor LlamaForCausalLMImpl::sample(torch::Tensor logits) {
  auto probs = torch::softmax(logits, -1);
  return std::get<1>(probs.max(-1));
}

}  // namespace llm
