// simulate_test.cpp - spmd::testing::simulate: every rank of a mesh in this
// process with real values (the local backend, or Gloo on loopback) and in
// fake mode (meta tensors, thousands of ranks); un-sharding by SPMD type;
// failing and hung ranks give errors naming the rank instead of hanging.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spmd/checker.h>
#include <spmd/spmd.h>
#include <spmd/testing.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace {

using namespace spmd::types;
using spmd::testing::Mode;
using spmd::testing::Rank;
using spmd::testing::simulate;
using spmd::testing::SimulateOptions;
using spmd::testing::SimulationError;
using ::testing::HasSubstr;

SPMD_AXIS(dp);
SPMD_AXIS(tp);

SimulateOptions quick(
    std::chrono::milliseconds timeout = std::chrono::milliseconds(30000)) {
  SimulateOptions o;
  o.timeout = timeout;
  return o;
}

// Runs `f`, expecting SimulationError; returns it (what() and failures()).
template <typename F>
SimulationError simulation_error(F&& f) {
  try {
    f();
  } catch (const SimulationError& e) {
    return e;
  }
  ADD_FAILURE() << "simulate did not throw SimulationError";
  return SimulationError("", {});
}

TEST(Simulate, EveryRankRunsWithRealCollectives) {
  auto sim = simulate({{tp, 4}}, [](Rank& rank) {
    at::Tensor mine = at::full({2}, double(rank.rank()), rank.options());
    at::Tensor all = spmd::all_gather(mine, tp, S(0), R);  // [0,0,1,1,2,2,3,3]
    at::Tensor sum = spmd::all_reduce(mine, tp, P, R);     // 0+1+2+3 each
    rank.record("mine", mine, {tp = S(0)});
    rank.record("all", all, {tp = R});
    rank.record("sum", sum, {tp = R});
  });
  ASSERT_EQ(sim.ranks().size(), 4u);
  EXPECT_EQ(sim.mode(), Mode::Values);
  EXPECT_EQ(sim.mesh(), "DeviceMesh(tp=4)");
  for (int r = 0; r < 4; ++r) {
    EXPECT_TRUE(at::equal(sim.value(r, "mine"), at::full({2}, double(r))));
    EXPECT_TRUE(at::equal(sim.value(r, "sum"), at::full({2}, 6.0)));
  }
  at::Tensor expected = at::arange(4, at::kFloat).repeat_interleave(2);
  EXPECT_TRUE(at::equal(sim.global("mine"), expected));
  EXPECT_TRUE(at::equal(sim.global("all"), expected));
  EXPECT_EQ(sim.unshard("all").disagreement, 0.0);
  EXPECT_EQ(sim.names(), (std::vector<std::string>{"mine", "all", "sum"}));
}

// Rank::local and Simulation::global are inverses for every type, including
// two axes sharding one dim and V on both axes.
TEST(Simulate, LocalAndGlobalRoundTripEveryType) {
  at::Tensor whole = at::arange(4 * 4 * 6, at::kFloat).reshape({4, 4, 6});
  struct Case {
    const char* name;
    std::vector<spmd::AxisType> type;
  };
  const std::vector<Case> cases = {
      {"R,I", {dp = R, tp = I}},         {"S0,S1", {dp = S(0), tp = S(1)}},
      {"S1,S0", {dp = S(1), tp = S(0)}}, {"S0,S0", {dp = S(0), tp = S(0)}},
      {"S-1,R", {dp = S(-1), tp = R}},   {"P,S2", {dp = P, tp = S(2)}},
      {"P,P", {dp = P, tp = P}},         {"V,R", {dp = V, tp = R}},
      {"V,S0", {dp = V, tp = S(0)}},
  };
  auto sim = simulate({{dp, 2}, {tp, 2}}, [&](Rank& rank) {
    for (const Case& c : cases) {
      at::Tensor t = whole;
      // V on dp needs one row per dp rank.
      if (c.type[0].type == V) t = at::stack({whole, whole + 1000});
      spmd::testing::TypeSpec spec;
      for (const auto& e : c.type) spec.emplace_back(e.axis, e.type);
      at::Tensor piece = rank.local(t, spec);
      rank.record(c.name, piece, spec);
    }
  });
  for (const Case& c : cases) {
    at::Tensor expected = whole;
    if (c.type[0].type == V) expected = at::stack({whole, whole + 1000});
    EXPECT_TRUE(at::equal(sim.global(c.name), expected)) << c.name;
  }
  // Pieces: S(0) on dp and S(0) on tp nest dp-major.
  EXPECT_TRUE(at::equal(sim.value(1, "S0,S0"), whole.narrow(0, 1, 1)));
  EXPECT_TRUE(at::equal(sim.value(2, "S0,S0"), whole.narrow(0, 2, 1)));
  // P: the value on coordinate 0, zeros elsewhere.
  EXPECT_TRUE(at::equal(sim.value(3, "P,P"), at::zeros_like(whole)));
}

