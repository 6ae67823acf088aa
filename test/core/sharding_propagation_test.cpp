// Sharding propagation of global SPMD (spec §12.2): the Z-cases of
// shared/cases/type-cases.md, every example of §12.2, the reference's
// global-mode test expectations (tests/global_spmd_test.py) and the
// tensor-parallel bugs of issue #11. One table per rule family; each error
// row lists phrases that name the op, the axis, the dim and the fix.
#include "sharding_case.h"

namespace spmd::core::testing {
namespace {

using PropCase = ShardingCase;

class PropTest : public ::testing::TestWithParam<PropCase> {};
TEST_P(PropTest, Propagates) { CheckSharding(GetParam()); }

// ---- pointwise and broadcasting --------------------------------------------

INSTANTIATE_TEST_SUITE_P(
    Pointwise, PropTest,
    ::testing::Values(
        PropCase{"Z013_relu_S0",
                 "relu",
                 {G("{tp: S(0)}", {4, 3})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        PropCase{"Z003_add_S0_R",
                 "add",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: R}", {4, 3})},
                 {},
                 nullptr,
                 {"add", "axis tp", "args[0] is sharded on dim 0",
                  "args[1] is replicated", "dim 0", "convert(t, tp, R, S(0))",
                  "all_gather"}},
        PropCase{"R_add_S0",
                 "__add__",
                 {G("{tp: R}", {4, 3}), G("{tp: S(0)}", {4, 3})},
                 {},
                 nullptr,
                 {"axis tp", "args[1] is sharded on dim 0",
                  "args[0] is replicated"}},
        PropCase{"mul_S0_R",
                 "mul",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: R}", {4, 3})},
                 {},
                 nullptr,
                 {"mul", "axis tp"}},
        PropCase{"div_S0_R",
                 "div",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: R}", {4, 3})},
                 {},
                 nullptr,
                 {"div", "axis tp"}},
        PropCase{"add_S0_S0",
                 "add",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: S(0)}", {4, 3})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        PropCase{"sub_S0_S0",
                 "sub",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: S(0)}", {4, 3})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        PropCase{"add_S0_S1",
                 "add",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: S(1)}", {4, 3})},
                 {},
                 nullptr,
                 {"axis tp", "output dim 0", "output dim 1", "all_to_all"}},
        PropCase{"add_S0_scalar",
                 "add",
                 {G("{tp: S(0)}", {4, 3}), GlobalOperand::weak_scalar(1)},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        PropCase{"bias_broadcast_over_shard",
                 "add",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: R}", {3})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        PropCase{"size1_broadcast_over_shard",
                 "add",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: R}", {1, 3})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        PropCase{"bias_on_sharded_features",
                 "add",
                 {G("{tp: S(1)}", {4, 3}), G("{tp: R}", {3})},
                 {},
                 nullptr,
                 {"axis tp", "args[1] is replicated", "extent 3", "its dim 0",
                  "S(0)"}},
        PropCase{"sharded_bias_follows",
                 "add",
                 {G("{tp: S(1)}", {4, 3}), G("{tp: S(0)}", {3})},
                 {},
                 "{tp: S(1)} PartitionSpec(None, tp)",
                 {}},
        PropCase{"S0_add_P_local_rule",
                 "add",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: P}", {4, 3})},
                 {},
                 nullptr,
                 {"Partial", "Varying", "all_reduce"}},
        PropCase{"I_add_S0_local_rule",
                 "add",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: I}", {4, 3})},
                 {},
                 nullptr,
                 {"Invariant"}},
        PropCase{"I_I",
                 "mul",
                 {G("{tp: I}", {4, 3}), G("{tp: I}", {4, 3})},
                 {},
                 "{tp: I}",
                 {}},
        PropCase{"gelu_on_partial_product",
                 "gelu",
                 {G("{tp: P}", {4, 3})},
                 {},
                 nullptr,
                 {"gelu", "Partial", "non-linear", "all_reduce"}}),
    ShardingCaseName);

// ---- contractions
// ---------------------------------------------------------------

