// Collectives in global mode, local_axes and local_map boundaries (spec
// §12.3-§12.5; cases Z009-Z026 of shared/cases/type-cases.md; the
// reference's TestGlobalSpmdDirectCollectives, TestGlobalSpmdRedistribute and
// TestMixedGlobalAxes; issue #11's collective bugs).
#include "global_test_util.h"

namespace spmd::core::testing {
namespace {

using C = Collective;

struct CollCase {
  const char* id;
  CollectiveCall call;
  const char* input;  // map with S(i) sugar
  const char* spec;   // explicit spec or nullptr
  std::vector<long> shape;
  const char* expected;  // nullptr: error
  std::vector<std::string> phrases;
  ErrorKind kind = ErrorKind::SpmdTypeError;
};

CollectiveCall WithDim(CollectiveCall c, long gather) {
  c.gather_dim = gather;
  return c;
}

class GlobalCollectiveTest : public ::testing::TestWithParam<CollCase> {};

TEST_P(GlobalCollectiveTest, Transfers) {
  const auto& c = GetParam();
  Shape s = Shape::of(c.shape);
  GlobalType in =
      GT(c.input, s,
         c.spec ? std::optional<std::string_view>(c.spec) : std::nullopt);
  auto r = transfer_global(c.call, in, "tp", {}, s);
  if (c.expected)
    EXPECT_TRUE(GivesGlobal(r, c.expected));
  else
    EXPECT_TRUE(FailsWith(r, c.kind, c.phrases));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, GlobalCollectiveTest,
    ::testing::Values(
        CollCase{"Z009_src_mismatch",
                 Call(C::AllGather, S(1), R),
                 "{tp: S(0)}",
                 nullptr,
                 {4, 3},
                 nullptr,
                 {"all_gather", "expected input shard S(1) on axis tp",
                  "got S(0)", "src=S(0)", "dim 0"}},
        CollCase{"Z010_all_to_all",
                 Call(C::AllToAll, S(0), S(1)),
                 "{tp: S(0)}",
                 nullptr,
                 {6, 3},
                 "{tp: S(1)} PartitionSpec(None, tp)",
                 {}},
        CollCase{"Z011_all_gather",
                 Call(C::AllGather, S(0), R),
                 "{tp: S(0)}",
                 nullptr,
                 {4, 3},
                 "{tp: R} PartitionSpec(None, None)",
                 {}},
        CollCase{"all_gather_to_I",
                 Call(C::AllGather, S(0), I),
                 "{tp: S(0)}",
                 nullptr,
                 {4, 3},
                 "{tp: I} PartitionSpec(None, None)",
                 {}},
        CollCase{"Z026_reduce_scatter",
                 Call(C::ReduceScatter, P, S(0)),
                 "{tp: P}",
                 nullptr,
                 {6, 3},
                 "{tp: S(0)} PartitionSpec(tp, None)",
                 {}},
        CollCase{"all_reduce_P_R",
                 Call(C::AllReduce, P, R),
                 "{tp: P}",
                 nullptr,
                 {4, 3},
                 "{tp: R} PartitionSpec(None, None)",
                 {}},
        CollCase{"all_to_all_src_mismatch",
                 Call(C::AllToAll, S(1), S(0)),
                 "{tp: S(0)}",
                 nullptr,
                 {6, 3},
                 nullptr,
                 {"expected input shard S(1)", "got S(0)"}},
        CollCase{"issue11_gather_wrong_dim",
                 Call(C::AllGather, S(0), R),
                 "{tp: S(-1)}",
                 nullptr,
                 {4, 3},
                 nullptr,
                 {"expected input shard S(0) on axis tp", "got S(1)",
                  "along dim 1"}},
        CollCase{"negative_src_matches",
                 Call(C::AllGather, S(-1), R),
                 "{tp: S(1)}",
                 nullptr,
                 {4, 3},
                 "{tp: R} PartitionSpec(None, None)",
                 {}},
        CollCase{"issue11_all_reduce_of_shard",
                 Call(C::AllReduce, P, R),
                 "{tp: S(1)}",
                 nullptr,
                 {4, 3},
                 nullptr,
                 {"all_reduce", "sharded on axis tp", "S(1)",
                  "not a pending sum", "all_gather(x, tp, S(1), R)"}},
        CollCase{"reduce_scatter_of_shard",
                 Call(C::ReduceScatter, P, S(0)),
                 "{tp: S(1)}",
                 nullptr,
                 {4, 3},
                 nullptr,
                 {"reduce_scatter", "not a pending sum"}},
        CollCase{"reinterpret_shard_as_partial",
                 Call(C::Reinterpret, V, P),
                 "{tp: S(0)}",
                 nullptr,
                 {4, 3},
                 nullptr,
                 {"reinterpret", "not a pending sum", "expert_mode"}},
        CollCase{"reinterpret_shard_as_partial_expert",
                 Call(C::Reinterpret, V, P, true),
                 "{tp: S(0)}",
                 nullptr,
                 {4, 3},
                 "{tp: P} PartitionSpec(None, None)",
                 {}},
        CollCase{"issue11_gather_of_pending_sum",
                 Call(C::AllGather, S(0), R),
                 "{tp: P}",
                 nullptr,
                 {4, 3},
                 nullptr,
                 {"all_gather", "expected input type V on axis tp", "got P"}},
        // A V with a spec entry is named by its shard in the message and
        // in the suggested route (not "got V", not a stacking gather).
        CollCase{"wrong_src_names_the_shard",
                 Call(C::Convert, I, R),
                 "{tp: S(1)}",
                 nullptr,
                 {4, 3},
                 nullptr,
                 {"convert: expected input type I on axis tp, got S(1)",
                  "spmd::all_gather(x, tp, S(1), I)"}},
        CollCase{"innermost_rule",
                 Call(C::AllGather, S(0), R),
                 "{}",
                 "((tp, dp), None)",
                 {4, 3},
                 nullptr,
                 {"all_gather on axis tp", "not the innermost", "(tp, dp)",
                  "dim 0", "(dp)"},
                 ErrorKind::RedistributeError},
        CollCase{"innermost_ok",
                 Call(C::AllGather, S(0), R),
                 "{}",
                 "((dp, tp), None)",
                 {4, 3},
                 "{dp: S(0), tp: R} PartitionSpec(dp, None)",
                 {}},
        CollCase{"dst_appended_innermost",
                 Call(C::AllToAll, S(1), S(0)),
                 "{}",
                 "(dp, tp)",
                 {4, 3},
                 "{dp: S(0), tp: S(0)} PartitionSpec((dp, tp), None)",
                 {}},
        CollCase{"convert_R_to_S",
                 Call(C::Convert, R, S(-1)),
                 "{tp: R}",
                 nullptr,
                 {4, 3},
                 "{tp: S(1)} PartitionSpec(None, tp)",
                 {}},
        CollCase{"gather_stack_adds_dim",
                 WithDim(Call(C::AllGather, V, R), 0),
                 "{}",
                 "(None, tp)",
                 {4, 3},
                 "{tp: R} PartitionSpec(None, None, None)",
                 {}}),
    [](const auto& info) { return std::string(info.param.id); });

TEST(GlobalCollectiveModeTest, VaryingWithoutSpecOnGlobalAxis) {
  GlobalType v;
  v.local = TT("{tp: V}");
  auto r = transfer_global(Call(C::AllGather, S(0), R), v, "tp", {},
                           Shape::of({4, 3}));
  EXPECT_TRUE(FailsWith(
      r, ErrorKind::SpmdTypeError,
      {"all_gather", "axis tp is global", "V without", "assert_type"}));
}

// The message states the call as written and the rule that rejects it: a
// reinterpret(V -> P) of a shard says src=V, not "where src=P is expected".
TEST(GlobalCollectiveModeTest, ShardNotPendingSumStatesTheCallAsWritten) {
  GlobalType x = GT("{tp: V}", Shape::of({4, 3}));
  x.spec = PartitionSpec::parse("(tp, None)").value();
  auto r = transfer_global(Call(C::Reinterpret, V, P), x, "tp", {},
                           Shape::of({4, 3}));
  ASSERT_FALSE(r.ok());
  const std::string& m = r.error().message;
  EXPECT_TRUE(Contains(m, "reinterpret(src=V, dst=P)")) << m;
  EXPECT_TRUE(Contains(m,
                       "does not reinterpret a known shard as a pending "
                       "sum (V -> P), outside expert_mode"))
      << m;
  EXPECT_FALSE(Contains(m, "src=P is expected")) << m;
  r = transfer_global(Call(C::AllReduce, P, R), x, "tp", {}, Shape::of({4, 3}));
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(Contains(r.error().message, "all_reduce(src=P, dst=R)"))
      << r.error().message;
  EXPECT_TRUE(Contains(r.error().message,
                       "does not accept a known shard where src=P expects a "
                       "pending sum"))
      << r.error().message;
}

TEST(GlobalCollectiveModeTest, MixedPolicyAxisIsAnError) {
  GlobalContext ctx;
  ctx.local.mesh_axes = std::vector<std::string>{"dp", "tp"};
  ctx.local_axes = {"dp"};
  GlobalType t = GT("{dp: V, tp: R}", Shape::of({4, 3}));
  auto r = transfer_global(Call(C::AllGather, V, R), t, "dp_tp", {"dp", "tp"},
                           Shape::of({4, 3}), ctx);
  EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                        {"dp_tp", "mixed typechecking policies",
                         "local axes (dp)", "global axes (tp)"}));
}

