// global_checker_test.cpp - the runtime checker in global SPMD mode (spec
// §12, issue 11): shard dims tracked through real ATen ops with real shapes,
// assert_type with a PartitionSpec, get_partition_spec, local regions and
// local_map, local_axes, and global collectives on Gloo ranks that are
// threads of this process (a column -> row parallel MLP and the mistakes the
// local mode cannot see).
#include <spmd/collectives.h>
#include <spmd/mesh.h>

#include <functional>
#include <mutex>

#include "checker_test_util.h"
#include "runtime_test_util.h"

namespace spmd::testing {
namespace {

using namespace spmd::types;

checker::TypecheckOptions global_mesh(std::vector<checker::MeshAxisInfo> axes,
                                      bool strict = true) {
  checker::TypecheckOptions o;
  o.strict = strict;
  o.mesh = std::move(axes);
  o.local = false;
  return o;
}

checker::TypecheckOptions global_only() {
  checker::TypecheckOptions o;
  o.local = false;
  return o;
}

// "{tp: S(0)}": the type map with shard dims (GlobalType::to_string).
std::string gtype(const at::Tensor& t) {
  return has_type(t) ? get_global_type(t).to_string() : "untyped";
}

// ------------------------------------------------------------- the knob ----

TEST(GlobalChecker, LocalByDefaultAndTheKnobNests) {
  checker::TypecheckOptions local_options;
  local_options.mesh = std::vector<checker::MeshAxisInfo>{{"tp", 2}};
  checker::TypecheckGuard local_guard(local_options);
  EXPECT_FALSE(checker::is_global_mode());
  at::Tensor x = typed({tp = S(0)}, {4, 3});
  // S(i) is stored in local mode too (as in the reference) ...
  ASSERT_TRUE(get_partition_spec(x).has_value());
  EXPECT_EQ(get_partition_spec(x)->to_string(), "PartitionSpec(tp, None)");
  // ... but local ops do not propagate it, and V needs no spec.
  at::Tensor y = x + typed({tp = R}, {4, 3});
  EXPECT_EQ(type_str(y), "{tp: V}");
  EXPECT_FALSE(get_partition_spec(y).has_value());
  {
    checker::TypecheckGuard global(global_only());
    EXPECT_TRUE(checker::is_global_mode());
    EXPECT_EQ(gtype(x * 2.0), "{tp: S(0)} PartitionSpec(tp, None)");
    EXPECT_TYPE_ERROR(y * 2.0, "no PartitionSpec entry");
    {
      checker::TypecheckGuard inner;  // no `local` given: stays global
      EXPECT_TRUE(checker::is_global_mode());
    }
  }
  EXPECT_FALSE(checker::is_global_mode());
  EXPECT_EQ(type_str(y * 2.0), "{tp: V}");
}

// ------------------------------------------ ops: one row per rule family ----

struct OpCase {
  const char* name;
  std::function<at::Tensor()> run;
  const char* expect;  // "{tp: ...}" result, or a phrase of the error
  bool error;
};

void run_cases(const std::vector<OpCase>& cases) {
  for (const OpCase& c : cases) {
    SCOPED_TRACE(c.name);
    checker::TypecheckGuard guard(global_mesh({{"tp", 2}}));
    if (c.error) {
      std::string msg = spmd_error([&] { c.run(); });
      EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
    } else {
      at::Tensor out;
      EXPECT_NO_THROW(out = c.run());
      if (out.defined()) EXPECT_EQ(gtype(out), c.expect);
    }
  }
}

at::Tensor S0(at::IntArrayRef shape) { return typed({tp = S(0)}, shape); }
at::Tensor S1(at::IntArrayRef shape) { return typed({tp = S(1)}, shape); }
at::Tensor Rep(at::IntArrayRef shape) { return typed({tp = R}, shape); }

TEST(GlobalChecker, PointwiseAndBroadcasting) {
  run_cases({
      {"S(0) + S(0)",
       [] {
         return S0({4, 3}) + S0({4, 3});
       },
       "{tp: S(0)} PartitionSpec(tp, None)", false},
      {"S(0) * plain number",
       [] {
         return S0({4, 3}) * 2.0;
       },
       "{tp: S(0)} PartitionSpec(tp, None)", false},
      {"gelu keeps the shard",
       [] {
         return at::gelu(S1({4, 6}));
       },
       "{tp: S(1)} PartitionSpec(None, tp)", false},
      {"S(0) + R is rejected",
       [] {
         return S0({4, 3}) + Rep({4, 3});
       },
       "No valid sharding strategy for aten::add.Tensor on axis tp", true},
      {"S(0) + S(1) is rejected",
       [] {
         return S0({4, 4}) + S1({4, 4});
       },
       "on axis tp", true},
      {"batch shard + bias [d] broadcasts",
       [] {
         return S0({4, 3}) + Rep({3});
       },
       "{tp: S(0)} PartitionSpec(tp, None)", false},
  });
}

TEST(GlobalChecker, Contractions) {
  run_cases({
      {"mm(S(0), R) -> S(0)",
       [] {
         return at::mm(S0({4, 3}), Rep({3, 5}));
       },
       "{tp: S(0)} PartitionSpec(tp, None)", false},
      {"mm(R, S(1)) -> S(1)",
       [] {
         return at::mm(Rep({4, 3}), S1({3, 5}));
       },
       "{tp: S(1)} PartitionSpec(None, tp)", false},
      {"mm(S(1), S(0)) -> P",
       [] {
         return at::mm(S1({4, 3}), S0({3, 5}));
       },
       "{tp: P}", false},
      {"matmul 3-d column parallel",
       [] {
         return at::matmul(Rep({2, 4, 3}), S1({3, 6}));
       },
       "{tp: S(2)} PartitionSpec(None, None, tp)", false},
      {"linear, weight S(0) [out, in] -> S(-1)",
       [] {
         return at::linear(Rep({4, 3}), S0({6, 3}));
       },
       "{tp: S(1)} PartitionSpec(None, tp)", false},
      {"mm(R, S(0)): full input to a row-parallel weight",
       [] {
         return at::mm(Rep({4, 3}), S0({3, 5}));
       },
       "on axis tp", true},
      {"linear with bias on a P product (bias before the reduce)",
       [] {
         return at::linear(S1({4, 3}), S1({5, 3}), Rep({5}));
       },
       "tp", true},
      {"bmm batch shard",
       [] {
         return at::bmm(S0({2, 4, 3}), S0({2, 3, 5}));
       },
       "{tp: S(0)} PartitionSpec(tp, None, None)", false},
  });
}

TEST(GlobalChecker, ReductionsAndAlongDim) {
  run_cases({
      {"sum over the shard -> P",
       [] {
         return S1({4, 6}).sum(1);
       },
       "{tp: P}", false},
      {"sum over another dim shifts the shard",
       [] {
         return S1({4, 6}).sum(0);
       },
       "{tp: S(0)} PartitionSpec(tp)", false},
      {"sum of everything -> P",
       [] {
         return S0({4, 6}).sum();
       },
       "{tp: P}", false},
      // Not P: the per-rank means add up to tp-size times the mean.
      {"mean keepdim over the shard is rejected",
       [] {
         return S1({4, 6}).mean({1}, true);
       },
       "tp-size times the global mean", true},
      {"sum keepdim over the shard -> P",
       [] {
         return S1({4, 6}).sum({1}, true);
       },
       "{tp: P}", false},
      {"max over the shard is rejected",
       [] {
         return std::get<0>(S1({4, 6}).max(1));
       },
       "on axis tp", true},
      {"softmax along the shard is rejected",
       [] {
         return at::softmax(S1({4, 6}), -1);
       },
       "on axis tp", true},
      {"softmax along another dim keeps it",
       [] {
         return at::softmax(S0({4, 6}), -1);
       },
       "{tp: S(0)} PartitionSpec(tp, None)", false},
      {"layer_norm over a sharded hidden dim is rejected",
       [] {
         return at::layer_norm(S1({4, 6}), {6});
       },
       "on axis tp", true},
      {"layer_norm with a batch shard",
       [] {
         return at::layer_norm(S0({4, 6}), {6});
       },
       "{tp: S(0)} PartitionSpec(tp, None)", false},
  });
}

TEST(GlobalChecker, ShapeOps) {
  run_cases({
      {"transpose moves the shard",
       [] {
         return S0({4, 6}).t();
       },
       "{tp: S(1)} PartitionSpec(None, tp)", false},
      {"permute",
       [] {
         return S0({2, 4, 6}).permute({2, 0, 1});
       },
       "{tp: S(1)} PartitionSpec(None, tp, None)", false},
      {"view merging from the outer shard",
       [] {
         return S0({2, 4, 6}).view({8, 6});
       },
       "{tp: S(0)} PartitionSpec(tp, None)", false},
      {"view merging an inner shard is rejected",
       [] {
         return S1({2, 4, 6}).reshape({8, 6});
       },
       "tp", true},
      {"unsqueeze shifts it",
       [] {
         return S0({4, 6}).unsqueeze(0);
       },
       "{tp: S(1)} PartitionSpec(None, tp, None)", false},
      {"cat along another dim",
       [] {
         return at::cat({S0({4, 6}), S0({4, 2})}, 1);
       },
       "{tp: S(0)} PartitionSpec(tp, None)", false},
      {"cat along the shard is rejected",
       [] {
         return at::cat({S0({4, 6}), S0({2, 6})}, 0);
       },
       "tp", true},
      {"stack shifts it",
       [] {
         return at::stack({S0({4, 6}), S0({4, 6})});
       },
       "{tp: S(1)} PartitionSpec(None, tp, None)", false},
      {"narrow on the shard is rejected",
       [] {
         return S0({4, 6}).narrow(0, 0, 2);
       },
       "on axis tp", true},
      {"narrow over the whole shard is a no-op",
       [] {
         return S0({4, 6}).narrow(0, 0, 4);
       },
       "{tp: S(0)} PartitionSpec(tp, None)", false},
      {"select on another dim",
       [] {
         return S1({4, 6}).select(0, 1);
       },
       "{tp: S(0)} PartitionSpec(tp)", false},
      {"chunk along another dim",
       [] {
         return S0({4, 6}).chunk(2, 1)[1];
       },
       "{tp: S(0)} PartitionSpec(tp, None)", false},
  });
}

TEST(GlobalChecker, EmbeddingAndLoss) {
  run_cases({
      // Each rank looks up a row for every index: not a pending sum until
      // the rows of indices outside the shard are zeroed.
      {"vocab-parallel embedding holds unmasked rows",
       [] {
         at::Tensor ids;
         {
           checker::NoTypecheckGuard paused;
           ids = at::arange(3);
         }
         assert_type(ids, {tp = R});
         return at::embedding(S0({10, 4}), ids);
       },
       "{tp: V(unmasked rows)}", false},
      {"cross_entropy over class-sharded logits points to a vocab-parallel "
       "loss",
       [] {
         at::Tensor target;
         {
           checker::NoTypecheckGuard paused;
           target = at::zeros({4}, at::kLong);
         }
         assert_type(target, {tp = R});
         return at::cross_entropy_loss(S1({4, 10}), target);
       },
       "vocab-parallel", true},
  });
}

// Reductions keep the one-device value: over another dim the shard stays
// (and moves down past the reduced dim), over the shard only a sum is P.
TEST(GlobalChecker, ReductionsOverAndBesideTheShard) {
  run_cases({
      {"var over another dim keeps the shard",
       [] {
         return S0({4, 6}).var(1);
       },
       "{tp: S(0)} PartitionSpec(tp)", false},
      {"std over another dim keeps the shard",
       [] {
         return S0({4, 6}).std(1);
       },
       "{tp: S(0)} PartitionSpec(tp)", false},
      {"norm over another dim keeps the shard",
       [] {
         return at::norm(S0({4, 6}), 2, {1});
       },
       "{tp: S(0)} PartitionSpec(tp)", false},
      {"var with keepdim keeps the dim",
       [] {
         return S1({4, 6}).var({0}, true, true);
       },
       "{tp: S(1)} PartitionSpec(None, tp)", false},
      {"mean before the shard moves it down",
       [] {
         return S1({4, 6}).mean(0);
       },
       "{tp: S(0)} PartitionSpec(tp)", false},
      {"sum over the shard is P",
       [] {
         return S0({4, 6}).sum(0);
       },
       "{tp: P}", false},
      {"mean over the shard",
       [] {
         return S0({4, 6}).mean(0);
       },
       "tp-size times the global mean", true},
      {"mean of every dim of a shard",
       [] {
         return S0({4, 6}).mean();
       },
       "tp-size times the global mean", true},
      {"var over the shard",
       [] {
         return S0({4, 6}).var(0);
       },
       "not a sum", true},
      {"norm over the shard",
       [] {
         return at::norm(S1({4, 6}), 2, {1});
       },
       "not a sum", true},
      {"amax over the shard",
       [] {
         return S0({4, 6}).amax(0);
       },
       "combine by a max", true},
      {"logsumexp over the shard",
       [] {
         return S1({4, 6}).logsumexp(1);
       },
       "not a sum", true},
  });
}

// Per-rank data of a vocab-parallel lookup on `n` ranks: the full table
// [vocab, h], this rank's rows and the global indices.
struct Lookup {
  at::Tensor table, shard, ids, expect;
  int64_t start = 0, rows = 0;
};

at::Tensor ramp(at::IntArrayRef shape, double scale, double offset);

Lookup make_lookup(int64_t n, int64_t r) {
  Lookup l;
  const int64_t vocab = 4 * n, h = 3;
  l.rows = vocab / n;
  l.start = r * l.rows;
  l.table = ramp({vocab, h}, 0.25, -1.0);
  checker::NoTypecheckGuard paused;
  l.shard = l.table.narrow(0, l.start, l.rows).contiguous();
  l.ids = at::tensor(std::vector<int64_t>{1, vocab - 2, 5, 0}, at::kLong);
  l.expect = at::embedding(l.table, l.ids);
  return l;
}

// The unmasked lookup is V (unmasked rows) and its all_reduce an error (it
// would add every rank's row: the one-device value is not what comes out);
// the masked form is P and its all_reduce equals the one-device lookup.
TEST(GlobalCollectives, VocabParallelLookupIsPOnlyOnceMasked) {
  for (int64_t size : {2, 4}) {
    run_mesh({{tp, size}}, [&](const DeviceMesh& mesh) {
      const int64_t n = mesh.axis("tp").size, r = mesh.axis("tp").local_rank;
      Lookup l = make_lookup(n, r);
      checker::TypecheckOptions strict = global_only();  // mesh: MeshGuard
      strict.strict = true;
      checker::TypecheckGuard guard(strict);
      assert_type(l.shard, {tp = S(0)});
      assert_type(l.ids, {tp = R});
      // Unmasked: local indices clamped into range, rows not zeroed.
      at::Tensor outside =
          (l.ids < l.start).logical_or(l.ids >= l.start + l.rows);
      at::Tensor local = (l.ids - l.start).masked_fill(outside, 0);
      at::Tensor rows = at::embedding(l.shard, local);
      EXPECT_EQ(gtype(rows), "{tp: V(unmasked rows)}");
      std::string msg = spmd_error([&] { all_reduce(rows, tp, P, R); });
      EXPECT_NE(msg.find("not zeroed"), std::string::npos) << msg;
      // Its sum over every dim is not a pending sum either.
      msg = spmd_error([&] { (void)rows.sum(); });
      EXPECT_NE(msg.find("unmasked rows"), std::string::npos) << msg;
      // Ops that keep the values keep the mark.
      EXPECT_EQ(gtype(rows * 2.0), "{tp: V(unmasked rows)}");
      // Masked: P, and the all_reduce is the one-device lookup.
      at::Tensor masked = rows.masked_fill(outside.unsqueeze(-1), 0.0);
      EXPECT_EQ(gtype(masked), "{tp: P}");
      at::Tensor out = all_reduce(masked, tp, P, R);
      EXPECT_EQ(gtype(out), "{tp: R} PartitionSpec(None, None)");
      // A product with a 0/1 mask zeroes the rows too.
      at::Tensor keep = outside.logical_not().unsqueeze(-1).to(at::kFloat);
      EXPECT_EQ(gtype(rows * keep), "{tp: P}");
      checker::NoTypecheckGuard paused;
      EXPECT_TRUE(at::allclose(out, l.expect));
      // What the all_reduce of the unmasked rows gives instead (unchecked).
      at::Tensor wrong = rows.clone();
      std::vector<at::Tensor> ts{wrong};
      mesh.axis("tp").group->allreduce(ts)->wait();
      EXPECT_FALSE(at::allclose(wrong, l.expect));
    });
  }
}

// A V result that is a pending sum by propagation is P: nonlinear ops and a
// bias added before the reduce are caught without a hand-written reinterpret.
TEST(GlobalChecker, PartialByPropagationIsChecked) {
  run_cases({
      {"gelu on the row-parallel product",
       [] {
         return at::gelu(at::mm(S1({4, 6}), S0({6, 3})));
       },
       "non-linear", true},
      {"bias added to the partial product",
       [] {
         return at::mm(S1({4, 6}), S0({6, 3})) + Rep({3});
       },
       "Partial", true},
      {"a V without shard dim cannot enter a global op",
       [] {
         return typed({tp = V}, {4, 6}) * 2.0;
       },
       "no PartitionSpec entry", true},
  });
}

// An op without a sharding rule for its shards: strict mode reports it (the
// runtime knows every shape, so it never guesses); permissive mode keeps the
// shard unknown until an assert_type names it.
TEST(GlobalChecker, UnknownShardIsReportedInStrictMode) {
  {
    checker::TypecheckGuard guard(global_mesh({{"tp", 2}}));
    EXPECT_TYPE_ERROR(at::trace(S0({4, 4})), "is unknown");
  }
  checker::TypecheckGuard guard(global_mesh({{"tp", 2}}, /*strict=*/false));
  at::Tensor y = at::diag(S0({4, 4}));
  EXPECT_EQ(gtype(y), "{tp: S(?)}");
  EXPECT_FALSE(get_partition_spec(y).has_value());
  assert_type(y, {tp = S(0)});
  EXPECT_EQ(gtype(y), "{tp: S(0)} PartitionSpec(tp)");
  // A factory on a sharded tensor gives R: no shard to track.
  at::Tensor z = S0({4, 4}).new_zeros({3});
  EXPECT_EQ(gtype(z), "{tp: R}");
}

// The full-reduction rule (the core's, as in the plugin): a sum over every
// dim of a V whose shard dim is unknown is P, whichever dim it shards; a sum
// over some dims or a mean is not claimed.
TEST(GlobalChecker, FullSumOfAnUnknownShardIsPartial) {
  checker::TypecheckGuard guard(global_mesh({{"tp", 2}}, /*strict=*/false));
  at::Tensor y = at::diag(S0({4, 4}));  // rank 1, shard unknown
  ASSERT_EQ(gtype(y), "{tp: S(?)}");
  EXPECT_EQ(gtype(y.sum()), "{tp: P}");
  EXPECT_EQ(gtype(y.sum(0)), "{tp: P}");  // every dim listed
  EXPECT_EQ(gtype(y.mean()), "{tp: S(?)}");
  EXPECT_TYPE_ERROR(at::relu(y.sum()), "non-linear");
  at::Tensor m = at::diag(y);  // rank 2, shard unknown
  ASSERT_EQ(gtype(m), "{tp: S(?)}");
  EXPECT_EQ(gtype(m.sum(1)), "{tp: S(?)}");
  EXPECT_EQ(gtype(m.sum({0, 1})), "{tp: P}");
  EXPECT_EQ(gtype(m.sum()), "{tp: P}");
}

TEST(GlobalChecker, InPlaceKeepsOrChecksTheShard) {
  checker::TypecheckGuard guard(global_mesh({{"tp", 2}}));
  at::Tensor x = S0({4, 3});
  x.mul_(2.0).add_(S0({4, 3}));
  EXPECT_EQ(gtype(x), "{tp: S(0)} PartitionSpec(tp, None)");
  EXPECT_TYPE_ERROR(x.add_(Rep({4, 3})), "on axis tp");
}

// --------------------------------------------- assert_type with a spec ----

TEST(GlobalChecker, AssertTypeWithPartitionSpec) {
  checker::TypecheckGuard guard(
      global_mesh({{"dp", 2}, {"tp", 2}, {"one", 1}}));
  at::Tensor x = untyped({4, 6});
  assert_type(x, {dp = V, tp = V}, checker::partition_spec({{dp, tp}, {}}));
  ASSERT_TRUE(get_partition_spec(x));
  EXPECT_EQ(get_partition_spec(x)->to_string(),
            "PartitionSpec((dp, tp), None)");
  // Refinement: a consistent re-assert is accepted; singleton axes drop out.
  assert_type(x, {dp = V}, checker::partition_spec({{dp, tp, one}, {}}));
  // Conflicts name the dim and the fix.
  EXPECT_TYPE_ERROR(
      assert_type(x, {tp = V}, checker::partition_spec({{tp, dp}, {}})),
      "dim 0");
  EXPECT_TYPE_ERROR(assert_type(x, {tp = S(1)}), "tp");
  // S(i) and a spec together, a wrong length, an unknown axis, an axis
  // twice, and a spec on an axis typed R.
  EXPECT_TYPE_ERROR(assert_type(untyped({4, 6}), {tp = S(0)},
                                checker::partition_spec({{tp}, {}})),
                    "together with an explicit PartitionSpec");
  EXPECT_TYPE_ERROR(
      assert_type(untyped({4, 6}), {}, checker::partition_spec({{tp}})),
      "ndim 2");
  EXPECT_TYPE_ERROR(
      assert_type(untyped({4, 6}), {}, checker::partition_spec({{real}, {}})),
      "no mesh axis named 'real'");
  EXPECT_TYPE_ERROR(checker::partition_spec({{tp}, {tp}}), "orthogonal");
  EXPECT_TYPE_ERROR(assert_type(untyped({4, 6}), {tp = R},
                                checker::partition_spec({{tp}, {}})),
                    "tp");
  // Two axes on one dim through S(i) needs the explicit order.
  EXPECT_TYPE_ERROR(assert_type(untyped({4, 6}), {dp = S(0), tp = S(0)}),
                    "explicit PartitionSpec");
  // An op keeps the order of the multi-axis entry.
  EXPECT_EQ(get_partition_spec(x * 2.0)->to_string(),
            "PartitionSpec((dp, tp), None)");
  EXPECT_FALSE(get_partition_spec(untyped({2})).has_value());
}

// ------------------------------------------- local regions and local_map ----

TEST(GlobalChecker, LocalRegionDropsSpecs) {
  checker::TypecheckGuard guard(global_mesh({{"tp", 2}}));
  at::Tensor x = S0({4, 3});
  at::Tensor y;
  {
    checker::LocalRegionGuard local;
    EXPECT_FALSE(checker::is_global_mode());
    // Local rules: S(0) + R is an ordinary V + R here.
    y = x + Rep({4, 3});
    EXPECT_EQ(gtype(y), "{tp: V}");
  }
  EXPECT_TRUE(checker::is_global_mode());
  // Back in global code, the V needs a fresh shard dim.
  EXPECT_TYPE_ERROR(y * 2.0, "no PartitionSpec entry");
  assert_type(y, {tp = S(0)});
  EXPECT_EQ(gtype(y * 2.0), "{tp: S(0)} PartitionSpec(tp, None)");
}

TEST(GlobalChecker, LocalMapChecksBothBoundaries) {
  checker::TypecheckGuard guard(global_mesh({{"tp", 2}}));
  auto body = [](const std::vector<at::Tensor>& in) {
    return std::vector<at::Tensor>{in[0] + in[1]};  // V + R locally
  };
  at::Tensor x = S0({4, 3}), b = Rep({4, 3});
  auto out = checker::local_map(
      body, {x, b},
      std::vector<core::BoundaryType>{checker::boundary({tp = S(0)}),
                                      checker::boundary({tp = R})},
      {checker::boundary({tp = S(0)})}, "add_bias_locally");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(gtype(out[0]), "{tp: S(0)} PartitionSpec(tp, None)");
  // An input that contradicts in_types, and a leaf count mismatch.
  EXPECT_TYPE_ERROR(checker::local_map(body, {x, b},
                                       std::vector<core::BoundaryType>{
                                           checker::boundary({tp = S(1)}),
                                           checker::boundary({tp = R})},
                                       {checker::boundary({tp = S(0)})}, "f"),
                    "tp");
  EXPECT_TYPE_ERROR(checker::local_map(body, {x, b}, std::nullopt, {}, "g"),
                    "g");
  // Infer (nullopt) skips the input check.
  auto inferred = checker::local_map(
      body, {x, b}, std::nullopt,
      {checker::boundary(checker::partition_spec({{tp}, {}}))}, "h");
  EXPECT_EQ(gtype(inferred[0]), "{tp: S(0)} PartitionSpec(tp, None)");
}

TEST(GlobalChecker, LocalAxesKeepLocalSemantics) {
  checker::TypecheckOptions o = global_mesh({{"dp", 2}, {"tp", 2}});
  o.local_axes = std::vector<std::string>{"dp"};
  checker::TypecheckGuard guard(o);
  // dp is local: V without a spec is fine; tp is global.
  at::Tensor x = typed({dp = V, tp = S(0)}, {4, 3});
  EXPECT_EQ(gtype(x * 2.0), "{dp: V, tp: S(0)} PartitionSpec(tp, None)");
  EXPECT_TYPE_ERROR(typed({dp = V, tp = V}, {4, 3}) * 2.0,
                    "no PartitionSpec entry");
  {
    checker::TypecheckOptions bad;
    bad.local_axes = std::vector<std::string>{"tp"};
    checker::TypecheckGuard inner(bad);
    std::string msg = spmd_error<InvalidArgument>([&] { x * 2.0; });
    EXPECT_NE(msg.find("must come before all global axes"), std::string::npos)
        << msg;
  }
}

// ------------------------------------------ global collectives on Gloo ----

// Deterministic per-rank data (ranks are threads sharing one generator).
at::Tensor ramp(at::IntArrayRef shape, double scale, double offset = 0.0) {
  checker::NoTypecheckGuard paused;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (at::arange(n, at::kFloat) * scale + offset).view(shape);
}

enum class MlpBug {
  None,
  BiasBeforeReduce,        // y = h @ w2 + b, then all_reduce
  GeluOnPartial,           // gelu(h @ w2) before the reduce
  AllReduceFeatureShard,   // all_reduce of the column-parallel activation
  GatherWrongDim,          // all_gather along dim 0 of an S(1) tensor
  FullInputToRowParallel,  // the unsplit input fed to the row-parallel weight
};

// Column -> row parallel MLP: x [b, d] R; w1 [d, f] column-sharded (S(1)),
// w2 [f, d] row-sharded (S(0)), b [d] R. Returns the output, checked against
// the unsharded computation.
void parallel_mlp(const DeviceMesh& mesh, MlpBug bug) {
  const int64_t b = 3, d = 4, f = 8;
  const int64_t n = mesh.axis("tp").size, r = mesh.axis("tp").local_rank;
  const int64_t fl = f / n;
  at::Tensor x = ramp({b, d}, 0.25), w1_full = ramp({d, f}, 0.125, -1.0),
             w2_full = ramp({f, d}, -0.0625, 1.0), bias = ramp({d}, 0.5);
  at::Tensor w1, w2, expect;
  {
    checker::NoTypecheckGuard paused;
    w1 = w1_full.narrow(1, r * fl, fl).contiguous();
    w2 = w2_full.narrow(0, r * fl, fl).contiguous();
    expect = at::mm(at::gelu(at::mm(x, w1_full)), w2_full) + bias;
  }
  checker::TypecheckGuard guard(global_only());  // mesh from the MeshGuard
  assert_type(x, {tp = R});
  assert_type(bias, {tp = R});
  assert_type(w1, {tp = S(1)});
  assert_type(w2, {tp = S(0)});

  at::Tensor h = at::mm(x, w1);  // column parallel: S(1)
  EXPECT_EQ(gtype(h), "{tp: S(1)} PartitionSpec(None, tp)");
  if (bug == MlpBug::AllReduceFeatureShard) h = all_reduce(h, tp, P, R);
  if (bug == MlpBug::GatherWrongDim) h = all_gather(h, tp, S(0), R);
  at::Tensor y;
  if (bug == MlpBug::FullInputToRowParallel) {
    // The activation gathered, then a slice of the replicated whole fed to
    // the row-parallel weight: shapes fit, the contraction does not.
    at::Tensor whole = all_gather(h, tp, S(1), R);
    y = at::mm(at::gelu(whole.narrow(1, 0, fl)), w2);
  } else if (bug == MlpBug::GeluOnPartial) {
    y = at::gelu(at::mm(h, w2));
  } else {
    y = at::mm(at::gelu(h), w2);  // row parallel: P, inferred
  }
  EXPECT_EQ(gtype(y), "{tp: P}");
  if (bug == MlpBug::BiasBeforeReduce) y = y + bias;
  at::Tensor out = all_reduce(y, tp, P, R);
  if (bug != MlpBug::BiasBeforeReduce) out = out + bias;
  EXPECT_EQ(gtype(out), "{tp: R}");
  checker::NoTypecheckGuard paused;
  EXPECT_TRUE(at::allclose(out, expect, 1e-4, 1e-5));
}

TEST(GlobalCollectives, ColumnRowParallelMlpOn2To8Ranks) {
  for (int64_t size : {2, 4, 8})
    run_mesh({{tp, size}},
             [](const DeviceMesh& mesh) { parallel_mlp(mesh, MlpBug::None); });
}

TEST(GlobalCollectives, EachMlpBugIsCaughtAtRunTime) {
  const std::pair<MlpBug, std::vector<std::string>> bugs[] = {
      {MlpBug::BiasBeforeReduce, {"In aten::add.Tensor(", "Partial"}},
      {MlpBug::GeluOnPartial, {"In aten::gelu(", "non-linear"}},
      {MlpBug::AllReduceFeatureShard, {"all_reduce", "sharded", "all_gather"}},
      {MlpBug::GatherWrongDim, {"all_gather", "S(1)", "S(0)"}},
      {MlpBug::FullInputToRowParallel, {"In aten::mm(", "on axis tp"}},
  };
  for (const auto& [which, phrases] : bugs) {
    const MlpBug bug = which;
    std::mutex mu;
    std::vector<std::string> messages;
    run_mesh({{tp, 2}}, [&](const DeviceMesh& mesh) {
      std::string msg = spmd_error([&] { parallel_mlp(mesh, bug); });
      std::lock_guard<std::mutex> lock(mu);
      messages.push_back(msg);
    });
    ASSERT_EQ(messages.size(), 2u);
    for (const std::string& msg : messages)
      for (const std::string& p : phrases)
        EXPECT_NE(msg.find(p), std::string::npos)
            << "bug " << int(bug) << ", message:\n"
            << msg;
  }
}

// all_gather / reduce_scatter move the shard in the spec (spec §12.4).
TEST(GlobalCollectives, GatherAndScatterUpdateTheSpec) {
  run_mesh({{dp, 2}, {tp, 2}}, [](const DeviceMesh& mesh) {
    checker::TypecheckGuard guard(global_only());
    at::Tensor x = ramp({2, 6}, 1.0, double(mesh.rank()));
    assert_type(x, {dp = S(0), tp = S(1)});
    at::Tensor g = all_gather(x, tp, S(1), R);
    EXPECT_EQ(gtype(g), "{dp: S(0), tp: R} PartitionSpec(dp, None)");
    EXPECT_EQ(g.size(1), 12);
    at::Tensor w_rep = ramp({12, 2}, 0.5);
    assert_type(w_rep, {dp = R, tp = R});
    at::Tensor p = at::mm(g, w_rep);
    EXPECT_EQ(gtype(p), "{dp: S(0), tp: R} PartitionSpec(dp, None)");
    at::Tensor w = ramp({6, 4}, 0.5);
    assert_type(w, {dp = R, tp = S(0)});
    at::Tensor y = at::mm(x, w);  // contraction over the tp shard
    EXPECT_EQ(gtype(y), "{dp: S(0), tp: P} PartitionSpec(dp, None)");
    at::Tensor s = reduce_scatter(y, tp, P, S(1));
    EXPECT_EQ(gtype(s), "{dp: S(0), tp: S(1)} PartitionSpec(dp, tp)");
    EXPECT_EQ(s.size(1), 2);
  });
}

}  // namespace
}  // namespace spmd::testing