INSTANTIATE_TEST_SUITE_P(
    Contraction, PropTest,
    ::testing::Values(
        PropCase{"Z004_mm_S0_R",
                 "mm",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: R}", {3, 5})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        PropCase{"mm_R_S1",
                 "mm",
                 {G("{tp: R}", {4, 3}), G("{tp: S(1)}", {3, 5})},
                 {},
                 "{tp: S(1)} PartitionSpec(None, tp)",
                 {}},
        PropCase{"mm_R_R",
                 "mm",
                 {G("{tp: R}", {4, 3}), G("{tp: R}", {3, 5})},
                 {},
                 "{tp: R}",
                 {}},
        PropCase{"Z006_mm_R_S0",
                 "mm",
                 {G("{tp: R}", {4, 3}), G("{tp: S(0)}", {3, 5})},
                 {},
                 nullptr,
                 {"No valid sharding strategy for mm on axis tp",
                  "args[1] is sharded on dim 0", "contraction dim",
                  "args[0] is replicated on its dim 1",
                  "convert(t, tp, R, S(1))", "all_gather"}},
        PropCase{"mm_S1_S0_partial",
                 "mm",
                 {G("{tp: S(1)}", {4, 3}), G("{tp: S(0)}", {3, 5})},
                 {},
                 "{tp: P}",
                 {}},
        PropCase{"mm_S0_S1_two_free_dims",
                 "mm",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: S(1)}", {3, 5})},
                 {},
                 nullptr,
                 {"axis tp", "dim 0", "dim 1", "both free dims"}},
        PropCase{"mm_S1_R_row_parallel_weight_missing",
                 "mm",
                 {G("{tp: S(1)}", {4, 3}), G("{tp: R}", {3, 5})},
                 {},
                 nullptr,
                 {"args[0] is sharded on dim 1", "contraction dim",
                  "args[1] is replicated on its dim 0"}},
        PropCase{"mm_S0_P",
                 "mm",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: P}", {3, 5})},
                 {},
                 nullptr,
                 {"Partial"}},
        PropCase{"matmul_S0_R",
                 "__matmul__",
                 {G("{tp: S(0)}", {4, 3}), G("{tp: R}", {3, 5})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        PropCase{"bmm_S1_R",
                 "bmm",
                 {G("{tp: S(1)}", {2, 6, 3}), G("{tp: R}", {2, 3, 4})},
                 {},
                 "{tp: S(1)} PartitionSpec(None, tp, None)",
                 {}},
        PropCase{"bmm_R_S2",
                 "bmm",
                 {G("{tp: R}", {2, 4, 3}), G("{tp: S(2)}", {2, 3, 6})},
                 {},
                 "{tp: S(2)} PartitionSpec(None, None, tp)",
                 {}},
        PropCase{"bmm_batch_S0_S0",
                 "bmm",
                 {G("{tp: S(0)}", {2, 4, 3}), G("{tp: S(0)}", {2, 3, 6})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None, None)",
                 {}},
        PropCase{"bmm_batch_S0_R",
                 "bmm",
                 {G("{tp: S(0)}", {2, 4, 3}), G("{tp: R}", {2, 3, 6})},
                 {},
                 nullptr,
                 {"axis tp", "args[1] is replicated on its dim 0"}},
        PropCase{"matmul_3d_S1_R",
                 "matmul",
                 {G("{tp: S(1)}", {2, 4, 3}), G("{tp: R}", {2, 3, 6})},
                 {},
                 "{tp: S(1)} PartitionSpec(None, tp, None)",
                 {}},
        PropCase{"matmul_3d_R_S2",
                 "matmul",
                 {G("{tp: R}", {2, 4, 3}), G("{tp: S(2)}", {2, 3, 6})},
                 {},
                 "{tp: S(2)} PartitionSpec(None, None, tp)",
                 {}},
        PropCase{"matmul_broadcast_batch",
                 "matmul",
                 {G("{tp: S(0)}", {2, 4, 3}), G("{tp: R}", {3, 6})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None, None)",
                 {}},
        PropCase{"matmul_row_parallel_3d",
                 "matmul",
                 {G("{tp: S(2)}", {2, 4, 3}), G("{tp: S(0)}", {3, 6})},
                 {},
                 "{tp: P}",
                 {}},
        PropCase{"einsum_contract",
                 "einsum",
                 {G("{tp: S(1)}", {4, 3}), G("{tp: S(0)}", {3, 5})},
                 Eq("ij,jk->ik"),
                 "{tp: P}",
                 {}},
        PropCase{"einsum_free",
                 "einsum",
                 {G("{tp: S(0)}", {2, 4, 3}), G("{tp: S(0)}", {2, 3, 5})},
                 Eq("bij,bjk->bik"),
                 "{tp: S(0)} PartitionSpec(tp, None, None)",
                 {}},
        PropCase{"einsum_ellipsis",
                 "einsum",
                 {G("{tp: S(0)}", {2, 4, 3}), G("{tp: R}", {5, 3})},
                 Eq("...k,nk->...n"),
                 "{tp: S(0)} PartitionSpec(tp, None, None)",
                 {}},
        PropCase{"einsum_implicit_output",
                 "einsum",
                 {G("{tp: S(1)}", {4, 3}), G("{tp: S(0)}", {3, 5})},
                 Eq("ij,jk"),
                 "{tp: P}",
                 {}},
        PropCase{"linear_column_parallel",
                 "torch::nn::functional::linear",
                 {G("{tp: R}", {2, 4, 8}), G("{tp: S(0)}", {16, 8}),
                  G("{tp: S(0)}", {16})},
                 {},
                 "{tp: S(2)} PartitionSpec(None, None, tp)",
                 {}},
        PropCase{"linear_row_parallel",
                 "linear",
                 {G("{tp: S(-1)}", {2, 4, 8}), G("{tp: S(1)}", {16, 8})},
                 {},
                 "{tp: P}",
                 {}},
        PropCase{"issue11_bias_before_reduce",
                 "linear",
                 {G("{tp: S(-1)}", {2, 4, 8}), G("{tp: S(1)}", {16, 8}),
                  G("{tp: R}", {16})},
                 {},
                 nullptr,
                 {"linear", "axis tp", "pending sum", "args[2]",
                  "after the all_reduce"}},
        PropCase{
            "issue11_unsplit_input_row_parallel",
            "linear",
            {G("{tp: R}", {2, 4, 24}), G("{tp: S(1)}", {16, 8})},
            {},
            nullptr,
            {"linear", "axis tp", "args[1] is sharded on dim 1",
             "contraction dim", "args[0] is replicated on its dim 2", "S(2)"}},
        PropCase{
            "addmm_S0",
            "addmm",
            {G("{tp: R}", {5}), G("{tp: S(0)}", {4, 3}), G("{tp: R}", {3, 5})},
            {},
            "{tp: S(0)} PartitionSpec(tp, None)",
            {}},
        PropCase{"addmm_partial_plus_R",
                 "addmm",
                 {G("{tp: R}", {5}), G("{tp: S(1)}", {4, 3}),
                  G("{tp: S(0)}", {3, 5})},
                 {},
                 nullptr,
                 {"addmm", "axis tp", "pending sum", "args[0]"}},
        PropCase{"addmm_sharded_self_on_free",
                 "addmm",
                 {G("{tp: S(0)}", {4, 5}), G("{tp: S(0)}", {4, 3}),
                  G("{tp: R}", {3, 5})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        PropCase{"baddbmm_batch",
                 "baddbmm",
                 {G("{tp: S(0)}", {2, 4, 5}), G("{tp: S(0)}", {2, 4, 3}),
                  G("{tp: S(0)}", {2, 3, 5})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None, None)",
                 {}}),
    ShardingCaseName);

// ---- reductions and along-dim ops
// --------------------------------------------------

INSTANTIATE_TEST_SUITE_P(
    Reduction, PropTest,
    ::testing::Values(
        PropCase{"Z007_sum_all",
                 "sum",
                 {G("{tp: S(0)}", {6, 4})},
                 {},
                 "{tp: P}",
                 {}},
        PropCase{"sum_over_shard",
                 "sum",
                 {G("{tp: S(0)}", {6, 4})},
                 Dims({0}),
                 "{tp: P}",
                 {}},
        PropCase{"sum_other_dim",
                 "sum",
                 {G("{tp: S(0)}", {6, 4})},
                 Dims({1}),
                 "{tp: S(0)} PartitionSpec(tp)",
                 {}},
        PropCase{"sum_before_shard",
                 "sum",
                 {G("{tp: S(1)}", {6, 4})},
                 Dims({0}),
                 "{tp: S(0)} PartitionSpec(tp)",
                 {}},
        PropCase{"sum_keepdim",
                 "sum",
                 {G("{tp: S(1)}", {6, 4})},
                 Dims({0}, true),
                 "{tp: S(1)} PartitionSpec(None, tp)",
                 {}},
        // Only a sum over the shard is a pending sum of the one-device
        // value: the per-rank means add up to tp-size times the mean.
        PropCase{"mean_over_shard",
                 "mean",
                 {G("{tp: S(1)}", {6, 4})},
                 Dims({-1}),
                 nullptr,
                 {"mean", "axis tp", "averages over dim 1",
                  "tp-size times the global mean", "sum over the dim",
                  "divide by the global size", "all_gather"}},
        PropCase{"mean_all_of_shard",
                 "mean",
                 {G("{tp: S(0)}", {6, 4})},
                 {},
                 nullptr,
                 {"mean", "dim 0", "tp-size times the global mean"}},
        PropCase{"nanmean_over_shard",
                 "nanmean",
                 {G("{tp: S(0)}", {6, 4})},
                 Dims({0}),
                 nullptr,
                 {"nanmean", "nansum / (the global count",
                  "divide by the global size"}},
        PropCase{"mean_other_dim_keeps_shard",
                 "mean",
                 {G("{tp: S(0)}", {6, 4})},
                 Dims({1}),
                 "{tp: S(0)} PartitionSpec(tp)",
                 {}},
        PropCase{"mean_before_shard_shifts_it",
                 "mean",
                 {G("{tp: S(1)}", {6, 4})},
                 Dims({0}),
                 "{tp: S(0)} PartitionSpec(tp)",
                 {}},
        PropCase{"var_other_dim_keeps_shard",
                 "var",
                 {G("{tp: S(0)}", {6, 4})},
                 Dims({1}),
                 "{tp: S(0)} PartitionSpec(tp)",
                 {}},
        PropCase{"std_keepdim_keeps_dim",
                 "std",
                 {G("{tp: S(2)}", {2, 6, 4})},
                 Dims({1}, true),
                 "{tp: S(2)} PartitionSpec(None, None, tp)",
                 {}},
        PropCase{"std_before_shard_shifts_it",
                 "std",
                 {G("{tp: S(2)}", {2, 6, 4})},
                 Dims({1}),
                 "{tp: S(1)} PartitionSpec(None, tp)",
                 {}},
        PropCase{"var_over_shard_not_a_sum",
                 "var",
                 {G("{tp: S(0)}", {6, 4})},
                 Dims({0}),
                 nullptr,
                 {"var", "dim 0", "not a sum", "all_gather"}},
        PropCase{"norm_over_shard_not_a_sum",
                 "norm",
                 {G("{tp: S(1)}", {6, 4})},
                 Dims({1}),
                 nullptr,
                 {"norm", "dim 1", "not a sum", "all_gather"}},
        PropCase{"logsumexp_over_shard",
                 "logsumexp",
                 {G("{tp: S(1)}", {6, 4})},
                 Dims({-1}),
                 nullptr,
                 {"logsumexp", "dim 1", "not a sum"}},
        PropCase{"prod_all_of_shard",
                 "prod",
                 {G("{tp: S(1)}", {6, 4})},
                 {},
                 nullptr,
                 {"prod", "not a sum"}},
        PropCase{"amax_over_shard_names_max",
                 "amax",
                 {G("{tp: S(0)}", {6, 4})},
                 Dims({0}),
                 nullptr,
                 {"amax", "not a sum", "combine by a max",
                  "spmd::all_reduce only sums", "all_gather"}},
        PropCase{"max_over_shard",
                 "max",
                 {G("{tp: S(1)}", {6, 4})},
                 Dims({1}),
                 nullptr,
                 {"max", "axis tp", "dim 1", "not a sum", "all_gather"}},
        PropCase{"max_other_dim",
                 "amax",
                 {G("{tp: S(1)}", {6, 4})},
                 Dims({0}),
                 "{tp: S(0)} PartitionSpec(tp)",
                 {}},
        PropCase{"argmax_all",
                 "argmax",
                 {G("{tp: S(0)}", {6, 4})},
                 {},
                 nullptr,
                 {"argmax", "axis tp", "dim 0"}},
        PropCase{"min_over_shard",
                 "min",
                 {G("{tp: S(0)}", {6, 4})},
                 Dims({0}),
                 nullptr,
                 {"min", "dim 0"}},
        PropCase{"norm_over_shard",
                 "norm",
                 {G("{tp: S(1)}", {6, 4})},
                 Dims({1}),
                 nullptr,
                 {"norm", "dim 1"}},
        PropCase{"var_over_shard",
                 "var",
                 {G("{tp: S(1)}", {6, 4})},
                 Dims({-1}),
                 nullptr,
                 {"var", "dim 1"}},
        PropCase{
            "softmax_over_shard",
            "softmax",
            {G("{tp: S(1)}", {6, 4})},
            Dims({-1}),
            nullptr,
            {"softmax", "axis tp", "dim 1", "vocab-parallel", "all_gather"}},
        PropCase{"log_softmax_other_dim",
                 "log_softmax",
                 {G("{tp: S(0)}", {6, 4})},
                 Dims({-1}),
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        PropCase{"Z016_sort_along_shard",
                 "sort",
                 {G("{tp: S(0)}", {4, 6})},
                 Dims({0}),
                 nullptr,
                 {"sort", "axis tp", "dim 0"}},
        PropCase{"sort_default_last_dim",
                 "sort",
                 {G("{tp: S(0)}", {4, 6})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        PropCase{"cumsum_along_shard",
                 "cumsum",
                 {G("{tp: S(0)}", {4, 6})},
                 Dims({0}),
                 nullptr,
                 {"cumsum", "dim 0"}},
        PropCase{"layer_norm_over_shard",
                 "layer_norm",
                 {G("{tp: S(2)}", {2, 4, 8}), G("{tp: R}", {8})},
                 [] {
                   ShardingArgs a;
                   a.normalized_ndim = 1;
                   return a;
                 }(),
                 nullptr,
                 {"layer_norm", "axis tp", "dim 2", "all_gather"}},
        PropCase{"layer_norm_batch_sharded",
                 "layer_norm",
                 {G("{tp: S(0)}", {2, 4, 8}), G("{tp: R}", {8})},
                 [] {
                   ShardingArgs a;
                   a.normalized_ndim = 1;
                   return a;
                 }(),
                 "{tp: S(0)} PartitionSpec(tp, None, None)",
                 {}},
        PropCase{"rms_norm_over_shard",
                 "rms_norm",
                 {G("{tp: S(-1)}", {4, 8}), G("{tp: R}", {8})},
                 [] {
                   ShardingArgs a;
                   a.normalized_ndim = 1;
                   return a;
                 }(),
                 nullptr,
                 {"rms_norm", "dim 1"}}),
    ShardingCaseName);

// ---- shape ops
// -----------------------------------------------------------------------

ShardingArgs Idx(std::vector<IndexItem::Kind> items) {
  ShardingArgs a;
  for (auto k : items) a.index.push_back(IndexItem{k});
  return a;
}
using IK = IndexItem::Kind;

INSTANTIATE_TEST_SUITE_P(
    Shape, PropTest,
    ::testing::
        Values(
            PropCase{"transpose_moves",
                     "transpose",
                     {G("{tp: S(0)}", {8, 3})},
                     Dims({0, 1}),
                     "{tp: S(1)} PartitionSpec(None, tp)",
                     {}},
            PropCase{"t_moves",
                     ".t",
                     {G("{tp: S(1)}", {8, 3})},
                     {},
                     "{tp: S(0)} PartitionSpec(tp, None)",
                     {}},
            PropCase{"mT",
                     "prop mT",
                     {G("{tp: S(1)}", {2, 8, 3})},
                     {},
                     "{tp: S(2)} PartitionSpec(None, None, tp)",
                     {}},
            PropCase{"permute",
                     "permute",
                     {G("{tp: S(1)}", {2, 8, 3})},
                     Dims({2, 0, 1}),
                     "{tp: S(2)} PartitionSpec(None, None, tp)",
                     {}},
            PropCase{"movedim",
                     "movedim",
                     {G("{tp: S(0)}", {2, 8, 3})},
                     Dims({0, -1}),
                     "{tp: S(2)} PartitionSpec(None, None, tp)",
                     {}},
            PropCase{"reshape_identity",
                     "reshape",
                     {G("{tp: S(1)}", {6, 4})},
                     Sizes({6, 4}),
                     "{tp: S(1)} PartitionSpec(None, tp)",
                     {}},
            PropCase{"reshape_unsqueeze_like",
                     "view",
                     {G("{tp: S(1)}", {6, 4})},
                     Sizes({6, 1, 4}),
                     "{tp: S(2)} PartitionSpec(None, None, tp)",
                     {}},
            PropCase{"reshape_leading_one",
                     "view",
                     {G("{tp: S(0)}", {6, 4})},
                     Sizes({1, 6, 4}),
                     "{tp: S(1)} PartitionSpec(None, tp, None)",
                     {}},
            PropCase{"reshape_squeeze_like",
                     "reshape",
                     {G("{tp: S(2)}", {6, 1, 4})},
                     Sizes({6, 4}),
                     "{tp: S(1)} PartitionSpec(None, tp)",
                     {}},
            PropCase{"reshape_flatten_outer_shard",
                     "reshape",
                     {G("{tp: S(0)}", {2, 3, 4})},
                     Sizes({2, 12}),
                     "{tp: S(0)} PartitionSpec(tp, None)",
                     {}},
            PropCase{"reshape_merge_outer_shard",
                     "reshape",
                     {G("{tp: S(0)}", {2, 3, 4})},
                     Sizes({6, 4}),
                     "{tp: S(0)} PartitionSpec(tp, None)",
                     {}},
            PropCase{"reshape_merge_others",
                     "reshape",
                     {G("{tp: S(2)}", {2, 3, 4})},
                     Sizes({6, 4}),
                     "{tp: S(1)} PartitionSpec(None, tp)",
                     {}},
            PropCase{"reshape_singleton_kept",
                     "reshape",
                     {G("{tp: S(0)}", {1, 6})},
                     Sizes({1, 2, 3}),
                     "{tp: S(0)} PartitionSpec(tp, None, None)",
                     {}},
            PropCase{"reshape_infer_minus_one",
                     "reshape",
                     {G("{tp: S(0)}", {6, 4})},
                     Sizes({6, 1, -1}),
                     "{tp: S(0)} PartitionSpec(tp, None, None)",
                     {}},
            PropCase{"reshape_split_shard",
                     "reshape",
                     {G("{tp: S(1)}", {6, 8})},
                     Sizes({6, 2, 4}),
                     nullptr,
                     {"reshape", "axis tp", "sharded on dim 1",
                      "multiple smaller dimensions", "all_gather dim 1"},
                     ErrorKind::DTensorPropagationError},
            PropCase{"reshape_split_shard_infer",
                     "reshape",
                     {G("{tp: S(0)}", {12, 4})},
                     Sizes({3, -1, 4}),
                     nullptr,
                     {"sharded on dim 0", "multiple smaller dimensions"},
                     ErrorKind::DTensorPropagationError},
            PropCase{"reshape_singleton_dropped",
                     "reshape",
                     {G("{tp: S(0)}", {1, 6})},
                     Sizes({6}),
                     nullptr,
                     {"sharded on dim 0", "local size 1", "ambiguous"},
                     ErrorKind::DTensorPropagationError},
            PropCase{"reshape_merge_inner_shard",
                     "reshape",
                     {G("{tp: S(1)}", {2, 3, 4})},
                     Sizes({6, 4}),
                     nullptr,
                     {"reshape", "axis tp", "inner dim 1", "interleave"}},
            PropCase{"flatten_outer",
                     "flatten",
                     {G("{tp: S(0)}", {2, 3, 4})},
                     Dims({0, 1}),
                     "{tp: S(0)} PartitionSpec(tp, None)",
                     {}},
            PropCase{"flatten_inner_rejected",
                     "flatten",
                     {G("{tp: S(2)}", {2, 3, 4})},
                     Dims({1, 2}),
                     nullptr,
                     {"flatten", "axis tp", "inner dim 2", "interleave"}},
            PropCase{"flatten_after",
                     "flatten",
                     {G("{tp: S(2)}", {2, 3, 4})},
                     Dims({0, 1}),
                     "{tp: S(1)} PartitionSpec(None, tp)",
                     {}},
            PropCase{"unflatten_other",
                     "unflatten",
                     {G("{tp: S(1)}", {6, 4})},
                     [] {
                       ShardingArgs a = Sizes({2, 3});
                       a.dims = {0};
                       a.has_dims = true;
                       return a;
                     }(),
                     "{tp: S(2)} PartitionSpec(None, None, tp)",
                     {}},
            PropCase{"unflatten_shard_rejected",
                     "unflatten",
                     {G("{tp: S(0)}", {6, 4})},
                     [] {
                       ShardingArgs a = Sizes({2, 3});
                       a.dims = {0};
                       a.has_dims = true;
                       return a;
                     }(),
                     nullptr,
                     {"unflatten", "dim 0", "multiple smaller"},
                     ErrorKind::DTensorPropagationError},
            PropCase{"squeeze",
                     "squeeze",
                     {G("{tp: S(2)}", {6, 1, 4})},
                     Dims({1}),
                     "{tp: S(1)} PartitionSpec(None, tp)",
                     {}},
            PropCase{"squeeze_sharded_singleton",
                     "squeeze",
                     {G("{tp: S(1)}", {6, 1, 4})},
                     Dims({1}),
                     nullptr,
                     {"squeeze", "dim 1", "local size 1"},
                     ErrorKind::DTensorPropagationError},
            PropCase{"unsqueeze",
                     "unsqueeze",
                     {G("{tp: S(1)}", {6, 4})},
                     Dims({0}),
                     "{tp: S(2)} PartitionSpec(None, None, tp)",
                     {}},
            PropCase{"expand_leading",
                     "expand",
                     {G("{tp: S(0)}", {4, 1})},
                     Sizes({2, -1, 5}),
                     "{tp: S(1)} PartitionSpec(None, tp, None)",
                     {}},
            // A size that is not a constant at the sharded dim is read as
            // its local extent (GQA's repeat with sizes in variables).
            PropCase{"expand_unknown_size_keeps_shard",
                     "expand",
                     {G("{tp: S(0)}", {4, 1})},
                     [] {
                       ShardingArgs a = Sizes({2, 0, 5});
                       a.sizes[1] = std::nullopt;
                       return a;
                     }(),
                     "{tp: S(1)} PartitionSpec(None, tp, None)",
                     {}},
            PropCase{"expand_sharded_dim",
                     "expand",
                     {G("{tp: S(1)}", {4, 1})},
                     Sizes({4, 5}),
                     nullptr,
                     {"expand", "dim 1", "local size 1"}},
            PropCase{"narrow_other",
                     "narrow",
                     {G("{tp: S(0)}", {4, 6})},
                     Dims({1}),
                     "{tp: S(0)} PartitionSpec(tp, None)",
                     {}},
            PropCase{"narrow_shard",
                     "narrow",
                     {G("{tp: S(0)}", {4, 6})},
                     Dims({0}),
                     nullptr,
                     {"narrow", "axis tp", "dim 0",
                      "shards (S(0)): local indices", "or index another dim"}},
            PropCase{"select_before_shard",
                     "select",
                     {G("{tp: S(1)}", {4, 6})},
                     Dims({0}),
                     "{tp: S(0)} PartitionSpec(tp)",
                     {}},
            PropCase{"select_shard",
                     "select",
                     {G("{tp: S(1)}", {4, 6})},
                     Dims({1}),
                     nullptr,
                     {"select", "dim 1"}},
            PropCase{"slice_full_range",
                     "slice",
                     {G("{tp: S(0)}", {4, 6})},
                     [] {
                       ShardingArgs a = Dims({0});
                       a.full_range = true;
                       return a;
                     }(),
                     "{tp: S(0)} PartitionSpec(tp, None)",
                     {}},
            PropCase{"index_int_then_full",
                     "__getitem__",
                     {G("{tp: S(1)}", {4, 6})},
                     Idx({IK::Integer, IK::FullSlice}),
                     "{tp: S(0)} PartitionSpec(tp)",
                     {}},
            PropCase{"index_ellipsis_newaxis",
                     "__getitem__",
                     {G("{tp: S(1)}", {4, 6})},
                     Idx({IK::Ellipsis, IK::NewAxis}),
                     "{tp: S(1)} PartitionSpec(None, tp, None)",
                     {}},
            PropCase{"index_slice_shard",
                     "__getitem__",
                     {G("{tp: S(0)}", {4, 6})},
                     Idx({IK::Slice}),
                     nullptr,
                     {"axis tp", "slices", "dim 0"}},
            PropCase{"index_select_other",
                     "index_select",
                     {G("{tp: S(1)}", {4, 6}), G("{tp: R}", {2})},
                     Dims({0}),
                     "{tp: S(1)} PartitionSpec(None, tp)",
                     {}},
            PropCase{"index_select_shard",
                     "index_select",
                     {G("{tp: S(0)}", {4, 6}), G("{tp: R}", {2})},
                     Dims({0}),
                     nullptr,
                     {"index_select", "dim 0"}},
            PropCase{"Z014_cat_other_dim",
                     "cat",
                     {G("{tp: S(1)}", {4, 6}), G("{tp: S(1)}", {4, 6})},
                     Dims({0}),
                     "{tp: S(1)} PartitionSpec(None, tp)",
                     {}},
            PropCase{"cat_along_shard",
                     "cat",
                     {G("{tp: S(0)}", {4, 6}), G("{tp: S(0)}", {4, 6})},
                     Dims({0}),
                     nullptr,
                     {"cat", "axis tp", "dim 0", "interleave"}},
            PropCase{"cat_shard_with_R",
                     "cat",
                     {G("{tp: S(1)}", {4, 6}), G("{tp: R}", {4, 6})},
                     Dims({0}),
                     nullptr,
                     {"cat", "args[1] is R", "convert(args[1], tp, R, S(1))"}},
            PropCase{"cat_R_R",
                     "cat",
                     {G("{tp: R}", {4, 3}), G("{tp: R}", {4, 3})},
                     Dims({0}),
                     "{tp: R}",
                     {}},
            PropCase{"stack_shifts",
                     "stack",
                     {G("{tp: S(0)}", {4, 6}), G("{tp: S(0)}", {4, 6})},
                     Dims({0}),
                     "{tp: S(1)} PartitionSpec(None, tp, None)",
                     {}},
            PropCase{"stack_after",
                     "stack",
                     {G("{tp: S(0)}", {4, 6}), G("{tp: S(0)}", {4, 6})},
                     Dims({1}),
                     "{tp: S(0)} PartitionSpec(tp, None, None)",
                     {}},
            PropCase{"chunk_other",
                     "chunk",
                     {G("{tp: S(0)}", {4, 6})},
                     Dims({1}),
                     "{tp: S(0)} PartitionSpec(tp, None)",
                     {}},
            PropCase{
                "chunk_shard",
                "chunk",
                {G("{tp: S(1)}", {4, 6})},
                Dims({-1}),
                nullptr,
                {"chunk", "axis tp", "splits along", "dim 1",
                 "shards (S(1)): local", "SPMD_LOCAL", "declared tp = S(1)"}},
            PropCase{"split_shard",
                     "split",
                     {G("{tp: S(0)}", {4, 6})},
                     Dims({0}),
                     nullptr,
                     {"split", "dim 0"}},
            PropCase{"unbind_other",
                     "unbind",
                     {G("{tp: S(1)}", {4, 6})},
                     Dims({0}),
                     "{tp: S(0)} PartitionSpec(tp)",
                     {}},
            PropCase{"unbind_shard",
                     "unbind",
                     {G("{tp: S(0)}", {4, 6})},
                     Dims({0}),
                     nullptr,
                     {"unbind", "dim 0"}},
            PropCase{"flip_shard",
                     "flip",
                     {G("{tp: S(0)}", {4, 6})},
                     Dims({0}),
                     nullptr,
                     {"flip", "dim 0"}},
            PropCase{"contiguous_keeps",
                     ".contiguous",
                     {G("{tp: S(0)}", {4, 6})},
                     {},
                     "{tp: S(0)} PartitionSpec(tp, None)",
                     {}}),
    ShardingCaseName);

// ---- embedding and loss
// --------------------------------------------------------------

ShardingArgs Reduction(const char* r) {
  ShardingArgs a;
  a.reduction = r;
  return a;
}

INSTANTIATE_TEST_SUITE_P(
    EmbeddingLoss, PropTest,
    ::testing::Values(
        // Not P: every rank looks up a row for every index (unmasked rows).
        PropCase{"embedding_vocab_parallel",
                 "embedding",
                 {G("{tp: R}", {2, 5}), G("{tp: S(0)}", {100, 16})},
                 {},
                 "{tp: V(unmasked rows)}",
                 {}},
        PropCase{"embedding_hidden_sharded",
                 "embedding",
                 {G("{tp: R}", {2, 5}), G("{tp: S(1)}", {100, 16})},
                 {},
                 "{tp: S(2)} PartitionSpec(None, None, tp)",
                 {}},
        PropCase{"embedding_batch_sharded",
                 "embedding",
                 {G("{tp: S(0)}", {2, 5}), G("{tp: R}", {100, 16})},
                 {},
                 "{tp: S(0)} PartitionSpec(tp, None, None)",
                 {}},
        PropCase{"aten_embedding_order",
                 "aten::embedding",
                 {G("{tp: S(0)}", {100, 16}), G("{tp: R}", {2, 5})},
                 {},
                 "{tp: V(unmasked rows)}",
                 {}},
        PropCase{"cross_entropy_class_sharded",
                 "cross_entropy",
                 {G("{tp: S(1)}", {8, 100}), G("{tp: R}", {8})},
                 {},
                 nullptr,
                 {"cross_entropy", "axis tp", "class dim 1",
                  "vocab-parallel cross-entropy", "all_gather"}},
        // The per-rank mean losses add up to tp-size times the mean loss.
        PropCase{"cross_entropy_batch_mean",
                 "cross_entropy",
                 {G("{tp: S(0)}", {8, 100}), G("{tp: S(0)}", {8})},
                 {},
                 nullptr,
                 {"cross_entropy", "reduction=mean", "tp-size times",
                  "reduction=sum", "divide by the global batch size"}},
        PropCase{"cross_entropy_batch_sum",
                 "cross_entropy",
                 {G("{tp: S(0)}", {8, 100}), G("{tp: S(0)}", {8})},
                 Reduction("sum"),
                 "{tp: P}",
                 {}},
        PropCase{"cross_entropy_batch_none",
                 "cross_entropy",
                 {G("{tp: S(0)}", {8, 100}), G("{tp: S(0)}", {8})},
                 Reduction("none"),
                 "{tp: S(0)} PartitionSpec(tp)",
                 {}},
        PropCase{"cross_entropy_target_not_sharded",
                 "cross_entropy",
                 {G("{tp: S(0)}", {8, 100}), G("{tp: R}", {8})},
                 {},
                 nullptr,
                 {"target args[1] is R", "S(0)"}}),
    ShardingCaseName);

// ---- multi-axis ordering
// ---------------------------------------------------------------

INSTANTIATE_TEST_SUITE_P(
    MultiAxis, PropTest,
    ::testing::Values(
        PropCase{"mm_dp_S0_tp_R",
                 "mm",
                 {G("{dp: S(0), tp: R}", {4, 3}), G("{dp: R, tp: R}", {3, 5})},
                 {},
                 "{dp: S(0), tp: R} PartitionSpec(dp, None)",
                 {}},
        PropCase{
            "mm_both_on_dim0",
            "mm",
            {G("{}", {4, 3}, "((dp, tp), None)"), G("{dp: R, tp: R}", {3, 5})},
            {},
            "{dp: S(0), tp: S(0)} PartitionSpec((dp, tp), None)",
            {}},
        PropCase{
            "mm_independent_dims",
            "mm",
            {G("{dp: S(0), tp: R}", {4, 3}), G("{dp: R, tp: S(1)}", {3, 5})},
            {},
            "{dp: S(0), tp: S(1)} PartitionSpec(dp, tp)",
            {}},
        PropCase{"order_conflict",
                 "add",
                 {G("{}", {4, 3}, "((tp, dp), None)"),
                  G("{}", {4, 3}, "((dp, tp), None)")},
                 {},
                 nullptr,
                 {"add", "order conflict", "tp", "dp"}},
        PropCase{"order_kept",
                 "add",
                 {G("{}", {4, 3}, "((tp, dp), None)"),
                  G("{}", {4, 3}, "((tp, dp), None)")},
                 {},
                 "{dp: S(0), tp: S(0)} PartitionSpec((tp, dp), None)",
                 {}},
        PropCase{
            "row_parallel_keeps_dp",
            "mm",
            {G("{dp: S(0), tp: S(1)}", {4, 3}), G("{dp: R, tp: S(0)}", {3, 5})},
            {},
            "{dp: S(0), tp: P} PartitionSpec(dp, None)",
            {}}),
    ShardingCaseName);

// ---- partial knowledge (static front ends)
// ---------------------------------------------

TEST(PartialKnowledgeTest, UnknownRankGivesUnknownShard) {
  auto r = infer_global("relu", {GUnknownRank("{tp: S(-1)}")}, {});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{tp: S(?)}");
  EXPECT_EQ(r->type.unknown_shards, std::set<std::string>{"tp"});
}

TEST(PartialKnowledgeTest, UnknownSizeOfReplicatedOperandIsUnknown) {
  // Whether the bias broadcasts along the sharded dim decides; never guess.
  Shape s;
  s.dims = std::vector<std::optional<long>>{std::nullopt, 3};
  auto bias = GlobalOperand::tensor(GT("{tp: R}", s), s);
  auto r = infer_global("add", {G("{tp: S(0)}", {4, 3}), bias}, {});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{tp: S(?)}");
}

TEST(PartialKnowledgeTest, UnknownArgumentsGiveUnknownShard) {
  ShardingArgs a;
  a.known = false;
  auto r = infer_global("transpose", {G("{tp: S(0)}", {4, 3})}, a);
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{tp: S(?)}");
}

TEST(PartialKnowledgeTest, UnmodelledOpGivesUnknownShardAndANote) {
  auto r = infer_global("my_kernel", {G("{tp: S(0)}", {4, 3})}, {});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{tp: S(?)}");
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_TRUE(Contains(r->notes[0], "my_kernel"));
}

TEST(PartialKnowledgeTest, MmRanksAreFixedByTheOp) {
  auto r = infer_global("mm",
                        {GUnknownRank("{tp: R}"), G("{tp: S(1)}", {3, 5})}, {});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{tp: S(1)} PartitionSpec(None, tp)");
}

// ---- notes and modes
// -------------------------------------------------------------------

TEST(NotesTest, MeanOverShardSaysWhatTheRanksHold) {
  auto r = infer_global("mean", {G("{tp: S(0)}", {6, 4})}, Dims({0}));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.error().message, "each rank averages its own shard"));
  EXPECT_TRUE(Contains(r.error().message, "tp-size times the global mean"));
  EXPECT_TRUE(Contains(r.error().fix, "sum over the dim"));
}

TEST(NotesTest, VocabParallelEmbeddingNeedsMasking) {
  auto r = infer_global("embedding",
                        {G("{tp: R}", {2, 5}), G("{tp: S(0)}", {100, 16})}, {});
  ASSERT_TRUE(Succeeds(r));
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_TRUE(Contains(r->notes[0], "unmasked rows"));
  EXPECT_TRUE(Contains(r->notes[0], "only once the rows of indices outside"));
  EXPECT_EQ(r->type.unmasked_rows, std::set<std::string>{"tp"});
}

// The unmasked-rows rule (infer_global): a zero fill makes the lookup P,
// other ops keep the mark, a sum over every dim of the rows is an error.
GlobalOperand Masked(GlobalOperand o, MaskKind k) {
  o.mask = k;
  return o;
}

GlobalOperand Number(double v) {
  GlobalOperand s = GlobalOperand::weak_scalar();
  s.constant = v;
  return s;
}

TEST(UnmaskedRowsTest, OnlyAZeroFillMakesTheLookupP) {
  auto e = infer_global("embedding",
                        {G("{tp: R}", {2, 5}), G("{tp: S(0)}", {100, 16})}, {});
  ASSERT_TRUE(Succeeds(e));
  GlobalOperand rows = GlobalOperand::tensor(e->type, Shape::of({2, 5, 16}));
  GlobalOperand mask = Masked(G("{tp: R}", {2, 5, 1}), MaskKind::Bool);
  auto filled = infer_global("masked_fill", {rows, mask, Number(0)}, {});
  ASSERT_TRUE(Succeeds(filled));
  EXPECT_EQ(filled->type.to_string(), "{tp: P}");
  // Filled with something else: still unmasked.
  auto other = infer_global("masked_fill", {rows, mask, Number(1)}, {});
  ASSERT_TRUE(Succeeds(other));
  EXPECT_EQ(other->type.to_string(), "{tp: V(unmasked rows)}");
  // A product with a 0/1 mask zeroes; with data that is not a mask, not.
  auto keep = Masked(G("{tp: R}", {2, 5, 1}), MaskKind::ZeroOne);
  auto prod = infer_global("mul", {rows, keep}, {});
  ASSERT_TRUE(Succeeds(prod));
  EXPECT_EQ(prod->type.to_string(), "{tp: P}");
  auto scaled = infer_global("mul", {rows, G("{tp: R}", {2, 5, 1})}, {});
  ASSERT_TRUE(Succeeds(scaled));
  EXPECT_EQ(scaled->type.to_string(), "{tp: V(unmasked rows)}");
  // A sum over every dim of the rows is not their pending sum.
  auto sum = infer_global("sum", {rows}, {});
  ASSERT_FALSE(sum.ok());
  EXPECT_TRUE(Contains(sum.error().message, "unmasked rows"));
  EXPECT_TRUE(Contains(sum.error().fix, "masked_fill(mask, 0)"));
}

TEST(ModeTest, Z019_LocalRegionDropsSpecs) {
  GlobalContext ctx;
  ctx.global = false;
  auto r = infer_global(
      "add", {G("{tp: S(0)}", {4, 3}), GlobalOperand::weak_scalar(1)}, {}, ctx);
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{tp: V}");
}

TEST(ModeTest, Z001_GlobalRejectsVaryingWithoutSpec) {
  GlobalType v;
  v.local = TT("{tp: V}");
  auto x = GlobalOperand::tensor(v, Shape::of({4, 3}));
  auto r = infer_global("add", {x, x}, {});
  EXPECT_TRUE(FailsWith(
      r, ErrorKind::SpmdTypeError,
      {"add", "args[0]", "Varying", "axis tp", "no PartitionSpec entry"}));
}

TEST(ModeTest, Z017_LocalAxisKeepsLocalSemantics) {
  GlobalContext ctx;
  ctx.local.mesh_axes = std::vector<std::string>{"dp", "tp"};
  ctx.local_axes = {"dp"};
  GlobalType t;
  t.local = TT("{dp: V, tp: R}");
  auto x = GlobalOperand::tensor(t, Shape::of({4, 3}));
  auto r = infer_global("add", {x, x}, {}, ctx);
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{dp: V, tp: R}");
}

// ---- the full-reduction rule (spec §12.2, docs/plugin.md "Global mode") --
//
// A sum over every dim of a tensor that is V on an axis is the pending sum
// of the global sum, whichever dim the axis shards: a static front end that
// does not know the dim still gets P. A mean is not claimed (each rank's
// mean adds up to axis-size times the global mean, for even shards only).

/// A V operand whose shard dim on `axis` is not known (a static front end's
/// `V` annotation, or a join of two shards).
GlobalOperand GUnknownShard(std::string_view map, const std::string& axis,
                            Shape shape) {
  GlobalType g = GT(map, shape);
  g.unknown_shards.insert(axis);
  return GlobalOperand::tensor(g, shape);
}

ShardingArgs KeepDim() {
  ShardingArgs a;
  a.keepdim = true;
  return a;
}

TEST(FullReductionTest, SumOfUnknownShardIsPartial) {
  auto r = infer_global(
      "sum", {GUnknownShard("{dp: V}", "dp", Shape::of({8, 4}))}, {});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{dp: P}");
  EXPECT_TRUE(r->type.unknown_shards.empty());
  EXPECT_EQ(r->out_rank, std::optional<long>(0));
}

TEST(FullReductionTest, SumOverEveryDimListedIsPartial) {
  for (auto dims : {std::vector<long>{0, 1}, std::vector<long>{-1, 0},
                    std::vector<long>{1, 0, 1}}) {
    auto r = infer_global(
        "sum", {GUnknownShard("{tp: V}", "tp", Shape::of({8, 4}))}, Dims(dims));
    ASSERT_TRUE(Succeeds(r));
    EXPECT_EQ(r->type.to_string(), "{tp: P}");
  }
}

TEST(FullReductionTest, SumOfUnknownShardOfUnknownRankIsPartial) {
  for (const char* op : {"sum", ".sum", "torch::sum", "nansum"}) {
    auto r = infer_global(
        op, {GUnknownShard("{tp: V}", "tp", Shape::unknown())}, {});
    ASSERT_TRUE(Succeeds(r)) << op;
    EXPECT_EQ(r->type.to_string(), "{tp: P}") << op;
  }
}

TEST(FullReductionTest, KeepdimKeepsTheRank) {
  auto r = infer_global(
      "sum", {GUnknownShard("{tp: V}", "tp", Shape::of({8, 4}))}, KeepDim());
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{tp: P}");
  EXPECT_EQ(r->out_rank, std::optional<long>(2));
}

TEST(FullReductionTest, SumOverSomeDimsOfUnknownShardStaysUnknown) {
  // The shard may be on the dim that is kept.
  auto r = infer_global(
      "sum", {GUnknownShard("{tp: V}", "tp", Shape::of({8, 4}))}, Dims({1}));
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{tp: S(?)}");
  // Dims given but the rank unknown: whether they are all is unknown.
  r = infer_global("sum", {GUnknownShard("{tp: V}", "tp", Shape::unknown())},
                   Dims({0, 1}));
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{tp: S(?)}");
  // Dim arguments the front end could not read.
  ShardingArgs unread;
  unread.known = false;
  r = infer_global("sum", {GUnknownShard("{tp: V}", "tp", Shape::of({8, 4}))},
                   unread);
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{tp: S(?)}");
}

TEST(FullReductionTest, MeanAndNonlinearReductionsAreNotClaimed) {
  for (const char* op :
       {"mean", "nanmean", "amax", "max", "norm", "prod", "logsumexp"}) {
    auto r = infer_global(
        op, {GUnknownShard("{tp: V}", "tp", Shape::of({8, 4}))}, {});
    ASSERT_TRUE(Succeeds(r)) << op;
    EXPECT_EQ(r->type.to_string(), "{tp: S(?)}") << op;
  }
}

TEST(FullReductionTest, KnownShardOfUnknownRank) {
  // A front end that knows the shard dim but not the rank: every dim
  // reduced, so the shard dim is among them whatever the rank.
  std::vector<AxisArg> x = {{Placement::shard(1), Shape::unknown()}};
  auto r = propagate_axis("sum", x, {}, "tp");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->placement, Placement::partial());
  EXPECT_EQ(r->out_rank, std::optional<long>(0));
  r = propagate_axis("sum", x, KeepDim(), "tp");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->placement, Placement::partial());
  EXPECT_EQ(r->out_rank, std::nullopt);
  // A mean over the shard is not a pending sum of the mean.
  r = propagate_axis("mean", x, {}, "tp");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.error().message, "each rank averages its own shard"));
  r = propagate_axis("amax", x, {}, "tp");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.error().message, "No valid sharding strategy"));
  // Some dims: the rank decides.
  r = propagate_axis("sum", x, Dims({0}), "tp");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->placement, Placement::unknown());
}

