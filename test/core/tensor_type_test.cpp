// Whole-tensor types (spec §3): the text form `{dp: R, tp: S(0)}`, S(i)
// recorded as V, bad inputs, equality, hashing and the gradient map.
#include <unordered_set>

#include "core_test_util.h"

namespace spmd::core::testing {
namespace {

struct RoundTripRow {
  const char* text;
  const char* printed;  // canonical: axes sorted, "axis: T", ", " separated
};

const RoundTripRow kRoundTrip[] = {
    {"{}", "{}"},
    {"{tp: P}", "{tp: P}"},
    {"{dp: R, tp: V}", "{dp: R, tp: V}"},
    {"{dp: R, tp: S(0)}", "{dp: R, tp: V}"},  // §2.2: S(i) recorded as V
    {"{tp: S(-1)}", "{tp: V}"},
    {"{tp: R, dp: I}", "{dp: I, tp: R}"},  // sorted by axis name
    {"{dp:R,tp:P}", "{dp: R, tp: P}"},
    {"  { dp :  R ,  tp : I }  ", "{dp: R, tp: I}"},
    {"{a: R, b: I, c: V, d: P}", "{a: R, b: I, c: V, d: P}"},
    {"{dp_cp: V}", "{dp_cp: V}"},
};

void PrintTo(const RoundTripRow& r, std::ostream* os) {
  *os << '"' << r.text << '"';
}
class TensorTypeRoundTrip : public ::testing::TestWithParam<RoundTripRow> {};

TEST_P(TensorTypeRoundTrip, ParsePrintParse) {
  Result<TensorType> r = TensorType::parse(GetParam().text);
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value().to_string(), GetParam().printed);
  Result<TensorType> again = TensorType::parse(r.value().to_string());
  ASSERT_TRUE(Succeeds(again));
  EXPECT_EQ(again.value(), r.value());
}

INSTANTIATE_TEST_SUITE_P(TensorType, TensorTypeRoundTrip,
                         ::testing::ValuesIn(kRoundTrip), [](const auto& info) {
                           return Ident(info.param.text) + "_" +
                                  std::to_string(info.index);
                         });

TEST(TensorTypeParse, ShardIsStoredAsVarying) {
  TensorType t = TT("{dp: R, tp: S(0)}");
  EXPECT_EQ(t.get("tp"), std::optional<PerAxisType>(V));
  EXPECT_EQ(t.get("dp"), std::optional<PerAxisType>(R));
  EXPECT_EQ(t.get("cp"), std::nullopt);  // §3.1: unknown, not R or V
  EXPECT_EQ(t.size(), 2u);
  EXPECT_EQ(t.axes(), (std::vector<std::string>{"dp", "tp"}));
}

TEST(TensorTypeParse, EntriesKeepShards) {
  auto r = TensorType::parse_entries("{dp: R, tp: S(-1)}");
  ASSERT_TRUE(Succeeds(r));
  ASSERT_EQ(r.value().size(), 2u);
  bool saw_tp = false;
  for (const auto& [axis, type] : r.value()) {
    if (axis == "tp") {
      saw_tp = true;
      EXPECT_EQ(type, S(-1));
    } else {
      EXPECT_EQ(axis, "dp");
      EXPECT_EQ(type, R);
    }
  }
  EXPECT_TRUE(saw_tp);
}

struct BadRow {
  const char* what;
  const char* text;
  const char* token;  // the offending token the error names (TypeError::actual)
  int column;         // its 1-based column in the message
};

const BadRow kBad[] = {
    {"missing_open_brace", "dp: R}", "dp", 1},
    {"missing_close_brace", "{dp: R", "end of input", 7},
    {"bad_type", "{dp: X}", "X", 6},
    {"bad_type_word", "{dp: Replicate}", "Replicate", 6},
    {"repeated_axis", "{dp: R, dp: V}", "dp", 9},
    {"repeated_axis_same_type", "{tp: R, tp: R}", "tp", 9},
    {"stray_comma", "{dp: R,}", "}", 8},
    {"leading_comma", "{, dp: R}", ",", 2},
    {"missing_colon", "{dp R}", "R", 5},
    {"missing_axis_name", "{: R}", ":", 2},
    {"missing_type", "{dp: }", "}", 6},
    {"missing_comma", "{dp: R tp: V}", "tp", 8},
    {"trailing_garbage", "{dp: R} x", "x", 9},
    {"bad_shard", "{tp: S(y)}", "S(y)", 6},
    {"empty_text", "", "end of input", 1},
};

void PrintTo(const BadRow& r, std::ostream* os) { *os << '"' << r.text << '"'; }
class TensorTypeBad : public ::testing::TestWithParam<BadRow> {};

TEST_P(TensorTypeBad, IsParseErrorNamingTheToken) {
  const BadRow& row = GetParam();
  const std::string token = row.token;
  // Quoted in the message unless it is the end of the input.
  const std::string named =
      token == "end of input" ? "got end of input" : "got '" + token + "'";
  const std::string at = " at column " + std::to_string(row.column);
  Result<TensorType> r = TensorType::parse(row.text);
  ASSERT_TRUE(FailsWith(r, ErrorKind::ParseError, {named + at}));
  EXPECT_EQ(r.error().actual, token);
  auto e = TensorType::parse_entries(row.text);
  ASSERT_TRUE(FailsWith(e, ErrorKind::ParseError, {named + at}));
  EXPECT_EQ(e.error().actual, token);
}

INSTANTIATE_TEST_SUITE_P(TensorType, TensorTypeBad, ::testing::ValuesIn(kBad),
                         [](const auto& info) { return info.param.what; });

TEST(TensorTypeFromEntries, ShardRecordedAsV) {
  auto r = TensorType::from_entries({{"tp", S(1)}, {"dp", I}});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value(), TT("{dp: I, tp: V}"));
}

