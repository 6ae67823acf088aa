// The small pieces of the global-SPMD core API that front ends call directly:
// names, printing, the per-axis entry point and the new error kinds.
#include "global_test_util.h"

namespace spmd::core::testing {
namespace {

TEST(GlobalApiTest, CanonicalOpNames) {
  struct {
    const char* in;
    const char* out;
  } cases[] = {{"torch::matmul", "matmul"},
               {"at::Tensor::view", "view"},
               {".add_", "add"},
               {"__matmul__", "matmul"},
               {"__getitem__", "index"},
               {"operator[]", "index"},
               {"operator+=", "add"},
               {"aten::sum.dim_IntList", "sum"},
               {"prop mT", "mT"},
               {"torch::concat", "cat"},
               {"torch::nn::functional::linear", "linear"},
               {"__rtruediv__", "div"}};
  for (const auto& c : cases) EXPECT_EQ(canonical_op_name(c.in), c.out) << c.in;
}

TEST(GlobalApiTest, Printing) {
  EXPECT_EQ(Placement::replicate().to_string(), "R");
  EXPECT_EQ(Placement::shard(2).to_string(), "S(2)");
  EXPECT_EQ(Placement::partial().to_string(), "P");
  EXPECT_EQ(Placement::unknown().to_string(), "?");
  EXPECT_NE(Placement::shard(1), Placement::shard(2));
  EXPECT_EQ(Shape::of({4, 3}).to_string(), "[4, 3]");
  EXPECT_EQ(Shape::unknown().to_string(), "[?...]");
  EXPECT_EQ(Shape::of_rank(2).to_string(), "[?, ?]");
  EXPECT_EQ(PartitionSpec::none(2).to_string(), "PartitionSpec(None, None)");
  EXPECT_STREQ(to_string(ShardRule::Contraction), "contraction");
  EXPECT_STREQ(to_string(ErrorKind::RedistributeError), "RedistributeError");
  EXPECT_STREQ(to_string(ErrorKind::DTensorPropagationError),
               "DTensorPropagationError");
}

// The per-axis entry point as a plugin tracking one axis would use it.
TEST(GlobalApiTest, PropagateAxisDirectly) {
  auto r = propagate_axis("mm",
                          {{Placement::shard(1), Shape::of({4, 3})},
                           {Placement::shard(0), Shape::of({3, 5})}},
                          {}, "tp");
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->placement, Placement::partial());
  EXPECT_EQ(r->out_rank, 2);

  r = propagate_axis("transpose", {{Placement::shard(0), Shape::of_rank(3)}},
                     Dims({0, 2}), "tp");
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->placement, Placement::shard(2));

  // Unknown sizes are fine where they do not matter ...
  r = propagate_axis("sum", {{Placement::shard(0), Shape::of_rank(2)}},
                     Dims({1}), "tp");
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->placement, Placement::shard(0));
  // ... and give an unknown shard where they do.
  r = propagate_axis("reshape", {{Placement::shard(0), Shape::of_rank(2)}},
                     Sizes({8}), "tp");
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->placement, Placement::unknown());
  // An operand of unknown placement makes the result unknown.
  r = propagate_axis("add",
                     {{Placement::unknown(), Shape::of({4})},
                      {Placement::shard(0), Shape::of({4})}},
                     {}, "tp");
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->placement, Placement::unknown());
}

// Bitwise and comparison operators (C++ spelling and dunders) are pointwise:
// they broadcast like add and keep the shard (a new-user trial's `a | b` of
// two masks had no sharding rule).
TEST(GlobalApiTest, BitwiseAndComparisonOperatorsArePointwise) {
  for (const char* op :
       {"operator|", "operator&",  "operator^",  "operator~",  "operator|=",
        "operator<", "operator>=", "operator==", "operator!=", "operator%",
        "__or__",    "__ror__",    "__and__",    "__xor__",    "__invert__",
        "__mod__",   "lt",         "ge",         "eq",         "logical_or",
        "bitwise_or"})
    EXPECT_EQ(shard_rule_of(op), ShardRule::Pointwise) << op;
  EXPECT_EQ(canonical_op_name("at::Tensor::operator|"), "bitwise_or");
  EXPECT_EQ(canonical_op_name("__invert__"), "bitwise_not");
  // Broadcasting: a rank-1 mask against a [4, 3] tensor sharded on dim 0.
  auto r = propagate_axis("operator|",
                          {{Placement::shard(0), Shape::of({4, 3})},
                           {Placement::replicate(), Shape::of({3})}},
                          {}, "tp");
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->placement, Placement::shard(0));
  // ... and rejected like add where the operands shard different dims.
  r = propagate_axis("operator&",
                     {{Placement::shard(0), Shape::of({4, 3})},
                      {Placement::shard(1), Shape::of({4, 3})}},
                     {}, "tp");
  EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                        {"operator&", "elementwise ops need the same"}));
}

TEST(GlobalApiTest, EinsumEquationErrors) {
  auto r = propagate_axis("einsum",
                          {{Placement::shard(0), Shape::of({4, 3})},
                           {Placement::replicate(), Shape::of({3, 5})}},
                          Eq("ijk,jk->ik"), "tp");
  EXPECT_TRUE(FailsWith(r, ErrorKind::InvalidArgument,
                        {"einsum", "rank 2", "3 subscripts"}));
  r = propagate_axis("einsum", {{Placement::shard(0), Shape::of({4, 3})}},
                     Eq("ij,jk->ik"), "tp");
  EXPECT_TRUE(
      FailsWith(r, ErrorKind::InvalidArgument, {"2 operands", "1 tensors"}));
}

TEST(GlobalApiTest, DimOutOfRangeIsReported) {
  auto r =
      propagate_axis("transpose", {{Placement::shard(0), Shape::of_rank(2)}},
                     Dims({0, 5}), "tp");
  EXPECT_TRUE(
      FailsWith(r, ErrorKind::SpmdTypeError, {"transpose", "dim 5", "rank 2"}));
}

TEST(GlobalApiTest, InferGlobalReportsTheRankItComputed) {
  auto r = infer_global("unsqueeze", {G("{tp: S(0)}", {4, 3})}, Dims({0}));
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->out_rank, 3);
  EXPECT_EQ(r->type.to_string(), "{tp: S(1)} PartitionSpec(None, tp, None)");
  r = infer_global("unsqueeze", {G("{tp: R}", {4, 3})}, Dims({0}));
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->out_rank, std::nullopt);  // nothing sharded: not propagated
}

}  // namespace
}  // namespace spmd::core::testing