TEST(FullReductionTest, UnknownPlacementThroughPropagateAxis) {
  std::vector<AxisArg> x = {{Placement::unknown(), Shape::unknown()}};
  auto r = propagate_axis("sum", x, {}, "dp");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->placement, Placement::partial());
  r = propagate_axis("mean", x, {}, "dp");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->placement, Placement::unknown());
}

TEST(FullReductionTest, EveryAxisOfTheOperand) {
  // dp shards an unknown dim, tp dim 0: both sums are pending.
  GlobalType g = GT("{dp: V, tp: S(0)}", Shape::of({8, 4}));
  g.unknown_shards.insert("dp");
  auto r =
      infer_global("sum", {GlobalOperand::tensor(g, Shape::of({8, 4}))}, {});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{dp: P, tp: P}");
}

TEST(FullReductionTest, ReplicatedAxesStay) {
  GlobalType g = GT("{dp: V, tp: R}", Shape::of({8, 4}));
  g.unknown_shards.insert("dp");
  auto r =
      infer_global("sum", {GlobalOperand::tensor(g, Shape::of({8, 4}))}, {});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{dp: P, tp: R}");
}

// ---- only a V axis shards a dim (spec §12.1) ------------------------------

TEST(UnvaryingShardTest, DropsSpecEntriesAndUnknownShardsOfNonVAxes) {
  GlobalType g;
  g.local = TT("{dp: V, tp: R, ep: P, sp: I, cp: V}");
  g.spec = *PartitionSpec::parse("((dp, tp), ep, None)");
  g.unknown_shards = {"sp", "cp"};
  drop_shards_of_unvarying_axes(g);
  ASSERT_TRUE(g.spec.has_value());
  EXPECT_EQ(g.spec->to_string(), "PartitionSpec(dp, None, None)");
  EXPECT_EQ(g.unknown_shards, std::set<std::string>{"cp"});
  EXPECT_EQ(g.local, TT("{dp: V, tp: R, ep: P, sp: I, cp: V}"));
}

