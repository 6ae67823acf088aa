// errors_test.cpp - argument errors from the core rules, shape errors, the
// expert-mode gate, timeouts that name the collective and the axis, dtype
// options (§7.10), in-place all_reduce and the collective hook.
#include <spmd/core/collectives.h>
#include <spmd/detail/collective_hook.h>
#include <torch/csrc/autograd/autograd.h>

#include "runtime_test_util.h"

namespace spmd {
namespace {

SPMD_AXIS(tp);
SPMD_AXIS(dp);

using at::Tensor;
using testing::error_of;
using testing::run_mesh;
using testing::run_ranks;
using testing::TensorEq;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Legality is decided before any communication, so a fake mesh suffices.
class FakeMeshTest : public ::testing::Test {
 protected:
  std::shared_ptr<World> world_ = World::fake(1, 4);
  DeviceMesh mesh_{world_, {{tp, 4}}};
  MeshGuard guard_{mesh_};
};

TEST_F(FakeMeshTest, AllReduceOfReplicatedDataMustBeP) {
  std::string msg =
      error_of<InvalidArgument>([] { all_reduce(at::ones({2}), tp, R, R); });
  EXPECT_TRUE(contains(msg, "must be P")) << msg;
}

TEST_F(FakeMeshTest, AllReduceDstMustBeROrI) {
  std::string msg =
      error_of<InvalidArgument>([] { all_reduce(at::ones({2}), tp, P, V); });
  EXPECT_TRUE(contains(msg, "must be R or I")) << msg;
}

TEST_F(FakeMeshTest, AllGatherSrcMustBeVOrS) {
  std::string msg =
      error_of<InvalidArgument>([] { all_gather(at::ones({2}), tp, P, R); });
  EXPECT_TRUE(contains(msg, "must be V or S(i)")) << msg;
}

TEST_F(FakeMeshTest, AllGatherSplitSizesOnlyWithShardSrc) {
  CollectiveOptions o;
  o.split_sizes = {1, 1, 1, 1};
  std::string msg = error_of<InvalidArgument>(
      [&] { all_gather(at::ones({1}), tp, V, R, o); });
  EXPECT_TRUE(contains(msg, "only supported with src=S(i)")) << msg;
}

TEST_F(FakeMeshTest, ReinterpretDoesNotSupportShards) {
  std::string msg = error_of<InvalidArgument>(
      [] { reinterpret(at::ones({2}), tp, S(0), V); });
  EXPECT_TRUE(contains(msg, "does not support S(i)")) << msg;
}

TEST_F(FakeMeshTest, ConvertAcrossShardDimsNeedsAllToAll) {
  std::string msg = error_of<InvalidArgument>([] {
    convert(at::ones({4, 4}), tp, S(0), S(1));
  });
  EXPECT_TRUE(contains(msg, "all_to_all")) << msg;
}

TEST_F(FakeMeshTest, ShardOutOfBoundsNamesTheDims) {
  std::string msg = error_of<SpmdTypeError>([] {
    all_gather(at::ones({2, 2}), tp, S(-3), R);
  });
  EXPECT_TRUE(contains(msg, "out of bounds")) << msg;
}

TEST_F(FakeMeshTest, ExpertPairsNeedTheFlag) {
  for (auto [src, dst, is_convert] :
       std::vector<std::tuple<PerAxisType, PerAxisType, bool>>{{R, I, true},
                                                               {I, P, true},
                                                               {R, P, false},
                                                               {R, V, false},
                                                               {R, I, false},
                                                               {I, R, false}}) {
    SCOPED_TRACE(core::to_string(src) + "->" + core::to_string(dst));
    auto f = [&, src = src, dst = dst,
              is_convert = is_convert](const CollectiveOptions& o) {
      return is_convert ? convert(at::ones({4}), tp, src, dst, o)
                        : reinterpret(at::ones({4}), tp, src, dst, o);
    };
    std::string msg = error_of<InvalidArgument>([&] { f({}); });
    EXPECT_TRUE(contains(msg, "expert_mode")) << msg;
    CollectiveOptions expert;
    expert.expert_mode = true;
    EXPECT_NO_THROW(f(expert));
  }
}

TEST_F(FakeMeshTest, ReduceScatterOfAnIndivisibleShardIsAShapeError) {
  std::string msg =
      error_of<ShapeError>([] { reduce_scatter(at::ones({6}), tp, P, S(0)); });
  EXPECT_TRUE(contains(msg, "multiple of group_size 4")) << msg;
  EXPECT_TRUE(contains(msg, "'tp'")) << msg;
}

TEST_F(FakeMeshTest, ReduceScatterToVNeedsTheGroupSizeOnTheScatterDim) {
  std::string msg = error_of<ShapeError>([] {
    reduce_scatter(at::ones({3, 2}), tp, P, V);
  });
  EXPECT_TRUE(contains(msg, "group size 4")) << msg;
}

TEST_F(FakeMeshTest, UnevenAllGatherChecksThisRanksExtent) {
  CollectiveOptions o;
  o.split_sizes = {1, 2, 3, 4};  // rank 1 must hold 2 rows
  std::string msg =
      error_of<ShapeError>([&] { all_gather(at::ones({3}), tp, S(0), R, o); });
  EXPECT_TRUE(contains(msg, "split_sizes[1] is 2")) << msg;
  o.split_sizes = {1, 2};
  msg =
      error_of<ShapeError>([&] { all_gather(at::ones({2}), tp, S(0), R, o); });
  EXPECT_TRUE(contains(msg, "2 entries but the axis has 4 ranks")) << msg;
}

TEST_F(FakeMeshTest, ConvertToVNeedsTheGroupSizeOnDim0) {
  std::string msg =
      error_of<ShapeError>([] { convert(at::ones({3}), tp, R, V); });
  EXPECT_TRUE(contains(msg, "group size 4")) << msg;
}

TEST_F(FakeMeshTest, AllToAllShardKernelNeedsADivisibleSplitDim) {
  std::string msg = error_of<InvalidArgument>(
      [] { all_to_all(at::ones({6}), tp, S(0), S(0)); });
  EXPECT_TRUE(contains(msg, "not evenly divisible by world_size")) << msg;
}

TEST_F(FakeMeshTest, InplaceAllReduceRejectsDtypes) {
  CollectiveOptions o;
  o.inplace = true;
  o.op_dtype = at::kDouble;
  error_of<InvalidArgument>([&] { all_reduce(at::ones({2}), tp, P, R, o); });
}

TEST_F(FakeMeshTest, ComposedReinterpretRejectsNestedBackwardOptions) {
  CollectiveOptions o;
  o.backward.backward_options = std::make_shared<BackwardOptions>();
  std::string msg = error_of<NotImplementedError>(
      [&] { reinterpret(at::ones({2}), tp, I, V, o); });
  EXPECT_TRUE(contains(msg, "backward_options")) << msg;
}

TEST_F(FakeMeshTest,
       ReducedPrecisionWithAReducingBackwardNeedsBackwardOpDtype) {
  // §7.10 guard: all_gather(V->R)'s backward is a reduce_scatter.
  Tensor x = at::ones({2}, at::kHalf).requires_grad_(true);
  std::string msg = error_of<InvalidArgument>([&] { all_gather(x, tp, V, R); });
  EXPECT_TRUE(contains(msg, "backward")) << msg;
  EXPECT_TRUE(contains(msg, "op_dtype")) << msg;
  // Told the backward dtype: fine.
  CollectiveOptions o;
  o.backward.op_dtype = at::kFloat;
  EXPECT_NO_THROW(all_gather(x, tp, V, R, o));
  // A float forward reduced to half on the way out is guarded too.
  CollectiveOptions narrow;
  narrow.out_dtype = at::kHalf;
  Tensor xf = at::ones({2}).requires_grad_(true);
  error_of<InvalidArgument>([&] { all_reduce(xf, tp, P, R, narrow); });
  // Not guarded: all_reduce(dst=I) (backward is the identity), no grad.
  EXPECT_NO_THROW(all_reduce(x, tp, P, I));
  EXPECT_NO_THROW(all_gather(at::ones({2}, at::kHalf), tp, V, R));
  {
    at::NoGradGuard no_grad;
    EXPECT_NO_THROW(all_gather(x, tp, V, R));
  }
}

TEST_F(FakeMeshTest, OutputDtypesFollowSection7_10) {
  Tensor x = at::ones({4}, at::kDouble);
  CollectiveOptions op;
  op.op_dtype = at::kFloat;
  EXPECT_EQ(all_reduce(x, tp, P, R, op).scalar_type(), at::kFloat);
  CollectiveOptions out;
  out.out_dtype = at::kFloat;
  EXPECT_EQ(all_reduce(x, tp, P, R, out).scalar_type(), at::kFloat);
  EXPECT_EQ(all_gather(x, tp, V, R, out).scalar_type(), at::kFloat);
  CollectiveOptions both;
  both.op_dtype = at::kFloat;
  both.out_dtype = at::kDouble;
  EXPECT_EQ(convert(x, tp, R, S(0), both).scalar_type(), at::kDouble);
}

// --- Real Gloo ranks.

TEST(CollectiveOptions, BackwardOptionsSetTheDualsDtypes) {
  run_mesh({{tp, 4}}, [](const DeviceMesh& mesh) {
    const int r = mesh.rank();
    Tensor x = at::full({2}, double(r + 1), at::kDouble).requires_grad_(true);
    CollectiveOptions o;
    o.backward.op_dtype = at::kFloat;  // reduce_scatter in float
    Tensor y = all_gather(x, tp, V, R, o);
    Tensor g = at::ones({4, 2}, at::kDouble) * (r + 1);
    auto gx = torch::autograd::grad({y}, {x}, {g})[0];
    // The gradient comes back in the input dtype: sum over ranks of (r+1).
    EXPECT_TRUE(TensorEq(gx, at::full({2}, 10.0, at::kDouble)));
    // A float16 backward reduction is visible in the values: the exact sum
    // 2051 is not a half (spacing 2 above 2048) and rounds to 2052.
    CollectiveOptions half;
    half.backward.op_dtype = at::kHalf;
    Tensor y2 = all_gather(x, tp, V, R, half);
    Tensor g2 = at::full({4, 2}, r == 0 ? 2048.0 : 1.0, at::kDouble);
    auto gx2 = torch::autograd::grad({y2}, {x}, {g2})[0];
    EXPECT_EQ(gx2.scalar_type(), at::kDouble);
    EXPECT_EQ(gx2[0].item<double>(), 2052.0);
    auto exact = torch::autograd::grad({all_gather(x, tp, V, R)}, {x}, {g2})[0];
    EXPECT_TRUE(TensorEq(exact, at::full({2}, 2051.0, at::kDouble)));
  });
}

TEST(CollectiveOptions, ReducedPrecisionAllReduceComputesInOpDtype) {
  run_mesh({{tp, 2}}, [](const DeviceMesh& mesh) {
    // 2049 is not representable in half: the op dtype decides the result.
    Tensor x = at::full({1}, mesh.rank() == 0 ? 2048.0 : 1.0, at::kDouble);
    CollectiveOptions half;
    half.op_dtype = at::kHalf;
    half.out_dtype = at::kDouble;
    EXPECT_TRUE(TensorEq(all_reduce(x, tp, P, R, half),
                         at::full({1}, 2048.0, at::kDouble)));
    EXPECT_TRUE(
        TensorEq(all_reduce(x, tp, P, R), at::full({1}, 2049.0, at::kDouble)));
  });
}

TEST(CollectiveOptions, InplaceAllReduceWritesIntoItsInput) {
  run_mesh({{tp, 4}}, [](const DeviceMesh& mesh) {
    Tensor x = at::full({3}, double(mesh.rank()), at::kDouble);
    CollectiveOptions o;
    o.inplace = true;
    Tensor y = all_reduce(x, tp, P, R, o);
    EXPECT_TRUE(y.is_same(x));
    EXPECT_TRUE(TensorEq(x, at::full({3}, 6.0, at::kDouble)));
    // Non-contiguous input: the sum still lands in x.
    Tensor m = at::full({2, 2}, double(mesh.rank()), at::kDouble).t();
    Tensor z = all_reduce(m, tp, P, I, o);
    EXPECT_TRUE(z.is_same(m));
    EXPECT_TRUE(TensorEq(m, at::full({2, 2}, 6.0, at::kDouble)));
  });
}

// Issue 17: a type value cast from an out-of-range integer was accepted.
TEST_F(FakeMeshTest, OutOfRangeTypeValuesAreUsageErrors) {
  const PerAxisType bad{static_cast<TypeKind>(9), 0};
  std::string msg =
      error_of<UsageError>([&] { convert(at::ones({4}), tp, R, bad); });
  EXPECT_TRUE(contains(
      msg, "dst of convert is not a valid SPMD type (TypeKind value 9)"))
      << msg;
  msg = error_of<UsageError>([&] { redistribute(at::ones({4}), tp, bad, R); });
  EXPECT_TRUE(contains(msg, "src of redistribute is not a valid SPMD type"))
      << msg;
}

// The options table of the core: an option the op ignores is an error.
TEST_F(FakeMeshTest, AnOptionTheCollectiveDoesNotTakeIsInvalid) {
  CollectiveOptions o;
  o.gather_dim = 1;
  std::string msg = error_of<InvalidArgument>(
      [&] { all_reduce(at::ones({4}), tp, P, R, o); });
  EXPECT_TRUE(contains(msg, "gather_dim is not an option of all_reduce"))
      << msg;
  CollectiveOptions sizes;
  sizes.split_sizes = {1, 1, 1, 1};
  msg = error_of<InvalidArgument>(
      [&] { redistribute(at::ones({4}), tp, R, S(0), sizes); });
  EXPECT_TRUE(contains(msg, "split_sizes is not an option of redistribute"))
      << msg;
}

TEST(CollectiveOptions, InplaceAllReduceIsDifferentiable) {
  run_mesh({{tp, 2}}, [](const DeviceMesh& mesh) {
    Tensor w = at::full({2}, 1.0, at::kDouble).requires_grad_(true);
    Tensor x = w * (mesh.rank() + 1);  // not a leaf: may be modified
    CollectiveOptions o;
    o.inplace = true;
    Tensor y = all_reduce(x, tp, P, R, o);
    EXPECT_TRUE(y.is_same(x));
    x.sum().backward();
    // dy/dx is all_reduce of the upstream ones: 2 each; dx/dw = rank + 1.
    EXPECT_TRUE(TensorEq(w.grad(),
                         at::full({2}, 2.0 * (mesh.rank() + 1), at::kDouble)));
  });
}

TEST(CollectiveOptions, ResultOfAnIdentityConversionCanBeReducedInPlace) {
  // The Megatron row-parallel pattern: declare the pending sum, reduce it in
  // place; the identity's result must not be a view autograd protects.
  run_mesh({{tp, 2}}, [](const DeviceMesh& mesh) {
    Tensor w = at::full({2}, 1.0, at::kDouble).requires_grad_(true);
    Tensor o = w * (mesh.rank() + 1);
    Tensor p = reinterpret(o, tp, V, P);
    CollectiveOptions inplace;
    inplace.inplace = true;
    Tensor y = all_reduce(p, tp, P, R, inplace);
    EXPECT_TRUE(TensorEq(y, at::full({2}, 3.0, at::kDouble)));
    y.sum().backward();
    EXPECT_TRUE(TensorEq(w.grad(),
                         at::full({2}, 2.0 * (mesh.rank() + 1), at::kDouble)));
  });
}

TEST(InputValidation, SparseInputNamesTheCollectiveTheAxisAndTheFix) {
  // Before: libtorch's raw c10::Error, naming neither.
  run_mesh({{tp, 2}}, [](const DeviceMesh&) {
    Tensor x = at::ones({4}).to_sparse();
    std::string msg =
        error_of<InvalidArgument>([&] { all_reduce(x, tp, P, R); });
    EXPECT_TRUE(contains(msg,
                         "all_reduce on axis 'tp': the input is a Sparse "
                         "tensor, but collectives communicate dense (strided) "
                         "tensors; convert it first, e.g. x.to_dense()"))
        << msg;
    msg = error_of<InvalidArgument>([&] { all_gather(x, tp, S(0), R); });
    EXPECT_TRUE(contains(msg, "all_gather on axis 'tp': the input is a Sparse"))
        << msg;
    // The dense tensor goes through.
    EXPECT_TRUE(
        TensorEq(all_reduce(x.to_dense(), tp, P, R), at::full({4}, 2.f)));
  });
}

TEST(InputValidation, NegativeSplitSizesAreAShapeErrorNamingTheAxis) {
  // Every rank passes the same split sizes, so every rank gets this error
  // (different ones are the consistency check's CollectiveError).
  run_mesh({{tp, 2}}, [](const DeviceMesh& mesh) {
    CollectiveOptions o;
    o.split_sizes = {3, -1};
    std::string msg = error_of<ShapeError>([&] {
      reduce_scatter(at::ones({2, 2}), tp, P, S(0), o);
    });
    EXPECT_TRUE(contains(msg,
                         "reduce_scatter on axis 'tp' (group of 2): "
                         "split_sizes[1] is -1; split sizes count rows and "
                         "must be >= 0"))
        << msg;
    msg = error_of<ShapeError>([&] {
      all_gather(at::ones({mesh.rank() == 0 ? 3 : 0, 2}), tp, S(0), R, o);
    });
    EXPECT_TRUE(contains(msg,
                         "all_gather on axis 'tp' (group of 2): "
                         "split_sizes[1] is -1"))
        << msg;
  });
}

TEST(Timeouts, PeerThatNeverArrivesNamesTheCollectiveAndTheAxis) {
  // Rank 1 never calls all_gather: rank 0 must fail within the timeout.
  run_ranks(
      2,
      [](const std::shared_ptr<World>& world) {
        DeviceMesh mesh(world, {{dp, 1}, {tp, 2}});
        MeshGuard guard(mesh);
        if (world->rank() == 1) return;
        std::string msg = error_of<CollectiveError>(
            [] { all_gather(at::ones({2}), tp, V, R); });
        EXPECT_TRUE(contains(msg, "all_gather on axis 'tp'")) << msg;
        EXPECT_TRUE(contains(msg, "timeout of 1500 ms")) << msg;
      },
      std::chrono::milliseconds(1500));
}

// The rendezvous has its own bound: a missing rank fails the rendezvous in
// rendezvous_timeout although collectives may wait far longer.
TEST(Timeouts, RendezvousTimeoutIsSeparateFromTheCollectiveTimeout) {
  for (Backend backend : {Backend::Gloo, Backend::Local}) {
    auto store = c10::make_intrusive<c10d::HashStore>();
    WorldOptions o;
    o.timeout = std::chrono::milliseconds(120000);
    o.rendezvous_timeout = std::chrono::milliseconds(300);
    o.gloo_hostname = "127.0.0.1";
    const auto start = std::chrono::steady_clock::now();
    std::string msg = error_of<CollectiveError>(
        [&] { World::create(backend, 1, 2, store, o); });
    EXPECT_TRUE(contains(msg, "rendezvous")) << msg;
    // A functional bound: far below the 120 s collective timeout.
    EXPECT_LT(std::chrono::steady_clock::now() - start,
              std::chrono::seconds(60));
  }
}

TEST(Timeouts, RendezvousWithAMissingRankFails) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  WorldOptions o;
  o.timeout = std::chrono::milliseconds(500);
  o.gloo_hostname = "127.0.0.1";
  std::string msg = error_of<CollectiveError>(
      [&] { World::create(Backend::Gloo, 0, 2, store, o); });
  EXPECT_TRUE(contains(msg, "rendezvous")) << msg;
}

// The runtime checker's view of a collective (spec §5.2 step 8).
struct RecordingHook : detail::CollectiveHook {
  std::vector<std::tuple<core::CollectiveCall, std::string, bool>> calls;
  Tensor last_output;
  void on_collective(const core::CollectiveCall& call, std::string_view axis,
                     bool singleton, const Tensor&,
                     const Tensor& output) override {
    calls.emplace_back(call, std::string(axis), singleton);
    last_output = output;
  }
};

TEST(CollectiveHook, SeesEveryUserCallWithResolvedDimsAfterItRan) {
  auto world = World::fake(0, 4);
  DeviceMesh mesh(world, {{dp, 1}, {tp, 4}});
  MeshGuard guard(mesh);
  RecordingHook hook;
  auto* previous = detail::set_collective_hook(&hook);
  Tensor x = at::ones({2, 8}).requires_grad_(true);
  Tensor y = all_gather(x, tp, S(-1), R);
  Tensor z = redistribute(y, dp, R, R);  // no-op on a singleton axis
  y.sum().backward();  // duals do not call the hook (typing is forward-only)
  detail::set_collective_hook(previous);
  all_reduce(at::ones({1}), tp, P, R);  // hook removed: not seen
  ASSERT_EQ(hook.calls.size(), 2u);
  EXPECT_EQ(std::get<0>(hook.calls[0]).op, core::Collective::AllGather);
  EXPECT_EQ(std::get<0>(hook.calls[0]).src, S(1));
  EXPECT_EQ(std::get<1>(hook.calls[0]), "tp");
  EXPECT_FALSE(std::get<2>(hook.calls[0]));
  EXPECT_EQ(std::get<0>(hook.calls[1]).op, core::Collective::Redistribute);
  EXPECT_TRUE(std::get<2>(hook.calls[1]));
  EXPECT_TRUE(hook.last_output.is_same(z));
}

}  // namespace
}  // namespace spmd
