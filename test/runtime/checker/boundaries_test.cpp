// boundaries_test.cpp - typed boundaries and annotation helpers of the
// runtime checker: no_typecheck with in_types / out_types (spec §12.3, case
// Z024), mutate_type in all its forms (A031-A041), assert_local_type_like,
// and typed scalars with the arithmetic of §11 (S cases), table-driven.
#include <spmd/boundaries.h>

#include <functional>

#include "checker_test_util.h"

namespace spmd::testing {
namespace {

using namespace spmd::types;

SPMD_AXIS(cp);

checker::TypecheckOptions mesh_of(std::vector<checker::MeshAxisInfo> axes,
                                  bool strict = true) {
  checker::TypecheckOptions o;
  o.strict = strict;
  o.mesh = std::move(axes);
  return o;
}

// One case: a program returning the printed result, or the error it raises.
struct Case {
  const char* id;
  std::function<std::string()> run;
  const char* expected;  // the printed result, or a part of the error
  bool error = false;
};

void run_table(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.id);
    if (c.error) {
      std::string msg;
      try {
        c.run();
        ADD_FAILURE() << "no error";
      } catch (const SpmdError& e) {
        msg = e.what();
      }
      EXPECT_NE(msg.find(c.expected), std::string::npos) << msg;
    } else {
      EXPECT_EQ(c.run(), c.expected);
    }
  }
}

// ---------------------------------------------------------- no_typecheck --

TEST(Boundaries, NoTypecheckRegionChecksInputsAndStampsOutputs) {
  checker::TypecheckGuard guard(mesh_of({{"tp", 3}}));
  auto mm = [](const at::Tensor& a, const at::Tensor& b) {
    return at::matmul(a, b);
  };
  // Inside, an op the checker would reject runs unchecked.
  auto affine = [](const at::Tensor& a) { return a + 1.0; };
  BoundaryTypes mm_types{std::vector<LeafType>{std::vector<AxisType>{tp = S(0)},
                                               std::vector<AxisType>{tp = R}},
                         std::vector<LeafType>{std::vector<AxisType>{tp = V}}};
  BoundaryTypes p_to_p{std::vector<LeafType>{std::vector<AxisType>{tp = P}},
                       std::vector<LeafType>{std::vector<AxisType>{tp = P}}};
  run_table({
      {"Z020-like: x@w between typed edges",
       [&] {
         return type_str(no_typecheck(mm_types, mm, typed({tp = V}, {4, 3}),
                                      typed({tp = R}, {3, 5})));
       },
       "{tp: V}"},
      {"an affine op on P runs unchecked inside",
       [&] { return type_str(no_typecheck(p_to_p, affine, typed({tp = P}))); },
       "{tp: P}"},
      {"Z021-like: input mismatch",
       [&] {
         return type_str(no_typecheck(mm_types, mm, typed({tp = R}, {4, 3}),
                                      typed({tp = R}, {3, 5})));
       },
       "mismatch on axis tp", true},
      {"Z024: in_types without out_types",
       [&] {
         BoundaryTypes t{std::vector<LeafType>{std::vector<AxisType>{tp = R}},
                         std::nullopt};
         return type_str(no_typecheck(t, affine, typed({tp = R})));
       },
       "in_types without out_types", true},
      {"leaf count",
       [&] {
         return type_str(no_typecheck(p_to_p, mm, typed({tp = P}, {3, 3}),
                                      typed({tp = R}, {3, 3})));
       },
       "in_types has 1 leaf but the body takes 2 arguments", true},
      {"nullopt leaf for a tensor",
       [&] {
         BoundaryTypes t{std::vector<LeafType>{std::nullopt},
                         std::vector<LeafType>{std::vector<AxisType>{tp = R}}};
         return type_str(no_typecheck(t, affine, typed({tp = R})));
       },
       "std::nullopt for a tensor argument", true},
      {"a non-tensor argument takes nullopt",
       [&] {
         BoundaryTypes t{
             std::vector<LeafType>{std::vector<AxisType>{tp = V}, std::nullopt},
             std::vector<LeafType>{std::vector<AxisType>{tp = V}}};
         return type_str(no_typecheck(
             t, [](const at::Tensor& a, double k) { return a * k; },
             typed({tp = V}), 2.0));
       },
       "{tp: V}"},
      {"out_types count",
       [&] {
         BoundaryTypes t{std::nullopt,
                         std::vector<LeafType>{std::vector<AxisType>{tp = R},
                                               std::vector<AxisType>{tp = R}}};
         return type_str(no_typecheck(t, affine, typed({tp = R})));
       },
       "out_types has 2 leafs but the body returned 1 tensor", true},
      {"a passed-through input is checked, not overwritten",
       [&] {
         BoundaryTypes t{std::nullopt,
                         std::vector<LeafType>{std::vector<AxisType>{tp = R}}};
         return type_str(no_typecheck(
             t, [](const at::Tensor& a) { return a; }, typed({tp = V})));
       },
       "mismatch on axis tp", true},
  });
}

TEST(Boundaries, NoTypecheckWithoutAGuardIsACall) {
  at::Tensor x = untyped();
  BoundaryTypes t{std::nullopt, std::nullopt};  // not even validated
  at::Tensor y = no_typecheck(
      t, [](const at::Tensor& a) { return a * 2; }, x);
  EXPECT_EQ(type_str(y), "untyped");
}

// ----------------------------------------------------------- mutate_type --