TEST(UnvaryingShardTest, ASpecLeftWithoutAxesIsDropped) {
  GlobalType g;
  g.local = TT("{tp: R}");
  g.spec = *PartitionSpec::parse("(tp, None)");
  drop_shards_of_unvarying_axes(g);
  EXPECT_FALSE(g.spec.has_value());
}

TEST(UnvaryingShardTest, VAxesKeepTheirShards) {
  GlobalType g;
  g.local = TT("{tp: V, dp: V}");
  g.spec = *PartitionSpec::parse("(tp, None)");
  g.unknown_shards = {"dp"};
  GlobalType before = g;
  drop_shards_of_unvarying_axes(g);
  EXPECT_EQ(g, before);
}

TEST(UnvaryingShardTest, InferGlobalDropsTheShardOfAFactoryResult) {
  // new_zeros under a mesh is R whatever its receiver (case F006); the
  // receiver's shard on tp must not reach the result.
  GlobalContext ctx;
  ctx.local.mesh_axes = std::vector<std::string>{"tp"};
  auto r =
      infer_global(".new_zeros", {G("{tp: S(0)}", {4, 3})}, Sizes({4, 3}), ctx);
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->type.to_string(), "{tp: R}");
  EXPECT_TRUE(r->type.unknown_shards.empty());
  EXPECT_FALSE(r->type.spec.has_value());
}