TEST(GlobalCollectiveModeTest, FlattenedAxisGathersItsComponentsTuple) {
  // all_gather over dp_cp = dp x cp of a dim sharded on (dp, cp): both
  // components leave the dim. reduce_scatter over it puts them back in order.
  GlobalType t =
      GT("{dp: V, cp: V, tp: R}", Shape::of({4, 3}), "((dp, cp), None)");
  auto g = transfer_global(Call(C::AllGather, S(0), R), t, "dp_cp",
                           {"dp", "cp"}, Shape::of({4, 3}));
  EXPECT_TRUE(
      GivesGlobal(g, "{cp: R, dp: R, tp: R} PartitionSpec(None, None)"));
  GlobalType p = GT("{dp: P, cp: P, tp: R}", Shape::of({4, 3}));
  auto s = transfer_global(Call(C::ReduceScatter, P, S(0)), p, "dp_cp",
                           {"dp", "cp"}, Shape::of({4, 3}));
  EXPECT_TRUE(GivesGlobal(
      s, "{cp: S(0), dp: S(0), tp: R} PartitionSpec((dp, cp), None)"));
  // The components in the other order on the dim: refused.
  GlobalType swapped =
      GT("{dp: V, cp: V, tp: R}", Shape::of({4, 3}), "((cp, dp), None)");
  auto bad = transfer_global(Call(C::AllGather, S(0), R), swapped, "dp_cp",
                             {"dp", "cp"}, Shape::of({4, 3}));
  EXPECT_TRUE(FailsWith(bad, ErrorKind::RedistributeError,
                        {"all_gather on axis dp_cp", "(cp, dp)"}));
}