TEST(Simulate, GradientsOfAColumnParallelLinear) {
  at::Tensor x = at::randn({3, 4}, at::kDouble);
  at::Tensor w = at::randn({8, 4}, at::kDouble);
  auto sim = simulate({{tp, 4}}, [&](Rank& rank) {
    at::Tensor wl = rank.local(w, {tp = S(0)}).requires_grad_();
    at::Tensor h = spmd::convert(x, tp, I, R);
    at::Tensor y = at::matmul(h, wl.t());  // [3, 2] on each rank
    at::Tensor out = spmd::all_gather(y, tp, S(1), I);
    out.pow(2).sum().backward();
    rank.record("out", out, {tp = I});
    rank.record("grad w", wl.grad(), {tp = S(0)});
  });
  at::Tensor w_ref = w.clone().requires_grad_();
  at::Tensor out_ref = at::matmul(x, w_ref.t());
  out_ref.pow(2).sum().backward();
  EXPECT_TRUE(at::allclose(sim.global("out"), out_ref));
  EXPECT_TRUE(at::allclose(sim.global("grad w"), w_ref.grad()));
}

TEST(Simulate, StepsFileRecordsUnderTheirStep) {
  SimulateOptions o = quick();
  o.steps = 3;
  auto sim = simulate(
      {{dp, 2}},
      [](Rank& rank) {
        at::Tensor w = at::ones({2});
        rank.record("w", w, {dp = R});  // before the loop: step 0
        for (int step : rank.steps()) {
          w = w + spmd::all_reduce(at::ones({2}), dp, P, R);
          rank.record("w", w, {dp = R});
          EXPECT_EQ(rank.step(), step);
        }
      },
      o);
  EXPECT_EQ(sim.steps_of("w"), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_TRUE(at::equal(sim.global("w", 0), at::ones({2})));
  EXPECT_TRUE(at::equal(sim.global("w", 2), at::full({2}, 5.0)));
  EXPECT_TRUE(at::equal(sim.global("w"), at::full({2}, 7.0)));  // last
}

TEST(Simulate, NextStepLoopsWithoutAVariable) {
  SimulateOptions o = quick();
  o.steps = 2;
  auto sim = simulate(
      {{tp, 2}},
      [](Rank& rank) {
        int n = 0;
        while (rank.next_step()) {
          ++n;
          rank.record("step", at::full({1}, double(rank.step())), {tp = R});
        }
        EXPECT_EQ(n, 2);
        EXPECT_EQ(rank.step(), 2);  // the last step after the loop
        EXPECT_FALSE(rank.next_step());
      },
      o);
  EXPECT_EQ(sim.steps_of("step"), (std::vector<int>{1, 2}));
  EXPECT_TRUE(at::equal(sim.global("step", 2), at::full({1}, 2.0)));
}

TEST(Simulate, SixtyFourRanksOfASmallLayer) {
  at::Tensor x = at::randn({16, 8}, at::kDouble);
  at::Tensor w1 = at::randn({32, 8}, at::kDouble);
  at::Tensor w2 = at::randn({8, 32}, at::kDouble);
  auto sim = simulate({{dp, 8}, {tp, 8}}, [&](Rank& rank) {
    at::Tensor xl = rank.local(x, {dp = S(0), tp = I});
    at::Tensor a = rank.local(w1, {dp = R, tp = S(0)}).requires_grad_();
    at::Tensor b = rank.local(w2, {dp = R, tp = S(1)}).requires_grad_();
    at::Tensor h = at::gelu(at::matmul(spmd::convert(xl, tp, I, R), a.t()));
    at::Tensor y = spmd::reinterpret(at::matmul(h, b.t()), tp, V, P);
    at::Tensor out = spmd::all_reduce(y, tp, P, I);
    spmd::reinterpret(out.pow(2).sum(), dp, V, P).backward();
    rank.record("out", out, {dp = S(0), tp = I});
    rank.record("grad w1", spmd::all_reduce(a.grad(), dp, P, R),
                {dp = R, tp = S(0)});
  });
  at::Tensor a = w1.clone().requires_grad_();
  at::Tensor out = at::matmul(at::gelu(at::matmul(x, a.t())), w2.t());
  out.pow(2).sum().backward();
  EXPECT_TRUE(at::allclose(sim.global("out"), out));
  EXPECT_TRUE(at::allclose(sim.global("grad w1"), a.grad()));
}

// ---------------------------------------------------------------- fake mode

TEST(SimulateFake, ThousandsOfRanksCheckShapesWithMetaTensors) {
  SimulateOptions o;
  o.mode = Mode::Fake;
  const int64_t n_dp = 64, n_tp = 64;  // 4096 ranks
  auto sim = simulate(
      {{dp, n_dp}, {tp, n_tp}},
      [&](Rank& rank) {
        EXPECT_TRUE(rank.fake());
        at::Tensor x = at::empty({2, 16}, rank.options());  // this dp's batch
        at::Tensor w1 = at::empty({256 / n_tp, 16}, rank.options());
        at::Tensor w2 = at::empty({16, 256 / n_tp}, rank.options());
        w1.requires_grad_();
        at::Tensor h = at::gelu(at::matmul(spmd::convert(x, tp, I, R), w1.t()));
        at::Tensor y = spmd::reinterpret(at::matmul(h, w2.t()), tp, V, P);
        at::Tensor out = spmd::all_reduce(y, tp, P, I);
        spmd::reinterpret(out.sum(), dp, V, P).backward();
        EXPECT_TRUE(out.is_meta());
        rank.record("out", out, {dp = S(0), tp = I});
        rank.record("grad w1", w1.grad(), {dp = P, tp = S(0)});
      },
      o);
  ASSERT_EQ(sim.ranks().size(), size_t(n_dp * n_tp));
  EXPECT_EQ(sim.mode(), Mode::Fake);
  EXPECT_EQ(sim.global("out").sizes(), (at::IntArrayRef{2 * n_dp, 16}));
  EXPECT_EQ(sim.global("grad w1").sizes(), (at::IntArrayRef{256, 16}));
  EXPECT_TRUE(sim.global("out").is_meta());
}

TEST(SimulateFake, TypeErrorNamesTheRank) {
  SimulateOptions o;
  o.mode = Mode::Fake;
  auto e = simulation_error([&] {
    simulate(
        {{dp, 16}, {tp, 16}},
        [](Rank& rank) {
          spmd::checker::TypecheckGuard typecheck;
          at::Tensor x = at::empty({4, 8}, rank.options());
          spmd::assert_type(x, {dp = V, tp = I});
          at::Tensor w = at::empty({8, 8}, rank.options());
          spmd::assert_type(w, {dp = R, tp = V});
          at::matmul(x, w);  // I and V cannot mix on tp
        },
        o);
  });
  EXPECT_THAT(e.what(), HasSubstr("DeviceMesh(dp=16, tp=16)"));
  EXPECT_THAT(e.what(), HasSubstr("rank 0 (dp=0, tp=0) threw"));
  EXPECT_THAT(e.what(), HasSubstr("Invariant type on axis tp cannot mix"));
  EXPECT_THAT(e.what(), HasSubstr("ranks after it were not run"));
  ASSERT_EQ(e.failures().size(), 1u);
}

TEST(SimulateFake, ChosenRanksOnly) {
  SimulateOptions o;
  o.mode = Mode::Fake;
  o.fake_ranks = {0, 4095};
  auto sim = simulate(
      {{dp, 64}, {tp, 64}},
      [](Rank& rank) {
        rank.record("coord",
                    at::empty({rank.coordinate(tp) + 1}, rank.options()),
                    {dp = V, tp = V});
      },
      o);
  ASSERT_EQ(sim.ranks().size(), 2u);
  EXPECT_EQ(sim.value(4095, "coord").size(0), 64);
  EXPECT_EQ(sim.ranks()[1].coordinates, (std::vector<int64_t>{63, 63}));
  try {
    sim.global("coord");
    ADD_FAILURE() << "un-sharding with missing ranks did not throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("needs every rank"));
  }
}

// ------------------------------------------------------ failing, hung ranks

TEST(SimulateErrors, ARankThatThrowsIsNamedFirst) {
  auto start = std::chrono::steady_clock::now();
  auto e = simulation_error([&] {
    simulate(
        {{dp, 2}, {tp, 2}},
        [](Rank& rank) {
          at::Tensor x = at::ones({4});
          if (rank.rank() == 2)
            throw std::runtime_error("bad batch on this rank");
          spmd::all_reduce(x, tp, P, R);
          spmd::all_reduce(x, dp, P, R);
        },
        quick(std::chrono::milliseconds(20000)));
  });
  ASSERT_FALSE(e.failures().empty());
  EXPECT_EQ(e.failures().front().rank, 2);
  EXPECT_FALSE(e.failures().front().hung);
  EXPECT_THAT(e.what(), HasSubstr("first rank 2 (dp=1, tp=0)"));
  EXPECT_THAT(e.what(), HasSubstr("rank 2 (dp=1, tp=0) threw: bad batch"));
  // Its peers fail at once when its connections close; none waits for the
  // 20 s collective timeout (a functional bound, not a benchmark).
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(15));
}

