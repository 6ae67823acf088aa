// Mesh axes as structure (spec §10.3, §6.2, §9.5): the axis table,
// reinterpret_mesh (cases X016-X023), the automatic cross-mesh lift (M024 and
// the dense/expert meshes of an MoE layer), the axis-mismatch hints (X024,
// X026) and collectives over a flattened axis (C049-C053). Expectations come
// from the spec and the cases file.
#include <memory>

#include "core_test_util.h"

namespace spmd::core::testing {
namespace {

MeshAxis Of(long size, long stride) { return MeshAxis::of(size, stride); }

// 16 ranks: dp(2:8) x cp(2:4) x tp(4:1), dp_cp = dp x cp; an expert mesh
// edp(4:4) x ep(2:2) x etp(2:1) over the same ranks (parallel folding).
std::shared_ptr<AxisTable> Table16() {
  auto t = std::make_shared<AxisTable>();
  for (auto [name, axis] :
       std::vector<std::pair<const char*, MeshAxis>>{{"dp", Of(2, 8)},
                                                     {"cp", Of(2, 4)},
                                                     {"tp", Of(4, 1)},
                                                     {"dp_cp", Of(4, 4)},
                                                     {"edp", Of(4, 4)},
                                                     {"ep", Of(2, 2)},
                                                     {"etp", Of(2, 1)},
                                                     {"world", Of(16, 1)}})
    EXPECT_TRUE(t->add(name, axis).ok()) << name;
  return t;
}

// 8 ranks: dense dp(4:2) x tp(2:1); expert edp(2:4) x ep(2:2) x etp(2:1).
std::shared_ptr<AxisTable> Table8() {
  auto t = std::make_shared<AxisTable>();
  for (auto [name, axis] :
       std::vector<std::pair<const char*, MeshAxis>>{{"dp", Of(4, 2)},
                                                     {"tp", Of(2, 1)},
                                                     {"edp", Of(2, 4)},
                                                     {"ep", Of(2, 2)},
                                                     {"etp", Of(2, 1)}})
    EXPECT_TRUE(t->add(name, axis).ok()) << name;
  return t;
}

InferenceContext On(std::vector<std::string> mesh,
                    std::shared_ptr<AxisTable> table, bool strict = true) {
  InferenceContext c;
  c.strict = strict;
  if (!mesh.empty()) c.mesh_axes = std::move(mesh);
  c.axis_table = std::move(table);
  return c;
}

// ---- MeshAxis order and identity -----------------------------------------

TEST(MeshAxisOrder, SubAxisOperators) {
  EXPECT_TRUE(Of(2, 8) <= Of(4, 4));
  EXPECT_TRUE(Of(4, 4) >= Of(2, 4));
  EXPECT_FALSE(Of(4, 1) <= Of(4, 4));  // X013
  EXPECT_TRUE(Of(4, 1) <= Of(4, 1));
  EXPECT_FALSE(Of(4, 1).is_proper_sub_axis_of(Of(4, 1)));
  EXPECT_TRUE(Of(2, 1).is_proper_sub_axis_of(Of(4, 1)));
  EXPECT_EQ(MeshAxis::from_layout({{2, 8}, {2, 1}}).max_stride(), 8);
  EXPECT_EQ(MeshAxis().max_stride(), 0);
}

TEST(MeshAxisOrder, LayoutLessIsAStrictWeakOrderOnIdentity) {
  LayoutLess less;
  EXPECT_FALSE(less(Of(4, 1), MeshAxis::from_layout({{2, 2}, {2, 1}})));
  EXPECT_FALSE(less(MeshAxis::from_layout({{2, 2}, {2, 1}}), Of(4, 1)));
  EXPECT_TRUE(less(Of(2, 1), Of(4, 1)) != less(Of(4, 1), Of(2, 1)));
  EXPECT_EQ(std::hash<MeshAxis>()(Of(4, 1)),
            std::hash<MeshAxis>()(MeshAxis::from_layout({{2, 2}, {2, 1}})));
}

TEST(AxisTable, NamesAndIdentity) {
  auto t = Table8();
  EXPECT_TRUE(t->same_axis("tp", "etp"));  // one layout, two names
  EXPECT_FALSE(t->same_axis("tp", "ep"));
  EXPECT_TRUE(t->same_axis("zz", "zz"));
  EXPECT_FALSE(t->same_axis("zz", "tp"));
  EXPECT_EQ(t->names_of(Of(2, 1)), (std::vector<std::string>{"etp", "tp"}));
  ASSERT_NE(t->find("dp"), nullptr);
  EXPECT_EQ(*t->find("dp"), Of(4, 2));
  EXPECT_EQ(t->find("nope"), nullptr);
  EXPECT_TRUE(t->add("dp", Of(4, 2)).ok());  // same layout again: no-op
  EXPECT_TRUE(FailsWith(t->add("dp", Of(2, 4)), ErrorKind::InvalidArgument,
                        {"'dp'", "(4:2)", "(2:4)"}));
  EXPECT_EQ(*t->find("dp"), Of(4, 2));  // unchanged after the error
}

// ---- reinterpret_mesh (§10.3) --------------------------------------------

struct ReinterpretRow {
  const char* id;
  const char* src;
  const char* dst;                 // a type map, or axes "a,b" (axes-only)
  const char* want;                // expected map, or nullptr for an error
  std::vector<std::string> words;  // phrases of the error
};

std::vector<std::string> SplitAxes(std::string s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= s.size()) {
    std::size_t comma = s.find(',', start);
    if (comma == std::string::npos) comma = s.size();
    out.push_back(s.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

std::vector<ReinterpretRow> ReinterpretRows() {
  return {
      {"X016_mixed_source_group",
       "{dp: V, cp: R}",
       "{dp_cp: V}",
       nullptr,
       {"would need to be flattened", "dp has type V while cp has type R"}},
      {"X017_parallel_folding",
       "{dp: V, cp: V, tp: V}",
       "{edp: V, ep: V, etp: V}",
       nullptr,
       {}},
      {"X020_axes_only_mixed",
       "{dp: V, cp: I}",
       "dp_cp",
       nullptr,
       {"dp has type V while cp has type I", "current mesh"}},
      {"X021_axes_only_flatten", "{dp: R, cp: R}", "dp_cp", "{dp_cp: R}", {}},
      {"X023_shared_axis_changes_type",
       "{dp: R, cp: R, tp: V}",
       "{dp_cp: R, tp: R}",
       nullptr,
       {"Shared mesh axis tp changes local type from V to R"}},
      {"flatten_full_form", "{dp: R, cp: R}", "{dp_cp: R}", "{dp_cp: R}", {}},
      {"same_region_other_name", "{dp: V, cp: V}", "{edp: V}", "{edp: V}", {}},
      {"split_full_form",
       "{dp_cp: V, tp: P}",
       "{dp: V, cp: V, tp: P}",
       "{cp: V, dp: V, tp: P}",
       {}},
      {"split_axes_only",
       "{dp_cp: V, tp: P}",
       "dp,cp,tp",
       "{cp: V, dp: V, tp: P}",
       {}},
      {"destination_group_type_differs",
       "{dp: R, cp: R}",
       "{dp_cp: V}",
       nullptr,
       {"Source group {dp, cp} has type R", "{dp_cp} has type V"}},
      {"destination_mixed_types",
       "{dp_cp: V}",
       "{dp: V, cp: R}",
       nullptr,
       {"mixed local types in the destination"}},
      {"different_regions_same_size",
       "{dp: V, cp: V}",
       "{tp: V}",
       nullptr,
       {"flatten to different rank regions"}},
      {"unrelated_sizes",
       "{tp: V}",
       "{ep: V}",
       nullptr,
       {"do not appear to be related"}},
      {"no_destination",
       "{dp: V, cp: V, tp: V}",
       "{tp: V}",
       nullptr,
       {"incomplete"}},
      {"no_destination_axes_only",
       "{dp: V, cp: V, tp: V}",
       "tp",
       nullptr,
       {"no destination axis"}},
      {"pass_through", "{tp: V}", "dp,cp,tp", "{tp: V}", {}},
      {"unknown_axis", "{zz: V}", "tp", nullptr, {"'zz' has no known layout"}},
      {"whole_world", "{dp: P, cp: P, tp: P}", "world", "{world: P}", {}},
      {"whole_world_mixed",
       "{dp: P, cp: P, tp: R}",
       "world",
       nullptr,
       {"have type P while tp has type R"}},
  };
}

void PrintTo(const ReinterpretRow& r, std::ostream* os) { *os << r.id; }
class ReinterpretMesh : public ::testing::TestWithParam<ReinterpretRow> {};

TEST_P(ReinterpretMesh, Spec10_3) {
  const ReinterpretRow& row = GetParam();
  auto table = Table16();
  Result<TensorType> r =
      row.dst[0] == '{'
          ? reinterpret_mesh(TT(row.src), TT(row.dst), *table)
          : reinterpret_mesh(TT(row.src), SplitAxes(row.dst), *table);
  if (std::string(row.id) == "X017_parallel_folding") {
    // {dp(2:8), cp(2:4), tp(4:1)} -> {edp(4:4), ep(2:2), etp(2:1)}.
    ASSERT_TRUE(Gives(r, "{edp: V, ep: V, etp: V}"));
    return;
  }
  if (row.want != nullptr) {
    EXPECT_TRUE(Gives(r, row.want));
  } else {
    EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, row.words));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ReinterpretMesh,
                         ::testing::ValuesIn(ReinterpretRows()),
                         [](const auto& info) { return info.param.id; });

// ---- reinterpret_mesh of a PartitionSpec (§10.3 step 5) -------------------

struct SpecRow {
  const char* id;
  const char* src;   // type map
  const char* spec;  // PartitionSpec of the source
  const char* dst;   // a type map, or axes "a,b" (axes-only)
  const char* want;  // GlobalType::to_string, or nullptr for an error
  std::vector<std::string> words;
};

std::vector<SpecRow> SpecRows() {
  return {
      {"flatten_spec_X_example",
       "{dp: V, cp: V, tp: R}",
       "((dp, cp), None)",
       "{dp_cp: V, tp: R}",
       "{dp_cp: S(0), tp: R} PartitionSpec(dp_cp, None)",
       {}},
      {"split_spec",
       "{dp_cp: V, tp: R}",
       "(None, dp_cp)",
       "dp,cp,tp",
       "{cp: S(1), dp: S(1), tp: R} PartitionSpec(None, (dp, cp))",
       {}},
      {"parallel_folding",
       "{dp: V, cp: V, tp: V}",
       "((dp, cp), tp)",
       "edp,ep,etp",
       "{edp: S(0), ep: S(1), etp: S(1)} PartitionSpec(edp, (ep, etp))",
       {}},
      {"shared_axis_renamed",
       "{dp: V, cp: V, tp: V}",
       "(tp, (dp, cp))",
       "{dp_cp: V, tp: V}",
       "{dp_cp: S(1), tp: S(0)} PartitionSpec(tp, dp_cp)",
       {}},
      {"segments_in_one_entry",
       "{dp: V, cp: V, tp: V}",
       "((dp, cp, tp))",
       "edp,ep,etp",
       "{edp: S(0), ep: S(0), etp: S(0)} "
       "PartitionSpec((edp, ep, etp))",
       {}},
      {"component_alone",
       "{dp: V, cp: V, tp: R}",
       "(cp, dp)",
       "dp_cp,tp",
       nullptr,
       {"reinterpret_mesh cannot carry PartitionSpec(cp, dp)",
        "dim 0 (cp): axis cp has no counterpart in the destination mesh",
        "source group {dp, cp}, which becomes {dp_cp}"}},
      {"reversed_group",
       "{dp: V, cp: V, tp: R}",
       "((cp, dp), None)",
       "dp_cp,tp",
       nullptr,
       {"only in their outer-to-inner order (dp, cp)"}},
      {"group_cut_by_entry",
       "{dp: V, cp: V, tp: V}",
       "(dp, (cp, tp))",
       "edp,ep,etp",
       nullptr,
       {"axis dp has no counterpart"}},
      {"no_spec_no_change", "{dp: R, cp: R}", "", "dp_cp", "{dp_cp: R}", {}},
  };
}

void PrintTo(const SpecRow& r, std::ostream* os) { *os << r.id; }
class ReinterpretMeshSpec : public ::testing::TestWithParam<SpecRow> {};

TEST_P(ReinterpretMeshSpec, Spec10_3_Step5) {
  const SpecRow& row = GetParam();
  GlobalType src;
  src.local = TT(row.src);
  if (row.spec[0] != '\0') src.spec = PartitionSpec::parse(row.spec).value();
  std::optional<TensorType> dst;
  std::vector<std::string> axes;
  if (row.dst[0] == '{')
    dst = TT(row.dst);
  else
    axes = SplitAxes(row.dst);
  Result<GlobalType> r = reinterpret_mesh_global(src, dst, axes, *Table16());
  if (row.want != nullptr) {
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r.value().to_string(), row.want);
  } else {
    EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, row.words));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, ReinterpretMeshSpec,
                         ::testing::ValuesIn(SpecRows()),
                         [](const auto& info) { return info.param.id; });

TEST(ReinterpretMeshSpecDense, DpBecomesEdpEpOn8Ranks) {
  // Table8: dense dp(4:2) x tp(2:1), expert edp(2:4) x ep(2:2) x etp(2:1).
  GlobalType src;
  src.local = TT("{dp: V, tp: V}");
  src.spec = PartitionSpec::parse("(dp, tp)").value();
  Result<GlobalType> r = reinterpret_mesh_global(
      src, std::nullopt, {"edp", "ep", "etp"}, *Table8());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r.value().spec->to_string(), "PartitionSpec((edp, ep), etp)");
  // And back, with an unknown shard carried to the group's axes.
  GlobalType back = r.value();
  back.unknown_shards = {"etp"};
  Result<GlobalType> b =
      reinterpret_mesh_global(back, std::nullopt, {"dp", "tp"}, *Table8());
  ASSERT_TRUE(b.ok()) << b.error().message;
  EXPECT_EQ(b.value().spec->to_string(), "PartitionSpec(dp, tp)");
  EXPECT_EQ(b.value().unknown_shards, (std::set<std::string>{"tp"}));
  // A map error comes first (the spec is not looked at).
  GlobalType mixed;
  mixed.local = TT("{edp: R, ep: V, etp: R}");
  mixed.spec = PartitionSpec::parse("(ep, None)").value();
  EXPECT_TRUE(FailsWith(
      reinterpret_mesh_global(mixed, std::nullopt, {"dp", "tp"}, *Table8()),
      ErrorKind::SpmdTypeError, {"edp has type R while ep has type V"}));
}