TEST(GlobalCollectiveModeTest, LocalAxisCollectiveIsLocal) {
  // §12.5: dp is local: V without spec is fine and no spec is touched.
  GlobalContext ctx;
  ctx.local.mesh_axes = std::vector<std::string>{"dp", "tp"};
  ctx.local_axes = {"dp"};
  GlobalType t = GT("{dp: V, tp: S(1)}", Shape::of({4, 3}));
  auto r = transfer_global(Call(C::AllReduce, P, R), t, "dp", {},
                           Shape::of({4, 3}), ctx);
  EXPECT_TRUE(GivesGlobal(r, "{dp: R, tp: S(1)} PartitionSpec(None, tp)"));
}

TEST(GlobalCollectiveModeTest, SingletonAxisResolvedToItselfIsSkipped) {
  // A size-1 tp has no entry in the type (it is normalised away); the
  // runtime resolves a plain axis to [axis] and passes the singleton flag:
  // the collective is a no-op on the type, in strict mode too, as in local
  // mode. Without the flag it is the "no type for axis" error.
  GlobalContext ctx;
  ctx.local.strict = true;
  GlobalType t = GT("{dp: S(1)}", Shape::of({8, 2, 16}));
  auto r = transfer_global(Call(C::Convert, I, R), t, "tp", {"tp"},
                           Shape::of({8, 2, 16}), ctx,
                           /*axis_is_singleton=*/true);
  EXPECT_TRUE(GivesGlobal(r, "{dp: S(1)} PartitionSpec(None, dp, None)"));
  auto missing = transfer_global(Call(C::Convert, I, R), t, "tp", {"tp"},
                                 Shape::of({8, 2, 16}), ctx);
  EXPECT_TRUE(FailsWith(missing, ErrorKind::SpmdTypeError, {"axis tp"}));
}

