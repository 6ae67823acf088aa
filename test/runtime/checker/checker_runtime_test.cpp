// checker_runtime_test.cpp - the runtime checker on real programs: torch::nn
// modules, views and in-place ops, the side table releasing dead tensors,
// nested and pausing guards, threads, "off means off", and typed collectives
// on Gloo ranks that are threads of this process.
#include <spmd/collectives.h>
#include <spmd/mesh.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/nn/modules/normalization.h>

#include <atomic>
#include <thread>

#include "checker_test_util.h"
#include "runtime_test_util.h"

namespace spmd::testing {
namespace {

using namespace spmd::types;

checker::TypecheckOptions mesh_of(std::vector<checker::MeshAxisInfo> axes,
                                  bool strict = true) {
  checker::TypecheckOptions o;
  o.strict = strict;
  o.mesh = std::move(axes);
  return o;
}

// ------------------------------------------------------------ modules ----

// A data-parallel MLP: parameters replicated on dp, the batch varying.
TEST(CheckerModules, TypedParametersGiveTypedOutputs) {
  torch::nn::Linear fc1(4, 8), fc2(8, 2);
  torch::nn::LayerNorm norm(torch::nn::LayerNormOptions({8}));
  checker::TypecheckGuard guard(mesh_of({{"dp", 2}, {"tp", 2}}));
  for (auto* m : {fc1.ptr().get(), fc2.ptr().get()})
    for (const at::Tensor& p : m->parameters())
      assert_type(p, {dp = R, tp = R});
  for (const at::Tensor& p : norm->parameters())
    assert_type(p, {dp = R, tp = R});

  at::Tensor x = typed({dp = V, tp = R}, {3, 4});
  at::Tensor h = norm(at::relu(fc1(x)));
  EXPECT_EQ(type_str(h), "{dp: V, tp: R}");
  at::Tensor y = fc2(h);
  EXPECT_EQ(type_str(y), "{dp: V, tp: R}");
  // A varying loss cannot be back-propagated as is (spec §6.15).
  EXPECT_TYPE_ERROR(y.sum().backward(), "reinterpret");
}

TEST(CheckerModules, UntypedParameterIsAMissingAxis) {
  torch::nn::Linear fc(4, 8);
  checker::TypecheckGuard guard(mesh_of({{"tp", 2}}));
  assert_type(fc->weight, {tp = R});  // the bias stays untyped
  std::string msg = spmd_error([&] { fc(typed({tp = V}, {3, 4})); });
  EXPECT_NE(msg.find("In aten::addmm("), std::string::npos) << msg;
  EXPECT_NE(msg.find("untyped"), std::string::npos) << msg;
}

// Megatron-style tensor parallelism: a column-parallel weight gives a
// varying activation; a row-parallel product is declared partial.
TEST(CheckerModules, TensorParallelLinearAndEmbedding) {
  torch::nn::Embedding emb(10, 4);
  torch::nn::Linear col(4, 8);
  checker::TypecheckGuard guard(mesh_of({{"tp", 2}}));
  assert_type(emb->weight, {tp = R});
  for (const at::Tensor& p : col->parameters()) assert_type(p, {tp = V});
  at::Tensor ids;
  {
    checker::NoTypecheckGuard paused;
    ids = at::arange(3);
  }
  assert_type(ids, {tp = R});
  at::Tensor e = emb(ids);
  EXPECT_EQ(type_str(e), "{tp: R}");
  at::Tensor h = col(e);
  EXPECT_EQ(type_str(h), "{tp: V}");
  at::Tensor w2 = typed({tp = V}, {8, 4});
  at::Tensor p = at::matmul(h, w2);
  EXPECT_EQ(type_str(p), "{tp: V}");
  assert_type(p, {tp = P});  // V -> P: declare the pending sum
  EXPECT_EQ(type_str(p), "{tp: P}");
  EXPECT_TYPE_ERROR(at::gelu(p), "non-linear");
}

// ------------------------------------------- attributes, not values ----

// Tensor::to(other) (aten::to.other) takes other's dtype and device only: the
// result has self's type in local and in global mode (the core's op table).
TEST(CheckerOps, ToOtherTakesDtypeAndDeviceOnly) {
  checker::TypecheckGuard guard;
  at::Tensor x = typed({tp = R}, {4, 6});
  at::Tensor like = typed({tp = V}, {2}).to(at::kDouble);
  EXPECT_EQ(type_str(x.to(like)), "{tp: R}");
  EXPECT_EQ(x.to(like).scalar_type(), at::kDouble);
  EXPECT_EQ(type_str(like.to(x)), "{tp: V}");
  checker::TypecheckOptions global;
  global.local = false;
  global.mesh = std::vector<checker::MeshAxisInfo>{{"tp", 2}};
  checker::TypecheckGuard global_guard(global);
  at::Tensor s = typed({tp = S(0)}, {4, 6});
  EXPECT_EQ(get_global_type(s.to(typed({tp = R}, {3}))).to_string(),
            "{tp: S(0)} PartitionSpec(tp, None)");
}

// -------------------------------------------------- views and in-place ----

TEST(CheckerViews, ViewsCarryTheTypeOfTheirBase) {
  checker::TypecheckGuard guard;
  at::Tensor x = typed({tp = P}, {4, 6});
  EXPECT_EQ(type_str(x[0]), "{tp: P}");  // select: LINEAR
  EXPECT_EQ(type_str(x.narrow(1, 0, 2)), "{tp: P}");
  EXPECT_EQ(type_str(x.view({2, 12}).t()), "{tp: P}");
  EXPECT_EQ(type_str(x.diagonal()), "{tp: P}");
  // Slicing is indexing (__getitem__ in the reference): NONLINEAR.
  EXPECT_TYPE_ERROR(x.slice(0, 0, 2), "non-linear");
}

TEST(CheckerViews, InPlaceOnAViewRetypesTheView) {
  checker::TypecheckGuard guard;
  at::Tensor x = typed({tp = R}, {4, 6});
  at::Tensor row = x[1];
  row.add_(typed({tp = V}, {6}));  // widening R -> V on the view
  EXPECT_EQ(type_str(row), "{tp: V}");
  // The write changed the base's data too, so the base is retyped
  // (spec §6.11.1).
  EXPECT_EQ(type_str(x), "{tp: V}");
  at::Tensor y = typed({tp = R}, {4});
  at::Tensor out = y.mul_(2.0).add_(1.0).clamp_(0.0, 1.0);
  EXPECT_TRUE(out.is_same(y));
  EXPECT_EQ(type_str(y), "{tp: R}");
  EXPECT_TYPE_ERROR(typed({tp = P}, {4}).relu_(), "non-linear");
}

// Aliasing (spec §6.11.1): an in-place write through one tensor retypes
// every live typed tensor whose bytes overlap it in the same storage.

TEST(CheckerAliasing, ViewAddRetypesTheBaseAndOtherViews) {
  checker::TypecheckGuard guard;
  at::Tensor x = typed({tp = R}, {4, 6});
  at::Tensor row2 = x[2];              // a live view made before the write
  at::Tensor top = x.narrow(0, 0, 1);  // overlaps the write
  at::Tensor flat = x.view(-1);
  flat.add_(typed({tp = V}, {24}));
  EXPECT_EQ(type_str(flat), "{tp: V}");
  EXPECT_EQ(type_str(x), "{tp: V}");
  EXPECT_EQ(type_str(row2), "{tp: V}");
  EXPECT_EQ(type_str(top), "{tp: V}");
  EXPECT_EQ(type_str(x * 2.0), "{tp: V}");
  // A view made after the write inherits the new type.
  EXPECT_EQ(type_str(x[0]), "{tp: V}");
}

TEST(CheckerAliasing, OnlyOverlappingViewsAreRetyped) {
  checker::TypecheckGuard guard;
  at::Tensor x = typed({tp = R}, {4, 6});
  at::Tensor head = x.narrow(0, 0, 2);
  at::Tensor tail = x.narrow(0, 2, 2);  // disjoint bytes
  head.mul_(typed({tp = V}, {2, 6}));
  EXPECT_EQ(type_str(head), "{tp: V}");
  EXPECT_EQ(type_str(x), "{tp: V}");
  EXPECT_EQ(type_str(tail), "{tp: R}");
  // Writing the same type changes nothing.
  at::Tensor p = typed({tp = P}, {4, 6});
  at::Tensor pv = p.narrow(1, 0, 3);
  pv.mul_(2.0);
  EXPECT_EQ(type_str(p), "{tp: P}");
  // Unrelated tensors of the same shape are untouched.
  at::Tensor other = typed({tp = R}, {4, 6});
  EXPECT_EQ(type_str(other), "{tp: R}");
}

TEST(CheckerAliasing, SelectCopyRetypesTheBase) {
  checker::TypecheckGuard guard;
  at::Tensor x = typed({tp = R}, {3, 4});
  x[1].copy_(typed({tp = V}, {4}));
  EXPECT_EQ(type_str(x), "{tp: V}");
  // A write of R data into a V base keeps it V (V absorbs R and I).
  at::Tensor y = typed({tp = V}, {3, 4});
  y[0].copy_(typed({tp = R}, {4}));
  EXPECT_EQ(type_str(y), "{tp: V}");
}

TEST(CheckerAliasing, AWriteToTheBaseRetypesItsViews) {
  checker::TypecheckGuard guard;
  at::Tensor x = typed({tp = R}, {2, 3, 4});
  at::Tensor a = x[0];
  at::Tensor b = a.view(-1);  // a view of a view
  b.add_(typed({tp = V}, {12}));
  EXPECT_EQ(type_str(a), "{tp: V}");
  EXPECT_EQ(type_str(x), "{tp: V}");
  at::Tensor z = typed({tp = R}, {4, 4});
  at::Tensor zt = z.t();
  z.add_(typed({tp = V}, {4, 4}));
  EXPECT_EQ(type_str(zt), "{tp: V}");
}

TEST(CheckerAliasing, WritingVaryingDataIntoAGradLeafThroughDetachIsRejected) {
  checker::TypecheckGuard guard;
  at::Tensor w = typed({tp = R}, {3});
  w.requires_grad_(true);
  at::Tensor data = w.detach();  // shares w's storage, no grad
  std::string msg = spmd_error([&] { data.add_(typed({tp = V}, {3})); });
  EXPECT_NE(msg.find("shares its storage"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Clone the view"), std::string::npos) << msg;
  EXPECT_EQ(type_str(w), "{tp: R}");
  // A replicated update (an all-reduced gradient) is fine.
  data.add_(typed({tp = R}, {3}));
  EXPECT_EQ(type_str(w), "{tp: R}");
}

TEST(CheckerAnnotations, ReinterpretNoGradRetagsRAndI) {
  checker::TypecheckGuard guard(mesh_of({{"tp", 2}, {"dp", 2}, {"one", 1}}));
  at::Tensor x = typed({tp = R}, {3});
  EXPECT_TRUE(checker::reinterpret_no_grad(x, tp, I).is_same(x));
  EXPECT_EQ(type_str(x), "{tp: I}");
  checker::reinterpret_no_grad(x, tp, R);
  EXPECT_EQ(type_str(x), "{tp: R}");
  checker::reinterpret_no_grad(x, one, I);  // singleton: skipped
  EXPECT_EQ(type_str(x), "{tp: R}");
  EXPECT_NE(spmd_error<UsageError>([&] {
              checker::reinterpret_no_grad(x, tp, V);
            }).find("dst must be R or I"),
            std::string::npos);
  EXPECT_TYPE_ERROR(checker::reinterpret_no_grad(typed({tp = V}, {3}), tp, R),
                    "is V, not R or I");
  EXPECT_TYPE_ERROR(checker::reinterpret_no_grad(typed({dp = R}, {3}), tp, I),
                    "not in the tensor's SPMD type");
  at::Tensor w = typed({tp = R}, {3});
  w.requires_grad_(true);
  EXPECT_NE(spmd_error<UsageError>([&] {
              checker::reinterpret_no_grad(w, tp, I);
            }).find("requires grad"),
            std::string::npos);
}

TEST(CheckerViews, NoGradAndDetachKeepTypes) {
  checker::TypecheckGuard guard;
  at::Tensor w = typed({tp = R}, {3});
  w.requires_grad_(true);
  {
    at::NoGradGuard no_grad;  // §6.12: inference ignores gradient mode
    EXPECT_EQ(type_str(w * 2.0), "{tp: R}");
    EXPECT_TYPE_ERROR(at::relu(typed({tp = P}, {3})), "non-linear");
  }
  EXPECT_EQ(type_str(w.detach()), "{tp: R}");
}

TEST(CheckerViews, BackwardThroughAutogradApiIsUntyped) {
  checker::TypecheckGuard guard(mesh_of({{"tp", 2}}));
  at::Tensor w = typed({tp = R}, {3});
  w.requires_grad_(true);
  at::Tensor loss = (at::relu(w) * typed({tp = V}, {3})).sum();
  EXPECT_EQ(type_str(loss), "{tp: V}");
  // torch::autograd::backward does not pass the loss check (use
  // checker::check_loss), but the backward ops it runs are not typed: the
  // untyped seed would otherwise be a missing axis under the mesh.
  EXPECT_TYPE_ERROR(checker::check_loss(loss), "reinterpret");
  at::Tensor seed;
  {
    checker::NoTypecheckGuard paused;
    seed = at::ones({});
  }
  torch::autograd::backward({loss}, {seed});
  EXPECT_TRUE(w.grad().defined());
  EXPECT_FALSE(has_type(w.grad()));
}

// ----------------------------------------------------------- side table ----

TEST(CheckerTable, DeadTensorsLeaveTheTable) {
  checker::TypecheckGuard guard;
  at::Tensor x = typed({tp = V}, {1, 8});
  checker::sweep_side_table();
  const std::size_t before = checker::side_table_size();
  std::size_t peak = 0;
  for (int i = 0; i < 200000; ++i) {
    at::Tensor y = at::relu(x * 2.0 + x);  // three typed temporaries
    if (i % 1000 == 0) peak = std::max(peak, checker::side_table_size());
  }
  EXPECT_EQ(type_str(x), "{tp: V}");
  // Dead entries are reclaimed as new ones arrive: the table stays within a
  // small constant of the live typed tensors, not the 600000 tensors made.
  EXPECT_LT(peak, before + 64);
  EXPECT_LE(checker::sweep_side_table(), before + 1);
}

TEST(CheckerTable, TypesSurviveTheGuardAndDieWithTheTensor) {
  at::Tensor x;
  {
    checker::TypecheckGuard guard;
    x = typed({tp = I});
  }
  EXPECT_EQ(type_str(x), "{tp: I}");  // queries work without a guard
  checker::clear_type(x);
  EXPECT_FALSE(has_type(x));
}

// ---------------------------------------------------------------- guards ----

TEST(CheckerGuards, OffMeansOff) {
  EXPECT_FALSE(checker::is_type_checking());
  at::Tensor x = untyped();
  assert_type(x, {tp = P});  // no guard: nothing happens
  EXPECT_FALSE(has_type(x));
  at::Tensor y = at::relu(x + x);
  EXPECT_FALSE(has_type(y));
}

TEST(CheckerGuards, NestedGuardsOverrideAndRestore) {
  checker::TypecheckGuard outer;  // strict
  EXPECT_TRUE(checker::is_strict());
  at::Tensor r = typed({tp = R});
  {
    checker::TypecheckGuard inner(false);  // permissive
    EXPECT_FALSE(checker::is_strict());
    EXPECT_EQ(type_str(r + untyped()), "{tp: R}");
    {
      checker::TypecheckOptions o;  // overrides nothing
      checker::TypecheckGuard innermost(o);
      EXPECT_FALSE(checker::is_strict());
    }
  }
  EXPECT_TRUE(checker::is_strict());
  EXPECT_TYPE_ERROR(r + untyped(), "tp");
}

TEST(CheckerGuards, NoTypecheckPausesAndANestedGuardResumes) {
  checker::TypecheckGuard outer;
  at::Tensor p = typed({tp = P});
  {
    checker::NoTypecheckGuard paused;
    EXPECT_FALSE(checker::is_type_checking());
    at::Tensor y = at::relu(p);  // not checked
    EXPECT_FALSE(has_type(y));
    assert_type(y, {tp = R});  // not recorded either
    EXPECT_FALSE(has_type(y));
    {
      checker::TypecheckGuard resumed;
      EXPECT_TRUE(checker::is_type_checking());
      EXPECT_TYPE_ERROR(at::relu(p), "non-linear");
    }
    EXPECT_FALSE(checker::is_type_checking());
  }
  EXPECT_TRUE(checker::is_type_checking());
  EXPECT_TYPE_ERROR(at::relu(p), "non-linear");
}

TEST(CheckerGuards, TraceLogsTypedOps) {
  checker::TypecheckOptions o;
  o.trace = true;
  checker::TypecheckGuard guard(o);
  at::Tensor x = typed({tp = V});
  ::testing::internal::CaptureStderr();
  at::Tensor y = at::relu(x);
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(log.find("aten::relu({tp: V}) -> {tp: V}"), std::string::npos)
      << log;
}

// ---------------------------------------------------------------- threads ----

TEST(CheckerThreads, EachThreadHasItsOwnChecker) {
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &failures] {
      // Odd threads check, even threads run unchecked.
      std::optional<checker::TypecheckGuard> guard;
      if (t % 2 == 1) guard.emplace(t == 1);
      for (int i = 0; i < 2000; ++i) {
        at::Tensor x = untyped({2, 2});
        assert_type(x, {tp = P});
        at::Tensor y = x + x;
        const bool checking = t % 2 == 1;
        if (has_type(y) != checking) ++failures;
        if (checking && get_type(y).to_string() != "{tp: P}") ++failures;
        if (checking) {
          try {
            at::relu(y);
            ++failures;
          } catch (const SpmdTypeError&) {
          }
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
}

// ------------------------------------------------------------ collectives ----

TEST(CheckerCollectives, TypedAllReduceAndAllGatherRoundTrip) {
  run_mesh({{tp, 2}}, [](const DeviceMesh& mesh) {
    checker::TypecheckGuard guard;  // the mesh comes from the MeshGuard
    EXPECT_EQ(checker::current_mesh_axes(),
              std::optional<std::vector<std::string>>({"tp"}));
    const double r = mesh.rank();
    at::Tensor x;
    {
      checker::NoTypecheckGuard paused;
      x = at::full({2}, r + 1.0);
    }
    assert_type(x, {tp = V});
    at::Tensor g = all_gather(x, tp, S(0), R);  // V -> R
    EXPECT_EQ(type_str(g), "{tp: R}");
    auto equal = [](const at::Tensor& a, const at::Tensor& b) {
      checker::NoTypecheckGuard paused;  // comparing is not part of the step
      return TensorEq(a, b);
    };
    EXPECT_TRUE(equal(g, at::tensor({1.0f, 1.0f, 2.0f, 2.0f})));
    at::Tensor local = g.narrow(0, 0, 2) * x;  // R * V -> V
    EXPECT_EQ(type_str(local), "{tp: V}");
    at::Tensor p = reinterpret(local, tp, V, P);
    EXPECT_EQ(type_str(p), "{tp: P}");
    at::Tensor s = all_reduce(p, tp, P, R);
    EXPECT_EQ(type_str(s), "{tp: R}");
    EXPECT_TRUE(equal(s, at::full({2}, 1.0f + 2.0f)));  // 1*1 + 1*2
    // Typed errors at the collective that is wrong (spec §7.2).
    EXPECT_TYPE_ERROR(all_gather(p, tp, V, R), "expected input type V");
    at::Tensor u;
    {
      checker::NoTypecheckGuard paused;
      u = at::ones({2});
    }
    EXPECT_TYPE_ERROR(all_reduce(u, tp, P, R), "no type for axis");
  });
}

// Spec §6.11.1 on real ranks: after x.view(-1).add_(v) with x R and v V the
// ranks hold different x, so x is V; its gather equals the one-device value
// (each rank's x side by side), and using x where R is required is refused.
TEST(CheckerCollectives, InPlaceThroughAViewTypesTheBaseByItsValues) {
  run_mesh({{tp, 2}}, [](const DeviceMesh& mesh) {
    checker::TypecheckGuard guard;
    const double r = mesh.rank();
    at::Tensor x, v;
    {
      checker::NoTypecheckGuard paused;
      x = at::arange(4, at::kFloat).view({2, 2});
      v = at::full({4}, r);
    }
    assert_type(x, {tp = R});
    assert_type(v, {tp = V});
    at::Tensor row = x[1];
    x.view(-1).add_(v);
    EXPECT_EQ(type_str(x), "{tp: V}");
    EXPECT_EQ(type_str(row), "{tp: V}");
    at::Tensor y = x * 2.0;
    EXPECT_EQ(type_str(y), "{tp: V}");
    at::Tensor g = all_gather(y.view(-1), tp, S(0), R);
    EXPECT_EQ(type_str(g), "{tp: R}");
    {
      checker::NoTypecheckGuard paused;
      // One device: rank 0's x is arange(4), rank 1's is arange(4) + 1.
      at::Tensor base = at::arange(4, at::kFloat);
      at::Tensor expected = at::cat({base * 2.0, (base + 1.0) * 2.0});
      EXPECT_TRUE(TensorEq(g, expected));
    }
    // Typed R (the old answer), x would pass as replicated data here.
    EXPECT_TYPE_ERROR(convert(x, tp, R, S(0)), "expected input type R");
  });
}

TEST(CheckerCollectives, TrainingStepIsCheckedEndToEnd) {
  run_mesh({{dp, 2}}, [](const DeviceMesh& mesh) {
    torch::nn::Linear fc(4, 1);
    checker::TypecheckGuard guard;
    for (const at::Tensor& p : fc->parameters()) assert_type(p, {dp = R});
    at::Tensor x;
    {
      checker::NoTypecheckGuard paused;
      x = at::full({3, 4}, mesh.rank() + 1.0);
    }
    assert_type(x, {dp = V});
    at::Tensor out = fc(x);
    EXPECT_EQ(type_str(out), "{dp: V}");
    at::Tensor loss = reinterpret(out.pow(2).mean(), dp, V, P);
    EXPECT_EQ(type_str(loss), "{dp: P}");
    loss.backward();  // P loss: allowed; gradient R per rank
    EXPECT_FALSE(has_type(fc->weight.grad()));
    // The replicated gradient still needs its all-reduce (data parallel).
    at::Tensor g = fc->weight.grad();
    assert_type(g, {dp = P});
    EXPECT_EQ(type_str(all_reduce(g, dp, P, R)), "{dp: R}");
  });
}

// A Megatron-style tensor-parallel MLP block on a dp x tp = 2 x 2 mesh (4
// ranks), trained for a step under the guard, and each classic mistake
// raising its error at the op that is wrong.
enum class Bug {
  None,
  MissingCopyToTp,       // no convert(I -> R) before the column-parallel matmul
  GeluBeforeReduce,      // gelu on the partial sum
  AllReduceToReplicate,  // all_reduce(P -> R) where the residual is I
  ForgotDpGradReduce,    // SGD step with the dp-partial gradient
};

void tp_block_step(const DeviceMesh& mesh, Bug bug) {
  const int64_t seq = 4, batch = 2, hidden = 8, ffn = 16;
  at::Tensor x, ln_w, ln_b, w1, w2;
  {
    // Deterministic data (ranks are threads sharing one generator): x is the
    // same on both tp ranks of a dp group, the weights are this rank's shards.
    checker::NoTypecheckGuard paused;
    const double dp_rank = mesh.rank() / 2, tp_rank = mesh.rank() % 2;
    x = at::linspace(-1.0, 1.0, seq * batch * hidden)
            .view({seq, batch, hidden}) +
        dp_rank;
    ln_w = at::ones({hidden}).requires_grad_();
    ln_b = at::zeros({hidden}).requires_grad_();
    w1 = (at::linspace(-0.1, 0.1, ffn / 2 * hidden).view({ffn / 2, hidden}) +
          0.01 * tp_rank)
             .requires_grad_();
    w2 = (at::linspace(0.1, -0.1, hidden * ffn / 2).view({hidden, ffn / 2}) -
          0.01 * tp_rank)
             .requires_grad_();
  }
  checker::TypecheckGuard guard;  // mesh {dp, tp} from the MeshGuard
  assert_type(x, {dp = V, tp = I});
  for (const at::Tensor* p : {&ln_w, &ln_b}) assert_type(*p, {dp = R, tp = I});
  assert_type(w1, {dp = R, tp = S(0)});  // column parallel
  assert_type(w2, {dp = R, tp = S(1)});  // row parallel

  at::Tensor h = at::layer_norm(x, {hidden}, ln_w, ln_b);
  EXPECT_EQ(type_str(h), "{dp: V, tp: I}");
  if (bug != Bug::MissingCopyToTp) h = convert(h, tp, I, R);
  at::Tensor a = at::matmul(h, w1.t());  // R @ V: {tp: V}
  at::Tensor o;
  if (bug == Bug::GeluBeforeReduce) {
    at::Tensor p = reinterpret(at::matmul(a, w2.t()), tp, V, P);
    o = all_reduce(at::gelu(p), tp, P, I);
  } else {
    a = at::gelu(a);
    at::Tensor p = reinterpret(at::matmul(a, w2.t()), tp, V, P);
    o = all_reduce(p, tp, P, bug == Bug::AllReduceToReplicate ? R : I);
  }
  at::Tensor out = x + o;
  EXPECT_EQ(type_str(out), "{dp: V, tp: I}");
  // Each dp rank holds its batch's loss: a pending sum over dp.
  at::Tensor loss = reinterpret(out.pow(2).mean(), dp, V, P);
  loss.backward();
  // Gradients are untyped (the backward pass is not typed); their types
  // follow from the forward types (spec §2.1): R -> P on dp, I and V kept.
  at::NoGradGuard no_grad;
  const std::pair<at::Tensor*, PerAxisType> grads[] = {
      {&ln_w, I}, {&ln_b, I}, {&w1, V}, {&w2, V}};
  for (const auto& [p, tp_grad] : grads) {
    at::Tensor g = p->grad();
    assert_type(g, {dp = P, tp = tp_grad});
    if (bug != Bug::ForgotDpGradReduce) g = all_reduce(g, dp, P, R);
    p->sub_(g * 0.1);
  }
}

TEST(CheckerCollectives, TensorParallelBlockTrainsWithoutTypeErrors) {
  run_mesh({{dp, 2}, {tp, 2}},
           [](const DeviceMesh& mesh) { tp_block_step(mesh, Bug::None); });
}

TEST(CheckerCollectives, EachBugRaisesAtTheWrongOp) {
  const std::pair<Bug, std::vector<std::string>> bugs[] = {
      {Bug::MissingCopyToTp, {"In aten::matmul(", "cannot mix"}},
      {Bug::GeluBeforeReduce, {"In aten::gelu(", "non-linear"}},
      {Bug::AllReduceToReplicate, {"In aten::add.Tensor(", "cannot mix"}},
      {Bug::ForgotDpGradReduce, {"In aten::sub_.Tensor(", "dp"}},
  };
  for (const auto& [which, phrases] : bugs) {
    const Bug bug = which;
    std::mutex mu;
    std::vector<std::string> messages;
    run_mesh({{dp, 2}, {tp, 2}}, [&](const DeviceMesh& mesh) {
      std::string msg = spmd_error([&] { tp_block_step(mesh, bug); });
      std::lock_guard<std::mutex> lock(mu);
      messages.push_back(msg);
    });
    ASSERT_EQ(messages.size(), 4u);
    for (const std::string& msg : messages)
      for (const std::string& phrase : phrases)
        EXPECT_NE(msg.find(phrase), std::string::npos)
            << "bug " << int(bug) << ": " << msg;
  }
}

}  // namespace
}  // namespace spmd::testing