// X019 (reinterpret_mesh of an untyped tensor) is the runtime's: the core
// function takes a type map, so "untyped" cannot reach it.

// ---- automatic cross-mesh lift (§6.2) ------------------------------------

TEST(CrossMeshLift, M024_flattened_operand_cannot_cover_tp) {
  EXPECT_TRUE(FailsWith(
      infer("add", {Ten("{dp_cp: V}", 0), Ten("{dp_cp: V}", 1)},
            On({"dp", "cp", "tp"}, Table16())),
      ErrorKind::SpmdTypeError,
      {"args[0] cannot be auto-reinterpreted from {dp_cp} to the current "
       "mesh {dp, cp, tp}",
       "do not appear to be related"}));
}

TEST(CrossMeshLift, FlattenedOperandSplitsOntoMesh) {
  EXPECT_TRUE(Gives(
      infer("add",
            {Ten("{dp_cp: V, tp: R}", 0), Ten("{dp: R, cp: R, tp: R}", 1)},
            On({"dp", "cp", "tp"}, Table16())),
      "{cp: V, dp: V, tp: R}"));
}

TEST(CrossMeshLift, SplitOperandsFlattenOntoMesh) {
  EXPECT_TRUE(Gives(
      infer("mul",
            {Ten("{dp: V, cp: V, tp: R}", 0), Ten("{dp_cp: R, tp: V}", 1)},
            On({"dp_cp", "tp"}, Table16())),
      "{dp_cp: V, tp: V}"));
}

