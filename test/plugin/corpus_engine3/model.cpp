// The transformer layer (pre-norm, attention + MoE) and the decoder stack in
// the sequence-parallel region (transformer/transformer_layer.py,
// transformer_block.py).
#include "engine3.h"

namespace mcore {

TransformerLayerImpl::TransformerLayerImpl(const TransformerConfig& config,
                                           const ParallelState& ps) {
  input_layernorm_ = register_module(
      "input_layernorm",
      SequenceParallelLayerNorm(config.hidden_size, config.layernorm_epsilon));
  self_attention_ = register_module("self_attention", SelfAttention(config, ps));
  pre_mlp_layernorm_ = register_module(
      "pre_mlp_layernorm",
      SequenceParallelLayerNorm(config.hidden_size, config.layernorm_epsilon));
  mlp_ = register_module("mlp", MoELayer(config, ps));
}

Tensor TransformerLayerImpl::forward(Tensor hidden, Tensor& aux_loss) {
  auto residual = hidden;
  auto attention_output = self_attention_(input_layernorm_(hidden));
  hidden = residual + attention_output;

  residual = hidden;
  auto mlp_output = mlp_(pre_mlp_layernorm_(hidden), aux_loss);
  return residual + mlp_output;
}

/// Embeddings [s, b, h] in, the final hidden states gathered for the output
/// layer out; the layers' load-balancing losses summed into `aux_total`.
SPMD_TYPE(tp = R, ep = V, spmd::rank(3))
Tensor decoder_forward(SPMD_TYPE(tp = I, ep = V, spmd::rank(3))
                           const Tensor& embeddings,
                       std::vector<TransformerLayer>& layers,
                       SequenceParallelLayerNorm& final_layernorm,
                       const ParallelState& ps,
                       SPMD_TYPE(tp = I, ep = P) Tensor& aux_total) {
  auto hidden = scatter_to_sequence_parallel_region(embeddings, ps);
  for (auto& layer : layers) {
    SPMD_TYPE(tp = I, ep = P) Tensor aux_loss;
    hidden = layer(hidden, aux_loss);
    aux_total = aux_total + aux_loss;
  }
  hidden = final_layernorm(hidden);
  return gather_from_sequence_parallel_region(hidden, ps);
}

}  // namespace mcore