TEST(SimulateErrors, ACollectiveOnlySomeRanksCallTimesOut) {
  auto e = simulation_error([&] {
    simulate(
        {{tp, 2}},
        [](Rank& rank) {
          if (rank.rank() == 0) spmd::all_reduce(at::ones({2}), tp, P, R);
        },
        quick(std::chrono::milliseconds(1500)));
  });
  EXPECT_THAT(e.what(),
              HasSubstr("rank 0 (tp=0) threw: all_reduce on axis 'tp'"));
  EXPECT_THAT(e.what(), HasSubstr("1500 ms"));
}

TEST(SimulateErrors, AHungRankIsReportedNotWaitedFor) {
  auto release = std::make_shared<std::atomic<bool>>(false);
  auto e = simulation_error([&] {
    simulate(
        {{tp, 2}},
        [release](Rank& rank) {
          if (rank.rank() == 1)
            while (!*release)
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
        },
        quick(std::chrono::milliseconds(500)));
  });
  *release = true;  // lets the left-behind thread finish
  ASSERT_EQ(e.failures().size(), 1u);
  EXPECT_TRUE(e.failures().front().hung);
  EXPECT_THAT(e.what(), HasSubstr("rank 1 (tp=1) hung: did not finish within "
                                  "1000 ms (twice the timeout) after the "
                                  "first rank finished"));
}

