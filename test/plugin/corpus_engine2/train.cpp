// Data-parallel replicas of the tensor-parallel model: gradient sync and the
// optimizer step (SGD), loss averaging for logging.
#include "engine2.h"

namespace llm {

/// The mean of the replicas' losses (each replica saw its own batch).
SPMD_MESH(dp, tp)
SPMD_TYPE(dp = R, tp = R)
torch::Tensor average_loss(SPMD_TYPE(dp = V, tp = R) torch::Tensor local_loss,
                           const ParallelArgs& args) {
  auto total = local_loss;
  if (args.dp_size() > 1) {
    total = spmd::all_reduce(spmd::reinterpret(local_loss, dp, V, P), dp, P, R);
  }
  return total / static_cast<double>(args.dp_size());
}

/// SGD step of a column-parallel weight: its gradient is a pending sum over
/// the data-parallel replicas.
SPMD_MESH(dp, tp)
void sgd_step_sharded(
    SPMD_TYPE(dp = R, tp = S(0), spmd::rank(2)) torch::Tensor weight,
    SPMD_TYPE(dp = P, tp = S(0), spmd::rank(2)) torch::Tensor grad, float lr,
    const ParallelArgs& args) {
  auto g = grad;
  if (args.dp_size() > 1) {
    g = spmd::all_reduce(g, dp, P, R);
  }
  g = g / static_cast<double>(args.dp_size());
  weight.sub_(g * lr);
}

/// SGD step of a replicated parameter (a norm weight, a row-parallel bias):
/// every tp rank holds a part of its gradient too.
SPMD_MESH(dp, tp)
void sgd_step_replicated(
    SPMD_TYPE(dp = R, tp = R, spmd::rank(1)) torch::Tensor weight,
    SPMD_TYPE(dp = P, tp = P, spmd::rank(1)) torch::Tensor grad, float lr,
    const ParallelArgs& args) {
  auto g = grad;
  if (args.world_size() > 1) {
    g = spmd::all_reduce(g, tp, P, R);
  }
  if (args.dp_size() > 1) {
    g = spmd::all_reduce(g, dp, P, R);
  }
  weight.sub_(g * (lr / args.dp_size()));
}

}  // namespace llm