TEST(GlobalCollectiveModeTest, UnknownRankKeepsShardUnknown) {
  GlobalType t = GT("{tp: P}", Shape::unknown());
  auto r = transfer_global(Call(C::ReduceScatter, P, S(-1)), t, "tp", {},
                           Shape::unknown());
  EXPECT_TRUE(GivesGlobal(r, "{tp: S(?)}"));
}

// ---- local_axes (§12.5)
// -------------------------------------------------------

TEST(LocalAxesTest, MustBeAnOuterPrefixOfTheMesh) {
  std::vector<std::string> mesh = {"dp", "cp", "tp"};
  EXPECT_TRUE(Succeeds(check_local_axes(mesh, {})));
  EXPECT_TRUE(Succeeds(check_local_axes(mesh, {"dp"})));
  EXPECT_TRUE(Succeeds(check_local_axes(mesh, {"cp", "dp"})));
  EXPECT_TRUE(Succeeds(check_local_axes(mesh, {"dp", "cp", "tp"})));
  EXPECT_TRUE(FailsWith(check_local_axes(mesh, {"tp"}),
                        ErrorKind::InvalidArgument,
                        {"must come before all global axes", "local_axes=(tp)",
                         "mesh=(dp, cp, tp)"}));
  EXPECT_TRUE(FailsWith(check_local_axes(mesh, {"dp", "dp"}),
                        ErrorKind::InvalidArgument, {"duplicate", "dp"}));
  EXPECT_TRUE(FailsWith(check_local_axes(mesh, {"ep"}),
                        ErrorKind::InvalidArgument,
                        {"not present in this mesh", "ep"}));
}

TEST(LocalAxesTest, AxisOutsideTheMeshHasNoPolicy) {
  GlobalContext ctx;
  ctx.local.mesh_axes = std::vector<std::string>{"dp", "tp"};
  ctx.local_axes = {"dp"};
  EXPECT_FALSE(*axis_is_global(ctx, "dp"));
  EXPECT_TRUE(*axis_is_global(ctx, "tp"));
  EXPECT_TRUE(FailsWith(axis_is_global(ctx, "ep"), ErrorKind::SpmdTypeError,
                        {"ep", "not in the current mesh"}));
  EXPECT_FALSE(*axis_is_global(local_region(ctx), "tp"));
}

// ---- local_map / no_typecheck boundaries (§12.3)
// ---------------------------------

BoundaryType Types(std::string_view map) {
  BoundaryType b;
  b.entries = *TensorType::parse_entries(map);
  return b;
}

TEST(LocalMapTest, Z020_OutputsStampedWithOutTypes) {
  // local_map(in_types=({tp: S(0)}, {tp: R}), out_types={tp: S(1)}) on x @ w.
  Shape xs = Shape::of({4, 3}), ws = Shape::of({3, 5}), ys = Shape::of({4, 5});
  auto in = check_boundary(
      {{true, GT("{tp: S(0)}", xs), xs}, {true, GT("{tp: R}", ws), ws}},
      {Types("{tp: S(0)}"), Types("{tp: R}")}, "input", "fn");
  ASSERT_TRUE(Succeeds(in));
  // The body runs locally: V @ R -> V, no spec.
  GlobalContext body = local_region(GlobalContext{});
  auto y = infer_global("matmul",
                        {GlobalOperand::tensor((*in)[0], xs),
                         GlobalOperand::tensor((*in)[1], ws)},
                        {}, body);
  ASSERT_TRUE(Succeeds(y));
  EXPECT_EQ(y->type.to_string(), "{tp: V}");
  auto out = stamp_outputs({{true, y->type, ys}}, {Types("{tp: S(1)}")}, "fn");
  ASSERT_TRUE(Succeeds(out));
  EXPECT_EQ((*out)[0]->to_string(), "{tp: S(1)} PartitionSpec(None, tp)");
}