TEST(CrossMeshLift, MixedGroupCannotFlatten) {
  EXPECT_TRUE(FailsWith(
      infer("add",
            {Ten("{dp: V, cp: R, tp: R}", 0), Ten("{dp_cp: V, tp: R}", 1)},
            On({"dp_cp", "tp"}, Table16())),
      ErrorKind::SpmdTypeError,
      {"args[0] cannot be auto-reinterpreted",
       "dp has type V while cp has "
       "type R"}));
}

// The MoE layer's meshes: a token tensor typed on the dense mesh enters the
// expert mesh (dp = edp x ep, tp is etp) and comes back.
TEST(CrossMeshLift, DenseToExpertAndBack) {
  auto t = Table8();
  EXPECT_TRUE(
      Gives(infer("add",
                  {Ten("{dp: V, tp: R}", 0), Ten("{edp: V, ep: V, etp: R}", 1)},
                  On({"edp", "ep", "etp"}, t)),
            "{edp: V, ep: V, etp: R}"));
  EXPECT_TRUE(Gives(
      infer("relu", {Ten("{edp: V, ep: V, etp: R}", 0)}, On({"dp", "tp"}, t)),
      "{dp: V, tp: R}"));
  // A shared axis under another name keeps its type and takes the mesh name.
  EXPECT_TRUE(Gives(infer("add",
                          {Ten("{edp: R, ep: R, etp: P}", 0),
                           Ten("{edp: R, ep: R, etp: P}", 1)},
                          On({"dp", "tp"}, t)),
                    "{dp: R, tp: P}"));
  // ep alone on V, edp on R: dp would need one type.
  EXPECT_TRUE(FailsWith(
      infer("relu", {Ten("{edp: R, ep: V, etp: R}", 0)}, On({"dp", "tp"}, t)),
      ErrorKind::SpmdTypeError,
      {"cannot be auto-reinterpreted from {edp, ep, etp} to the current mesh "
       "{dp, tp}",
       "edp has type R while ep has type V"}));
}

