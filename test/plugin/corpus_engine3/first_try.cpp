// The shapes of the engine as first written (Megatron's own idioms), before
// the workarounds the other files use. Each one is a false alarm or a strict
// unknown of today's plugin, recorded in mutants.py (EXPECTED_FALSE_ALARMS,
// EXPECTED_UNKNOWNS): when the plugin learns the idiom, the harness says so.
#include "engine3.h"

namespace mcore {

// (1) The row-parallel bias declared once for both layouts. With sequence
// parallelism it is added on this rank's tokens (R: its gradient is summed
// over tp by the optimizer, as Megatron marks it `sequence_parallel`);
// without, on the all-reduced output (I). A field cannot carry
// SPMD_WHEN / SPMD_UNLESS, so the R bias is an error in the layout
// `sequence_parallel_ = false` (operator+ mixes I with R). layers.cpp
// declares it I and converts it to R in the sequence-parallel branch.
class RowParallelFirstTryImpl : public torch::nn::Module {
 public:
  RowParallelFirstTryImpl(bool sequence_parallel, const ParallelState& ps)
      : sequence_parallel_(sequence_parallel), ps_(ps) {}

  SPMD_TYPE(tp = I, spmd::rank(3)) SPMD_WHEN(sequence_parallel_, tp = S(0))
  Tensor forward(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& input) {
    auto output_parallel = at::linear(input, weight_);
    Tensor output;
    if (sequence_parallel_) {
      output = reduce_scatter_to_sequence_parallel_region(output_parallel, ps_);
    } else {
      output = reduce_from_tensor_model_parallel_region(output_parallel, ps_);
    }
    if (bias_.has_value()) {
      output = output + bias_.value();
    }
    return output;
  }

 private:
  SPMD_TYPE(tp = S(1), spmd::rank(2)) Tensor weight_;
  SPMD_TYPE(tp = R, spmd::rank(1)) c10::optional<Tensor> bias_;
  bool sequence_parallel_;
  ParallelState ps_;
};

// (2) Layers built from the run-time config, as Megatron does
// (`config.sequence_parallel`): the output's type on tp depends on the flag
// (a strict unknown at the call), and the input is not checked at all (a
// pending sum passed in, which neither layout accepts, is not reported).
// attention.cpp passes the constant kSequenceParallel.
class ProjectionFirstTryImpl : public torch::nn::Module {
 public:
  ProjectionFirstTryImpl(const TransformerConfig& config,
                         const ParallelState& ps) {
    proj_ = register_module(
        "proj", RowParallelLinear(config.hidden_size, config.hidden_size,
                                  config.add_bias_linear,
                                  config.sequence_parallel, ps));
  }
  SPMD_TYPE(tp = S(0), spmd::rank(3))
  Tensor forward(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& x) {
    return proj_(x);
  }

 private:
  RowParallelLinear proj_{nullptr};
};

// (3) A view that merges [s/tp, b] into the tokens, with sizes read from the
// tensor: the shard dim is lost (documented: assert_type after the view).
// moe.cpp asserts S(0) after it.
SPMD_TYPE(tp = S(0), spmd::rank(2))
Tensor flatten_tokens_first_try(SPMD_TYPE(tp = S(0), spmd::rank(3))
                                    const Tensor& hidden) {
  return hidden.view({hidden.size(0) * hidden.size(1), hidden.size(2)});
}

// (4) one_hot of this rank's routing choices: one_hot has no sharding rule,
// so the expert counts lose the token shard. moe.cpp asserts the shard and
// declares the rank on a variable (assert_type takes no rank).
SPMD_TYPE(tp = I)
Tensor tokens_per_expert_first_try(SPMD_TYPE(tp = S(0), spmd::rank(2))
                                       const Tensor& top_indices,
                                   int64_t num_experts) {
  auto routing_map = at::one_hot(top_indices, num_experts).sum({1});
  return spmd::all_reduce(routing_map.sum({0}), tp, P, I);
}

// (5) A factory inside a local region: factories are R only inside an
// SPMD_MESH function. moe.cpp adds SPMD_MESH(tp, ep) to the region.
SPMD_LOCAL
SPMD_TYPE(tp = V, ep = S(1), spmd::rank(3))
Tensor permute_first_try(SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2))
                             const Tensor& tokens,
                         SPMD_TYPE(tp = V, ep = V, spmd::rank(1))
                             const Tensor& slot_token,
                         int64_t num_experts, int64_t capacity) {
  auto padded = at::cat({tokens, at::zeros({1, tokens.size(1)})}, 0);
  return padded.index_select(0, slot_token)
      .view({num_experts, capacity, tokens.size(1)});
}

