// Tensor-parallel programs typed step by step in global mode: the Megatron
// MLP of the reference's test_megatron_tp and the single-point bugs of issue
// #11, each rejected at its own step (docs/type-system.md §12.6 table).
#include "global_test_util.h"

namespace spmd::core::testing {
namespace {

using C = Collective;

// One typed value of the program: its type and local shape.
struct Val {
  GlobalType type;
  Shape shape;
  GlobalOperand op() const { return GlobalOperand::tensor(type, shape); }
};

Val V_(std::string_view map, std::vector<long> shape) {
  Shape s = Shape::of(shape);
  return {GT(map, s), s};
}

// Types an op whose local output shape the test gives.
Result<Val> Op(std::string_view op, std::vector<Val> in,
               std::vector<long> out_shape, ShardingArgs args = {}) {
  std::vector<GlobalOperand> ops;
  for (const auto& v : in) ops.push_back(v.op());
  auto r = infer_global(op, ops, args);
  if (!r) return r.error();
  return Val{r->type, Shape::of(out_shape)};
}

Result<Val> Coll(CollectiveCall call, const Val& in,
                 std::vector<long> out_shape) {
  auto r = transfer_global(call, in.type, "tp", {}, in.shape);
  if (!r) return r.error();
  return Val{*r, Shape::of(out_shape)};
}

// tp = 4; x [2, 8, 16] replicated; w_col [16, 64/4]; w_row [64/4, 16].
struct Mlp {
  Val x = V_("{tp: R}", {2, 8, 16});
  Val w_col = V_("{tp: S(1)}", {16, 16});
  Val b_col = V_("{tp: S(0)}", {16});
  Val w_row = V_("{tp: S(0)}", {16, 16});
  Val b_row = V_("{tp: R}", {16});
};

TEST(MegatronMlpTest, TypesWithoutAnyReinterpret) {
  Mlp m;
  auto h = Op("matmul", {m.x, m.w_col}, {2, 8, 16});
  ASSERT_TRUE(Succeeds(h));
  EXPECT_EQ(h->type.to_string(), "{tp: S(2)} PartitionSpec(None, None, tp)");
  h = Op("add", {*h, m.b_col}, {2, 8, 16});
  ASSERT_TRUE(Succeeds(h));
  h = Op("gelu", {*h}, {2, 8, 16});
  ASSERT_TRUE(Succeeds(h));
  auto y = Op("matmul", {*h, m.w_row}, {2, 8, 16});
  ASSERT_TRUE(Succeeds(y));
  EXPECT_EQ(y->type.to_string(), "{tp: P}");
  auto r = Coll(Call(C::AllReduce, P, R), *y, {2, 8, 16});
  ASSERT_TRUE(Succeeds(r));
  auto out = Op("add", {*r, m.b_row}, {2, 8, 16});
  ASSERT_TRUE(Succeeds(out));
  // No operand shards tp any more, so the op gives no spec (as the
  // reference: only Shard placements make an output spec).
  EXPECT_EQ(out->type.to_string(), "{tp: R}");
}

TEST(MegatronMlpTest, BiasBeforeTheReduceIsRejected) {
  Mlp m;
  auto h = *Op("matmul", {m.x, m.w_col}, {2, 8, 16});
  auto y = *Op("matmul", {h, m.w_row}, {2, 8, 16});
  EXPECT_TRUE(FailsWith(Op("add", {y, m.b_row}, {2, 8, 16}),
                        ErrorKind::SpmdTypeError,
                        {"add", "axis tp", "Partial", "all_reduce"}));
  EXPECT_TRUE(FailsWith(
      Op("linear", {h, V_("{tp: S(1)}", {16, 16}), m.b_row}, {2, 8, 16}),
      ErrorKind::SpmdTypeError,
      {"linear", "axis tp", "pending sum", "args[2]", "after the all_reduce"}));
}

TEST(MegatronMlpTest, GeluOnThePartialProductIsRejected) {
  Mlp m;
  auto h = *Op("matmul", {m.x, m.w_col}, {2, 8, 16});
  auto y = *Op("matmul", {h, m.w_row}, {2, 8, 16});
  EXPECT_TRUE(FailsWith(Op("gelu", {y}, {2, 8, 16}), ErrorKind::SpmdTypeError,
                        {"gelu", "axis tp", "non-linear", "all_reduce"}));
}

TEST(MegatronMlpTest, AllReduceOfAFeatureShardedTensorIsRejected) {
  Mlp m;
  auto h = *Op("matmul", {m.x, m.w_col}, {2, 8, 16});
  EXPECT_TRUE(FailsWith(Coll(Call(C::AllReduce, P, R), h, {2, 8, 16}),
                        ErrorKind::SpmdTypeError,
                        {"all_reduce", "sharded on axis tp", "S(2)",
                         "not a pending sum", "all_gather(x, tp, S(2), R)"}));
}

TEST(MegatronMlpTest, AllGatherOnTheWrongDimIsRejected) {
  Mlp m;
  auto h = *Op("matmul", {m.x, m.w_col}, {2, 8, 16});
  EXPECT_TRUE(FailsWith(
      Coll(Call(C::AllGather, S(0), R), h, {8, 8, 16}),
      ErrorKind::SpmdTypeError,
      {"expected input shard S(0) on axis tp", "got S(2)", "src=S(2)"}));
  auto ok = Coll(Call(C::AllGather, S(-1), R), h, {2, 8, 64});
  ASSERT_TRUE(Succeeds(ok));
  EXPECT_EQ(ok->type.to_string(), "{tp: R} PartitionSpec(None, None, None)");
}

TEST(MegatronMlpTest, UnsplitInputToRowParallelIsRejected) {
  Mlp m;
  EXPECT_TRUE(FailsWith(
      Op("matmul", {V_("{tp: R}", {2, 8, 64}), m.w_row}, {2, 8, 16}),
      ErrorKind::SpmdTypeError,
      {"matmul", "axis tp", "args[1] is sharded on dim 0", "contraction dim",
       "args[0] is replicated on its dim 2", "S(2)"}));
}

// The lookup holds unmasked rows (every rank looks up a row for every
// index): its all_reduce would add them all, so it is rejected until the
// rows of indices outside the shard are zeroed.
TEST(VocabParallelTest, UnmaskedLookupIsNotAPendingSum) {
  Val ids = V_("{tp: R}", {2, 8});
  Val table = V_("{tp: S(0)}", {250, 16});
  auto e = Op("embedding", {ids, table}, {2, 8, 16});
  ASSERT_TRUE(Succeeds(e));
  EXPECT_EQ(e->type.to_string(), "{tp: V(unmasked rows)}");
  EXPECT_TRUE(FailsWith(Coll(Call(C::AllReduce, P, R), *e, {2, 8, 16}),
                        ErrorKind::SpmdTypeError,
                        {"all_reduce", "not zeroed", "masked_fill"}));
}

TEST(VocabParallelTest, LossOverVocabShardedLogitsPointsToVocabParallelLoss) {
  Val h = V_("{tp: R}", {8, 16});
  Val lm_head = V_("{tp: S(0)}", {250, 16});
  auto logits = Op("linear", {h, lm_head}, {8, 250});
  ASSERT_TRUE(Succeeds(logits));
  EXPECT_EQ(logits->type.to_string(), "{tp: S(1)} PartitionSpec(None, tp)");
  EXPECT_TRUE(
      FailsWith(Op("cross_entropy", {*logits, V_("{tp: R}", {8})}, {}),
                ErrorKind::SpmdTypeError,
                {"cross_entropy", "axis tp", "class dim 1", "vocab-parallel"}));
}

TEST(AttentionTest, HeadShardedAttentionKeepsTheHeadShard) {
  // q, k, v [b, heads/n, s, hd] sharded on heads; scores and softmax keep it.
  Val q = V_("{tp: S(1)}", {2, 2, 8, 4});
  Val k = V_("{tp: S(1)}", {2, 2, 8, 4});
  auto kt = Op("transpose", {k}, {2, 2, 4, 8}, Dims({-2, -1}));
  ASSERT_TRUE(Succeeds(kt));
  auto s = Op("matmul", {q, *kt}, {2, 2, 8, 8});
  ASSERT_TRUE(Succeeds(s));
  EXPECT_EQ(s->type.to_string(),
            "{tp: S(1)} PartitionSpec(None, tp, None, None)");
  auto p = Op("softmax", {*s}, {2, 2, 8, 8}, Dims({-1}));
  ASSERT_TRUE(Succeeds(p));
  // Merging heads back: [b, s, heads/n, hd] -> [b, s, heads/n * hd] keeps
  // the shard on the outer merged dim.
  Val o = V_("{tp: S(2)}", {2, 8, 2, 4});
  auto merged = Op("reshape", {o}, {2, 8, 8}, Sizes({2, 8, 8}));
  ASSERT_TRUE(Succeeds(merged));
  EXPECT_EQ(merged->type.to_string(),
            "{tp: S(2)} PartitionSpec(None, None, tp)");
  // Softmax over the sharded head dim is the bug.
  EXPECT_TRUE(FailsWith(Op("softmax", {*s}, {2, 2, 8, 8}, Dims({1})),
                        ErrorKind::SpmdTypeError, {"softmax", "dim 1"}));
}

}  // namespace
}  // namespace spmd::core::testing
