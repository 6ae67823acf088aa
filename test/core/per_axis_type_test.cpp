// Per-axis types (spec §2): printing, parsing, gradient duality, negative
// shard dims, equality and hashing.
#include <unordered_set>

#include "core_test_util.h"

namespace spmd::core::testing {
namespace {

struct PrintRow {
  PerAxisType type;
  const char* text;
  const char* full;
};

// §2.2: R/I/V/P print as their letter, S(i) as "S(i)"; full names per §9.4.
const PrintRow kPrintRows[] = {
    {R, "R", "Replicate"},         {I, "I", "Invariant"},
    {V, "V", "Varying"},           {P, "P", "Partial"},
    {S(0), "S(0)", "Shard(0)"},    {S(3), "S(3)", "Shard(3)"},
    {S(-1), "S(-1)", "Shard(-1)"},
};

void PrintTo(const PrintRow& r, std::ostream* os) { *os << r.text; }
class PrintTest : public ::testing::TestWithParam<PrintRow> {};

TEST_P(PrintTest, PrintsSpecSpelling) {
  EXPECT_EQ(to_string(GetParam().type), GetParam().text);
  EXPECT_EQ(full_name(GetParam().type), GetParam().full);
}

TEST_P(PrintTest, ParsesItsOwnPrintedForm) {
  Result<PerAxisType> r = parse_per_axis_type(GetParam().text);
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value(), GetParam().type);
}

INSTANTIATE_TEST_SUITE_P(PerAxisType, PrintTest,
                         ::testing::ValuesIn(kPrintRows), [](const auto& info) {
                           return Ident(info.param.text);
                         });

struct ParseGoodRow {
  const char* text;
  PerAxisType want;
};

// Surrounding spaces allowed; negative dims allowed (§2.3 resolves later).
const ParseGoodRow kParseGood[] = {
    {" R", R},        {"P ", P},        {"  I  ", I},     {"V", V},
    {"S(12)", S(12)}, {"S(-2)", S(-2)}, {" S(1) ", S(1)},
};

void PrintTo(const ParseGoodRow& r, std::ostream* os) {
  *os << '"' << r.text << '"';
}
class ParseGoodTest : public ::testing::TestWithParam<ParseGoodRow> {};

TEST_P(ParseGoodTest, Parses) {
  Result<PerAxisType> r = parse_per_axis_type(GetParam().text);
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value(), GetParam().want);
}

INSTANTIATE_TEST_SUITE_P(PerAxisType, ParseGoodTest,
                         ::testing::ValuesIn(kParseGood), [](const auto& info) {
                           return Ident(std::string("text_") +
                                        info.param.text) +
                                  "_" + std::to_string(info.index);
                         });

struct ParseBadRow {
  const char* text;
  const char* token;  // the offending token the error must name ("" = any)
};

const ParseBadRow kParseBad[] = {
    {"Q", "Q"},    {"Replicated", "Replicated"},
    {"S(x)", "x"}, {"T(0)", "T"},
    {"S(1", ""},   {"S()", ""},
    {"S1", ""},    {"", ""},
    {"R R", ""},   {"S(1.5)", "."},
    {"X(0)", "X"},
};

void PrintTo(const ParseBadRow& r, std::ostream* os) {
  *os << '"' << r.text << '"';
}
class ParseBadTest : public ::testing::TestWithParam<ParseBadRow> {};

TEST_P(ParseBadTest, IsParseErrorNamingTheToken) {
  Result<PerAxisType> r = parse_per_axis_type(GetParam().text);
  EXPECT_TRUE(FailsWith(r, ErrorKind::ParseError, {GetParam().token}));
  if (!r.ok()) {
    EXPECT_FALSE(r.error().message.empty());
  }
}

INSTANTIATE_TEST_SUITE_P(PerAxisType, ParseBadTest,
                         ::testing::ValuesIn(kParseBad), [](const auto& info) {
                           return "bad_" + Ident(info.param.text) + "_" +
                                  std::to_string(info.index);
                         });

// §2.1 gradient table: R<->P, I->I, V->V, S(i)->S(i).
TEST(BackwardType, SpecTable) {
  EXPECT_EQ(backward_type(R), P);
  EXPECT_EQ(backward_type(P), R);
  EXPECT_EQ(backward_type(I), I);
  EXPECT_EQ(backward_type(V), V);
  EXPECT_EQ(backward_type(S(0)), S(0));
  EXPECT_EQ(backward_type(S(-1)), S(-1));
}