TEST(CrossMeshLift, OnlyWithATableAndAMesh) {
  // No table: names are compared by spelling, as before (missing axis).
  EXPECT_TRUE(FailsWith(infer("add", {Ten("{dp: V, tp: R}", 0),
                                      Ten("{edp: V, ep: V, etp: R}", 1)}),
                        ErrorKind::SpmdTypeError, {"missing axis"}));
  // A table but no mesh: nothing is lifted.
  EXPECT_TRUE(FailsWith(
      infer("add",
            {Ten("{dp: V, tp: R}", 0), Ten("{edp: V, ep: V, etp: R}", 1)},
            On({}, Table8())),
      ErrorKind::SpmdTypeError, {"missing axis"}));
  // Operands on the mesh pass unchanged (including {}).
  EXPECT_TRUE(Gives(infer("add", {Ten("{dp: V, tp: R}", 0), Num(1)},
                          On({"dp", "tp"}, Table8())),
                    "{dp: V, tp: R}"));
}

TEST(CrossMeshLift, LiftFunctionDirectly) {
  auto t = Table16();
  EXPECT_TRUE(Gives(lift_to_mesh(TT("{}"), {"dp", "tp"}, *t), "{}"));
  EXPECT_TRUE(Gives(lift_to_mesh(TT("{tp: V}"), {"dp", "cp", "tp"}, *t),
                    "{tp: V}"));  // partial but on the mesh: unchanged
  EXPECT_TRUE(FailsWith(lift_to_mesh(TT("{zz: V}"), {"tp"}, *t),
                        ErrorKind::SpmdTypeError,
                        {"cannot be auto-reinterpreted", "no known layout"}));
}

