// tp_block_test.cpp - the example's equivalence with one device, in one
// process (spmd::testing): every rank of the dp=2 x tp=2 mesh is a thread
// with its own Gloo process groups, and the quantities train.cpp tabulates
// (the loss and the applied gradients at every step, the parameters after
// the last step) are un-sharded by their SPMD types and compared with the
// one-device program of experiment.cpp.
//
// One executable per variant: the example itself, its block written for
// local mode (tensor_parallel_local.cpp) and each bug of examples/bugs linked
// in place of the translation unit it replaces. The
// variant's name comes from variant.cpp (compiled with SPMD_EXAMPLE_VARIANT)
// and decides which tests are registered and what they expect.
#include <ATen/ATen.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spmd/checker.h>
#include <spmd/testing.h>
#include <spmd/testing_gtest.h>

#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "experiment.h"
#include "model.h"

/// The variant this executable was linked with ("example", "local" or a bug's
/// name).
const char* spmd_example_variant();

namespace tp_example {
namespace {

using spmd::testing::EquivalenceOptions;
using spmd::testing::EquivalenceReport;
using spmd::testing::Rank;
using spmd::testing::Single;
using spmd::testing::TypeSpec;
using ::testing::HasSubstr;

// What a bug variant breaks, as the plugin's and the runtime checker's
// verdicts predict: the quantities that differ from one device at step 1,
// those that still agree, and the runtime checker's error (spec §9.3).
struct BugExpectation {
  std::vector<std::string> wrong;
  std::vector<std::string> right;
  std::string runtime_error;
};

const std::map<std::string, BugExpectation>& bug_expectations() {
  static const std::map<std::string, BugExpectation> bugs = {
      {"missing_copy_to_tp",
       {{"grad ln_w", "grad ln_b"},
        {"loss", "grad w1", "grad w2"},
        "matmul: Invariant type on axis tp cannot mix"}},
      {"all_reduce_to_replicate",
       {{"grad ln_w", "grad w1", "grad w2"},
        {"loss"},
        "add: Invariant type on axis tp cannot mix"}},
      {"gelu_before_reduce",
       {{"loss", "grad w1"},
        {},
        "gelu: Partial type on axis tp cannot propagate through non-linear "
        "ops"}},
      {"forgot_dp_grad_allreduce",
       {{"grad ln_w", "grad w1", "grad w2"},
        {"loss"},
        "sub_: Partial type on axis dp"}},
  };
  return bugs;
}

// The example's small configuration (as the multi-process tests ran it).
Config small(bool sequence_parallel, int steps) {
  Config c;
  c.steps = steps;
  c.sequence_parallel = sequence_parallel;
  return c;
}

// A weight's type on tp for a shard dim of TpLayout (-1: whole, I).
spmd::PerAxisType on_tp(int64_t dim) { return dim < 0 ? I : S(dim); }

// What train.cpp runs on each rank, recording what it tabulates. With
// `typecheck`, the training loop runs under the runtime type checker from
// the types of assert_types_tp / _sp, as `--typecheck` does, with
// checker_options(c) unless `checker` says otherwise.
spmd::testing::RankProgram parallel(
    const Config& c, bool typecheck,
    std::optional<spmd::checker::TypecheckOptions> checker = std::nullopt) {
  if (!checker) checker = checker_options(c);
  return [c, typecheck, checker](Rank& rank) {
    const bool sp = c.sequence_parallel;
    const TpLayout layout = sp ? TpLayout{} : tp_layout();
    const FullParams full = init_params(c);
    const Data data = make_data(c);
    const TypeSpec ln = {{"dp", R}, {"tp", sp ? R : I}};
    const TypeSpec w1 = {{"dp", R}, {"tp", on_tp(layout.w1_dim)}};
    const TypeSpec w2 = {{"dp", R}, {"tp", on_tp(layout.w2_dim)}};
    // The batch is dim 1 ([seq, batch, hidden]); SP splits the sequence.
    const TypeSpec act = {{"dp", S(1)}, {"tp", sp ? S(0) : I}};

    LocalParams p;
    p.ln_w = rank.local(full.ln_w, ln).requires_grad_();
    p.ln_b = rank.local(full.ln_b, ln).requires_grad_();
    p.w1 = rank.local(full.w1, w1).requires_grad_();
    p.w2 = rank.local(full.w2, w2).requires_grad_();
    const at::Tensor x = rank.local(data.x, act);
    const at::Tensor target = rank.local(data.target, act);
    const double count = static_cast<double>(data.x.numel());

    std::optional<spmd::checker::TypecheckGuard> checked;
    if (typecheck) {
      checked.emplace(*checker);
      sp ? assert_types_sp(p, x, target) : assert_types_tp(p, x, target);
    }
    while (rank.next_step()) {
      for (at::Tensor* t : {&p.ln_w, &p.ln_b, &p.w1, &p.w2})
        t->mutable_grad() = at::Tensor();
      at::Tensor out = sp ? mlp_block_sp(x, p.ln_w, p.ln_b, p.w1, p.w2)
                          : mlp_block(x, p.ln_w, p.ln_b, p.w1, p.w2);
      at::Tensor loss =
          sp ? loss_sp(out, target, count) : loss_tp(out, target, count);
      loss.backward();
      AppliedGrads g = sp ? sgd_step_sp(p, c.lr) : sgd_step(p, c.lr);
      rank.record("loss", loss, {dp = P, tp = I});
      rank.record("grad ln_w", g.ln_w, ln);
      rank.record("grad ln_b", g.ln_b, ln);
      rank.record("grad w1", g.w1, w1);
      rank.record("grad w2", g.w2, w2);
    }
    rank.record("ln_w", p.ln_w, ln);
    rank.record("ln_b", p.ln_b, ln);
    rank.record("w1", p.w1, w1);
    rank.record("w2", p.w2, w2);
  };
}

// The one-device program (experiment.cpp's Reference); `losses` receives
// its loss curve.
spmd::testing::SingleProgram single(
    const Config& c, std::shared_ptr<std::vector<double>> losses) {
  return [c, losses](Single& s) {
    const FullParams full = init_params(c);
    const Data data = make_data(c);
    Reference ref;
    ref.p = FullParams{leaf(full.ln_w), leaf(full.ln_b), leaf(full.w1),
                       leaf(full.w2)};
    while (s.next_step()) {
      ref.step(data, c.lr);
      if (losses) losses->push_back(ref.loss);
      s.record("loss", at::scalar_tensor(ref.loss, at::kDouble));
      s.record("grad ln_w", ref.grads.ln_w);
      s.record("grad ln_b", ref.grads.ln_b);
      s.record("grad w1", ref.grads.w1);
      s.record("grad w2", ref.grads.w2);
    }
    s.record("ln_w", ref.p.ln_w);
    s.record("ln_b", ref.p.ln_b);
    s.record("w1", ref.p.w1);
    s.record("w2", ref.p.w2);
  };
}

EquivalenceOptions options(const Config& c) {
  EquivalenceOptions o;
  o.mesh = {{dp, 2}, {tp, 2}};
  o.steps = c.steps;
  o.tolerance = {c.tol, 0};  // max abs diff <= --tol, as train.cpp
  o.simulate.timeout = std::chrono::milliseconds(60000);
  return o;
}

// The example equals one device: every quantity at every step within the
// tolerance, and the loss falls.
void equals_one_device(bool sequence_parallel, bool typecheck) {
  const Config c = small(sequence_parallel, typecheck ? 2 : 4);
  auto losses = std::make_shared<std::vector<double>>();
  EXPECT_SPMD_EQUIVALENT(parallel(c, typecheck), single(c, losses), options(c));
  ASSERT_EQ(losses->size(), size_t(c.steps));
  EXPECT_LT(losses->back(), losses->front()) << "the loss did not fall";
}

// A bug variant computes wrong gradients where its types said it would.
void wrong_gradients(const BugExpectation& bug) {
  const Config c = small(false, 4);
  EquivalenceReport r = spmd::testing::expect_equivalent(
      parallel(c, false), single(c, nullptr), options(c));
  EXPECT_FALSE(r.ok()) << r.table();
  for (const std::string& q : bug.wrong)
    EXPECT_FALSE(r.ok(q, 1)) << q << " should differ at step 1\n" << r.table();
  for (const std::string& q : bug.right)
    EXPECT_TRUE(r.ok(q, 1)) << q << " should agree at step 1\n" << r.table();
  std::cout << r.table();
}

// The runtime type checker rejects the bug variant on every rank, before it
// trains (the error is the rank's own, not a peer giving up on it).
void rejected_by_runtime_checker(const BugExpectation& bug) {
  const Config c = small(false, 1);
  try {
    spmd::testing::SimulateOptions o = options(c).simulate;
    spmd::testing::simulate({{dp, 2}, {tp, 2}}, parallel(c, true), o);
    ADD_FAILURE() << "the runtime checker did not reject the variant";
  } catch (const spmd::testing::SimulationError& e) {
    EXPECT_THAT(e.what(), HasSubstr(bug.runtime_error));
    ASSERT_FALSE(e.failures().empty());
    EXPECT_FALSE(e.failures().front().hung);
    EXPECT_THAT(e.failures().front().message, HasSubstr(bug.runtime_error));
  }
}

// The example's block is typed in global mode on tp (its runtime check
// follows the shards, as the plugin's build does), the local block in local
// mode; and the local block's hand-written reinterpret is exactly what
// global mode rejects: typed globally, its row-parallel product is already a
// pending sum (spec §12, issue 11).
void typed_in_global_mode(bool expected) {
  EXPECT_EQ(checker_options(small(false, 1)).local.value_or(true), !expected);
  EXPECT_EQ(checker_options(small(true, 1)).local.value_or(true), true)
      << "sequence parallelism stays in local mode";
}

void local_block_rejected_in_global_mode() {
  spmd::checker::TypecheckOptions global;
  global.local = false;
  global.local_axes = std::vector<std::string>{"dp"};
  const Config c = small(false, 1);
  try {
    spmd::testing::SimulateOptions o = options(c).simulate;
    spmd::testing::simulate({{dp, 2}, {tp, 2}}, parallel(c, true, global), o);
    ADD_FAILURE() << "global mode accepted the hand-written reinterpret";
  } catch (const spmd::testing::SimulationError& e) {
    ASSERT_FALSE(e.failures().empty());
    EXPECT_FALSE(e.failures().front().hung);
    EXPECT_THAT(e.failures().front().message,
                HasSubstr("reinterpret: expected input type V on axis tp, "
                          "got P"));
    EXPECT_THAT(e.failures().front().message,
                HasSubstr("tensor_parallel_local.cpp"));
  }
}

class Case : public ::testing::Test {
 public:
  explicit Case(std::function<void()> body) : body_(std::move(body)) {}
  void TestBody() override { body_(); }

