// PartitionSpec, the S(i) sugar and spec refinement (spec §12.1, §8.1; cases
// A009-A026 of shared/cases/type-cases.md; Z001's operand check).
#include "global_test_util.h"

namespace spmd::core::testing {
namespace {

// ---- §12.1 normalisation ---------------------------------------------------

TEST(PartitionSpecTest, NormalisesEntries) {
  // None / one axis / ordered tuple; singleton axes dropped; an entry left
  // with one axis becomes that axis, with none becomes None.
  auto r = PartitionSpec::normalize(
      {std::nullopt, std::vector<std::string>{"dp", "tp"},
       std::vector<std::string>{"one", "ep"}, std::vector<std::string>{"one"}},
      [](std::string_view a) { return a == "one"; });
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r->to_string(), "PartitionSpec(None, (dp, tp), ep, None)");
  EXPECT_EQ(r->dim_of("tp"), 1);
  EXPECT_EQ(r->dim_of("ep"), 2);
  EXPECT_EQ(r->dim_of("one"), std::nullopt);
  EXPECT_TRUE(r->is_innermost("tp"));
  EXPECT_FALSE(r->is_innermost("dp"));
}

TEST(PartitionSpecTest, EmptyTupleIsInvalidArgument) {
  auto r = PartitionSpec::normalize({std::vector<std::string>{}});
  EXPECT_TRUE(FailsWith(r, ErrorKind::InvalidArgument,
                        {"dim 0", "empty tuple", "None"}));
}

TEST(PartitionSpecTest, AxisTwiceIsNotOrthogonal) {
  auto r = PartitionSpec::normalize(
      {std::vector<std::string>{"tp"}, std::vector<std::string>{"dp", "tp"}});
  EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError,
                        {"not orthogonal", "tp", "dim 0", "dim 1"}));
}

TEST(PartitionSpecTest, ParseAndPrintRoundTrip) {
  for (const char* text :
       {"PartitionSpec(tp, None)", "PartitionSpec((dp, tp), None)",
        "PartitionSpec()", "PartitionSpec(None, None, tp)"}) {
    auto r = PartitionSpec::parse(text);
    ASSERT_TRUE(Succeeds(r)) << text;
    EXPECT_EQ(r->to_string(), text);
  }
  EXPECT_EQ(PartitionSpec::parse("(tp, None)")->to_string(),
            "PartitionSpec(tp, None)");
  EXPECT_TRUE(FailsWith(PartitionSpec::parse("(tp, "), ErrorKind::ParseError,
                        {"column"}));
  EXPECT_TRUE(FailsWith(PartitionSpec::parse("((), None)"),
                        ErrorKind::InvalidArgument, {"empty tuple"}));
}

TEST(PartitionSpecTest, WithoutAndWithInnermost) {
  auto s = *PartitionSpec::parse("((dp, tp), None)");
  EXPECT_EQ(s.without("tp").to_string(), "PartitionSpec(dp, None)");
  EXPECT_EQ(s.without("dp").without("tp").to_string(),
            "PartitionSpec(None, None)");
  EXPECT_TRUE(s.without("dp").without("tp").all_none());
  EXPECT_EQ(s.without("tp").with_innermost(1, "tp").to_string(),
            "PartitionSpec(dp, tp)");
}

// ---- S(i) sugar <-> spec (§8.1 steps 2-5)
// ------------------------------------

struct SugarCase {
  const char* id;
  const char* map;
  std::vector<long> shape;
  const char* spec;      // explicit PartitionSpec or nullptr
  const char* expected;  // GlobalType text, or nullptr for an error
  std::vector<std::string> phrases;
};

class SugarTest : public ::testing::TestWithParam<SugarCase> {};