// ---- hints (§9.5) ----------------------------------------------------------

TEST(AxisMismatchHint, X024_flattened_vs_split_suggests_reinterpret_mesh) {
  Result<TensorType> r =
      infer("add", {Ten("{dp_cp: V}", 0), Ten("{dp: R, cp: R}", 1)},
            On({}, Table16()));
  EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                        {"missing axis", "Hint:", "cross-mesh compatible",
                         "reinterpret_mesh", "{dp_cp} to axes {dp, cp}"}));
}

TEST(AxisMismatchHint, X026_sub_axis_and_missing_complement) {
  Result<TensorType> r =
      infer("add", {Ten("{dp: V, tp: V}", 0), Ten("{dp_cp: V, tp: V}", 1)},
            On({}, Table16()));
  EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                        {"missing axis", "Hint:",
                         "dp is a sub-axis of dp_cp (ranks {0, 8} vs {0, 4, "
                         "8, 12})",
                         "the operand with axes {dp, tp} is missing axis cp"}));
}

TEST(AxisMismatchHint, PartialOverlapListsMissingAxes) {
  // 8 ranks: a(2:4) b(2:2) c(2:1); ab = a x b, bc = b x c.
  AxisTable t;
  ASSERT_TRUE(t.add("a", Of(2, 4)).ok());
  ASSERT_TRUE(t.add("b", Of(2, 2)).ok());
  ASSERT_TRUE(t.add("c", Of(2, 1)).ok());
  ASSERT_TRUE(t.add("ab", Of(4, 2)).ok());
  ASSERT_TRUE(t.add("bc", Of(4, 1)).ok());
  std::string h = axis_mismatch_hint({TT("{ab: V}"), TT("{bc: V}")}, t);
  EXPECT_TRUE(Contains(h,
                       "The non-shared axes {ab} and {bc} partially "
                       "overlap"));
  EXPECT_TRUE(Contains(h, "the operand with axes {ab} is missing c"));
  EXPECT_TRUE(Contains(h, "the operand with axes {bc} is missing a"));
}

