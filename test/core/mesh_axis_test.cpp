// Structural mesh axes (spec §10.1): canonical layouts, equality and hash,
// rank sets, sub-axis order, joint orthogonality, flatten. Cases X001-X014.
#include "core_test_util.h"

namespace spmd::core::testing {
namespace {

using Atoms = std::vector<MeshAxis::Atom>;

MeshAxis Of(long size, long stride) { return MeshAxis::of(size, stride); }

TEST(MeshAxisCanonical, X001_coalesced_layout_equals_one_atom) {
  MeshAxis a = MeshAxis::from_layout({{2, 2}, {2, 1}});
  EXPECT_EQ(a, Of(4, 1));
  EXPECT_EQ(hash_value(a), hash_value(Of(4, 1)));
  EXPECT_EQ(a.atoms(), (Atoms{{4, 1}}));
}

TEST(MeshAxisCanonical, DifferentStrideDiffers) {
  EXPECT_NE(Of(4, 1), Of(4, 2));  // §10.1: (4):(1) != (4):(2)
  EXPECT_NE(Of(2, 1), Of(4, 1));
}

TEST(MeshAxisCanonical, SizeOneAtomsDropped) {
  EXPECT_EQ(MeshAxis::from_layout({{1, 64}, {4, 1}}), Of(4, 1));
  EXPECT_EQ(MeshAxis::from_layout({{4, 2}, {1, 1}}), Of(4, 2));
  EXPECT_EQ(MeshAxis::from_layout({{1, 64}}), MeshAxis());
  EXPECT_EQ(Of(1, 64), MeshAxis());  // only size-1 atoms: the empty layout
  EXPECT_TRUE(Of(1, 64).atoms().empty());
}

TEST(MeshAxisCanonical, MergeOnlyWhenContiguous) {
  EXPECT_EQ(MeshAxis::from_layout({{2, 8}, {2, 4}}), Of(4, 4));
  MeshAxis gap = MeshAxis::from_layout({{2, 8}, {2, 1}});
  EXPECT_EQ(gap.atoms(), (Atoms{{2, 8}, {2, 1}}));
  EXPECT_EQ(gap.size(), 4);
  EXPECT_EQ(gap.rank_set(), (std::set<long>{0, 1, 8, 9}));
}

TEST(MeshAxis, X014_size) {
  EXPECT_EQ(Of(4, 1).size(), 4);
  EXPECT_EQ(Of(1, 64).size(), 1);
  EXPECT_TRUE(Of(1, 64).is_singleton());
  EXPECT_FALSE(Of(4, 1).is_singleton());
  EXPECT_EQ(MeshAxis::from_layout({{2, 4}, {3, 1}}).size(), 6);
}

TEST(MeshAxis, RankSet) {
  EXPECT_EQ(Of(4, 2).rank_set(), (std::set<long>{0, 2, 4, 6}));
  EXPECT_EQ(MeshAxis::from_layout({{2, 4}, {2, 1}}).rank_set(),
            (std::set<long>{0, 1, 4, 5}));
  EXPECT_EQ(Of(1, 5).rank_set(), (std::set<long>{0}));
}

TEST(MeshAxis, SubAxisOrder) {
  EXPECT_FALSE(Of(4, 1).is_sub_axis_of(Of(4, 4)));  // X013
  EXPECT_TRUE(Of(2, 4).is_sub_axis_of(Of(4, 2)));   // {0,4} in {0,2,4,6}
  EXPECT_TRUE(Of(2, 8).is_sub_axis_of(Of(16, 1)));
  EXPECT_TRUE(Of(4, 1).is_sub_axis_of(Of(4, 1)));  // <= is reflexive
  EXPECT_FALSE(Of(4, 1).is_sub_axis_of(Of(2, 1)));
  EXPECT_TRUE(Of(2, 4).is_sub_axis_of(MeshAxis::from_layout({{2, 4}, {2, 1}})));
}

TEST(MeshAxis, ToString) {
  EXPECT_EQ(Of(4, 1).to_string(), "(4:1)");
  EXPECT_EQ(MeshAxis::from_layout({{2, 8}, {2, 1}}).to_string(), "(2,2):(8,1)");
}

TEST(MeshAxis, FromRanks) {
  auto r = MeshAxis::from_ranks({0, 1, 2, 3});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value(), Of(4, 1));
  r = MeshAxis::from_ranks({6, 2});  // sorted, offset by the smallest
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value(), Of(2, 4));
  r = MeshAxis::from_ranks({5, 4, 1, 0});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value(), MeshAxis::from_layout({{2, 4}, {2, 1}}));
  r = MeshAxis::from_ranks({3});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_TRUE(r.value().is_singleton());
  EXPECT_TRUE(
      FailsWith(MeshAxis::from_ranks({0, 1, 3}), ErrorKind::InvalidArgument));
}