TEST(LocalMapTest, Z021_InputMismatch) {
  Shape s = Shape::of({4});
  auto r = check_boundary({{true, GT("{tp: R}", s), s}}, {Types("{tp: V}")},
                          "input", "fn");
  EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                        {"local_map[fn]", "input 0", "mismatch on axis tp",
                         "has R", "expected V"}));
}

TEST(LocalMapTest, Z023_InferAtALeaf) {
  Shape s = Shape::of({4});
  BoundaryType infer;
  infer.kind = BoundaryType::Kind::Infer;
  auto r =
      check_boundary({{true, GT("{tp: R}", s), s}}, {infer}, "input", "fn");
  EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                        {"Infer", "only allowed as the bare in_types"}));
  // The bare Infer passes inputs through unchecked.
  EXPECT_TRUE(Succeeds(
      check_boundary({{true, GT("{tp: R}", s), s}}, {}, "input", "fn", true)));
}

TEST(LocalMapTest, Z024_NoTypecheckNeedsOutTypes) {
  EXPECT_TRUE(FailsWith(check_no_typecheck_boundary(true, false),
                        ErrorKind::UsageError, {"out_types is required"}));
  EXPECT_TRUE(Succeeds(check_no_typecheck_boundary(true, true)));
  EXPECT_TRUE(Succeeds(check_no_typecheck_boundary(false, false)));
}

TEST(LocalMapTest, StructureAndTensorLeaves) {
  Shape s = Shape::of({4});
  BoundaryType none;
  none.kind = BoundaryType::Kind::NonTensor;
  EXPECT_TRUE(FailsWith(
      check_boundary({{true, GT("{tp: R}", s), s}}, {none}, "output", "fn"),
      ErrorKind::SpmdTypeError, {"output 0 is a tensor", "None"}));
  EXPECT_TRUE(FailsWith(check_boundary({{false, std::nullopt, {}}},
                                       {Types("{tp: R}")}, "input", "fn"),
                        ErrorKind::SpmdTypeError, {"input 0 is not a tensor"}));
  EXPECT_TRUE(FailsWith(check_boundary({}, {Types("{tp: R}")}, "input", "fn"),
                        ErrorKind::SpmdTypeError,
                        {"structure does not match", "1 leaves for 0"}));
  // A bare PartitionSpec leaf infers V for its axes.
  BoundaryType spec;
  spec.kind = BoundaryType::Kind::Spec;
  spec.spec = *PartitionSpec::parse("(tp)");
  auto r = check_boundary({{true, std::nullopt, s}}, {spec}, "output", "fn");
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ((*r)[0]->to_string(), "{tp: S(0)} PartitionSpec(tp)");
}

TEST(LocalMapTest, Z019_LeavingGlobalDropsSpecAndReenteringNeedsOne) {
  // A V result of a local region is rejected by global code until re-stamped.
  Shape s = Shape::of({4, 3});
  auto y = infer_global("add",
                        {G("{tp: S(0)}", {4, 3}), GlobalOperand::weak_scalar()},
                        {}, local_region(GlobalContext{}));
  ASSERT_TRUE(Succeeds(y));
  auto again = infer_global("relu", {GlobalOperand::tensor(y->type, s)}, {});
  EXPECT_TRUE(
      FailsWith(again, ErrorKind::SpmdTypeError, {"no PartitionSpec entry"}));
  auto stamped = assert_global(y->type, GT("{tp: S(0)}", s));
  ASSERT_TRUE(Succeeds(stamped));
  auto z = infer_global("relu", {GlobalOperand::tensor(*stamped, s)}, {});
  ASSERT_TRUE(Succeeds(z));
  EXPECT_EQ(z->type.to_string(), "{tp: S(0)} PartitionSpec(tp, None)");
}

