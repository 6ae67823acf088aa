// Annotation rules: assert_type (spec §8.1), mutate_type (§8.2), the loss
// check (§6.15) and mesh completeness (§4.3).
#include "core_test_util.h"

namespace spmd::core::testing {
namespace {

struct AssertRow {
  const char* what;
  std::optional<const char*> current;  // nullopt: untyped
  const char* asserted;
  const char* want;  // nullptr: error
  const char* message = "";
};

const AssertRow kAssert[] = {
    // A001: untyped -> the assertion is stored.
    {"A001_untyped_stores", std::nullopt, "{tp: R}", "{tp: R}"},
    {"untyped_stores_S_as_V", std::nullopt, "{tp: S(0)}", "{tp: V}"},
    {"typed_empty_sets", "{}", "{tp: R}", "{tp: R}"},
    // A003: mismatch.
    {"A003_R_asserted_I", "{tp: R}", "{tp: I}", nullptr,
     "SPMD type mismatch on axis tp: tensor has R, expected I"},
    // A004: implicit V -> P transmute, V->P only.
    {"A004_V_asserted_P_becomes_P", "{tp: V}", "{tp: P}", "{tp: P}"},
    {"P_asserted_V_rejected", "{tp: P}", "{tp: V}", nullptr,
     "SPMD type mismatch on axis tp: tensor has P, expected V"},
    {"R_asserted_V_rejected", "{tp: R}", "{tp: V}", nullptr,
     "SPMD type mismatch on axis tp: tensor has R, expected V"},
    {"I_asserted_P_rejected", "{tp: I}", "{tp: P}", nullptr,
     "SPMD type mismatch on axis tp: tensor has I, expected P"},
    {"R_asserted_P_rejected", "{tp: R}", "{tp: P}", nullptr,
     "SPMD type mismatch"},
    // A006: new axes are added.
    {"A006_new_axis_added", "{dp: R}", "{tp: I}", "{dp: R, tp: I}"},
    // A007: partial assertion leaves other axes.
    {"A007_partial_assertion", "{dp: R, tp: V}", "{tp: V}", "{dp: R, tp: V}"},
    {"V_asserted_S0_is_V", "{tp: V}", "{tp: S(0)}", "{tp: V}"},
    {"empty_assertion_keeps_type", "{dp: R, tp: P}", "{}", "{dp: R, tp: P}"},
    {"mixed_refine_and_add", "{dp: V}", "{dp: P, tp: R}", "{dp: P, tp: R}"},
    {"second_axis_mismatch", "{dp: R, tp: V}", "{dp: R, tp: R}", nullptr,
     "SPMD type mismatch on axis tp: tensor has V, expected R"},
};

void PrintTo(const AssertRow& r, std::ostream* os) { *os << r.what; }
class AssertType : public ::testing::TestWithParam<AssertRow> {};

TEST_P(AssertType, Spec8_1) {
  const AssertRow& row = GetParam();
  std::optional<TensorType> current;
  if (row.current) current = TT(*row.current);
  Result<TensorType> r = assert_type(current, TT(row.asserted));
  if (row.want) {
    EXPECT_TRUE(Gives(r, row.want));
  } else {
    EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, {row.message}));
  }
}

INSTANTIATE_TEST_SUITE_P(Spec8_1, AssertType, ::testing::ValuesIn(kAssert),
                         [](const auto& info) { return info.param.what; });

struct MutateRow {
  const char* what;
  const char* current;
  const char* axis;
  PerAxisType src, dst;
  const char* want;  // nullptr: error
};

const MutateRow kMutate[] = {
    {"A031_V_to_R", "{dp: V}", "dp", V, R, "{dp: R}"},
    {"A033_axis_not_found", "{dp: V}", "tp", V, R, nullptr},
    {"current_differs_from_src", "{dp: V}", "dp", R, I, nullptr},
    {"other_axes_untouched", "{dp: R, tp: I, cp: V}", "dp", R, P,
     "{cp: V, dp: P, tp: I}"},
    {"shard_src_compared_as_V", "{dp: V}", "dp", S(0), R, "{dp: R}"},
    {"shard_dst_stored_as_V", "{dp: R}", "dp", R, S(1), "{dp: V}"},
    {"shard_src_on_R_rejected", "{dp: R}", "dp", S(0), I, nullptr},
    {"P_to_R_overwrite", "{tp: P}", "tp", P, R, "{tp: R}"},
    {"same_type", "{tp: I}", "tp", I, I, "{tp: I}"},
    {"empty_map_axis_missing", "{}", "tp", R, V, nullptr},
};