TEST(TensorTypeFromEntries, RepeatedAxisIsUsageError) {
  auto r = TensorType::from_entries({{"tp", R}, {"tp", V}});
  EXPECT_TRUE(FailsWith(r, ErrorKind::UsageError, {"tp"}));
}

TEST(TensorTypeEdit, SetGetEraseHas) {
  TensorType t;
  EXPECT_TRUE(t.empty());
  EXPECT_EQ(t.to_string(), "{}");
  t.set("tp", S(0));  // recorded as V
  t.set("dp", P);
  EXPECT_EQ(t.get("tp"), std::optional<PerAxisType>(V));
  EXPECT_TRUE(t.has("dp"));
  EXPECT_EQ(t.to_string(), "{dp: P, tp: V}");
  t.set("dp", R);  // overwrite
  EXPECT_EQ(t.get("dp"), std::optional<PerAxisType>(R));
  t.erase("dp");
  t.erase("nonexistent");
  EXPECT_FALSE(t.has("dp"));
  EXPECT_EQ(t.to_string(), "{tp: V}");
}

TEST(TensorTypeEquality, OrderAndShardInsensitive) {
  EXPECT_EQ(TT("{dp: R, tp: V}"), TT("{tp: V, dp: R}"));
  EXPECT_EQ(TT("{tp: S(0)}"), TT("{tp: V}"));
  EXPECT_NE(TT("{tp: R}"), TT("{tp: I}"));
  EXPECT_NE(TT("{tp: R}"), TT("{dp: R}"));
  EXPECT_NE(TT("{tp: R}"), TT("{tp: R, dp: R}"));
  EXPECT_NE(TT("{}"), TT("{tp: R}"));
}

TEST(TensorTypeHash, EqualMapsHashEqualAndDistinctMapsAreDistinctKeys) {
  EXPECT_EQ(hash_value(TT("{dp: R, tp: V}")),
            hash_value(TT("{tp: S(1), dp: R}")));
  std::unordered_set<TensorType> set;
  for (const char* text :
       {"{}", "{tp: R}", "{tp: I}", "{tp: V}", "{tp: P}", "{dp: R}",
        "{dp: R, tp: R}", "{dp: P, tp: R}", "{tp: S(0)}"})
    set.insert(TT(text));
  EXPECT_EQ(set.size(), 8u);  // {tp: S(0)} == {tp: V}
}

// §2.1 per axis: R<->P, I->I, V->V.
TEST(TensorTypeBackward, MapsEveryAxis) {
  TensorType t = TT("{a: R, b: I, c: V, d: P}");
  EXPECT_EQ(t.backward(), TT("{a: P, b: I, c: V, d: R}"));
  EXPECT_EQ(t.backward().backward(), t);
  EXPECT_EQ(TT("{}").backward(), TT("{}"));
}

}  // namespace
}  // namespace spmd::core::testing