// The innermost-axis rule on its own (the plugin calls it with the tuple it
// tracks): only the last axis of a dim's tuple may be redistributed.
TEST(CheckInnermost, OnlyTheLastAxisOfTheTuple) {
  EXPECT_TRUE(check_innermost("all_gather", "tp", {"dp", "tp"}, 0).ok());
  EXPECT_TRUE(check_innermost("all_gather", "tp", {"tp"}, 1).ok());
  EXPECT_TRUE(check_innermost("all_gather", "ep", {"dp", "tp"}, 0).ok());
  EXPECT_TRUE(check_innermost("all_gather", "tp", {}, 0).ok());
  auto r = check_innermost("all_gather", "dp", {"dp", "tp"}, 0);
  EXPECT_TRUE(FailsWith(r, ErrorKind::RedistributeError,
                        {"all_gather on axis dp", "not the innermost",
                         "(dp, tp)", "(dim 0)", "innermost axis (tp)"}));
  EXPECT_EQ(r.error().axis, "dp");
  EXPECT_NE(r.error().fix.find("all_gather on tp"), std::string::npos);
  // Middle of three.
  EXPECT_TRUE(
      FailsWith(check_innermost("reduce_scatter", "tp", {"dp", "tp", "ep"}, 2),
                ErrorKind::RedistributeError,
                {"(dp, tp, ep)", "(dim 2)", "innermost axis (ep)"}));
}

// A collective over a flattened axis (dp_cp = dp x cp) acts on its
// components; they must be the innermost axes of the dim's tuple, in order.
TEST(CheckInnermost, FlattenedGroupMustBeTheInnermostSuffixInOrder) {
  const std::vector<std::string> dp_cp = {"dp", "cp"};
  EXPECT_TRUE(
      check_innermost_group("all_gather", "dp_cp", dp_cp, {"dp", "cp"}, 0)
          .ok());
  EXPECT_TRUE(
      check_innermost_group("all_gather", "dp_cp", dp_cp, {"tp", "dp", "cp"}, 0)
          .ok());
  // Only one component on the dim: it must still be innermost.
  EXPECT_TRUE(
      check_innermost_group("all_gather", "dp_cp", dp_cp, {"tp", "cp"}, 0)
          .ok());
  EXPECT_TRUE(FailsWith(
      check_innermost_group("all_gather", "dp_cp", dp_cp, {"cp", "tp"}, 1),
      ErrorKind::RedistributeError,
      {"all_gather on axis dp_cp", "not the innermost axes, in order",
       "(cp, tp)", "(dim 1)", "innermost axis (tp)"}));
  // The components in the other order on the dim.
  auto r = check_innermost_group("all_gather", "dp_cp", dp_cp, {"cp", "dp"}, 0);
  EXPECT_TRUE(FailsWith(r, ErrorKind::RedistributeError, {"(cp, dp)"}));
  EXPECT_EQ(r.error().axis, "dp");
  // A component sits outside the innermost run.
  EXPECT_TRUE(FailsWith(check_innermost_group("all_gather", "dp_cp", dp_cp,
                                              {"dp", "tp", "cp"}, 0),
                        ErrorKind::RedistributeError, {"(dp, tp, cp)"}));
}

// The plugin's global-mode collective input checks (tracked shard dims).
TEST(CompareShardDims, ResolvesWithRankAndStaysUnknownAcrossSignsWithout) {
  EXPECT_EQ(compare_shard_dims(-1, 2, 3L), DimMatch::Same);
  EXPECT_EQ(compare_shard_dims(-1, 1, 3L), DimMatch::Different);
  EXPECT_EQ(compare_shard_dims(0, 0, std::nullopt), DimMatch::Same);
  EXPECT_EQ(compare_shard_dims(0, 1, std::nullopt), DimMatch::Different);
  EXPECT_EQ(compare_shard_dims(-1, -2, std::nullopt), DimMatch::Different);
  EXPECT_EQ(compare_shard_dims(-1, 1, std::nullopt), DimMatch::Unknown);
}

