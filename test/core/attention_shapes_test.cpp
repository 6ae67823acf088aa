// Sharding rules of the shape-preserving ops of attention and causal-mask
// code (spec §12.2: an op along a sharded dim must not keep S(k) silently):
// triu / tril (the triangle of the last two dims), roll and flip (elements
// move along dims), repeat_interleave (GQA's repeated KV heads), and the
// along-dim ops softmax and cumsum, next to the rules they share.
#include "sharding_case.h"

namespace spmd::core::testing {
namespace {

using ShapeCase = ShardingCase;

class AttentionShapeTest : public ::testing::TestWithParam<ShapeCase> {};
TEST_P(AttentionShapeTest, Propagates) { CheckSharding(GetParam()); }

ShardingArgs NoArgs() { return {}; }

INSTANTIATE_TEST_SUITE_P(
    Triangle, AttentionShapeTest,
    ::testing::Values(
        // Scores [b, heads, s, s] sharded on the heads: each rank's heads
        // get the whole causal triangle.
        ShapeCase{"triu_heads_sharded",
                  "triu",
                  {G("{tp: S(1)}", {2, 4, 8, 8})},
                  NoArgs(),
                  "{tp: S(1)} PartitionSpec(None, tp, None, None)",
                  {}},
        ShapeCase{"tril_batch_sharded",
                  ".tril_",
                  {G("{dp: S(0)}", {2, 8, 8})},
                  NoArgs(),
                  "{dp: S(0)} PartitionSpec(dp, None, None)",
                  {}},
        ShapeCase{"triu_replicated",
                  "triu",
                  {G("{tp: R}", {8, 8})},
                  NoArgs(),
                  "{tp: R}",
                  {}},
        // A causal mask built on the sequence shard: wrong triangle.
        ShapeCase{"triu_rows_sharded",
                  "triu",
                  {G("{tp: S(0)}", {8, 8})},
                  NoArgs(),
                  nullptr,
                  {"No valid sharding strategy for triu on axis tp",
                   "triangle of the last two dims", "shards dim 0 (S(0))",
                   "cut in the wrong place", "all_gather", "global offset"}},
        ShapeCase{"tril_columns_sharded",
                  "at::tril",
                  {G("{tp: S(3)}", {2, 4, 8, 8})},
                  NoArgs(),
                  nullptr,
                  {"tril", "axis tp", "shards dim 3 (S(3))"}},
        ShapeCase{"triu_rank_one",
                  "triu",
                  {G("{tp: S(0)}", {8})},
                  NoArgs(),
                  nullptr,
                  {"triu", "rank 2 or more"},
                  ErrorKind::InvalidArgument}),
    ShardingCaseName);

ShardingArgs RollArgs(std::vector<long> dims) {
  ShardingArgs a;
  a.has_dims = true;
  a.dims = std::move(dims);
  return a;
}

INSTANTIATE_TEST_SUITE_P(
    RollFlip, AttentionShapeTest,
    ::testing::Values(
        ShapeCase{"roll_other_dim",
                  "roll",
                  {G("{tp: S(1)}", {8, 4})},
                  RollArgs({0}),
                  "{tp: S(1)} PartitionSpec(None, tp)",
                  {}},
        ShapeCase{"roll_sharded_dim",
                  "roll",
                  {G("{tp: S(1)}", {8, 4})},
                  RollArgs({-1}),
                  nullptr,
                  {"roll", "axis tp", "moves elements across", "dim 1"}},
        // roll without dims rolls the flattened tensor: every dim moves.
        ShapeCase{"roll_flattened",
                  "roll",
                  {G("{tp: S(1)}", {8, 4})},
                  RollArgs({}),
                  nullptr,
                  {"roll", "moves elements across", "dim 1"}},
        ShapeCase{"roll_no_dims_given",
                  "roll",
                  {G("{tp: S(0)}", {8, 4})},
                  NoArgs(),
                  nullptr,
                  {"roll", "moves elements across", "dim 0"}},
        // flip() with an empty list flips nothing.
        ShapeCase{"flip_empty_list",
                  "flip",
                  {G("{tp: S(0)}", {8, 4})},
                  RollArgs({}),
                  "{tp: S(0)} PartitionSpec(tp, None)",
                  {}},
        ShapeCase{"flip_other_dim",
                  "flip",
                  {G("{tp: S(0)}", {8, 4})},
                  RollArgs({1}),
                  "{tp: S(0)} PartitionSpec(tp, None)",
                  {}}),
    ShardingCaseName);

INSTANTIATE_TEST_SUITE_P(
    RepeatInterleave, AttentionShapeTest,
    ::testing::Values(
        // GQA: KV heads repeated in place, sharded on the heads: rank r's
        // repeated block is block r of the repeated heads.
        ShapeCase{"kv_heads_repeated_in_place",
                  "repeat_interleave",
                  {G("{tp: S(1)}", {2, 2, 8, 16})},
                  RollArgs({1}),
                  "{tp: S(1)} PartitionSpec(None, tp, None, None)",
                  {}},
        ShapeCase{"repeat_other_dim",
                  "repeat_interleave",
                  {G("{tp: S(1)}", {2, 2, 8, 16})},
                  RollArgs({2}),
                  "{tp: S(1)} PartitionSpec(None, tp, None, None)",
                  {}},
        // Counts per element along the shard do not split evenly.
        ShapeCase{"counts_along_shard",
                  "repeat_interleave",
                  {G("{tp: S(0)}", {8, 4}), G("{tp: R}", {8})},
                  RollArgs({0}),
                  nullptr,
                  {"repeat_interleave", "per-element counts", "dim 0"}},
        ShapeCase{"counts_other_dim",
                  "repeat_interleave",
                  {G("{tp: S(0)}", {8, 4}), G("{tp: R}", {4})},
                  RollArgs({1}),
                  "{tp: S(0)} PartitionSpec(tp, None)",
                  {}},
        // Without a dim the tensor is flattened first.
        ShapeCase{"flattened",
                  "repeat_interleave",
                  {G("{tp: S(1)}", {8, 4})},
                  NoArgs(),
                  nullptr,
                  {"repeat_interleave", "flattens", "dim 1"}},
        ShapeCase{"flattened_rank_one",
                  "repeat_interleave",
                  {G("{tp: S(0)}", {8})},
                  NoArgs(),
                  "{tp: S(0)} PartitionSpec(tp)",
                  {}}),
    ShardingCaseName);

INSTANTIATE_TEST_SUITE_P(
    AlongDim, AttentionShapeTest,
    ::testing::Values(
        // softmax over the keys of head-sharded scores: fine.
        ShapeCase{"softmax_heads_sharded",
                  "softmax",
                  {G("{tp: S(1)}", {2, 4, 8, 8})},
                  Dims({-1}),
                  "{tp: S(1)} PartitionSpec(None, tp, None, None)",
                  {}},
        // softmax over a vocab-sharded dim: the classic bug.
        ShapeCase{"softmax_vocab_sharded",
                  "torch::softmax",
                  {G("{tp: S(2)}", {2, 8, 100})},
                  Dims({-1}),
                  nullptr,
                  {"softmax", "axis tp", "works along dim 2",
                   "every rank sees only its shard", "vocab-parallel"}},
        ShapeCase{"cumsum_along_shard",
                  ".cumsum",
                  {G("{tp: S(0)}", {8, 4})},
                  Dims({0}),
                  nullptr,
                  {"cumsum", "dim 0"}},
        ShapeCase{"cumsum_other_dim",
                  ".cumsum",
                  {G("{tp: S(0)}", {8, 4})},
                  Dims({1}),
                  "{tp: S(0)} PartitionSpec(tp, None)",
                  {}}),
    ShardingCaseName);

// scaled_dot_product_attention(q, k, v[, mask]), [b, heads, s, d].
INSTANTIATE_TEST_SUITE_P(
    Sdpa, AttentionShapeTest,
    ::testing::Values(
        ShapeCase{
            "heads_sharded",
            "at::scaled_dot_product_attention",
            {G("{tp: S(1)}", {2, 4, 8, 16}), G("{tp: S(1)}", {2, 4, 8, 16}),
             G("{tp: S(1)}", {2, 4, 8, 16})},
            NoArgs(),
            "{tp: S(1)} PartitionSpec(None, tp, None, None)",
            {}},
        // A [s, s] mask lacks the heads dim; a [b, 1, s, s] one has size 1.
        ShapeCase{
            "heads_sharded_with_masks",
            "scaled_dot_product_attention",
            {G("{tp: S(1)}", {2, 4, 8, 16}), G("{tp: S(1)}", {2, 4, 8, 16}),
             G("{tp: S(1)}", {2, 4, 8, 16}), G("{tp: R}", {2, 1, 8, 8})},
            NoArgs(),
            "{tp: S(1)} PartitionSpec(None, tp, None, None)",
            {}},
        ShapeCase{"replicated",
                  "scaled_dot_product_attention",
                  {G("{tp: R}", {2, 4, 8, 16}), G("{tp: R}", {2, 4, 8, 16}),
                   G("{tp: R}", {2, 4, 8, 16})},
                  NoArgs(),
                  "{tp: R}",
                  {}},
        ShapeCase{
            "features_sharded",
            "scaled_dot_product_attention",
            {G("{tp: S(3)}", {2, 4, 8, 16}), G("{tp: S(3)}", {2, 4, 8, 16}),
             G("{tp: S(3)}", {2, 4, 8, 16})},
            NoArgs(),
            nullptr,
            {"scaled_dot_product_attention", "axis tp",
             "args[0] is sharded on its last dim", "sum over the features",
             "shard the heads"}},
        ShapeCase{
            "keys_sharded",
            "scaled_dot_product_attention",
            {G("{tp: R}", {2, 4, 8, 16}), G("{tp: S(2)}", {2, 4, 8, 16}),
             G("{tp: S(2)}", {2, 4, 8, 16})},
            NoArgs(),
            nullptr,
            {"args[1] is sharded on the keys", "softmax runs over every key"}},
        ShapeCase{"heads_sharded_q_only",
                  "scaled_dot_product_attention",
                  {G("{tp: S(1)}", {2, 4, 8, 16}), G("{tp: R}", {2, 8, 8, 16}),
                   G("{tp: R}", {2, 8, 8, 16})},
                  NoArgs(),
                  nullptr,
                  {"same batch or heads dim", "args[1] is R"}},
        // A mask with every head, replicated, against head-sharded q.
        ShapeCase{
            "per_head_mask_replicated",
            "scaled_dot_product_attention",
            {G("{tp: S(1)}", {2, 4, 8, 16}), G("{tp: S(1)}", {2, 4, 8, 16}),
             G("{tp: S(1)}", {2, 4, 8, 16}), G("{tp: R}", {2, 8, 8, 8})},
            NoArgs(),
            nullptr,
            {"the mask args[3] is R", "shard the mask like the heads"}},
        ShapeCase{"pending_sum",
                  "scaled_dot_product_attention",
                  {G("{tp: P}", {2, 4, 8, 16}), G("{tp: R}", {2, 4, 8, 16}),
                   G("{tp: R}", {2, 4, 8, 16})},
                  NoArgs(),
                  nullptr,
                  {"pending sum"}}),
    ShardingCaseName);

}  // namespace
}  // namespace spmd::core::testing