 private:
  std::function<void()> body_;
};

void add(const std::string& suite, const std::string& name,
         std::function<void()> body) {
  ::testing::RegisterTest(
      suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
      [body]() -> ::testing::Test* { return new Case(body); });
}

// Registers this variant's tests; ctest names them example.<suite>.<name>,
// the names the multi-process tests had.
void register_tests(const std::string& variant) {
  if (variant == "example") {
    for (bool sp : {false, true}) {
      const std::string suite = sp ? "sp_block" : "tp_block";
      add(suite, "equals_one_device", [sp] { equals_one_device(sp, false); });
      add(suite, "passes_runtime_checker",
          [sp] { equals_one_device(sp, true); });
    }
    add("tp_block", "typed_in_global_mode", [] { typed_in_global_mode(true); });
    return;
  }
  if (variant == "local") {  // tensor_parallel_local.cpp, local mode
    add("tp_block_local", "equals_one_device",
        [] { equals_one_device(false, false); });
    add("tp_block_local", "passes_runtime_checker",
        [] { equals_one_device(false, true); });
    add("tp_block_local", "typed_in_local_mode",
        [] { typed_in_global_mode(false); });
    add("tp_block_local", "rejected_in_global_mode",
        [] { local_block_rejected_in_global_mode(); });
    return;
  }
  auto it = bug_expectations().find(variant);
  if (it == bug_expectations().end()) {
    add("variant", "is_known", [variant] {
      ADD_FAILURE() << "unknown variant '" << variant
                    << "': add its expectations to bug_expectations()";
    });
    return;
  }
  const BugExpectation bug = it->second;
  add("bug." + variant, "wrong_gradients_without_plugin",
      [bug] { wrong_gradients(bug); });
  add("bug." + variant, "rejected_by_runtime_checker",
      [bug] { rejected_by_runtime_checker(bug); });
}

}  // namespace
}  // namespace tp_example

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  tp_example::register_tests(spmd_example_variant());
  return RUN_ALL_TESTS();
}
