// decomposition_test.cpp - register_decomposition / call_decomposed (spec
// §13.2): an opaque fused kernel typed by a reference implementation run on
// meta copies of its inputs. The tensor-parallel cases run on Gloo ranks that
// are threads of this process.
#include <ATen/ATen.h>
#include <spmd/checker.h>
#include <spmd/collectives.h>
#include <spmd/decomposition.h>
#include <spmd/errors.h>

#include <atomic>
#include <cstdlib>
#include <iostream>
#include <string>
#include <tuple>

#include "runtime_test_util.h"

namespace spmd {
namespace {

using namespace spmd::types;
using at::Tensor;
using testing::error_of;
using testing::run_mesh;

SPMD_AXIS(tp);

// ------------------------------------------------ the fused kernel -------
// RMSNorm followed by a matmul: y = (x / rms(x) * g) @ w. The "fused"
// kernel computes it in one opaque function (its internal ops are not part
// of the typed program); the reference spells it with ATen ops.

std::atomic<int> kernel_calls{0};
std::atomic<int> reference_calls{0};
std::atomic<bool> checking_inside_kernel{false};

Tensor fused_rms_norm_matmul(const Tensor& x, const Tensor& g, const Tensor& w,
                             double eps) {
  ++kernel_calls;
  if (checker::is_type_checking()) checking_inside_kernel = true;
  // A different, "fused" formulation of the same value.
  Tensor inv = at::rsqrt(at::sum(x * x, {-1}, true) / x.size(-1) + eps);
  return at::mm(x * inv, g.unsqueeze(1) * w);
}

Tensor reference_rms_norm_matmul(const Tensor& x, const Tensor& g,
                                 const Tensor& w, double eps) {
  ++reference_calls;
  Tensor n = x * at::rsqrt(x.pow(2).mean({-1}, true) + eps);
  return at::matmul(n * g, w);
}

// Registered once for the whole binary (registration is process-wide).
const bool registered = [] {
  register_decomposition("test.rms_norm_matmul", reference_rms_norm_matmul);
  // Two outputs: the normalised input and the product.
  register_decomposition(
      "test.rms_norm_matmul_pair",
      [](const Tensor& x, const Tensor& g, const Tensor& w, double eps) {
        Tensor n = x * at::rsqrt(x.pow(2).mean({-1}, true) + eps) * g;
        return std::make_tuple(n, at::matmul(n, w));
      });
  // Forgets the transpose the kernel applies: a shape mismatch.
  register_decomposition(
      "test.wrong_shape",
      [](const Tensor& x, const Tensor& w) { return at::matmul(x, w); });
  // Reads a value: impossible on meta tensors.
  register_decomposition("test.reads_data", [](const Tensor& x) {
    return x * x.sum().item<double>();
  });
  return true;
}();

// Deterministic values, equal on every rank (made with checking paused).
Tensor untyped(at::IntArrayRef shape, double seed) {
  checker::NoTypecheckGuard paused;
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return at::arange(1, 1 + n, at::kFloat).reshape(shape).mul(seed).sin();
}

std::string type_str(const Tensor& t) {
  return has_type(t) ? get_type(t).to_string() : "untyped";
}

TEST(Decomposition, TypesFusedKernelByItsReferenceOnRanks) {
  ASSERT_TRUE(registered);
  run_mesh({{tp, 2}}, [](const DeviceMesh& mesh) {
    const int64_t r = mesh.axis("tp").local_rank;
    // Column parallel: x and g replicated, w sharded on its columns.
    Tensor x = untyped({4, 8}, 0.3);
    Tensor g = untyped({8}, 0.7);
    Tensor w_full = untyped({8, 6}, 1.1);
    Tensor w = w_full.narrow(1, 3 * r, 3).contiguous();
    checker::TypecheckGuard typecheck;
    assert_type(x, {tp = R});
    assert_type(g, {tp = R});
    assert_type(w, {tp = S(1)});
    Tensor y = call_decomposed("test.rms_norm_matmul", fused_rms_norm_matmul, x,
                               g, w, 1e-6);
    EXPECT_EQ(type_str(y), "{tp: V}");
    EXPECT_FALSE(checking_inside_kernel.load());
    EXPECT_EQ(y.device().type(), at::kCPU);  // the kernel's real result
    Tensor full = all_gather(y, tp, S(1), R);
    EXPECT_EQ(type_str(full), "{tp: R}");
    checker::NoTypecheckGuard paused;
    Tensor expected = reference_rms_norm_matmul(x, g, w_full, 1e-6);
    // The kernel is a different formulation (float rounding differs).
    EXPECT_TRUE(at::allclose(full, expected, 1e-4, 1e-5));
  });
}

TEST(Decomposition, ErrorsSurfaceFromThePrimitiveOfTheReference) {
  run_mesh({{tp, 2}}, [](const DeviceMesh&) {
    Tensor x = untyped({4, 8}, 0.3);
    Tensor g = untyped({8}, 0.7);
    Tensor w = untyped({8, 3}, 1.1);
    checker::TypecheckGuard typecheck;
    assert_type(x, {tp = P});  // a pending sum cannot be normalised
    assert_type(g, {tp = R});
    assert_type(w, {tp = S(1)});
    int line = 0;
    std::string msg = error_of<SpmdTypeError>([&] {
      line = __LINE__ + 1;  // the line of the call (and of its name)
      call_decomposed("test.rms_norm_matmul", fused_rms_norm_matmul, x, g, w,
                      1e-6);
    });
    if (std::getenv("SPMD_TEST_SHOW") != nullptr) std::cerr << msg << "\n";
    EXPECT_NE(msg.find("Partial"), std::string::npos) << msg;
    EXPECT_NE(msg.find("aten::pow"), std::string::npos) << msg;
    EXPECT_NE(msg.find("reference implementation of decomposition "
                       "'test.rms_norm_matmul'"),
              std::string::npos)
        << msg;
    EXPECT_NE(msg.find("decomposition_test.cpp:" + std::to_string(line) +
                       " (spmd::call_decomposed)"),
              std::string::npos)
        << msg;
  });
}

TEST(Decomposition, GlobalModeCarriesThePartitionSpec) {
  run_mesh({{tp, 2}}, [](const DeviceMesh&) {
    Tensor x = untyped({4, 8}, 0.3);
    Tensor g = untyped({8}, 0.7);
    Tensor w = untyped({8, 3}, 1.1);
    checker::TypecheckOptions o;
    o.local = false;
    checker::TypecheckGuard typecheck(o);
    assert_type(x, {tp = R});
    assert_type(g, {tp = R});
    assert_type(w, {tp = S(1)});
    Tensor y = call_decomposed("test.rms_norm_matmul", fused_rms_norm_matmul, x,
                               g, w, 1e-6);
    EXPECT_EQ(get_global_type(y).to_string(),
              "{tp: S(1)} PartitionSpec(None, tp)");
    // The shard dim is known: gathering along it is accepted.
    Tensor full = all_gather(y, tp, S(1), R);
    EXPECT_EQ(type_str(full), "{tp: R}");
  });
}

checker::TypecheckOptions tp_mesh(bool strict) {
  checker::TypecheckOptions o;
  o.strict = strict;
  o.mesh = std::vector<checker::MeshAxisInfo>{{"tp", 2}};
  return o;
}

TEST(Decomposition, SeveralOutputsAreTypedLeafByLeaf) {
  Tensor x = untyped({4, 8}, 0.3);
  Tensor g = untyped({8}, 0.7);
  Tensor w = untyped({8, 3}, 1.1);
  checker::TypecheckGuard typecheck(tp_mesh(true));
  assert_type(x, {tp = V});
  assert_type(g, {tp = R});
  assert_type(w, {tp = R});
  auto kernel = [](const Tensor& x, const Tensor& g, const Tensor& w,
                   double eps) {
    Tensor n = x * at::rsqrt(x.pow(2).mean({-1}, true) + eps) * g;
    return std::make_tuple(n, at::mm(n, w));
  };
  auto [n, y] =
      call_decomposed("test.rms_norm_matmul_pair", kernel, x, g, w, 1e-6);
  EXPECT_EQ(type_str(n), "{tp: V}");
  EXPECT_EQ(type_str(y), "{tp: V}");
}

TEST(Decomposition, UnregisteredNameIsAnErrorWhenStrict) {
  Tensor x = untyped({2, 3}, 0.5);
  checker::TypecheckGuard typecheck(tp_mesh(true));
  assert_type(x, {tp = R});
  bool ran = false;
  std::string msg = error_of<SpmdTypeError>([&] {
    call_decomposed(
        "test.nobody_registered_this",
        [&](const Tensor& t) {
          ran = true;
          return t * 2;
        },
        x);
  });
  EXPECT_NE(msg.find("call_decomposed('test.nobody_registered_this')"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("not registered"), std::string::npos) << msg;
  EXPECT_NE(msg.find("spmd::register_decomposition(\"test.nobody_registered_"
                     "this\", reference)"),
            std::string::npos)
      << msg;
  EXPECT_FALSE(ran);
}

TEST(Decomposition, UnregisteredNameRunsUntypedWhenPermissive) {
  Tensor x = untyped({2, 3}, 0.5);
  checker::TypecheckGuard typecheck(tp_mesh(false));
  assert_type(x, {tp = R});
  bool checked_inside = true;
  Tensor y = call_decomposed(
      "test.nobody_registered_this",
      [&](const Tensor& t) {
        checked_inside = checker::is_type_checking();
        return t * 2;
      },
      x);
  EXPECT_FALSE(checked_inside);
  EXPECT_EQ(type_str(y), "untyped");
  checker::NoTypecheckGuard paused;
  EXPECT_TRUE(at::equal(y, x * 2));
}

TEST(Decomposition, OutputCountMismatch) {
  Tensor x = untyped({4, 8}, 0.3);
  Tensor g = untyped({8}, 0.7);
  Tensor w = untyped({8, 3}, 1.1);
  checker::TypecheckGuard typecheck(tp_mesh(true));
  assert_type(x, {tp = R});
  assert_type(g, {tp = R});
  assert_type(w, {tp = R});
  std::string msg = error_of<SpmdTypeError>([&] {
    call_decomposed(
        "test.rms_norm_matmul",
        [](const Tensor& x, const Tensor& g, const Tensor& w, double eps) {
          Tensor y = fused_rms_norm_matmul(x, g, w, eps);
          return std::vector<Tensor>{y, y};
        },
        x, g, w, 1e-6);
  });
  EXPECT_NE(msg.find("the kernel returned 2 tensor(s) but the reference "
                     "implementation returned 1"),
            std::string::npos)
      << msg;
}

TEST(Decomposition, OutputShapeMismatch) {
  Tensor x = untyped({4, 8}, 0.3);
  Tensor w = untyped({8, 8}, 1.1);
  checker::TypecheckGuard typecheck(tp_mesh(true));
  assert_type(x, {tp = R});
  assert_type(w, {tp = R});
  std::string msg = error_of<SpmdTypeError>([&] {
    call_decomposed(
        "test.wrong_shape",
        [](const Tensor& x, const Tensor& w) { return at::mm(x, w).t(); }, x,
        w);
  });
  EXPECT_NE(msg.find("output 0 of the kernel has shape [8, 4] but the "
                     "reference implementation gives [4, 8]"),
            std::string::npos)
      << msg;
}

TEST(Decomposition, InPlaceKernelOutputIsCheckedNotRetyped) {
  static const bool reg = [] {
    register_decomposition("test.scale_in_place",
                           [](const Tensor& x) { return at::exp(x); });
    register_decomposition(
        "test.mul_in_place",
        [](const Tensor& x, const Tensor& v) { return x * v; });
    return true;
  }();
  ASSERT_TRUE(reg);
  Tensor x = untyped({2, 3}, 0.5);
  Tensor v = untyped({2, 3}, 0.25);
  checker::TypecheckGuard typecheck(tp_mesh(true));
  assert_type(x, {tp = R});
  assert_type(v, {tp = V});
  // exp(R) is R: the kernel that updates x in place keeps it R.
  Tensor y = call_decomposed(
      "test.scale_in_place", [](const Tensor& t) { return t.mul_(2); }, x);
  EXPECT_EQ(type_str(y), "{tp: R}");
  // x * v is V, but a kernel that multiplies into x cannot make x V.
  std::string msg = error_of<SpmdTypeError>([&] {
    call_decomposed(
        "test.mul_in_place",
        [](const Tensor& a, const Tensor& b) { return a.mul_(b); }, x, v);
  });
  EXPECT_NE(msg.find("output 0 of the kernel already has type {tp: R} (it "
                     "is one of the inputs) but the reference "
                     "implementation gives {tp: V}"),
            std::string::npos)
      << msg;
  EXPECT_EQ(type_str(x), "{tp: R}");
}

TEST(Decomposition, SignatureMismatch) {
  Tensor x = untyped({4, 8}, 0.3);
  Tensor g = untyped({8}, 0.7);
  Tensor w = untyped({8, 3}, 1.1);
  checker::TypecheckGuard typecheck(tp_mesh(true));
  assert_type(x, {tp = R});
  assert_type(g, {tp = R});
  assert_type(w, {tp = R});
  std::string msg = error_of<UsageError>([&] {
    call_decomposed(
        "test.rms_norm_matmul",
        [](const Tensor& x, const Tensor& g, const Tensor& w, float eps) {
          return fused_rms_norm_matmul(x, g, w, eps);
        },
        x, g, w, 1e-6f);
  });
  EXPECT_NE(msg.find("the arguments (at::Tensor, at::Tensor, at::Tensor, "
                     "float) do not match the parameters of the registered "
                     "reference (at::Tensor, at::Tensor, at::Tensor, double)"),
            std::string::npos)
      << msg;
}

TEST(Decomposition, ReferenceFailingOnMetaTensorsIsWrapped) {
  Tensor x = untyped({2, 3}, 0.5);
  checker::TypecheckGuard typecheck(tp_mesh(true));
  assert_type(x, {tp = R});
  std::string msg = error_of<UsageError>([&] {
    call_decomposed(
        "test.reads_data", [](const Tensor& t) { return t * 2; }, x);
  });
  EXPECT_NE(msg.find("call_decomposed('test.reads_data'): the reference "
                     "implementation failed on shape-only (meta device) "
                     "copies of the inputs"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("no .item()"), std::string::npos) << msg;
}

TEST(Decomposition, WithoutGuardOnlyTheKernelRuns) {
  Tensor x = untyped({4, 8}, 0.3);
  Tensor g = untyped({8}, 0.7);
  Tensor w = untyped({8, 3}, 1.1);
  const int refs = reference_calls;
  const int kernels = kernel_calls;
  Tensor y = call_decomposed("test.rms_norm_matmul", fused_rms_norm_matmul, x,
                             g, w, 1e-6);
  EXPECT_EQ(reference_calls, refs);
  EXPECT_EQ(kernel_calls, kernels + 1);
  EXPECT_FALSE(has_type(y));
  // Not even the name is looked up: an unknown name is fine without a guard.
  Tensor z = call_decomposed(
      "test.unknown_without_guard", [](const Tensor& t) { return t + 1; }, x);
  EXPECT_TRUE(at::equal(z, x + 1));
}

TEST(Decomposition, RegistrationErrors) {
  std::string dup = error_of<UsageError>([] {
    register_decomposition("test.rms_norm_matmul", reference_rms_norm_matmul);
  });
  EXPECT_NE(dup.find("already registered"), std::string::npos) << dup;
  std::string empty = error_of<UsageError>([] {
    register_decomposition("test.empty",
                           std::function<Tensor(const Tensor&)>());
  });
  EXPECT_NE(empty.find("the reference implementation is empty"),
            std::string::npos)
      << empty;
  std::string unnamed = error_of<UsageError>(
      [] { register_decomposition("", [](const Tensor& t) { return t; }); });
  EXPECT_NE(unnamed.find("the name is empty"), std::string::npos) << unnamed;
}

}  // namespace
}  // namespace spmd