TEST(AxisMismatchHint, NoneForDisjointOrUnknownOrEqual) {
  auto t = Table16();
  EXPECT_EQ(axis_mismatch_hint({TT("{tp: V}"), TT("{tp: R}")}, *t), "");
  EXPECT_EQ(axis_mismatch_hint({TT("{zz: V}"), TT("{tp: R}")}, *t), "");
  // No table: no hint at all (the error is unchanged).
  Result<TensorType> r =
      infer("add", {Ten("{dp_cp: V}", 0), Ten("{dp: R, cp: R}", 1)});
  ASSERT_FALSE(r.ok());
  EXPECT_FALSE(Contains(AllText(r.error()), "Hint:"));
}

// ---- collectives over a flattened axis (C049-C053) -------------------------

// Mesh dp(2) x cp(3) = 6 ranks: dp(2:3), cp(3:1), dp_cp(6:1).
AxisTable Table6() {
  AxisTable t;
  EXPECT_TRUE(t.add("dp", Of(2, 3)).ok());
  EXPECT_TRUE(t.add("cp", Of(3, 1)).ok());
  EXPECT_TRUE(t.add("dp_cp", Of(6, 1)).ok());
  return t;
}

struct FlatRow {
  const char* id;
  CollectiveCall call;
  const char* input;  // nullptr = untyped
  bool strict;
  const char* want;  // nullptr = error
  std::vector<std::string> words;
};

