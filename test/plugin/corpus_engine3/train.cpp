// Megatron's finalize_model_grads and an SGD step: the sequence-parallel
// parameters' gradients (LayerNorms, the router) summed over tp; the dense
// gradients summed over the data-parallel ranks (dp and ep); the experts'
// gradients summed over dp only (each ep rank owns its experts).
//
// SPMD_MESH on the step: every gradient must be typed on all three axes. (A
// reduction helper typed only on the axes it reduces, `SPMD_TYPE(dp = R,
// ep = R) Tensor allreduce_dense_grad(SPMD_TYPE(dp = P, ep = P) ...)`, left
// its result unknown on tp; without the mesh nothing, not even strict mode,
// said so, and a LayerNorm gradient never summed over tp passed: see
// first_try.cpp (8).)
#include "engine3.h"

namespace mcore {

SPMD_MESH(dp, ep, tp)
void finalize_grads_and_step(LayerParams& p, const ParallelState& ps,
                             double lr) {
  // Sequence-parallel parameters: each tp rank saw its own tokens.
  auto g_ln1_w = spmd::assert_type(grad_of(p.ln1_weight),
                                   {dp = P, ep = P, tp = P});
  auto g_ln1_b = spmd::assert_type(grad_of(p.ln1_bias),
                                   {dp = P, ep = P, tp = P});
  auto g_router = spmd::assert_type(grad_of(p.router_weight),
                                    {dp = P, ep = P, tp = P});
  if (ps.tp_world_size() > 1) {
    g_ln1_w = spmd::all_reduce(g_ln1_w, tp, P, R);
    g_ln1_b = spmd::all_reduce(g_ln1_b, tp, P, R);
    g_router = spmd::all_reduce(g_router, tp, P, R);
  }
  // Tensor-parallel weights: each rank's gradient of its shard is whole on
  // tp; so is the row-parallel bias's (its convert(I, R) summed it).
  auto g_proj_b = spmd::assert_type(grad_of(p.proj_bias),
                                    {dp = P, ep = P, tp = I});
  SPMD_TYPE(dp = P, ep = P, tp = S(0), spmd::rank(2))
  Tensor g_qkv_w = spmd::assert_type(grad_of(p.qkv_weight),
                                     {dp = P, ep = P, tp = S(0)});
  SPMD_TYPE(dp = P, ep = P, tp = S(0), spmd::rank(1))
  Tensor g_qkv_b = spmd::assert_type(grad_of(p.qkv_bias),
                                     {dp = P, ep = P, tp = S(0)});
  SPMD_TYPE(dp = P, ep = P, tp = S(1), spmd::rank(2))
  Tensor g_proj_w = spmd::assert_type(grad_of(p.proj_weight),
                                      {dp = P, ep = P, tp = S(1)});

  // Dense parameters: summed over the data-parallel ranks, dp and ep.
  auto d_ln1_w = spmd::all_reduce(spmd::all_reduce(g_ln1_w, ep, P, R), dp, P, R);
  auto d_ln1_b = spmd::all_reduce(spmd::all_reduce(g_ln1_b, ep, P, R), dp, P, R);
  auto d_router =
      spmd::all_reduce(spmd::all_reduce(g_router, ep, P, R), dp, P, R);
  auto d_proj_b =
      spmd::all_reduce(spmd::all_reduce(g_proj_b, ep, P, R), dp, P, R);
  auto d_qkv_w = spmd::all_reduce(spmd::all_reduce(g_qkv_w, ep, P, R), dp, P, R);
  auto d_qkv_b = spmd::all_reduce(spmd::all_reduce(g_qkv_b, ep, P, R), dp, P, R);
  auto d_proj_w =
      spmd::all_reduce(spmd::all_reduce(g_proj_w, ep, P, R), dp, P, R);
  p.ln1_weight.sub_(d_ln1_w * lr);
  p.ln1_bias.sub_(d_ln1_b * lr);
  p.router_weight.sub_(d_router * lr);
  p.proj_bias.sub_(d_proj_b * lr);
  p.qkv_weight.sub_(d_qkv_w * lr);
  p.qkv_bias.sub_(d_qkv_b * lr);
  p.proj_weight.sub_(d_proj_w * lr);

  // Experts: tokens from every ep rank reached them through the all_to_all,
  // and every tp rank routed its own tokens to them.
  SPMD_TYPE(dp = P, ep = S(0), tp = P, spmd::rank(3))
  Tensor g_w1 = spmd::assert_type(grad_of(p.expert_w1),
                                  {dp = P, ep = S(0), tp = P});
  SPMD_TYPE(dp = P, ep = S(0), tp = P, spmd::rank(3))
  Tensor g_w2 = spmd::assert_type(grad_of(p.expert_w2),
                                  {dp = P, ep = S(0), tp = P});
  auto d_w1 = spmd::all_reduce(spmd::all_reduce(g_w1, tp, P, R), dp, P, R);
  auto d_w2 = spmd::all_reduce(spmd::all_reduce(g_w2, tp, P, R), dp, P, R);
  p.expert_w1.sub_(d_w1 * lr);
  p.expert_w2.sub_(d_w2 * lr);
}

}  // namespace mcore
