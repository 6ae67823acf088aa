// The Mixture-of-Experts layer with expert parallelism
// (transformer/moe/{router,token_dispatcher,experts,moe_layer}.py): a top-k
// router, GShard capacity slots, all_to_all dispatch onto the ranks that own
// the experts, batched expert GEMMs, all_to_all combine.
#include "engine3.h"

namespace mcore {

/// Per expert, the indices of the tokens routed to it (in token order, up
/// to `capacity`; `num_tokens` marks an empty slot) and their routing
/// weights: two [E * C] tensors. A fused kernel (moe_kernels.cu).
SPMD_TYPE(tp = V, ep = V, spmd::rank(1))
std::tuple<Tensor, Tensor> compute_capacity_slots(
    SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2)) const Tensor& probs,
    SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2)) const Tensor& top_indices,
    int64_t num_experts, int64_t capacity);

/// This rank's tokens copied into its expert slots: [E, C, h]. Each ep rank
/// fills its own C slots of every expert, so the global buffer is
/// [E, ep * C, h] split on dim 1.
SPMD_LOCAL SPMD_MESH(tp, ep)
SPMD_TYPE(tp = V, ep = S(1), spmd::rank(3))
Tensor permute_to_capacity(SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2))
                               const Tensor& tokens,
                           SPMD_TYPE(tp = V, ep = V, spmd::rank(1))
                               const Tensor& slot_token,
                           int64_t num_experts, int64_t capacity) {
  // One zero row at index T for the empty slots.
  auto padded = at::cat({tokens, at::zeros({1, tokens.size(1)})}, 0);
  return padded.index_select(0, slot_token)
      .view({num_experts, capacity, tokens.size(1)});
}

/// The experts' outputs back in token order, weighted and summed over each
/// token's k experts: [T, h].
SPMD_LOCAL SPMD_MESH(tp, ep)
SPMD_TYPE(tp = S(0), ep = V, spmd::rank(2))
Tensor unpermute_from_capacity(SPMD_TYPE(tp = V, ep = S(1), spmd::rank(3))
                                   const Tensor& expert_output,
                               SPMD_TYPE(tp = V, ep = V, spmd::rank(1))
                                   const Tensor& slot_token,
                               SPMD_TYPE(tp = V, ep = V, spmd::rank(1))
                                   const Tensor& slot_weight,
                               int64_t num_tokens) {
  const int64_t h = expert_output.size(-1);
  auto weighted = expert_output.view({-1, h}) * slot_weight.unsqueeze(-1);
  auto out = at::zeros({num_tokens + 1, h});
  out.index_add_(0, slot_token, weighted);
  return out.narrow(0, 0, num_tokens);
}

TopKRouterImpl::TopKRouterImpl(const TransformerConfig& config,
                               const ParallelState& ps)
    : topk_(config.moe_router_topk),
      num_experts_(config.num_moe_experts),
      aux_loss_coeff_(config.moe_aux_loss_coeff),
      ps_(ps) {
  weight_ = register_parameter(
      "weight", torch::empty({config.num_moe_experts, config.hidden_size}));
}

std::tuple<Tensor, Tensor> TopKRouterImpl::forward(const Tensor& tokens) {
  auto logits = at::linear(tokens, weight_);  // [T, E]
  auto scores = logits.softmax(-1);
  return scores.topk(topk_, -1);
}

Tensor TopKRouterImpl::aux_loss(const Tensor& tokens,
                                const Tensor& top_indices) {
  auto probs = at::linear(tokens, weight_).softmax(-1);  // [T, E]
  // [T, k, E] -> [T, E]: which experts each token went to.
  SPMD_TYPE(tp = S(0), ep = V, spmd::rank(3))
  Tensor expert_hits =
      spmd::assert_type(at::one_hot(top_indices, num_experts_), {tp = S(0)});
  auto routing_map = expert_hits.sum({1});
  // Over the whole sequence: this rank holds s/tp of the tokens.
  auto tokens_per_expert = spmd::all_reduce(routing_map.sum({0}), tp, P, I);
  auto probs_per_expert = spmd::all_reduce(probs.sum({0}), tp, P, I);
  const int64_t total_tokens = tokens.size(0) * ps_.tp_world_size();
  const double scale = aux_loss_coeff_ * num_experts_ /
                       double(total_tokens * total_tokens * topk_);
  return (tokens_per_expert * probs_per_expert).sum() * scale;
}

GroupedMLPImpl::GroupedMLPImpl(const TransformerConfig& config,
                               const ParallelState& ps) {
  const int64_t local_experts = config.num_moe_experts / ps.ep_world_size();
  weight1_ = register_parameter(
      "weight1", torch::empty({local_experts, config.hidden_size,
                               config.moe_ffn_hidden_size}));
  weight2_ = register_parameter(
      "weight2", torch::empty({local_experts, config.moe_ffn_hidden_size,
                               config.hidden_size}));
}

Tensor GroupedMLPImpl::forward(const Tensor& dispatched) {
  auto intermediate = at::gelu(at::bmm(dispatched, weight1_));
  return at::bmm(intermediate, weight2_);
}

MoELayerImpl::MoELayerImpl(const TransformerConfig& config,
                           const ParallelState& ps)
    : num_experts_(config.num_moe_experts),
      topk_(config.moe_router_topk),
      capacity_factor_(config.moe_capacity_factor),
      ps_(ps) {
  router_ = register_module("router", TopKRouter(config, ps));
  experts_ = register_module("experts", GroupedMLP(config, ps));
}

Tensor MoELayerImpl::forward(const Tensor& hidden, Tensor& aux_loss) {
  const int64_t s = hidden.size(0);
  const int64_t b = hidden.size(1);
  const int64_t h = hidden.size(2);
  // [T, h], T = s/tp * b: still this rank's tokens.
  auto tokens = spmd::assert_type(hidden.view({s * b, h}), {tp = S(0)});
  auto [probs, top_indices] = router_(tokens);
  aux_loss = router_->aux_loss(tokens, top_indices);

  const int64_t num_tokens = tokens.size(0);
  const auto capacity = static_cast<int64_t>(
      capacity_factor_ * num_tokens * topk_ / num_experts_);
  auto [slot_token, slot_weight] =
      compute_capacity_slots(probs, top_indices, num_experts_, capacity);
  auto dispatch = permute_to_capacity(tokens, slot_token, num_experts_, capacity);

  // [E, C, h] split on the slots -> [E/ep, ep * C, h] split on the experts.
  Tensor expert_input = dispatch;
  if (ps_.ep_world_size() > 1) {
    expert_input = spmd::all_to_all(dispatch, ep, S(1), S(0));
  }
  auto expert_output = experts_(expert_input);
  Tensor combined = expert_output;
  if (ps_.ep_world_size() > 1) {
    combined = spmd::all_to_all(expert_output, ep, S(0), S(1));
  }
  auto output =
      unpermute_from_capacity(combined, slot_token, slot_weight, num_tokens);
  return spmd::assert_type(output.view({s, b, h}), {tp = S(0)});
}

}  // namespace mcore
