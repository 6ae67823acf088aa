// checker_cases_test.cpp - the type-only cases of shared/cases/type-cases.md
// (P, S, F, U, L, A) run through the runtime checker: real ATen ops under a
// TypecheckGuard, typed by the dispatcher fallback with the core rules.
// Each test names its case IDs; expectations are the ones the core unit
// tests use.
#include <torch/nn/functional/linear.h>

#include "checker_test_util.h"

namespace spmd::testing {
namespace {

using namespace spmd::types;

// Default environment of the cases: strict, local, no current mesh.
class CheckerCase : public ::testing::Test {
 protected:
  checker::TypecheckGuard guard_{checker::TypecheckOptions{}};
};

// A 2-D mesh dp(2) x tp(3) as the checker's current mesh.
checker::TypecheckOptions mesh_dp_tp(bool strict = true) {
  checker::TypecheckOptions o;
  o.strict = strict;
  o.mesh = std::vector<checker::MeshAxisInfo>{{"dp", 2}, {"tp", 3}};
  return o;
}

// ---------------------------------------------------------------- P ----

TEST_F(CheckerCase, P001_P003_P004_AddKeepsEqualTypes) {
  EXPECT_EQ(type_str(at::add(typed({tp = R}), typed({tp = R}))), "{tp: R}");
  EXPECT_EQ(type_str(at::add(typed({tp = V}), typed({tp = V}))), "{tp: V}");
  EXPECT_EQ(type_str(typed({tp = I}) + typed({tp = I})), "{tp: I}");
}

TEST_F(CheckerCase, P006_InvariantCannotMix) {
  EXPECT_TYPE_ERROR(at::mul(typed({tp = I}), typed({tp = V})), "cannot mix");
}

TEST_F(CheckerCase, P007_AddOfPartialsIsPartial) {
  EXPECT_EQ(type_str(typed({tp = P}) + typed({tp = P})), "{tp: P}");
}

TEST_F(CheckerCase, P009_PartialPlusReplicateIsAffine) {
  std::string msg =
      spmd_error([&] { at::add(typed({tp = P}), typed({tp = R})); });
  EXPECT_NE(msg.find("all_reduce"), std::string::npos) << msg;
  EXPECT_NE(msg.find("convert"), std::string::npos) << msg;
  // The operator context of spec §9.3.
  EXPECT_NE(msg.find("In aten::add.Tensor("), std::string::npos) << msg;
  EXPECT_NE(msg.find("self: f32[2, 3] {tp: P}"), std::string::npos) << msg;
  EXPECT_NE(msg.find("other: f32[2, 3] {tp: R}"), std::string::npos) << msg;
}

TEST_F(CheckerCase, P010_PartialCannotCombineWithVarying) {
  EXPECT_TYPE_ERROR(at::add(typed({tp = P}), typed({tp = V})),
                    "cannot combine with Varying");
}

TEST_F(CheckerCase, P011_P013_P014_PlainNumbersAtTensorPositions) {
  EXPECT_TYPE_ERROR(typed({tp = P}) + 1.0, "tp");
  EXPECT_EQ(type_str(typed({tp = R}) + 1.0), "{tp: R}");
  EXPECT_EQ(type_str(typed({tp = I}) + 1.0), "{tp: I}");
}

TEST_F(CheckerCase, P016_NegationIsLinear) {
  EXPECT_EQ(type_str(at::neg(typed({tp = P}))), "{tp: P}");
  EXPECT_EQ(type_str(-typed({tp = P})), "{tp: P}");
}

TEST_F(CheckerCase, P017_P019_ReductionsAreLinear) {
  EXPECT_EQ(type_str(typed({tp = P}).sum()), "{tp: P}");
  EXPECT_EQ(type_str(at::cumsum(typed({tp = P}, {4}), 0)), "{tp: P}");
}

TEST_F(CheckerCase, P020_P021_P023_Concatenation) {
  EXPECT_EQ(type_str(at::cat({typed({tp = P}), typed({tp = P})}, 0)),
            "{tp: P}");
  EXPECT_TYPE_ERROR(at::cat({typed({tp = P}), typed({tp = R})}), "tp");
  EXPECT_EQ(type_str(at::stack({typed({tp = I}), typed({tp = I})})), "{tp: I}");
}

TEST_F(CheckerCase, P024_ShapeOpsKeepPartial) {
  at::Tensor x = typed({tp = P}, {2, 3});
  EXPECT_EQ(type_str(x.reshape({6})), "{tp: P}");
  EXPECT_EQ(type_str(x.view({6})), "{tp: P}");
  EXPECT_EQ(type_str(x.transpose(0, 1)), "{tp: P}");
  EXPECT_EQ(type_str(x.permute({1, 0})), "{tp: P}");
  EXPECT_EQ(type_str(x.flatten()), "{tp: P}");
  EXPECT_EQ(type_str(x.unsqueeze(0)), "{tp: P}");
  EXPECT_EQ(type_str(x.unsqueeze(0).expand({2, 2, 3})), "{tp: P}");
  EXPECT_EQ(type_str(x.t()), "{tp: P}");
  EXPECT_EQ(type_str(x.contiguous()), "{tp: P}");
  // The transposing properties are LINEAR too (spec §5.2 step 2).
  EXPECT_EQ(type_str(x.mT()), "{tp: P}");
  EXPECT_EQ(type_str(x.mH()), "{tp: P}");
}

TEST_F(CheckerCase, P026_MultiOutputOpsStampEveryOutput) {
  at::Tensor x = typed({tp = P}, {6});
  for (const at::Tensor& part : x.split(3))
    EXPECT_EQ(type_str(part), "{tp: P}");
  for (const at::Tensor& part : x.chunk(2))
    EXPECT_EQ(type_str(part), "{tp: P}");
  for (const at::Tensor& part : x.view({2, 3}).unbind())
    EXPECT_EQ(type_str(part), "{tp: P}");
}

TEST_F(CheckerCase, P027_CloneAndDetachKeepTheType) {
  EXPECT_EQ(type_str(typed({tp = P}).clone()), "{tp: P}");
  EXPECT_EQ(type_str(typed({tp = P}).detach()), "{tp: P}");
}

TEST_F(CheckerCase, P029_TO_P033_Multiplication) {
  EXPECT_EQ(type_str(at::mul(typed({tp = R}), typed({tp = P}))), "{tp: P}");
  EXPECT_TYPE_ERROR(at::mul(typed({tp = P}), typed({tp = P})),
                    "Partial in multiple factors");
  EXPECT_TYPE_ERROR(at::mul(typed({tp = P}), typed({tp = V})),
                    "cannot combine with Varying");
  std::string msg =
      spmd_error([&] { at::mul(typed({tp = P}), typed({tp = I})); });
  EXPECT_NE(msg.find("cannot mix"), std::string::npos) << msg;
  EXPECT_NE(msg.find("convert"), std::string::npos) << msg;
  EXPECT_NE(msg.find("all_reduce"), std::string::npos) << msg;
}

TEST_F(CheckerCase, P034_TO_P041_MatrixProducts) {
  EXPECT_EQ(
      type_str(at::matmul(typed({tp = P}, {2, 4}), typed({tp = R}, {4, 3}))),
      "{tp: P}");
  EXPECT_EQ(
      type_str(at::matmul(typed({tp = R}, {2, 4}), typed({tp = V}, {4, 3}))),
      "{tp: V}");
  EXPECT_EQ(type_str(at::mm(typed({tp = I}, {2, 2}), typed({tp = I}, {2, 2}))),
            "{tp: I}");
  EXPECT_EQ(type_str(at::einsum("ij,jk,kl->il", {typed({tp = P}, {2, 2}),
                                                 typed({tp = R}, {2, 2}),
                                                 typed({tp = R}, {2, 2})})),
            "{tp: P}");
  EXPECT_TYPE_ERROR(at::einsum("ij,jk->ik", {typed({tp = P}, {2, 2}),
                                             typed({tp = P}, {2, 2})}),
                    "Partial in multiple factors");
  EXPECT_EQ(
      type_str(at::bmm(typed({tp = V}, {2, 2, 2}), typed({tp = V}, {2, 2, 2}))),
      "{tp: V}");
}

TEST_F(CheckerCase, P043_TO_P047_Division) {
  EXPECT_TYPE_ERROR(at::div(typed({tp = R}), typed({tp = P})), "nonlinear");
  EXPECT_TYPE_ERROR(at::div(typed({tp = P}), typed({tp = P})), "nonlinear");
  // C++ `2.0 / x` is reciprocal-like (empty_like, fill_, div_): P rejected.
  EXPECT_TYPE_ERROR(2.0 / typed({tp = P}), "tp");
  EXPECT_EQ(type_str(typed({tp = I}) / 2.0), "{tp: I}");
  EXPECT_EQ(type_str(typed({tp = P}) / 2.0), "{tp: P}");
  EXPECT_EQ(type_str(2.0 / typed({tp = R})), "{tp: R}");
}

TEST_F(CheckerCase, P049_TO_P053_NonlinearOps) {
  EXPECT_TYPE_ERROR(at::relu(typed({tp = P})), "non-linear");
  EXPECT_EQ(type_str(at::relu(typed({tp = V}))), "{tp: V}");
  EXPECT_EQ(type_str(at::exp(typed({tp = R}))), "{tp: R}");
  EXPECT_TYPE_ERROR(at::sort(typed({tp = P}, {4, 3})), "non-linear");
}

TEST_F(CheckerCase, P054_LinearIsNonlinearBeforeDecomposition) {
  EXPECT_EQ(
      type_str(at::linear(typed({tp = V}, {2, 4}), typed({tp = R}, {3, 4}))),
      "{tp: V}");
  // aten::linear is classified before it decomposes into t + matmul, which
  // alone would accept P (spec §6.5 implementation note).
  EXPECT_TYPE_ERROR(
      at::linear(typed({tp = P}, {2, 4}), typed({tp = R}, {3, 4})),
      "non-linear");
  // torch::nn::functional::linear is C++ inline code calling addmm when it
  // has a bias: P + R in the LINEAR step is rejected too.
  EXPECT_TYPE_ERROR(torch::nn::functional::linear(typed({tp = P}, {2, 4}),
                                                  typed({tp = R}, {3, 4}),
                                                  typed({tp = R}, {3})),
                    "tp");
}

TEST_F(CheckerCase, P056_TO_P064_TypeLevelDecompositions) {
  auto m = [](PerAxisType t) { return typed({tp = t}, {2, 2}); };
  EXPECT_TYPE_ERROR(at::addmm(m(P), m(R), m(R)), "tp");
  EXPECT_EQ(type_str(at::addmm(m(P), m(P), m(R))), "{tp: P}");
  EXPECT_TYPE_ERROR(at::addmm(m(R), m(P), m(R)), "tp");
  EXPECT_TYPE_ERROR(at::addmm(m(R), m(P), m(P)), "Partial in multiple factors");
  EXPECT_EQ(type_str(at::addmm(m(V), m(R), m(R))), "{tp: V}");
  EXPECT_EQ(type_str(at::baddbmm(typed({tp = P}, {2, 2, 2}),
                                 typed({tp = P}, {2, 2, 2}),
                                 typed({tp = R}, {2, 2, 2}))),
            "{tp: P}");
  EXPECT_TYPE_ERROR(at::addr(m(P), typed({tp = R}, {2}), typed({tp = R}, {2})),
                    "tp");
}

TEST_F(CheckerCase, P066_P067_Indexing) {
  at::Tensor data = typed({tp = R}, {10, 4});
  at::Tensor idx;
  {
    checker::NoTypecheckGuard paused;
    idx = at::arange(3);
  }
  assert_type(idx, {tp = V});
  EXPECT_EQ(type_str(data.index({idx})), "{tp: V}");
  at::Tensor zero;
  {
    checker::NoTypecheckGuard paused;
    zero = at::zeros({1}, at::kLong);
  }
  assert_type(zero, {tp = R});
  EXPECT_TYPE_ERROR(typed({tp = P}, {4}).index({zero}), "non-linear");
}

TEST_F(CheckerCase, P069_TO_P071_ComparisonsAndUnregisteredOps) {
  EXPECT_EQ(type_str(typed({tp = V}) >= 0), "{tp: V}");
  EXPECT_EQ(type_str(at::atan2(typed({tp = R}), typed({tp = V}))), "{tp: V}");
  EXPECT_TYPE_ERROR(at::erfinv(typed({tp = P})), "non-linear");
}

TEST_F(CheckerCase, P073_P074_AxesAreIndependent) {
  EXPECT_EQ(type_str(at::mul(typed({dp = P, tp = V}), typed({dp = R, tp = V}))),
            "{dp: P, tp: V}");
  EXPECT_EQ(type_str(at::matmul(typed({dp = V, tp = R}, {2, 4}),
                                typed({dp = R, tp = V}, {4, 3}))),
            "{dp: V, tp: V}");
  EXPECT_TYPE_ERROR(at::add(typed({dp = P, tp = R}), typed({dp = R, tp = R})),
                    "dp");
}

TEST_F(CheckerCase, P076_P077_PowAndTypedLikeFactories) {
  EXPECT_TYPE_ERROR(at::pow(typed({tp = P}), 2), "non-linear");
  EXPECT_TYPE_ERROR(at::zeros_like(typed({tp = P})), "non-linear");
  EXPECT_EQ(type_str(at::zeros_like(typed({tp = V}))), "{tp: V}");
}

// ---------------------------------------------------------------- S ----
// The reference's Scalar(value, type) is checker::typed_scalar: a typed 0-d
// tensor (C++ numbers cannot carry a type through ATen).

TEST_F(CheckerCase, S001_TO_S004_TypedScalarFactors) {
  using checker::typed_scalar;
  EXPECT_EQ(type_str(typed({tp = P}) * typed_scalar(2.0, {tp = R})), "{tp: P}");
  EXPECT_TYPE_ERROR(typed({tp = P}) * typed_scalar(2.0, {tp = I}),
                    "cannot mix");
  EXPECT_TYPE_ERROR(typed({tp = P}) * typed_scalar(2.0, {tp = P}),
                    "Partial in multiple factors");
}

TEST_F(CheckerCase, S006_TO_S009_TypedScalarTerms) {
  using checker::typed_scalar;
  EXPECT_EQ(type_str(typed({tp = V}) + typed_scalar(1.0, {tp = V})), "{tp: V}");
  EXPECT_EQ(type_str(typed({tp = P}) + typed_scalar(1.0, {tp = P})), "{tp: P}");
  EXPECT_TYPE_ERROR(typed({tp = I}) + typed_scalar(1.0, {tp = V}),
                    "cannot mix");
}

TEST_F(CheckerCase, S010_S011_NarrowWithARankDependentStart) {
  using checker::typed_scalar;
  EXPECT_EQ(type_str(at::narrow(typed({tp = R}, {8}), 0,
                                typed_scalar(0, {tp = V}), 2)),
            "{tp: V}");
  EXPECT_TYPE_ERROR(
      at::narrow(typed({tp = P}, {8}), 0, typed_scalar(0, {tp = V}), 2),
      "cannot combine with Varying");
}

TEST_F(CheckerCase, S013_S014_DivisionByTypedScalars) {
  using checker::typed_scalar;
  EXPECT_EQ(type_str(typed({tp = P}) / typed_scalar(2.0, {tp = R})), "{tp: P}");
  EXPECT_TYPE_ERROR(typed({tp = P}) / typed_scalar(2.0, {tp = P}), "nonlinear");
}

TEST_F(CheckerCase, S020_BoolIsNotANumericScalar) {
  std::string msg =
      spmd_error<UsageError>([&] { checker::typed_scalar(true, {tp = R}); });
  EXPECT_NE(msg.find("bool"), std::string::npos) << msg;
}

TEST(CheckerScalar, S021_SingletonAxesAreDropped) {
  checker::TypecheckOptions o;
  o.mesh = std::vector<checker::MeshAxisInfo>{{"tp", 3}, {"one", 1}};
  checker::TypecheckGuard guard(o);
  at::Tensor s = checker::typed_scalar(1.0, {tp = V, one = V});
  EXPECT_EQ(type_str(s), "{tp: V}");
}

TEST(CheckerScalar, S023_OutsideAGuardATypedScalarIsUntyped) {
  at::Tensor s = checker::typed_scalar(3, {tp = V});
  EXPECT_FALSE(has_type(s));
  EXPECT_EQ((s + 2).item<int64_t>(), 5);
}

// ---------------------------------------------------------------- F ----

TEST_F(CheckerCase, F001_FactoriesWithoutMeshAreTypedEmpty) {
  at::Tensor z = at::zeros({4});
  EXPECT_TRUE(has_type(z));
  EXPECT_EQ(type_str(z), "{}");
}

TEST(CheckerFactory, F003_RandomFactoriesAreTypedEmptyUnderAMesh) {
  checker::TypecheckGuard guard(mesh_dp_tp());
  EXPECT_EQ(type_str(at::randn({4})), "{}");
  EXPECT_EQ(type_str(at::zeros({4})), "{dp: R, tp: R}");
}

TEST_F(CheckerCase, F004_TypedEmptyLacksTheAxis) {
  EXPECT_TYPE_ERROR(at::add(typed({tp = R}, {4}), at::zeros({4})), "tp");
}

TEST(CheckerFactory, F006_F007_DeterministicFactoriesAreReplicate) {
  checker::TypecheckOptions o;
  o.mesh = std::vector<checker::MeshAxisInfo>{{"tp", 3}};
  checker::TypecheckGuard guard(o);
  at::Tensor x = typed({tp = V}, {8, 4});
  EXPECT_EQ(type_str(x.new_zeros({})), "{tp: R}");
  EXPECT_EQ(type_str(at::scalar_tensor(0.5)), "{tp: R}");
  EXPECT_EQ(type_str(at::arange(5)), "{tp: R}");
}

TEST_F(CheckerCase, F009_TO_F011_UntypedOperands) {
  EXPECT_EQ(type_str(at::add(untyped(), untyped())), "{}");
  EXPECT_TYPE_ERROR(at::add(typed({tp = R}), untyped()), "tp");
  checker::TypecheckGuard permissive(false);
  EXPECT_EQ(type_str(at::add(typed({tp = R}), untyped())), "{tp: R}");
}

TEST_F(CheckerCase, F013_AnnotatedFactoryOutput) {
  at::Tensor z = at::zeros({4});
  assert_type(z, {tp = R});
  EXPECT_EQ(type_str(at::add(typed({tp = R}, {4}), z)), "{tp: R}");
}

TEST(CheckerFactory, F014_UntypedOperandMissesTheMeshAxes) {
  checker::TypecheckGuard guard(mesh_dp_tp());
  std::string msg = spmd_error([&] { at::relu(untyped()); });
  EXPECT_NE(msg.find("args[0]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("under mesh {dp, tp}"), std::string::npos) << msg;
}

TEST(CheckerMesh, M003_M006_MeshCompletenessAtUse) {
  {
    checker::TypecheckGuard guard(mesh_dp_tp(/*strict=*/false));
    at::Tensor x = typed({tp = R});
    EXPECT_EQ(type_str(at::add(x, x)), "{tp: R}");
  }
  checker::TypecheckGuard guard(mesh_dp_tp());
  at::Tensor x = typed({tp = R});  // M001: no completeness check here
  EXPECT_TYPE_ERROR(at::add(x, x), "dp");
  EXPECT_EQ(type_str(at::add(typed({dp = V, tp = R}), typed({dp = R, tp = R}))),
            "{dp: V, tp: R}");
}

TEST(CheckerMesh, M009_M010_BareTypeAnnotations) {
  {
    checker::TypecheckGuard guard(mesh_dp_tp());
    at::Tensor x = untyped();
    assert_type(x, R);
    EXPECT_EQ(type_str(x), "{dp: R, tp: R}");
  }
  checker::TypecheckGuard guard;
  EXPECT_TYPE_ERROR(assert_type(untyped(), R), "mesh");
}

TEST(CheckerMesh, M011_UnknownAxisNameUnderAMesh) {
  checker::TypecheckGuard guard(mesh_dp_tp());
  EXPECT_TYPE_ERROR(assert_type(untyped(), {real = R}),
                    "no mesh axis named 'real'");
}

TEST(CheckerMesh, M021_IncrementalAnnotation) {
  checker::TypecheckGuard guard(mesh_dp_tp());
  at::Tensor x = typed({tp = R});
  assert_type(x, {dp = R});
  EXPECT_EQ(type_str(at::add(x, x)), "{dp: R, tp: R}");
}

// ---------------------------------------------------------------- U ----

TEST_F(CheckerCase, U001_U010_InPlaceKeepsTheType) {
  at::Tensor x = typed({tp = R});
  x.add_(typed({tp = R}));
  EXPECT_EQ(type_str(x), "{tp: R}");
  at::Tensor p = typed({tp = P});
  p.add_(typed({tp = P}));
  EXPECT_EQ(type_str(p), "{tp: P}");
}

TEST_F(CheckerCase, U003_U004_WideningToVarying) {
  at::Tensor x = typed({tp = R});
  x.add_(typed({tp = V}));
  EXPECT_EQ(type_str(x), "{tp: V}");
  at::Tensor y = typed({tp = R});
  y += typed({tp = V});
  EXPECT_EQ(type_str(y), "{tp: V}");
}

TEST_F(CheckerCase, U003_NoWideningWhenTheTensorRequiresGrad) {
  at::Tensor w = typed({tp = R});
  w.requires_grad_(true);
  at::Tensor x = w * 1.0;  // a non-leaf that requires grad
  EXPECT_EQ(type_str(x), "{tp: R}");
  EXPECT_TYPE_ERROR(x.add_(typed({tp = V})), "in-place/out");
}

TEST_F(CheckerCase, U006_U007_U016_OutArguments) {
  at::Tensor c = typed({tp = V});
  EXPECT_TYPE_ERROR(at::add_out(c, typed({tp = R}), typed({tp = R})),
                    "in-place/out");
  at::Tensor d = typed({tp = R});
  at::add_out(d, typed({tp = R}), typed({tp = V}));
  EXPECT_EQ(type_str(d), "{tp: V}");
  at::Tensor e = typed({tp = V});
  at::add_out(e, typed({tp = R}), typed({tp = V}));
  EXPECT_EQ(type_str(e), "{tp: V}");
}

TEST_F(CheckerCase, U_AnOpReturningItsInputMutatesIt) {
  // type_as returns self when the dtype already matches: identity (§6.11).
  at::Tensor x = typed({tp = R});
  at::Tensor y = x.type_as(typed({tp = V}));
  EXPECT_TRUE(y.is_same(x));
  EXPECT_EQ(type_str(x), "{tp: V}");  // widening R -> V, no grad
  at::Tensor w = typed({tp = R});
  w.requires_grad_(true);
  EXPECT_TYPE_ERROR(w.type_as(typed({tp = V})), "in-place/out");
}

TEST_F(CheckerCase, U009_UntypedInputWithOut) {
  at::Tensor c = untyped();
  EXPECT_TYPE_ERROR(at::add_out(c, untyped(), typed({tp = R})), "tp");
}

TEST_F(CheckerCase, U011_TO_U014_InPlaceErrors) {
  EXPECT_TYPE_ERROR(typed({tp = R}).mul_(typed({tp = P})), "in-place/out");
  at::Tensor v = typed({tp = V});
  v.mul_(2.0);
  EXPECT_EQ(type_str(v), "{tp: V}");
  EXPECT_TYPE_ERROR(typed({tp = I}).add_(typed({tp = V})), "cannot mix");
}

TEST_F(CheckerCase, U_TheOpRunsBeforeTheTypeErrorIsRaised) {
  // Spec §5.2 step 8: the op's own error wins over the type error.
  at::Tensor a = typed({tp = P}, {2, 3});
  at::Tensor b = typed({tp = R}, {4, 5});
  try {
    at::add(a, b);
    ADD_FAILURE() << "did not throw";
  } catch (const SpmdTypeError& e) {
    ADD_FAILURE() << "type error instead of the shape error: " << e.what();
  } catch (const c10::Error&) {
  }
}

// ---------------------------------------------------------------- L ----

TEST_F(CheckerCase, L001_InvariantLossIsAllowed) {
  at::Tensor w = typed({tp = I}, {3});
  w.requires_grad_(true);
  at::Tensor loss = (w * 2.0).sum();
  EXPECT_EQ(type_str(loss), "{tp: I}");
  loss.backward();
  EXPECT_TRUE(w.grad().defined());
}

TEST_F(CheckerCase, L001_PartialLossIsAllowedAndBackwardIsUntyped) {
  at::Tensor w = typed({tp = R}, {3});
  w.requires_grad_(true);
  at::Tensor loss = (typed({tp = P}, {3}) * w).sum();
  EXPECT_EQ(type_str(loss), "{tp: P}");
  loss.backward();  // the implicit seed and the backward ops are not typed
  EXPECT_FALSE(has_type(w.grad()));
}

TEST_F(CheckerCase, L003_L004_ReplicateAndVaryingLossesAreRejected) {
  at::Tensor w = typed({tp = R}, {3});
  w.requires_grad_(true);
  at::Tensor loss_r = (w * 2.0).sum();
  std::string msg = spmd_error([&] { loss_r.backward(); });
  EXPECT_NE(msg.find("dst=I"), std::string::npos) << msg;
  EXPECT_FALSE(w.grad().defined());
  at::Tensor loss_v = (w * typed({tp = V}, {3})).sum();
  msg = spmd_error([&] { loss_v.backward(); });
  EXPECT_NE(msg.find("reinterpret"), std::string::npos) << msg;
  EXPECT_TYPE_ERROR(checker::backward(loss_v), "reinterpret");
}

TEST_F(CheckerCase, L006_L007_UntypedLoss) {
  at::Tensor w = untyped({3});
  w.requires_grad_(true);
  at::Tensor loss;
  {
    checker::NoTypecheckGuard paused;
    loss = (w * 2.0).sum();
  }
  EXPECT_FALSE(has_type(loss));
  EXPECT_TYPE_ERROR(loss.backward(), "Annotate the loss");
  checker::TypecheckGuard permissive(false);
  loss.backward();
  EXPECT_TRUE(w.grad().defined());
}

TEST_F(CheckerCase, L009_ExplicitGradientIsNotChecked) {
  at::Tensor w = typed({tp = R}, {3});
  w.requires_grad_(true);
  at::Tensor loss = (w * 2.0).sum();
  loss.backward(typed({tp = P}, {}));
  EXPECT_TRUE(w.grad().defined());
}

// ---------------------------------------------------------------- A ----

TEST_F(CheckerCase, A001_TO_A007_AssertType) {
  at::Tensor x = untyped();
  assert_type(x, {tp = R});
  EXPECT_EQ(type_str(x), "{tp: R}");
  EXPECT_TYPE_ERROR(assert_type(x, {tp = I}), "SPMD type mismatch");
  EXPECT_EQ(type_str(x), "{tp: R}");
  at::Tensor v = typed({tp = V});
  assert_type(v, {tp = P});
  EXPECT_EQ(type_str(v), "{tp: P}");
  at::Tensor d = typed({dp = R});
  assert_type(d, {tp = I});
  EXPECT_EQ(type_str(d), "{dp: R, tp: I}");
  at::Tensor e = typed({dp = R, tp = V});
  assert_type(e, {tp = V});
  EXPECT_EQ(type_str(e), "{dp: R, tp: V}");
}

TEST_F(CheckerCase, A009_TO_A014_ShardAnnotations) {
  EXPECT_EQ(type_str(typed({tp = S(0)}, {4})), "{tp: V}");
  EXPECT_EQ(type_str(typed({tp = S(-1)}, {3, 4})), "{tp: V}");
  EXPECT_TYPE_ERROR(typed({tp = S(2)}, {3, 4}), "out of bounds");
  EXPECT_TYPE_ERROR(typed({tp = S(0)}, {}), "out of bounds");
  EXPECT_TYPE_ERROR(typed({dp = S(0), tp = S(0)}, {4}), "multiple axes");
  EXPECT_EQ(type_str(typed({dp = S(0), tp = I}, {3, 4})), "{dp: V, tp: I}");
}

TEST_F(CheckerCase, A023_A024_ShardRefinesVarying) {
  at::Tensor x = typed({tp = S(0)}, {4, 3});
  assert_type(x, {tp = V});
  EXPECT_EQ(type_str(x), "{tp: V}");
  at::Tensor y = typed({tp = V}, {4, 3});
  assert_type(y, {tp = S(0)});
  EXPECT_EQ(type_str(y), "{tp: V}");
}

TEST(CheckerAnnotation, A027_SingletonAxisIsDropped) {
  checker::TypecheckOptions o;
  o.mesh = std::vector<checker::MeshAxisInfo>{{"real", 6}, {"one", 1}};
  checker::TypecheckGuard guard(o);
  at::Tensor x = untyped();
  assert_type(x, {one = R});
  EXPECT_TRUE(has_type(x));
  EXPECT_EQ(type_str(x), "{}");
}

TEST_F(CheckerCase, A030_ListsOfTensors) {
  std::vector<at::Tensor> xs = {untyped(), untyped()};
  assert_type(xs, {tp = R});
  EXPECT_EQ(type_str(xs[0]), "{tp: R}");
  EXPECT_EQ(type_str(xs[1]), "{tp: R}");
}

TEST_F(CheckerCase, A031_TO_A034_MutateType) {
  at::Tensor x = typed({dp = V});
  EXPECT_TRUE(checker::mutate_type(x, dp, V, R).is_same(x));
  EXPECT_EQ(type_str(x), "{dp: R}");
  EXPECT_TYPE_ERROR(checker::mutate_type(typed({dp = V}), tp, V, R), "tp");
  at::Tensor y = typed({dp = V, tp = V});
  checker::mutate_type(y, V, R);
  EXPECT_EQ(type_str(y), "{dp: R, tp: R}");
}

TEST_F(CheckerCase, A039_A040_AssertTypeLike) {
  at::Tensor x = typed({dp = S(0), tp = R}, {4, 3});
  at::Tensor out = untyped({4, 3});
  checker::assert_type_like(out, x);
  EXPECT_EQ(type_str(out), "{dp: V, tp: R}");
  at::Tensor over = untyped({4, 3});
  checker::assert_type_like(over, x, {tp = I});
  EXPECT_EQ(type_str(over), "{dp: V, tp: I}");
}

TEST(CheckerAnnotation, A041_MutateTypeSkipsSingletonAxes) {
  checker::TypecheckOptions o;
  o.mesh = std::vector<checker::MeshAxisInfo>{{"real", 6}, {"one", 1}};
  checker::TypecheckGuard guard(o);
  at::Tensor x = typed({real = R});
  checker::mutate_type(x, one, R, V);
  EXPECT_EQ(type_str(x), "{real: R}");
}

}  // namespace
}  // namespace spmd::testing