std::vector<FlatRow> FlatRows() {
  using C = Collective;
  return {
      {"C049_all_reduce_P_to_R",
       Call(C::AllReduce, P, R),
       "{dp: P, cp: P}",
       true,
       "{cp: R, dp: R}",
       {}},
      {"C050_one_sub_axis_wrong",
       Call(C::AllReduce, P, R),
       "{dp: P, cp: R}",
       true,
       nullptr,
       {"cp"}},
      {"C051_sub_axis_missing_strict",
       Call(C::AllReduce, P, R),
       "{dp: P}",
       true,
       nullptr,
       {"tensor has no type for axis dp_cp"}},
      {"C051_permissive_is_transfer",
       Call(C::AllReduce, P, R),
       "{dp: P}",
       false,
       "{dp: P}",
       {}},
      {"C053_reduce_scatter_to_V",
       Call(C::ReduceScatter, P, V),
       "{dp: P, cp: P}",
       true,
       "{cp: V, dp: V}",
       {}},
      {"direct_axis",
       Call(C::AllReduce, P, R),
       "{dp_cp: P}",
       true,
       "{dp_cp: R}",
       {}},
      {"all_gather_V_to_R",
       Call(C::AllGather, V, R),
       "{dp: V, cp: V}",
       true,
       "{cp: R, dp: R}",
       {}},
      {"V_read_as_P",
       Call(C::AllReduce, P, R),
       "{dp: V, cp: P}",
       true,
       "{cp: R, dp: R}",
       {}},
  };
}

void PrintTo(const FlatRow& r, std::ostream* os) { *os << r.id; }
class FlattenedCollective : public ::testing::TestWithParam<FlatRow> {};

TEST_P(FlattenedCollective, TransferOnSubAxes) {
  const FlatRow& row = GetParam();
  AxisTable t = Table6();
  std::optional<TensorType> in;
  if (row.input) in = TT(row.input);
  Result<TensorType> r =
      transfer_on_axis(row.call, in, "dp_cp", row.strict, false, &t);
  if (row.want) {
    EXPECT_TRUE(Gives(r, row.want));
  } else {
    EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, row.words));
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, FlattenedCollective,
                         ::testing::ValuesIn(FlatRows()),
                         [](const auto& info) { return info.param.id; });

TEST(FlattenedCollective, ResolveCollectiveAxes) {
  AxisTable t = Table6();
  using V = std::vector<std::string>;
  // Outermost first (the flattened axis's rank order), not by name.
  EXPECT_EQ(resolve_collective_axes("dp_cp", TT("{dp: V, cp: V}"), t),
            (V{"dp", "cp"}));
  EXPECT_EQ(resolve_collective_axes("dp", TT("{dp: V, cp: V}"), t), (V{"dp"}));
  EXPECT_EQ(resolve_collective_axes("dp_cp", TT("{dp: V}"), t), std::nullopt);
  EXPECT_EQ(resolve_collective_axes("zz", TT("{dp: V}"), t), std::nullopt);
  AxisTable t8 = *Table8();
  EXPECT_EQ(resolve_collective_axes("etp", TT("{dp: V, tp: V}"), t8),
            (V{"tp"}));  // same layout, other name
}

TEST(FlattenedCollective, NoTableIsPlainTransfer) {
  Result<TensorType> r =
      transfer_on_axis(Call(Collective::AllReduce, P, R), TT("{dp: P, cp: P}"),
                       "dp_cp", true, false, nullptr);
  EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, {"dp_cp"}));
}

}  // namespace
}  // namespace spmd::core::testing