TEST(CheckShardedInput, SrcNamingAnotherDimIsAnErrorWithTheShardDim) {
  auto r = check_sharded_input(Call(C::AllGather, S(1), R), "tp", 0, 2L);
  ASSERT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                        {"all_gather expects its input sharded on dim 1 on "
                         "axis tp (src = S(1)), but it is sharded on dim 0 "
                         "(S(0))",
                         "spmd::all_gather(x, tp, S(0), R)"}));
  EXPECT_EQ(r.error().axis, "tp");
  EXPECT_EQ(r.error().expected, "S(1)");
  EXPECT_EQ(r.error().actual, "S(0)");
  EXPECT_TRUE(src_names_other_dim(Call(C::AllGather, S(1), R), 0, 2L));
}

TEST(CheckShardedInput, SameDimOrGatherDimOrExpertModePasses) {
  EXPECT_TRUE(
      Succeeds(check_sharded_input(Call(C::AllGather, S(-1), R), "tp", 1, 2L)));
  // A gather dim given: src S(i) is not compared with the shard.
  EXPECT_TRUE(Succeeds(check_sharded_input(
      WithDim(Call(C::AllGather, S(1), R), 1), "tp", 0, 2L)));
  CollectiveCall expert = Call(C::AllReduce, P, R);
  expert.expert_mode = true;
  EXPECT_TRUE(Succeeds(check_sharded_input(expert, "tp", 0, 2L)));
  // Opposite signs without a rank: not decided here (rank-dependent).
  EXPECT_TRUE(
      Succeeds(check_sharded_input(Call(C::AllGather, S(-1), R), "tp", 0, {})));
}

TEST(CheckShardedInput, AShardIsNotAPendingSum) {
  auto r = check_sharded_input(Call(C::AllReduce, P, R), "tp", 1, {});
  ASSERT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                        {"all_reduce with src = P on a tensor sharded on dim "
                         "1 on axis tp (S(1)): a shard is not a pending sum"}));
  EXPECT_EQ(r.error().expected, "P");
  EXPECT_EQ(r.error().actual, "S(1)");
  auto re = check_sharded_input(Call(C::Reinterpret, V, P), "dp", 0, {});
  ASSERT_TRUE(FailsWith(re, ErrorKind::SpmdTypeError,
                        {"reinterpret as P of a tensor sharded on dim 0"}));
  EXPECT_EQ(re.error().axis, "dp");
}

TEST(SrcShardRankDependent, ExplainsOnlyOppositeSignsWithoutRank) {
  auto why = src_shard_rank_dependent(Call(C::AllGather, S(-1), R), 0, {});
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->message,
            "src S(-1) and its shard S(0) are one dim only for some ranks, "
            "and its rank is unknown");
  EXPECT_FALSE(src_shard_rank_dependent(Call(C::AllGather, S(-1), R), 0, 2L));
  EXPECT_FALSE(src_shard_rank_dependent(Call(C::AllGather, S(1), R), 0, {}));
}

TEST(ShardDimNeeded, ADeclaredVSummedAsPNeedsNoDim) {
  using W = ShardLossReason;
  // src = P: a declared V is summed as it is (spec 7.2's implicit V -> P) ...
  EXPECT_FALSE(shard_dim_needed(Call(C::AllReduce, P, R), W::DeclaredV));
  EXPECT_FALSE(shard_dim_needed(Call(C::ReduceScatter, P, S(0)), W::DeclaredV));
  // ... a V whose dim an op lost may be a shard (issue 11): needed.
  EXPECT_TRUE(shard_dim_needed(Call(C::AllReduce, P, R), W::OpDidNotSay));
  EXPECT_TRUE(shard_dim_needed(Call(C::AllReduce, P, I), W::RuleUndecided));
  // src = S(i) checks the dim, declared V or not.
  EXPECT_TRUE(shard_dim_needed(Call(C::AllGather, S(0), R), W::DeclaredV));
  // src = V and expert mode: no.
  EXPECT_FALSE(shard_dim_needed(Call(C::AllGather, V, R), W::OpDidNotSay));
  CollectiveCall expert = Call(C::AllReduce, P, R);
  expert.expert_mode = true;
  EXPECT_FALSE(shard_dim_needed(expert, W::OpDidNotSay));
}