struct OrthoRow {
  const char* what;
  std::vector<MeshAxis> axes;
  bool orthogonal;
};

std::vector<OrthoRow> OrthoRows() {
  MeshAxis a = Of(2, 5), b = Of(2, 6), c = Of(2, 7);
  return {
      {"X003_4x1_and_2x4", {Of(4, 1), Of(2, 4)}, true},
      {"X004_axis_with_itself", {Of(4, 1), Of(4, 1)}, false},
      {"X006_pair_ab", {a, b}, true},
      {"X006_pair_ac", {a, c}, true},
      {"X006_pair_bc", {b, c}, true},
      {"X006_triple_abc", {a, b, c}, false},
      {"X007_3x1_and_3x2", {Of(3, 1), Of(3, 2)}, false},
      {"M014_A020_2x4_and_4x2", {Of(2, 4), Of(4, 2)}, false},
      {"dp_cp_tp", {Of(2, 8), Of(2, 4), Of(4, 1)}, true},
      {"adjacent_2x1_2x2", {Of(2, 1), Of(2, 2)}, true},
      {"singleton_with_anything", {Of(1, 1), Of(4, 1)}, true},
      {"singleton_with_itself", {Of(1, 64), Of(1, 64)}, true},
      {"single_axis", {Of(4, 1)}, true},
      {"empty_collection", {}, true},
      {"order_independent", {Of(2, 4), Of(4, 1)}, true},
  };
}

void PrintTo(const OrthoRow& r, std::ostream* os) { *os << r.what; }
class Orthogonality : public ::testing::TestWithParam<OrthoRow> {};

TEST_P(Orthogonality, RunningSpan) {
  EXPECT_EQ(are_orthogonal(GetParam().axes), GetParam().orthogonal);
}

INSTANTIATE_TEST_SUITE_P(Spec10_1, Orthogonality,
                         ::testing::ValuesIn(OrthoRows()),
                         [](const auto& info) { return info.param.what; });

TEST(Flatten, X009_two_axes) {
  auto r = flatten({Of(2, 8), Of(2, 4)});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value(), Of(4, 4));
}

TEST(Flatten, X010_three_axes) {
  auto r = flatten({Of(2, 8), Of(2, 4), Of(4, 1)});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value(), Of(16, 1));
}

TEST(Flatten, OrderOfArgumentsIrrelevant) {
  auto r = flatten({Of(4, 1), Of(2, 8), Of(2, 4)});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value(), Of(16, 1));
}

TEST(Flatten, NonContiguousKeepsTwoAtoms) {
  auto r = flatten({Of(2, 8), Of(2, 1)});
  ASSERT_TRUE(Succeeds(r));
  EXPECT_EQ(r.value(), MeshAxis::from_layout({{2, 8}, {2, 1}}));
}

TEST(Flatten, X011_not_orthogonal) {
  EXPECT_TRUE(FailsWith(flatten({Of(2, 8), Of(4, 4)}),
                        ErrorKind::InvalidArgument, {"not orthogonal"}));
}

}  // namespace
}  // namespace spmd::core::testing