void PrintTo(const MutateRow& r, std::ostream* os) { *os << r.what; }
class MutateType : public ::testing::TestWithParam<MutateRow> {};

TEST_P(MutateType, Spec8_2) {
  const MutateRow& row = GetParam();
  Result<TensorType> r =
      mutate_type(TT(row.current), row.axis, row.src, row.dst);
  if (row.want) {
    EXPECT_TRUE(Gives(r, row.want));
  } else {
    EXPECT_TRUE(FailsWith(r, ErrorKind::SpmdTypeError, {row.axis}));
  }
}

INSTANTIATE_TEST_SUITE_P(Spec8_2, MutateType, ::testing::ValuesIn(kMutate),
                         [](const auto& info) { return info.param.what; });

// A034 / A036 composed from single-axis calls (the map forms are the
// runtime's; the core rule is per axis).
TEST(MutateType, A034_every_axis) {
  Result<TensorType> r = mutate_type(TT("{dp: V, tp: V}"), "dp", V, R);
  ASSERT_TRUE(Succeeds(r));
  r = mutate_type(r.value(), "tp", V, R);
  EXPECT_TRUE(Gives(r, "{dp: R, tp: R}"));
}

struct LossRow {
  const char* what;
  std::optional<const char*> loss;
  bool strict;
  bool ok;
  std::vector<std::string> phrases;
};

const LossRow kLoss[] = {
    {"L001_invariant_allowed", "{tp: I}", true, true, {}},
    {"partial_allowed", "{tp: P}", true, true, {}},
    {"L003_replicate_rejected", "{tp: R}", true, false, {"tp", "dst=I"}},
    // The fix names reinterpret(loss, tp, src=V, dst=P); the C++ API spells
    // src/dst positionally.
    {"L004_varying_rejected",
     "{tp: V}",
     true,
     false,
     {"tp", "reinterpret(loss, tp, "}},
    {"L006_untyped_strict_rejected", std::nullopt, true, false, {}},
    {"L007_untyped_permissive_allowed", std::nullopt, false, true, {}},
    {"typed_empty_passes", "{}", true, true, {}},
    {"typical_dp_P_tp_I", "{dp: P, tp: I}", true, true, {}},
    {"one_bad_axis", "{dp: P, tp: R}", true, false, {"tp"}},
    {"varying_rejected_permissive_too", "{tp: V}", false, false, {"tp"}},
};

void PrintTo(const LossRow& r, std::ostream* os) { *os << r.what; }
class LossCheck : public ::testing::TestWithParam<LossRow> {};

TEST_P(LossCheck, Spec6_15) {
  const LossRow& row = GetParam();
  std::optional<TensorType> loss;
  if (row.loss) loss = TT(*row.loss);
  Status st = check_loss(loss, row.strict);
  if (row.ok) {
    EXPECT_TRUE(Succeeds(st));
  } else {
    EXPECT_TRUE(FailsWith(st, ErrorKind::SpmdTypeError, row.phrases));
  }
}

INSTANTIATE_TEST_SUITE_P(Spec6_15, LossCheck, ::testing::ValuesIn(kLoss),
                         [](const auto& info) { return info.param.what; });

TEST(MissingAxes, SortedAndOnlyMeshAxes) {
  using Axes = std::vector<std::string>;
  EXPECT_EQ(missing_axes(TT("{tp: R}"), {"dp", "tp"}), Axes{"dp"});
  EXPECT_EQ(missing_axes(TT("{}"), {"tp", "dp", "cp"}),
            (Axes{"cp", "dp", "tp"}));
  EXPECT_EQ(missing_axes(TT("{dp: V, tp: R}"), {"tp", "dp"}), Axes{});
  // Axes of the type outside the mesh are not "missing".
  EXPECT_EQ(missing_axes(TT("{ep: V}"), {"tp"}), Axes{"tp"});
  EXPECT_EQ(missing_axes(TT("{ep: V}"), {}), Axes{});
}

}  // namespace
}  // namespace spmd::core::testing
