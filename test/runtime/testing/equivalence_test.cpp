// equivalence_test.cpp - spmd::testing::expect_equivalent and
// EXPECT_SPMD_EQUIVALENT: a tensor-parallel MLP trained for a few steps on a
// dp x tp mesh against the same MLP on one device; wrong variants are caught
// in the quantities they break, with a readable table.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>
#include <spmd/spmd.h>
#include <spmd/testing.h>
#include <spmd/testing_gtest.h>

#include <string>

namespace {

using namespace spmd::types;
using spmd::testing::EquivalenceOptions;
using spmd::testing::EquivalenceReport;
using spmd::testing::expect_equivalent;
using spmd::testing::Rank;
using spmd::testing::Single;
using ::testing::HasSubstr;

SPMD_AXIS(dp);
SPMD_AXIS(tp);

constexpr double kLr = 0.1;

struct Model {
  at::Tensor x, target, w1, w2;  // whole tensors
  Model() {
    at::manual_seed(7);
    x = at::randn({8, 6}, at::kDouble);
    target = at::randn({8, 6}, at::kDouble);
    w1 = at::randn({16, 6}, at::kDouble) / 3;
    w2 = at::randn({6, 16}, at::kDouble) / 4;
  }
};

// What a variant of the parallel program gets wrong.
enum class Bug { None, NoTpReduce, NoDpGradReduce, DiffersOnRank1 };

// The parallel program: batch on dp, Megatron MLP on tp, SGD.
spmd::testing::RankProgram parallel(const Model& m, Bug bug = Bug::None) {
  return [&m, bug](Rank& rank) {
    at::Tensor x = rank.local(m.x, {dp = S(0), tp = I});
    at::Tensor target = rank.local(m.target, {dp = S(0), tp = I});
    at::Tensor w1 = rank.local(m.w1, {dp = R, tp = S(0)}).requires_grad_();
    at::Tensor w2 = rank.local(m.w2, {dp = R, tp = S(1)}).requires_grad_();
    while (rank.next_step()) {
      w1.mutable_grad() = at::Tensor();
      w2.mutable_grad() = at::Tensor();
      at::Tensor h = at::gelu(at::matmul(spmd::convert(x, tp, I, R), w1.t()));
      at::Tensor y = at::matmul(h, w2.t());  // a partial sum on tp
      at::Tensor out =
          bug == Bug::NoTpReduce
              ? y  // each tp rank keeps its own term
              : spmd::all_reduce(spmd::reinterpret(y, tp, V, P), tp, P, I);
      at::Tensor err = out - target;
      at::Tensor loss =
          spmd::reinterpret((err * err).sum() / m.x.numel(), dp, V, P);
      loss.backward();
      rank.record("loss", loss, {dp = P, tp = I});
      rank.record("out", out, {dp = S(0), tp = I});
      at::NoGradGuard no_grad;
      at::Tensor g1 = w1.grad(), g2 = w2.grad();
      if (bug != Bug::NoDpGradReduce) {
        g1 = spmd::all_reduce(g1, dp, P, R);
        g2 = spmd::all_reduce(g2, dp, P, R);
        rank.record("grad w1", g1, {dp = R, tp = S(0)});
        rank.record("grad w2", g2, {dp = R, tp = S(1)});
      } else {
        rank.record("grad w1", g1, {dp = P, tp = S(0)});
        rank.record("grad w2", g2, {dp = P, tp = S(1)});
      }
      w1.sub_(g1 * kLr);
      w2.sub_(g2 * kLr);
      if (bug == Bug::DiffersOnRank1 && rank.rank() == 1) w1.add_(0.5);
    }
    rank.record("w1", w1, {dp = R, tp = S(0)});
    rank.record("w2", w2, {dp = R, tp = S(1)});
  };
}

spmd::testing::SingleProgram single(const Model& m) {
  return [&m](Single& s) {
    at::Tensor w1 = m.w1.clone().requires_grad_();
    at::Tensor w2 = m.w2.clone().requires_grad_();
    while (s.next_step()) {
      w1.mutable_grad() = at::Tensor();
      w2.mutable_grad() = at::Tensor();
      at::Tensor out = at::matmul(at::gelu(at::matmul(m.x, w1.t())), w2.t());
      at::Tensor err = out - m.target;
      at::Tensor loss = (err * err).sum() / m.x.numel();
      loss.backward();
      s.record("loss", loss);
      s.record("out", out);
      s.record("grad w1", w1.grad());
      s.record("grad w2", w2.grad());
      at::NoGradGuard no_grad;
      w1.sub_(w1.grad() * kLr);
      w2.sub_(w2.grad() * kLr);
    }
    s.record("w1", w1);
    s.record("w2", w2);
  };
}

EquivalenceOptions mesh_2x2(int steps = 3) {
  EquivalenceOptions o;
  o.mesh = {{dp, 2}, {tp, 2}};
  o.steps = steps;
  o.tolerance = {1e-10, 1e-10};
  return o;
}

TEST(Equivalence, TensorParallelMlpEqualsOneDevice) {
  Model m;
  EquivalenceReport report =
      expect_equivalent(parallel(m), single(m), mesh_2x2());
  EXPECT_TRUE(report.ok()) << report.table();
  // 4 quantities per step over 3 steps, then w1 and w2 at the last step.
  EXPECT_EQ(report.rows().size(), 4u * 3u + 2u);
  EXPECT_TRUE(report.ok("grad w1", 1));
  EXPECT_TRUE(report.ok("w2", 3));
  EXPECT_THAT(report.table(), HasSubstr("verdict: PASS"));
  EXPECT_THAT(report.table(), HasSubstr("{dp: R, tp: S(0)}"));
}

TEST(Equivalence, GoogleTestHelperPasses) {
  Model m;
  EXPECT_SPMD_EQUIVALENT(parallel(m), single(m), mesh_2x2(2));
}

TEST(Equivalence, MissingTpReduceBreaksTheForwardAndEverythingAfter) {
  Model m;
  EquivalenceReport r =
      expect_equivalent(parallel(m, Bug::NoTpReduce), single(m), mesh_2x2());
  EXPECT_FALSE(r.ok());
  EXPECT_FALSE(r.ok("out", 1));
  EXPECT_FALSE(r.ok("loss", 1));
  EXPECT_FALSE(r.ok("grad w1", 1));
  const std::string table = r.table();
  EXPECT_THAT(table, HasSubstr("MISMATCH  step 1"));
  EXPECT_THAT(table, HasSubstr("verdict: FAIL - differs from the single-device "
                               "program in: loss, out, grad w1, grad w2"));
}

TEST(Equivalence, ForgottenDpGradientReduceBreaksGradientsNotTheFirstLoss) {
  Model m;
  EquivalenceReport r = expect_equivalent(parallel(m, Bug::NoDpGradReduce),
                                          single(m), mesh_2x2());
  // Un-sharded as P the gradients would be right; the bug is what the
  // optimizer applied, which diverges from step 2 on.
  EXPECT_TRUE(r.ok("loss", 1));
  EXPECT_TRUE(r.ok("grad w1", 1));
  EXPECT_FALSE(r.ok("loss", 2));
  EXPECT_FALSE(r.ok("w1", 3));
  EXPECT_THAT(r.table(), HasSubstr("MISMATCH  step 2"));
}

TEST(Equivalence, RanksThatMustAgreeButDoNotAreReported) {
  Model m;
  EquivalenceReport r = expect_equivalent(parallel(m, Bug::DiffersOnRank1),
                                          single(m), mesh_2x2(1));
  ASSERT_NE(r.find("w1", 1), nullptr);
  EXPECT_FALSE(r.ok("w1", 1));
  EXPECT_THAT(r.find("w1", 1)->problem,
              HasSubstr("ranks of axis 'dp' (R/I: must hold the same value) "
                        "disagree by 5.000e-01"));
  EXPECT_TRUE(r.ok("loss", 1));
}

TEST(Equivalence, MissingQuantitiesShapesAndTolerances) {
  EquivalenceOptions o;
  o.mesh = {{tp, 2}};
  auto par = [](Rank& rank) {
    rank.record("a", at::ones({2}), {tp = S(0)});           // [4] vs [3]
    rank.record("b", at::full({1}, 1.0 + 1e-3), {tp = R});  // within 1e-2
    rank.record("only parallel", at::ones({1}), {tp = R});
  };
  auto one = [](Single& s) {
    s.record("a", at::ones({3}));
    s.record("b", at::ones({1}));
    s.record("only single", at::ones({1}));
  };
  o.tolerances["b"] = {1e-2, 0};
  EquivalenceReport r = expect_equivalent(par, one, o);
  EXPECT_FALSE(r.ok("a", 0));
  EXPECT_THAT(r.find("a", 0)->problem,
              HasSubstr("shape [4] (parallel, un-sharded) != [3]"));
  EXPECT_TRUE(r.ok("b", 0));
  EXPECT_FALSE(r.ok("only parallel", 0));
  EXPECT_FALSE(r.ok("only single", 0));
  EXPECT_THAT(r.table(),
              HasSubstr("recorded by the single-device program only"));
  o.tolerances.clear();
  EXPECT_FALSE(expect_equivalent(par, one, o).ok("b", 0));
  try {
    (void)r.ok("b", 7);
    ADD_FAILURE() << "no error for a step that was not compared";
  } catch (const std::out_of_range& e) {
    EXPECT_THAT(e.what(), HasSubstr("'b' was not compared at step 7"));
  }
}

TEST(Equivalence, GoogleTestHelperFailsWithTheTable) {
  static Model m;  // EXPECT_NONFATAL_FAILURE's statement sees only statics
  EXPECT_NONFATAL_FAILURE(EXPECT_SPMD_EQUIVALENT(parallel(m, Bug::NoTpReduce),
                                                 single(m), mesh_2x2(1)),
                          "MISMATCH");
  EXPECT_NONFATAL_FAILURE(EXPECT_SPMD_EQUIVALENT(
                              [](Rank& rank) {
                                if (rank.rank() == 1)
                                  throw std::runtime_error("boom");
                              },
                              [](Single&) {}, mesh_2x2(1)),
                          "rank 1 (dp=0, tp=1) threw: boom");
  static EquivalenceOptions bad;
  EXPECT_NONFATAL_FAILURE(EXPECT_SPMD_EQUIVALENT(parallel(m), single(m), bad),
                          "EquivalenceOptions::mesh is empty");
}

}  // namespace
