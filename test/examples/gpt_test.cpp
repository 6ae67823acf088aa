// gpt_test.cpp - the GPT of examples/gpt against the one-device program, in
// one process (spmd::testing): every rank of a dp=2 x tp=2 and of a
// dp=1 x tp=4 mesh is a thread with its own Gloo groups; the loss and the
// gradient norm at every step, the validation loss and every parameter after
// the last step are un-sharded by their SPMD types and compared with
// examples/gpt/experiment.cpp's Reference.
//
// Linked twice: with the clean model (gpt_test) and with the model built with
// -DGPT_BUGS_AT_RUNTIME (gpt_bugs_test), where each bug of bugs.h is trained
// and must differ from one device.
#include "gpt.h"

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <spmd/checker.h>
#include <spmd/testing.h>
#include <spmd/testing_gtest.h>

#include <iostream>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace gpt {
namespace {

using spmd::testing::EquivalenceOptions;
using spmd::testing::EquivalenceReport;
using spmd::testing::Rank;
using spmd::testing::Single;
using spmd::testing::TypeSpec;

// Tiny sizes: two blocks, every parallel part present, a few seconds.
Config tiny(int steps) {
  Config c;
  c.hidden = 16;
  c.heads = 4;
  c.ffn = 32;
  c.layers = 2;
  c.seq = 8;
  c.batch = 4;
  c.steps = steps;
  c.lr = 1e-2;
  c.max_norm = 0.5;  // small enough that clipping is active
  c.val_batches = 1;
  return c;
}

const Corpus& corpus() {
  static const Corpus c = load_corpus(default_corpus_path());
  return c;
}

TypeSpec param_type(const std::string& name) {
  const int64_t dim = shard_dim(name);
  return {{"dp", R}, {"tp", dim < 0 ? R : S(dim)}};
}

// One rank of the parallel program, recording what train.cpp compares.
spmd::testing::RankProgram parallel(Config c, bool typecheck) {
  return [c, typecheck](Rank& rank) mutable {
    c.dp_size = rank.axis_size(dp);
    c.tp_size = rank.axis_size(tp);
    const Shard s{rank.coordinate(tp), c.tp_size, rank.coordinate(dp),
                  c.dp_size};
    Trainer trainer(init_params(c), c, s);
    const TypeSpec loss_type = {{"dp", P}, {"tp", I}};
    while (rank.next_step()) {
      const Batch mine = local_batch(train_batch(corpus(), c, rank.step()), s);
      std::optional<spmd::checker::TypecheckGuard> checked;
      if (typecheck) {
        checked.emplace();
        trainer.assert_types(mine);
      }
      Tensor norm;
      Tensor loss = trainer.train_step(mine, &norm);
      checked.reset();
      rank.record("loss", loss, loss_type);
      rank.record("grad norm", norm, {{"dp", R}, {"tp", R}});
    }
    rank.record("val loss",
                trainer.eval_loss(local_batch(val_batch(corpus(), c, 0), s)),
                loss_type);
    for (const auto& item : trainer.model->named_parameters())
      rank.record(item.key(), item.value().detach(), param_type(item.key()));
  };
}

spmd::testing::SingleProgram single(
    const Config& c, std::shared_ptr<std::vector<double>> losses) {
  return [c, losses](Single& one) {
    Reference ref(init_params(c), c);
    while (one.next_step()) {
      double loss = ref.train_step(train_batch(corpus(), c, one.step()));
      if (losses) losses->push_back(loss);
      one.record("loss", at::scalar_tensor(loss, at::kDouble));
      one.record("grad norm",
                 at::scalar_tensor(ref.last_grad_norm, at::kDouble));
    }
    one.record("val loss",
               at::scalar_tensor(ref.eval_loss(val_batch(corpus(), c, 0)),
                                 at::kDouble));
    for (const auto& [name, t] : ref.params) one.record(name, t.detach());
  };
}

EquivalenceOptions options(int dp_size, int tp_size, int steps) {
  EquivalenceOptions o;
  o.mesh = {{dp, dp_size}, {tp, tp_size}};
  o.steps = steps;
  o.tolerance = {1e-9, 1e-9};  // double precision throughout
  o.simulate.timeout = std::chrono::milliseconds(60000);
  return o;
}

bool bugs_build() {
  try {
    set_active_bug(GPT_BUG_none + 1);
    set_active_bug(GPT_BUG_none);
    return true;
  } catch (const std::invalid_argument&) {
    return false;
  }
}

void equals_one_device(int dp_size, int tp_size, int steps, bool typecheck) {
  if (bugs_build()) GTEST_SKIP() << "the clean model is tested in gpt_test";
  const Config c = tiny(steps);
  auto losses = std::make_shared<std::vector<double>>();
  EquivalenceReport r = spmd::testing::expect_equivalent(
      parallel(c, typecheck), single(c, losses),
      options(dp_size, tp_size, steps));
  EXPECT_TRUE(r.ok()) << r.table();
  std::cout << r.table();
  ASSERT_EQ(losses->size(), size_t(steps));
  EXPECT_LT(losses->back(), losses->front()) << "the loss did not fall";
}

TEST(GptExample, Dp2Tp2EqualsOneDevice) { equals_one_device(2, 2, 4, false); }
TEST(GptExample, Dp1Tp4EqualsOneDevice) { equals_one_device(1, 4, 4, false); }
TEST(GptExample, Dp2Tp2UnderRuntimeChecker) {
  equals_one_device(2, 2, 2, true);
}

// The optimizer relies on the two parameter groups: every parameter in
// exactly one, and in the group its shard layout says.
TEST(GptExample, ParameterGroupsCoverEveryParameterOnce) {
  Config c = tiny(1);
  c.tp_size = 2;
  GPT model(init_params(c), c, Shard{1, 2, 0, 1});
  std::set<const void*> replicated, sharded;
  for (const Tensor& t : model->replicated_parameters())
    replicated.insert(t.unsafeGetTensorImpl());
  for (const Tensor& t : model->sharded_parameters())
    sharded.insert(t.unsafeGetTensorImpl());
  const auto named = model->named_parameters();
  EXPECT_EQ(replicated.size() + sharded.size(), named.size());
  for (const auto& item : named) {
    const void* impl = item.value().unsafeGetTensorImpl();
    const bool is_sharded = shard_dim(item.key()) >= 0;
    EXPECT_EQ(sharded.count(impl), is_sharded ? 1u : 0u) << item.key();
    EXPECT_EQ(replicated.count(impl), is_sharded ? 0u : 1u) << item.key();
  }
}

// Each mistake of bugs.h, compiled without the plugin, trains: and differs
// from one device (the plugin rejects each: test/examples/CMakeLists.txt).
class GptBug : public ::testing::TestWithParam<const char*> {};

TEST_P(GptBug, TrainsWrongly) {
  if (!bugs_build()) GTEST_SKIP() << "bugs are compiled out of this build";
  const int bug = bug_by_name(GetParam());
  ASSERT_GE(bug, 0) << GetParam();
  set_active_bug(bug);
  const Config c = tiny(2);
  EquivalenceReport r;
  try {
    r = spmd::testing::expect_equivalent(parallel(c, false), single(c, nullptr),
                                         options(2, 2, 2));
  } catch (const std::exception& e) {
    set_active_bug(GPT_BUG_none);
    // Only gathering on the batch dim is stopped by the shapes (not
    // silent, still wrong); every other bug must train.
    if (std::string(GetParam()) != "gather_wrong_dim")
      FAIL() << GetParam() << " did not train: " << e.what();
    std::cout << GetParam()
              << ": fails at run time: " << std::string(e.what()).substr(0, 200)
              << "\n";
    return;
  }
  set_active_bug(GPT_BUG_none);
  EXPECT_FALSE(r.ok()) << GetParam() << " trained like one device\n"
                       << r.table();
  const std::vector<std::string> wrong = r.mismatches();
  std::cout << GetParam() << ": differs from one device in " << wrong.size()
            << " quantities, e.g.";
  for (size_t i = 0; i < wrong.size() && i < 3; ++i)
    std::cout << " '" << wrong[i] << "'";
  std::cout << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    Bugs, GptBug,
    ::testing::Values("missing_copy_to_tp", "double_reduce",
                      "bias_before_reduce", "unsynced_norm_grads",
                      "ce_sharded_vocab", "gather_wrong_dim",
                      "missing_dp_reduce", "grad_norm_tp_times",
                      "embedding_not_reduced", "embedding_not_masked"),
    [](const ::testing::TestParamInfo<const char*>& info) {
      return std::string(info.param);
    });

}  // namespace
}  // namespace gpt