TEST(CheckUnmaskedRowsInput, RowsOutsideTheShardAreNotAPendingSum) {
  auto r = check_unmasked_rows_input(Call(C::AllReduce, P, R), "tp");
  ASSERT_TRUE(FailsWith(
      r, ErrorKind::SpmdTypeError,
      {"all_reduce with src = P on rows looked up in a table sharded by rows "
       "on axis tp (S(0))",
       "the sum over tp would add every rank's row", "masked_fill"}));
  EXPECT_EQ(r.error().axis, "tp");
  EXPECT_EQ(r.error().expected, "P");
  EXPECT_EQ(r.error().actual, "V");
  EXPECT_TRUE(
      FailsWith(check_unmasked_rows_input(Call(C::Reinterpret, V, P), "tp"),
                ErrorKind::SpmdTypeError, {"reinterpret as P of rows"}));
  EXPECT_TRUE(
      Succeeds(check_unmasked_rows_input(Call(C::AllGather, S(0), R), "tp")));
  CollectiveCall expert = Call(C::AllReduce, P, R);
  expert.expert_mode = true;
  EXPECT_TRUE(Succeeds(check_unmasked_rows_input(expert, "tp")));
}

TEST(CheckAssertedShardDim, AnotherKnownDimIsAnError) {
  auto r = check_asserted_shard_dim("tp", 0, 1, {});
  ASSERT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                        {"it is sharded on dim 0, not 1"}));
  EXPECT_EQ(r.error().axis, "tp");
  EXPECT_EQ(r.error().expected, "S(1)");
  EXPECT_EQ(r.error().actual, "S(0)");
  EXPECT_TRUE(Succeeds(check_asserted_shard_dim("tp", -1, 2, 3L)));
  EXPECT_TRUE(Succeeds(check_asserted_shard_dim("tp", -1, 2, {})));
  EXPECT_TRUE(FailsWith(check_asserted_shard_dim("tp", -1, 1, 3L),
                        ErrorKind::SpmdTypeError, {"dim -1, not 1"}));
}

TEST(CheckAssertedPartial, AKnownShardIsNoPendingSum) {
  auto r = check_asserted_partial("tp", 1);
  ASSERT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                        {"sharded on dim 1: a shard is not a pending sum"}));
  EXPECT_EQ(r.error().axis, "tp");
  EXPECT_EQ(r.error().expected, "P");
  EXPECT_EQ(r.error().actual, "S(1)");
  EXPECT_NE(r.error().fix.find("tp = S(1)"), std::string::npos);
  EXPECT_NE(r.error().fix.find("spmd::all_gather(x, tp, S(1), R)"),
            std::string::npos);
}

TEST(ShardLoss, NamesTheOperandTheAxisAndTheOp) {
  TypeError e =
      shard_loss(ShardLossReason::OperandRankUnknown, "matmul", "tp", 1, -1);
  EXPECT_EQ(e.axis, "tp");
  EXPECT_EQ(e.message,
            "args[1] is S(-1) but its rank is unknown, so matmul cannot place "
            "the shard");
  EXPECT_EQ(e.fix,
            "annotate the operand's rank, e.g. [[spmd::type(tp = S(-1), "
            "spmd::rank(3))]]");
  EXPECT_EQ(
      shard_loss(ShardLossReason::OperandShardUnknown, "add", "dp", 0).message,
      "args[0] is V on this axis with no known shard dim");
  EXPECT_EQ(shard_loss(ShardLossReason::RuleNeedsRank, "view", "tp", 2).message,
            "args[2] has no known rank, which the sharding rule of view needs");
  EXPECT_NE(shard_loss(ShardLossReason::RuleUndecided, "view", "tp")
                .message.find("sharding rule for view could not decide"),
            std::string::npos);
  EXPECT_EQ(shard_loss(ShardLossReason::OpRejected, "mm", "tp").message,
            "the op is rejected on this axis");
  EXPECT_EQ(
      shard_loss(ShardLossReason::ResultRankUnknown, "linear", "tp").message,
      "the result's rank is unknown");
  EXPECT_EQ(shard_loss(ShardLossReason::OpDidNotSay, "", "tp").message,
            "the op that made it did not say where");
  EXPECT_EQ(shard_loss(ShardLossReason::DeclaredV, "", "tp").message,
            "its type says V, not S(i)");
}

}  // namespace
}  // namespace spmd::core::testing