TEST(RuleTableTest, EveryRegistryFamilyHasARule) {
  EXPECT_EQ(shard_rule_of("torch::matmul"), ShardRule::Contraction);
  EXPECT_EQ(shard_rule_of("at::Tensor::view"), ShardRule::Shape);
  EXPECT_EQ(shard_rule_of(".add_"), ShardRule::Pointwise);
  EXPECT_EQ(shard_rule_of("__getitem__"), ShardRule::Shape);
  EXPECT_EQ(shard_rule_of("aten::sum.dim_IntList"), ShardRule::LinearReduction);
  EXPECT_EQ(shard_rule_of("prop T"), ShardRule::Shape);
  EXPECT_EQ(shard_rule_of("layer_norm"), ShardRule::Norm);
  EXPECT_EQ(shard_rule_of("cross_entropy"), ShardRule::Loss);
  EXPECT_EQ(shard_rule_of("softmax"), ShardRule::AlongDim);
  EXPECT_EQ(shard_rule_of("argmax"), ShardRule::NonlinearReduction);
  EXPECT_EQ(shard_rule_of("frobnicate"), ShardRule::Unknown);
}

// The order of axes within multi-axis entries on its own (the plugin builds
// it from the tuples it tracks).
TEST(AxisOrder, KeepsTheInputOrderAndRejectsConflicts) {
  auto o = AxisOrder::of("add", {{"dp", "tp"}, {"tp"}, {"dp", "tp"}});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->outer("dp", "tp"));
  EXPECT_FALSE(o->outer("tp", "dp"));
  auto e = o->order("add", 0, {"tp", "dp"});
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, (SpecEntry{"dp", "tp"}));
  // Transitive through a third axis.
  auto t = AxisOrder::of("add", {{"dp", "ep"}, {"ep", "tp"}});
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(t->outer("dp", "tp"));
  EXPECT_EQ(*t->order("add", 1, {"tp", "ep", "dp"}),
            (SpecEntry{"dp", "ep", "tp"}));
  // Opposite orders in two operands.
  EXPECT_TRUE(FailsWith(
      AxisOrder::of("add", {{"dp", "tp"}, {"tp", "dp"}}),
      ErrorKind::SpmdTypeError,
      {"add", "order conflict", "(dp outer to tp)", "(tp outer to dp)"}));
  // Two axes on one output dim that no input orders.
  auto none = AxisOrder::of("mul", {{"dp"}, {"tp"}});
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(FailsWith(none->order("mul", 0, {"dp", "tp"}),
                        ErrorKind::SpmdTypeError,
                        {"axes dp and tp both shard output dim 0",
                         "no input PartitionSpec gives their order"}));
}