// The local backend (the default) and Gloo give the same values for every
// collective the runtime maps onto c10d (all_reduce, all_gather,
// reduce_scatter through all_to_all, all_to_all with split dims), on a
// two-axis mesh whose sub-groups are not contiguous ranges.
TEST(SimulateBackends, LocalAndGlooAgreeOnEveryCollective) {
  auto program = [](Rank& rank) {
    const double r = double(rank.rank());
    at::Tensor x = at::arange(8, at::kDouble).reshape({2, 4}) * (r + 1);
    rank.record("sum", spmd::all_reduce(x, tp, P, R), {tp = R});
    rank.record("gathered", spmd::all_gather(x, dp, S(0), R), {dp = R});
    rank.record("scattered", spmd::reduce_scatter(x, tp, P, S(1)), {tp = S(1)});
    rank.record("moved", spmd::all_to_all(x, tp, S(1), S(0)), {tp = S(0)});
    rank.record("max", spmd::all_reduce(at::full({1}, r), dp, P, R), {dp = R});
  };
  SimulateOptions local = quick();
  SimulateOptions gloo = quick();
  gloo.backend = spmd::Backend::Gloo;
  auto a = simulate({{dp, 2}, {tp, 2}}, program, local);
  auto b = simulate({{dp, 2}, {tp, 2}}, program, gloo);
  for (int r = 0; r < 4; ++r)
    for (const char* name : {"sum", "gathered", "scattered", "moved", "max"})
      EXPECT_TRUE(at::equal(a.value(r, name), b.value(r, name)))
          << name << " on rank " << r;
}