TEST(BackwardType, IsAnInvolution) {
  for (PerAxisType t : {R, I, V, P, S(0), S(2), S(-1)}) {
    SCOPED_TRACE(TypeText(t));
    EXPECT_EQ(backward_type(backward_type(t)), t);
  }
}

TEST(BackwardType, IsConstexpr) {
  static_assert(backward_type(spmd::types::R) == spmd::types::P);
  static_assert(backward_type(spmd::types::S(1)) == spmd::types::S(1));
}

struct ResolveRow {
  PerAxisType in;
  long ndim;
  std::optional<PerAxisType> want;  // nullopt: out of bounds
};

// §2.3: i' = i + ndim for i < 0; error if i < -ndim or i >= ndim.
const ResolveRow kResolve[] = {
    {S(-1), 2, S(1)},
    {S(-2), 2, S(0)},
    {S(-3), 2, std::nullopt},
    {S(0), 2, S(0)},
    {S(1), 2, S(1)},
    {S(2), 2, std::nullopt},
    {S(0), 0, std::nullopt},
    {S(-1), 0, std::nullopt},
    {S(0), 1, S(0)},
    {S(-1), 1, S(0)},
    {S(5), 6, S(5)},
    {S(-7), 6, std::nullopt},
    {R, 0, R},
    {I, 3, I},
    {V, 0, V},
    {P, 2, P},
};

void PrintTo(const ResolveRow& r, std::ostream* os) {
  *os << TypeText(r.in) << " ndim=" << r.ndim;
}
class ResolveTest : public ::testing::TestWithParam<ResolveRow> {};

TEST_P(ResolveTest, ResolvesAgainstNdim) {
  const ResolveRow& row = GetParam();
  Result<PerAxisType> r = resolve_shard_dim(row.in, row.ndim);
  if (row.want) {
    ASSERT_TRUE(Succeeds(r));
    EXPECT_EQ(r.value(), *row.want);
  } else {
    EXPECT_TRUE(FailsWith(
        r, ErrorKind::SpmdTypeError,
        {TypeText(row.in) + " is out of bounds for tensor with ndim=" +
         std::to_string(row.ndim)}));
  }
}

INSTANTIATE_TEST_SUITE_P(PerAxisType, ResolveTest,
                         ::testing::ValuesIn(kResolve), [](const auto& info) {
                           return Ident(TypeText(info.param.in)) + "_ndim" +
                                  std::to_string(info.param.ndim) +
                                  (info.param.want
                                       ? "_to_" +
                                             Ident(TypeText(*info.param.want))
                                       : std::string("_out_of_bounds"));
                         });

// §2.2: S(i) == S(j) iff i == j; S(i) != V.
TEST(PerAxisTypeEquality, ShardsCompareByDim) {
  EXPECT_EQ(S(0), S(0));
  EXPECT_NE(S(0), S(1));
  EXPECT_NE(S(0), V);
  EXPECT_NE(S(-1), S(1));
  EXPECT_NE(R, I);
  EXPECT_NE(P, V);
}

TEST(PerAxisTypeHash, EqualValuesHashEqual) {
  // dim is meaningless for non-shards: equal values must hash equal.
  PerAxisType r_with_dim{TypeKind::Replicate, 5};
  ASSERT_EQ(r_with_dim, R);
  EXPECT_EQ(hash_value(r_with_dim), hash_value(R));
  EXPECT_EQ(hash_value(S(2)), hash_value(S(2)));
  EXPECT_EQ(std::hash<PerAxisType>{}(S(2)), hash_value(S(2)));
}

TEST(PerAxisTypeHash, DistinctValuesAreDistinctKeys) {
  std::unordered_set<PerAxisType> set{R, I, V, P, S(0), S(1), S(-1)};
  EXPECT_EQ(set.size(), 7u);
  set.insert(PerAxisType{TypeKind::Invariant, 9});  // == I
  EXPECT_EQ(set.size(), 7u);
  // A good hash separates the five kinds (not required, but collisions here
  // would make every map keyed by type degenerate).
  std::unordered_set<std::size_t> hashes;
  for (PerAxisType t : {R, I, V, P, S(0)}) hashes.insert(hash_value(t));
  EXPECT_EQ(hashes.size(), 5u);
}

}  // namespace
}  // namespace spmd::core::testing