TEST(Boundaries, MutateTypeInAllForms) {
  checker::TypecheckGuard guard(
      mesh_of({{"dp", 2}, {"tp", 3}, {"cp", 2}, {"one", 1}, {"real", 6}},
              /*strict=*/false));
  run_table({
      {"A031",
       [] {
         at::Tensor x = typed({dp = V});
         const at::Tensor& y = mutate_type(x, dp, V, R);
         EXPECT_TRUE(y.is_same(x));
         return type_str(x);
       },
       "{dp: R}"},
      {"A033", [] { return type_str(mutate_type(typed({dp = V}), tp, V, R)); },
       "axis tp not found", true},
      {"A034",
       [] {
         return type_str(mutate_type(typed({dp = V, tp = V}), V, R));
       },
       "{dp: R, tp: R}"},
      {"A036",
       [] {
         return type_str(
             mutate_type(typed({dp = R, tp = R, cp = I}), R, {dp = P, tp = I}));
       },
       "{cp: I, dp: P, tp: I}"},
      {"src map, dst scalar",
       [] {
         return type_str(
             mutate_type(typed({dp = V, tp = P}), {dp = V, tp = P}, R));
       },
       "{dp: R, tp: R}"},
      {"two maps",
       [] {
         return type_str(mutate_type(typed({dp = V, tp = I}), {dp = V, tp = I},
                                     {dp = P, tp = R}));
       },
       "{dp: P, tp: R}"},
      {"A037",
       [] {
         return type_str(
             mutate_type(typed({dp = V, tp = I}), {dp = V}, {dp = R, tp = V}));
       },
       "src and dst must name the same axes", true},
      {"S(i) compared as V",
       [] { return type_str(mutate_type(typed({dp = S(0)}), {dp = S(1)}, R)); },
       "{dp: R}"},
      {"failure leaves x unchanged",
       [] {
         at::Tensor x = typed({dp = V, tp = R});
         EXPECT_THROW(mutate_type(x, V, {dp = R, tp = I}), SpmdTypeError);
         return type_str(x);
       },
       "{dp: V, tp: R}"},
      {"A041: singleton axis skipped",
       [] { return type_str(mutate_type(typed({real = R}), one, R, V)); },
       "{real: R}"},
      {"singleton axis skipped in a map",
       [] {
         return type_str(
             mutate_type(typed({real = R}), R, {real = V, one = V}));
       },
       "{real: V}"},
      {"A040: assert_local_type_like",
       [] {
         at::Tensor x = typed({dp = S(0), tp = R}, {4, 3});
         at::Tensor out = untyped({4, 3});
         assert_local_type_like(out, x);
         return type_str(out);
       },
       "{dp: V, tp: R}"},
  });
}

// ---------------------------------------------------------------- Scalar --

TEST(Boundaries, TypedScalars) {
  checker::TypecheckGuard guard(mesh_of({{"tp", 3}, {"one", 1}}));
  auto scalar_str = [](const Scalar& s) {
    return std::to_string(static_cast<int>(s.value())) + " " +
           s.type().to_string();
  };
  run_table({
      {"S001",
       [] {
         return type_str(typed({tp = P}) * Scalar(2.0, {tp = R}).tensor());
       },
       "{tp: P}"},
      {"S004",
       [] {
         return type_str(typed({tp = P}) * Scalar(2.0, {tp = P}).tensor());
       },
       "P", true},
      {"S006",
       [] {
         return type_str(typed({tp = V}) + Scalar(1.0, {tp = V}).tensor());
       },
       "{tp: V}"},
      {"S009",
       [] {
         return type_str(typed({tp = I}) + Scalar(1.0, {tp = V}).tensor());
       },
       "I", true},
      {"S017",
       [&] { return scalar_str(Scalar(3, {tp = V}) + Scalar(4, {tp = R})); },
       "7 {tp: V}"},
      {"S019", [&] { return scalar_str(Scalar(3, {tp = V}) * 2); },
       "6 {tp: V}"},
      {"P op P stays P (no linearity rule)",
       [&] { return scalar_str(Scalar(3, {tp = P}) * Scalar(2, {tp = P})); },
       "6 {tp: P}"},
      {"I with V",
       [&] { return scalar_str(Scalar(3, {tp = I}) - Scalar(2, {tp = V})); },
       "do not combine", true},
      {"different axes",
       [&] { return scalar_str(Scalar(3, {tp = R}) + Scalar(2, {})); },
       "same axes", true},
      {"S021",
       [&] {
         return scalar_str(Scalar(1.0, {tp = V, one = V}));
       },
       "1 {tp: V}"},
      {"S(i)", [&] { return scalar_str(Scalar(1.0, {tp = S(0)})); },
       "S(i) is not a scalar type", true},
      {"comparison",
       [] {
         return std::string(
             Scalar(3, {tp = V}) < Scalar(4, {tp = R}) ? "true" : "false");
       },
       "true"},
  });
  static_assert(
      !std::is_constructible_v<Scalar, bool, std::initializer_list<AxisType>>,
      "S020: a bool is not a numeric scalar");
}

TEST(Boundaries, ScalarOutsideASessionIsAPlainValue) {
  Scalar s = Scalar(3, {tp = V}) + 2;  // S023
  EXPECT_EQ(s.value(), 5.0);
  EXPECT_TRUE(s.type().empty());
  EXPECT_EQ(type_str(s.tensor()), "untyped");
}

}  // namespace
}  // namespace spmd::testing
