// Self-attention with a fused QKV column-parallel projection (heads split
// over tp) and a row-parallel output projection, in the sequence-parallel
// region (transformer/attention.py).
#include "engine3.h"

namespace mcore {

SelfAttentionImpl::SelfAttentionImpl(const TransformerConfig& config,
                                     const ParallelState& ps) {
  if (config.sequence_parallel != kSequenceParallel) {
    throw std::invalid_argument("this engine runs with sequence parallelism");
  }
  const int64_t h = config.hidden_size;
  heads_per_partition_ = config.num_attention_heads / ps.tp_world_size();
  head_dim_ = h / config.num_attention_heads;
  linear_qkv_ = register_module(
      "linear_qkv",
      ColumnParallelLinear(h, 3 * h, config.add_bias_linear,
                           kSequenceParallel, ps));
  linear_proj_ = register_module(
      "linear_proj", RowParallelLinear(h, h, config.add_bias_linear,
                                       kSequenceParallel, ps));
}

Tensor SelfAttentionImpl::forward(const Tensor& hidden) {
  // [s/tp, b, h] -> [s, b, 3 * h / tp]
  auto mixed_qkv = linear_qkv_(hidden);
  const int64_t s = mixed_qkv.size(0);
  const int64_t b = mixed_qkv.size(1);
  // [s, b, np, 3 * hn]: the weight is stored head by head.
  auto qkv = spmd::assert_type(
      mixed_qkv.view({s, b, heads_per_partition_, 3 * head_dim_}), {tp = S(2)});
  auto chunks = qkv.chunk(3, -1);
  auto query = chunks[0], key = chunks[1], value = chunks[2];
  // [s, b, np, hn] -> [b, np, s, hn]
  auto q = query.permute({1, 2, 0, 3});
  auto k = key.permute({1, 2, 0, 3});
  auto v = value.permute({1, 2, 0, 3});
  auto context = at::scaled_dot_product_attention(q, k, v, {}, 0.0,
                                                  /*is_causal=*/true);
  // [b, np, s, hn] -> [s, b, np * hn]
  auto merged = spmd::assert_type(
      context.permute({2, 0, 1, 3})
          .reshape({s, b, heads_per_partition_ * head_dim_}),
      {tp = S(2)});
  return linear_proj_(merged);
}

}  // namespace mcore