TEST_P(SugarTest, MakesGlobalType) {
  const auto& c = GetParam();
  auto entries = TensorType::parse_entries(c.map);
  ASSERT_TRUE(entries.ok());
  std::optional<PartitionSpec> spec;
  if (c.spec) spec = *PartitionSpec::parse(c.spec);
  auto r = make_global(*entries, spec, Shape::of(c.shape));
  if (c.expected) {
    EXPECT_TRUE(GivesGlobal(r, c.expected));
  } else {
    EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, c.phrases));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, SugarTest,
    ::testing::Values(
        SugarCase{"A009",
                  "{tp: S(0)}",
                  {4},
                  nullptr,
                  "{tp: S(0)} PartitionSpec(tp)",
                  {}},
        SugarCase{"A010",
                  "{tp: S(-1)}",
                  {3, 4},
                  nullptr,
                  "{tp: S(1)} PartitionSpec(None, tp)",
                  {}},
        SugarCase{"A011",
                  "{tp: S(2)}",
                  {3, 4},
                  nullptr,
                  nullptr,
                  {"S(2)", "out of bounds", "ndim=2"}},
        SugarCase{"A013",
                  "{tp: S(0)}",
                  {},
                  nullptr,
                  nullptr,
                  {"out of bounds", "ndim=0"}},
        SugarCase{"A014",
                  "{dp: S(0), tp: S(0)}",
                  {4},
                  nullptr,
                  nullptr,
                  {"dim 0", "multiple axes", "explicit PartitionSpec"}},
        SugarCase{"A016",
                  "{tp: R}",
                  {3, 4},
                  "(None, tp)",
                  nullptr,
                  {"axis tp", "dim 1", "typed R", "V"}},
        SugarCase{"A017",
                  "{}",
                  {3, 4},
                  "(None, tp)",
                  "{tp: S(1)} PartitionSpec(None, tp)",
                  {}},
        SugarCase{"A019",
                  "{dp: S(0), tp: I}",
                  {3, 4},
                  nullptr,
                  "{dp: S(0), tp: I} PartitionSpec(dp, None)",
                  {}},
        SugarCase{"S_and_spec",
                  "{tp: S(0)}",
                  {3, 4},
                  "(tp, None)",
                  nullptr,
                  {"S(0)", "explicit PartitionSpec"}},
        SugarCase{"spec_rank",
                  "{}",
                  {3, 4},
                  "(tp)",
                  nullptr,
                  {"1 entries", "ndim=2"}},
        SugarCase{"multi_axis_explicit",
                  "{}",
                  {4, 3},
                  "((dp, tp), None)",
                  "{dp: S(0), tp: S(0)} PartitionSpec((dp, tp), None)",
                  {}}),
    [](const auto& info) { return std::string(info.param.id); });

TEST(PartitionSpecTest, UnknownRankGivesUnknownShardNeverAGuess) {
  // S(-1) and S(1) name different dims unless the rank is known.
  for (const char* map : {"{tp: S(-1)}", "{tp: S(1)}"}) {
    auto r = make_global(*TensorType::parse_entries(map), std::nullopt,
                         Shape::unknown());
    ASSERT_TRUE(Succeeds(r));
    EXPECT_FALSE(r->spec.has_value());
    EXPECT_EQ(r->unknown_shards, std::set<std::string>{"tp"});
    EXPECT_EQ(r->to_string(), "{tp: S(?)}");
  }
}

TEST(PartitionSpecTest, SpecToShardsGivesEveryAxisItsDim) {
  auto shards = spec_to_shards(*PartitionSpec::parse("((dp, tp), None, ep)"));
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0], (std::pair<std::string, PerAxisType>{"dp", S(0)}));
  EXPECT_EQ(shards[1], (std::pair<std::string, PerAxisType>{"tp", S(0)}));
  EXPECT_EQ(shards[2], (std::pair<std::string, PerAxisType>{"ep", S(2)}));
}

// ---- refinement (§8.1 step 9)
// ------------------------------------------------

struct RefineCase {
  const char* id;
  const char* have_map;
  const char* have_spec;
  const char* want_map;
  const char* want_spec;
  const char* expected;
  std::vector<std::string> phrases;
};

class RefineTest : public ::testing::TestWithParam<RefineCase> {};

TEST_P(RefineTest, AssertsOnTypedTensor) {
  const auto& c = GetParam();
  Shape s = Shape::of({4, 3});
  GlobalType have =
      GT(c.have_map, s,
         c.have_spec ? std::optional<std::string_view>(c.have_spec)
                     : std::nullopt);
  GlobalType want =
      GT(c.want_map, s,
         c.want_spec ? std::optional<std::string_view>(c.want_spec)
                     : std::nullopt);
  auto r = assert_global(have, want);
  if (c.expected)
    EXPECT_TRUE(GivesGlobal(r, c.expected));
  else
    EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, c.phrases));
}