// result_shape: the sizes a front end can know from its operands' sizes.
TEST(ResultShape, KeepdimUnsqueezeAndPointwiseGiveSizeOne) {
  auto sizes = [](const Shape& s) { return s.to_string(); };
  Shape r3 = Shape::of_rank(3);
  ShardingArgs last;
  last.has_dims = true;
  last.dims = {-1};
  ShardingArgs keep = last;
  keep.keepdim = true;
  // A keepdim reduction: size 1 on the reduced dim; without keepdim the dim
  // goes and the others keep their sizes.
  EXPECT_EQ(sizes(result_shape("max", {r3}, keep, 3)), "[?, ?, 1]");
  EXPECT_EQ(sizes(result_shape(".sum", {Shape::of({4, 1, 5})}, last, 2)),
            "[4, 1]");
  // All dims, keepdim.
  ShardingArgs all;
  all.keepdim = true;
  EXPECT_EQ(sizes(result_shape("mean", {r3}, all, 3)), "[1, 1, 1]");
  // unsqueeze inserts a size-1 dim.
  ShardingArgs at0;
  at0.dims = {0};
  at0.has_dims = true;
  EXPECT_EQ(sizes(result_shape("unsqueeze", {Shape::of({4, 5})}, at0, 3)),
            "[1, 4, 5]");
  // Pointwise: the broadcast size where every operand that has the dim
  // knows it; a missing dim broadcasts.
  Shape max_keep = result_shape("max", {r3}, keep, 3);
  EXPECT_EQ(sizes(result_shape("sub", {max_keep, Shape::of({1})}, {}, 3)),
            "[?, ?, 1]");
  EXPECT_EQ(
      sizes(result_shape("add", {Shape::of({4, 1}), Shape::of({1, 3})}, {}, 2)),
      "[4, 3]");
  EXPECT_EQ(sizes(result_shape("add", {r3, max_keep}, {}, 3)), "[?, ?, ?]");
  // Unknown: an operand's rank, the result's rank, the dims, other rules.
  EXPECT_FALSE(result_shape("max", {r3}, keep, std::nullopt).rank_known());
  EXPECT_EQ(sizes(result_shape("add", {Shape::unknown(), r3}, {}, 3)),
            "[?, ?, ?]");
  ShardingArgs unknown_dims = keep;
  unknown_dims.known = false;
  EXPECT_EQ(sizes(result_shape("max", {r3}, unknown_dims, 3)), "[?, ?, ?]");
  EXPECT_EQ(sizes(result_shape("softmax", {Shape::of({4, 1})}, last, 2)),
            "[?, ?]");
  // max(a, b) is elementwise, not a reduction.
  EXPECT_EQ(sizes(result_shape("max", {Shape::of({1}), Shape::of({1})}, {}, 1)),
            "[?]");
}

}  // namespace
}  // namespace spmd::core::testing
