// Attention through an opaque kernel behind a handler, as engines call
// flash-attention: the handler's virtual method is annotated once (the docs'
// advice for virtual forwards); the CUDA kernel itself is only declared.
#include "engine2.h"

namespace llm {

/// The varlen flash-attention kernel (CUDA, another library): writes
/// softmax(q k^T * scale) v into `out`, head by head.
void flash_attn_varlen_fwd(const torch::Tensor& q, const torch::Tensor& k,
                           const torch::Tensor& v, torch::Tensor& out,
                           float scale);

/// Runs attention on this rank's heads.
class AttentionHandler {
 public:
  virtual ~AttentionHandler() = default;
  /// q: [tokens, heads, head_dim], k/v: [kv_tokens, heads, head_dim].
  virtual void batch_prefill(
      SPMD_TYPE(tp = S(1), spmd::rank(3)) const torch::Tensor& q,
      SPMD_TYPE(tp = S(1), spmd::rank(3)) const torch::Tensor& k,
      SPMD_TYPE(tp = S(1), spmd::rank(3)) const torch::Tensor& v,
      SPMD_TYPE(tp = S(1), spmd::rank(3)) torch::Tensor& output) = 0;
};

class FlashAttnHandler : public AttentionHandler {
 public:
  explicit FlashAttnHandler(float scale) : scale_(scale) {}
  void batch_prefill(const torch::Tensor& q, const torch::Tensor& k,
                     const torch::Tensor& v, torch::Tensor& output) override {
    flash_attn_varlen_fwd(q, k, v, output, scale_);
  }

 private:
  float scale_;
};

/// Attention of the projected q/k/v (this rank's heads, flattened).
SPMD_TYPE(tp = S(1), spmd::rank(2))
torch::Tensor attention_with_handler(
    AttentionHandler& handler,
    SPMD_TYPE(tp = S(-1), spmd::rank(2)) const torch::Tensor& q_flat,
    SPMD_TYPE(tp = S(-1), spmd::rank(2)) const torch::Tensor& k_flat,
    SPMD_TYPE(tp = S(-1), spmd::rank(2)) const torch::Tensor& v_flat,
    int64_t n_local_heads, int64_t head_dim) {
  const int64_t n_tokens = q_flat.size(0);
  const int64_t n_kv_tokens = k_flat.size(0);
  auto q = spmd::assert_type(q_flat.view({n_tokens, n_local_heads, head_dim}),
                             {tp = S(1)});
  auto k = spmd::assert_type(
      k_flat.view({n_kv_tokens, n_local_heads, head_dim}), {tp = S(1)});
  auto v = spmd::assert_type(
      v_flat.view({n_kv_tokens, n_local_heads, head_dim}), {tp = S(1)});
  auto output = torch::zeros_like(q);
  handler.batch_prefill(q, k, v, output);
  return spmd::assert_type(output.view({n_tokens, n_local_heads * head_dim}),
                           {tp = S(1)});
}

}  // namespace llm