INSTANTIATE_TEST_SUITE_P(
    Cases, RefineTest,
    ::testing::Values(RefineCase{"A023",
                                 "{tp: S(0)}",
                                 nullptr,
                                 "{tp: V}",
                                 nullptr,
                                 "{tp: S(0)} PartitionSpec(tp, None)",
                                 {}},
                      RefineCase{"A024",
                                 "{tp: V}",
                                 nullptr,
                                 "{tp: S(0)}",
                                 nullptr,
                                 "{tp: S(0)} PartitionSpec(tp, None)",
                                 {}},
                      RefineCase{"A026",
                                 "{tp: S(0)}",
                                 nullptr,
                                 "{dp: S(0)}",
                                 nullptr,
                                 nullptr,
                                 {"conflict at dim 0", "tp", "dp"}},
                      RefineCase{"S0_then_S1",
                                 "{tp: S(0)}",
                                 nullptr,
                                 "{tp: S(1)}",
                                 nullptr,
                                 nullptr,
                                 {"tp", "already shards dim 0"}},
                      RefineCase{"tp_then_dp",
                                 "{tp: S(0)}",
                                 nullptr,
                                 "{dp: S(1)}",
                                 nullptr,
                                 "{dp: S(1), tp: S(0)} PartitionSpec(tp, dp)",
                                 {}},
                      RefineCase{"spec_refined",
                                 "{}",
                                 "(dp, None)",
                                 "{}",
                                 "(dp, tp)",
                                 "{dp: S(0), tp: S(1)} PartitionSpec(dp, tp)",
                                 {}},
                      RefineCase{"spec_single_to_multi",
                                 "{}",
                                 "(dp, None)",
                                 "{}",
                                 "((dp, tp), None)",
                                 nullptr,
                                 {"conflict at dim 0"}},
                      RefineCase{"multi_to_single",
                                 "{}",
                                 "((dp, tp), None)",
                                 "{dp: S(0)}",
                                 nullptr,
                                 nullptr,
                                 {"conflict at dim 0"}},
                      RefineCase{"order_matters",
                                 "{}",
                                 "((tp, dp), None)",
                                 "{}",
                                 "((dp, tp), None)",
                                 nullptr,
                                 {"conflict at dim 0", "(tp, dp)", "(dp, tp)"}},
                      RefineCase{
                          "R_vs_S",
                          "{tp: R}",
                          nullptr,
                          "{tp: S(0)}",
                          nullptr,
                          nullptr,
                          {"mismatch on axis tp", "has R", "expected V"}}),
    [](const auto& info) { return std::string(info.param.id); });

// ---- §12.2 operand check (Z001)
// -----------------------------------------------

TEST(GlobalOperandTest, Z001_VaryingWithoutSpecIsRejected) {
  GlobalType t;
  t.local = TT("{tp: V}");
  auto s = check_global_operand(t, [](std::string_view) { return true; });
  EXPECT_TRUE(FailsWith(
      s, ErrorKind::SpmdTypeError,
      {"Varying", "axis tp", "no PartitionSpec entry", "S(i)", "reinterpret"}));
  // A local axis keeps V without a spec (§12.5).
  EXPECT_TRUE(Succeeds(
      check_global_operand(t, [](std::string_view) { return false; })));
}

TEST(GlobalOperandTest, SpecOnNonVaryingAxisIsRejected) {
  GlobalType t;
  t.local = TT("{tp: R}");
  t.spec = *PartitionSpec::parse("(tp, None)");
  EXPECT_TRUE(FailsWith(
      check_global_operand(t, [](std::string_view) { return true; }),
      ErrorKind::SpmdTypeError, {"axis tp", "local type is R", "not V"}));
}

// ---- assert_type_like / assert_local_type_like (§8.2; A039, A040)
// -------------

TEST(TypeLikeTest, A039_CopiesMapAndSpec) {
  Shape s = Shape::of({4, 3});
  GlobalType x = GT("{dp: S(0), tp: R}", s);
  auto out = assert_global(std::nullopt, x);  // assert_type_like(out, x)
  EXPECT_TRUE(GivesGlobal(out, "{dp: S(0), tp: R} PartitionSpec(dp, None)"));
}

TEST(TypeLikeTest, A040_LocalLikeCopiesTheMapOnly) {
  Shape s = Shape::of({4, 3});
  GlobalType x = GT("{dp: S(0), tp: R}", s);
  GlobalType local_only{x.local, std::nullopt, {}};
  auto out = assert_global(std::nullopt, local_only);
  EXPECT_TRUE(GivesGlobal(out, "{dp: V, tp: R}"));
}

}  // namespace
}  // namespace spmd::core::testing