// A collective that a peer never calls names the collective, the axis and,
// from the local backend, the rank that did not arrive.
TEST(SimulateErrors, LocalBackendTimeoutNamesTheMissingRank) {
  auto e = simulation_error([&] {
    simulate(
        {{tp, 3}},
        [](Rank& rank) {
          if (rank.rank() != 2) spmd::all_reduce(at::ones({2}), tp, P, R);
        },
        quick(std::chrono::milliseconds(1000)));
  });
  EXPECT_THAT(e.what(), HasSubstr("all_reduce on axis 'tp'"));
  EXPECT_THAT(e.what(), HasSubstr("waiting for rank(s) 2 of the group"));
}

TEST(SimulateErrors, ValuesModeNeedsAThreadBackend) {
  SimulateOptions o = quick();
  o.backend = spmd::Backend::Fake;
  try {
    simulate(
        {{tp, 2}}, [](Rank&) {}, o);
    ADD_FAILURE() << "simulate accepted the fake backend in Mode::Values";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("use Backend::Local (default) or "
                                    "Backend::Gloo"));
  }
}

TEST(SimulateErrors, BadRecordsAndOptions) {
  auto e = simulation_error([&] {
    simulate({{tp, 2}}, [](Rank& rank) {
      rank.record("x", at::ones({1}), {tp = R});
      rank.record("x", at::ones({1}), {tp = R});
    });
  });
  EXPECT_THAT(e.what(), HasSubstr("record('x'): recorded twice at step 0"));

  e = simulation_error([&] {
    simulate({{tp, 2}}, [](Rank& rank) {
      at::Tensor w = at::ones({1}, at::requires_grad());
      rank.record("grad w", w.grad(), {tp = R});
    });
  });
  EXPECT_THAT(e.what(), HasSubstr("record('grad w'): the tensor is undefined"));

  auto sim = simulate({{dp, 2}, {tp, 2}}, [](Rank& rank) {
    rank.record("x", at::ones({1}), {tp = R});
    rank.record("y", at::ones({1 + rank.rank()}), {dp = R, tp = R});
  });
  try {
    sim.global("x");
    ADD_FAILURE() << "no error for a missing type entry";
  } catch (const std::invalid_argument& x) {
    EXPECT_THAT(x.what(), HasSubstr("has no entry for axis 'dp'"));
  }
  try {
    sim.global("y");
    ADD_FAILURE() << "no error for ranks with different shapes";
  } catch (const std::invalid_argument& x) {
    EXPECT_THAT(x.what(), HasSubstr("along axis 'tp' (R): rank 1 has [2]"));
  }

  try {
    simulate({}, [](Rank&) {});
    ADD_FAILURE();
  } catch (const std::invalid_argument& x) {
    EXPECT_THAT(x.what(), HasSubstr("the mesh shape is empty"));
  }
  try {
    simulate({{dp, 64}, {tp, 64}}, [](Rank&) {});
    ADD_FAILURE();
  } catch (const std::invalid_argument& x) {
    EXPECT_THAT(x.what(), HasSubstr("use Mode::Fake"));
  }
}

}  // namespace
