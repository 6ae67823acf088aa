// A correct Megatron-style tensor-parallel MLP, with and without sequence
// parallelism, data parallelism, a loop over layers and branches that agree:
// the checker must stay silent. Also compiled to objects with and without
// the plugin (plugin.objects_identical*), so it uses the SPMD_* macros.
// expected-no-diagnostics
#include "Inputs/prelude.h"

// Column-parallel then row-parallel linear. f = copy-to-TP region
// (convert I -> R), g = reduce-from-TP region (all_reduce P -> I).
SPMD_TYPE(dp = V, tp = I)
Tensor mlp_tp(SPMD_TYPE(dp = V, tp = I) const Tensor& x,
              SPMD_TYPE(dp = R, tp = V) const Tensor& w1,
              SPMD_TYPE(dp = R, tp = V) const Tensor& w2) {
  auto xr = spmd::convert(x, tp, I, R);
  auto h = torch::gelu(torch::matmul(xr, w1));
  auto o = torch::matmul(h, w2);
  auto p = spmd::reinterpret(o, tp, V, P);
  return spmd::all_reduce(p, tp, P, I);
}

// Sequence parallel: activations sharded on the sequence dim between blocks.
SPMD_TYPE(dp = V, tp = S(0))
Tensor mlp_sp(SPMD_TYPE(dp = V, tp = S(0)) const Tensor& x,
              SPMD_TYPE(dp = R, tp = V) const Tensor& w1,
              SPMD_TYPE(dp = R, tp = V) const Tensor& w2) {
  auto h = spmd::all_gather(x, tp, S(0), R);
  auto a = torch::relu(torch::matmul(h, w1));
  auto o = a.matmul(w2.t());
  return spmd::reduce_scatter(o, tp, P, S(0));  // V is taken as P
}

// The architecture document's example, verbatim.
SPMD_TYPE(dp = V, tp = R)
torch::Tensor mlp(SPMD_TYPE(dp = V, tp = V) const torch::Tensor& x,
                  SPMD_TYPE(dp = R, tp = V) const torch::Tensor& w1,
                  SPMD_TYPE(dp = R, tp = V) const torch::Tensor& w2) {
  auto h = spmd::all_gather(x, tp, S(0), R);
  auto a = torch::relu(torch::matmul(h, w1));
  auto o = torch::matmul(a, w2.t());
  auto p = spmd::reinterpret(o, tp, V, P);
  return spmd::all_reduce(p, tp, P, R);
}

// A transformer block: residual, layer norm, dropout, bias from a factory.
SPMD_TYPE(dp = V, tp = I)
SPMD_MESH(dp, tp)
Tensor block(SPMD_TYPE(dp = V, tp = I) const Tensor& x,
             SPMD_TYPE(dp = R, tp = V) const Tensor& w1,
             SPMD_TYPE(dp = R, tp = V) const Tensor& w2,
             SPMD_TYPE(dp = R, tp = I) const Tensor& ln_w) {
  auto n = torch::layer_norm(x, {1024}, ln_w);
  auto y = mlp_tp(n, w1, w2);
  y = torch::dropout(y, 0.1, true);
  return x + y;
}

// Data parallel: a local loss declared partial, gradients all-reduced.
SPMD_TYPE(dp = P)
Tensor dp_loss(SPMD_TYPE(dp = V) const Tensor& logits,
               SPMD_TYPE(dp = V) const Tensor& target) {
  auto diff = logits - target;
  auto l = (diff * diff).mean() / 8.0;
  return spmd::reinterpret(l, dp, V, P);
}

SPMD_TYPE(dp = R)
Tensor dp_sync(SPMD_TYPE(dp = P) const Tensor& grad) {
  auto g = spmd::all_reduce(grad, dp, P, R);
  g.mul_(0.5);
  return g;
}

// A loop over layers keeps the activation's type.
SPMD_TYPE(dp = V, tp = I)
Tensor stack(SPMD_TYPE(dp = V, tp = I) const Tensor& x0,
             SPMD_TYPE(dp = R, tp = V) const Tensor& w1,
             SPMD_TYPE(dp = R, tp = V) const Tensor& w2, int layers) {
  Tensor x = x0;
  for (int i = 0; i < layers; ++i) {
    if (i == 3)
      continue;
    x = mlp_tp(x, w1, w2);
    if (i > 100)
      break;
  }
  return x;
}

// Branches that agree.
SPMD_TYPE(tp = R)
Tensor agree(SPMD_TYPE(tp = P) const Tensor& p,
             SPMD_TYPE(tp = I) const Tensor& i, bool first) {
  Tensor y;
  if (first)
    y = spmd::all_reduce(p, tp, P, R);
  else
    y = spmd::convert(i, tp, I, R);
  auto z = first ? y : spmd::invariant_to_replicate(i, tp);
  return y + z;
}

// Annotated fields, read through `this`.
struct ParallelMLP {
  SPMD_TYPE(dp = R, tp = V) Tensor w1;
  SPMD_TYPE(dp = R, tp = V) Tensor w2;

  SPMD_TYPE(dp = V, tp = I)
  Tensor forward(SPMD_TYPE(dp = V, tp = I) const Tensor& x) const {
    return mlp_tp(x, w1, w2);
  }
};

// Unannotated code, including calls the checker cannot see into.
Tensor plain(const Tensor& a, const Tensor& b) {
  auto c = opaque(a) + b;
  return torch::relu(c).sum();
}
