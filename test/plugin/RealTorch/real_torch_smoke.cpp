// Smoke test against the real libtorch headers and the real <spmd/spmd.h>:
// the plugin walks a large libtorch-including translation unit without a
// crash, stays silent on correct code and reports the bug it should.
#include <spmd/spmd.h>
#include <torch/torch.h>

using namespace spmd::types;
SPMD_AXIS(dp);
SPMD_AXIS(tp);

struct TPLinear : torch::nn::Module {
  SPMD_TYPE(dp = R, tp = V) torch::Tensor weight;

  SPMD_TYPE(dp = V, tp = I)
  torch::Tensor forward(SPMD_TYPE(dp = V, tp = I) const torch::Tensor& x) {
    auto xr = spmd::convert(x, tp, I, R);
    auto h = torch::relu(torch::matmul(xr, weight));
    auto y = torch::nn::functional::linear(h, weight.t());
    auto p = spmd::reinterpret(y, tp, V, P);
    return spmd::all_reduce(p, tp, P, I);
  }
};

torch::Tensor buggy(SPMD_TYPE(dp = V, tp = I) const torch::Tensor& x,
                    SPMD_TYPE(dp = R, tp = V) const torch::Tensor& w) {
  auto h = torch::matmul(x, w); // expected-error {{Invariant type on axis tp cannot mix}} expected-note {{insert spmd::convert}}
  // expected-note@-3 {{'x' has type I}}
  // expected-note@-3 {{'w' has type V}}
  auto r = spmd::all_gather(w, tp, S(1), R);
  return spmd::all_reduce(r.sum() * 2.0, tp, P, I); // expected-error {{expected input type P on axis tp, got R: this value is no pending sum}} (no fix-it: R -> I needs expert_mode)
  // expected-note@-2 {{type R on axis 'tp' set by this collective}}
}

int main() {
  TPLinear m;
  auto x = torch::randn({4, 8});
  auto y = m.forward(x);
  return static_cast<int>(y.dim());
}