// (6) The capacity kernel declared without types (a .cu file's prototype):
// its results are unknown where they are used. moe.cpp annotates it.
std::tuple<Tensor, Tensor> capacity_slots_first_try(const Tensor& probs,
                                                    const Tensor& top_indices,
                                                    int64_t num_experts,
                                                    int64_t capacity);
SPMD_TYPE(tp = V, ep = S(1), spmd::rank(3))
Tensor dispatch_first_try(SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2))
                              const Tensor& tokens,
                          SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2))
                              const Tensor& probs,
                          SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2))
                              const Tensor& top_indices,
                          int64_t num_experts, int64_t capacity) {
  auto [slot_token, slot_weight] =
      capacity_slots_first_try(probs, top_indices, num_experts, capacity);
  return permute_first_try(tokens, slot_token, num_experts, capacity);
}

// (7) An out-parameter filled by a layer (`Tensor& aux_loss`, declared on the
// callee): the caller's plain local stays unknown after the call. model.cpp
// declares the local.
SPMD_TYPE(tp = S(0), ep = V, spmd::rank(3))
Tensor layer_with_aux_first_try(SPMD_TYPE(tp = S(0), ep = V, spmd::rank(3))
                                    const Tensor& hidden,
                                TransformerLayer& layer,
                                SPMD_TYPE(tp = I, ep = P) Tensor& aux_total) {
  Tensor aux_loss;
  auto out = layer(hidden, aux_loss);
  aux_total = aux_total + aux_loss;
  return out;
}

// (8) One reduction helper for every dense gradient, typed on the axes it
// reduces: the result keeps the argument's tp shard but not its rank, so a
// sharded gradient's step is a strict unknown. train.cpp inlines the
// collectives for the sharded ones.
SPMD_TYPE(dp = R, ep = R)
Tensor allreduce_grad_first_try(SPMD_TYPE(dp = P, ep = P) const Tensor& grad);

void step_first_try(LayerParams& p, double lr) {
  SPMD_TYPE(dp = P, ep = P, tp = S(0), spmd::rank(2))
  Tensor g_qkv_w = spmd::assert_type(grad_of(p.qkv_weight),
                                     {dp = P, ep = P, tp = S(0)});
  p.qkv_weight.sub_(allreduce_grad_first_try(g_qkv_w) * lr);
}

// (9) The same helper on the sequence-parallel LayerNorm gradient, whose tp
// all_reduce was forgotten: the result is unknown on tp (the helper does not
// list it) and nothing reports it, in strict mode either, unless the
// function declares SPMD_MESH(dp, ep, tp) ("'d' has no type for axis 'tp' of
// the function's mesh"). No diagnostic today: when strict mode learns to
// report a value unknown on one axis only, the harness counts it here.
// train.cpp declares the mesh and inlines the collectives.
void step_ln_first_try(LayerParams& p, double lr) {
  auto g_ln1_w = spmd::assert_type(grad_of(p.ln1_weight),
                                   {dp = P, ep = P, tp = P});
  p.ln1_weight.sub_(allreduce_grad_first_try(g_ln1_w) * lr);
}

}  // namespace mcore
