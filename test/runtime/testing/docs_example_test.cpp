// docs_example_test.cpp - the worked example of docs/testing.md, verbatim:
// keep the two identical.
#include <gtest/gtest.h>
#include <spmd/spmd.h>
#include <spmd/testing.h>
#include <spmd/testing_gtest.h>

using namespace spmd::types;
using spmd::testing::Rank;
using spmd::testing::Single;
SPMD_AXIS(dp);
SPMD_AXIS(tp);

TEST(Mlp, TensorParallelEqualsOneDevice) {
  at::manual_seed(0);
  const at::Tensor x = at::randn({8, 6}), target = at::randn({8, 6});
  const at::Tensor w1 = at::randn({16, 6}), w2 = at::randn({6, 16});

  // Runs on every rank (a thread); the mesh is current, so collectives
  // resolve `dp` and `tp`.
  auto parallel = [&](Rank& rank) {
    // This rank's pieces of the whole tensors, by type.
    at::Tensor xs = rank.local(x, {dp = S(0), tp = I});
    at::Tensor ts = rank.local(target, {dp = S(0), tp = I});
    at::Tensor a = rank.local(w1, {dp = R, tp = S(0)}).requires_grad_();
    at::Tensor b = rank.local(w2, {dp = R, tp = S(1)}).requires_grad_();
    while (rank.next_step()) {
      a.mutable_grad() = at::Tensor();
      b.mutable_grad() = at::Tensor();
      at::Tensor h = at::gelu(at::matmul(spmd::convert(xs, tp, I, R), a.t()));
      at::Tensor y = spmd::reinterpret(at::matmul(h, b.t()), tp, V, P);
      at::Tensor out = spmd::all_reduce(y, tp, P, I);
      at::Tensor err = out - ts;
      at::Tensor loss =
          spmd::reinterpret((err * err).sum() / x.numel(), dp, V, P);
      loss.backward();
      at::NoGradGuard no_grad;
      at::Tensor ga = spmd::all_reduce(a.grad(), dp, P, R);
      at::Tensor gb = spmd::all_reduce(b.grad(), dp, P, R);
      rank.record("loss", loss, {dp = P, tp = I});      // sum over dp
      rank.record("grad w1", ga, {dp = R, tp = S(0)});  // concat rows over tp
      rank.record("grad w2", gb, {dp = R, tp = S(1)});
      a.sub_(ga * 0.1);
      b.sub_(gb * 0.1);
    }
    rank.record("w1", a, {dp = R, tp = S(0)});  // after the last step
    rank.record("w2", b, {dp = R, tp = S(1)});
  };

  // The same training on whole tensors.
  auto single = [&](Single& s) {
    at::Tensor a = w1.clone().requires_grad_(), b = w2.clone().requires_grad_();
    while (s.next_step()) {
      a.mutable_grad() = at::Tensor();
      b.mutable_grad() = at::Tensor();
      at::Tensor err =
          at::matmul(at::gelu(at::matmul(x, a.t())), b.t()) - target;
      at::Tensor loss = (err * err).sum() / x.numel();
      loss.backward();
      s.record("loss", loss);
      s.record("grad w1", a.grad());
      s.record("grad w2", b.grad());
      at::NoGradGuard no_grad;
      a.sub_(a.grad() * 0.1);
      b.sub_(b.grad() * 0.1);
    }
    s.record("w1", a);
    s.record("w2", b);
  };

  spmd::testing::EquivalenceOptions options;
  options.mesh = {{dp, 2}, {tp, 2}};
  options.steps = 3;
  options.tolerance = {/*atol=*/1e-5, /*rtol=*/1e-5};
  EXPECT_SPMD_EQUIVALENT(parallel, single, options);
}
