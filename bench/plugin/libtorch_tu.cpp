// Benchmark input (a): a realistic libtorch-including translation unit, a
// correct tensor-parallel transformer block, compiled with and without the
// plugin by plugin_bench.py. Must stay free of SPMD diagnostics.
#include <spmd/spmd.h>
#include <torch/torch.h>

using namespace spmd::types;
SPMD_AXIS(dp);
SPMD_AXIS(tp);

struct TPBlock : torch::nn::Module {
  SPMD_TYPE(dp = R, tp = V) torch::Tensor w_qkv;
  SPMD_TYPE(dp = R, tp = V) torch::Tensor w_out;
  SPMD_TYPE(dp = R, tp = V) torch::Tensor w_fc1;
  SPMD_TYPE(dp = R, tp = V) torch::Tensor w_fc2;
  SPMD_TYPE(dp = R, tp = I) torch::Tensor ln1;
  SPMD_TYPE(dp = R, tp = I) torch::Tensor ln2;

  SPMD_TYPE(dp = V, tp = I)
  torch::Tensor attention(SPMD_TYPE(dp = V, tp = I) const torch::Tensor& x) {
    auto xr = spmd::convert(x, tp, I, R);
    auto qkv = torch::matmul(xr, w_qkv);
    auto parts = qkv.chunk(3, -1);
    auto q = parts[0];
    auto k = parts[1];
    auto v = parts[2];
    auto scores =
        torch::softmax(torch::matmul(q, k.transpose(-2, -1)) / 8.0, -1);
    auto ctx = torch::matmul(scores, v);
    auto o = torch::matmul(ctx, w_out);
    auto p = spmd::reinterpret(o, tp, V, P);
    return spmd::all_reduce(p, tp, P, I);
  }

  SPMD_TYPE(dp = V, tp = I)
  torch::Tensor mlp(SPMD_TYPE(dp = V, tp = I) const torch::Tensor& x) {
    auto xr = spmd::convert(x, tp, I, R);
    auto h = torch::gelu(torch::matmul(xr, w_fc1));
    auto o = torch::matmul(h, w_fc2);
    return spmd::all_reduce(spmd::reinterpret(o, tp, V, P), tp, P, I);
  }

  SPMD_TYPE(dp = V, tp = I)
  torch::Tensor forward(SPMD_TYPE(dp = V, tp = I) const torch::Tensor& x) {
    auto h = x + attention(torch::layer_norm(x, {x.size(-1)}, ln1));
    return h + mlp(torch::layer_norm(h, {h.size(-1)}, ln2));
  }
};

SPMD_TYPE(dp = P)
torch::Tensor loss(SPMD_TYPE(dp = V, tp = I) const torch::Tensor& y,
                   SPMD_TYPE(dp = V, tp = I) const torch::Tensor& target) {
  auto l = torch::mse_loss(y, target);
  auto li = spmd::assert_type(l, {dp = V, tp = I});
  return spmd::reinterpret(li, dp, V, P);
}

int main() {
  TPBlock b;
  auto y = b.forward(torch::randn({2, 16, 64}));
  return static_cast<int>(y.dim());
}
