// mesh_test.cpp - DeviceMesh axes and groups, MeshGuard, axis resolution.
#include "runtime_test_util.h"

namespace spmd {
namespace {

SPMD_AXIS(dp);
SPMD_AXIS(tp);
SPMD_AXIS(cp);

using testing::error_of;
using testing::run_mesh;
using testing::run_ranks;
using testing::TensorEq;

TEST(DeviceMesh, AxesOfA2x4MeshHaveRowMajorStridesAndLocalRanks) {
  run_mesh({{dp, 2}, {tp, 4}}, [](const DeviceMesh& mesh) {
    const int r = mesh.rank();
    EXPECT_EQ(mesh.ndim(), 2);
    EXPECT_EQ(mesh.to_string(), "DeviceMesh(dp=2, tp=4)");
    const MeshAxisGroup& d = mesh.axis("dp");
    const MeshAxisGroup& t = mesh.axis("tp");
    EXPECT_EQ(d.size, 2);
    EXPECT_EQ(d.stride, 4);
    EXPECT_EQ(t.size, 4);
    EXPECT_EQ(t.stride, 1);
    EXPECT_EQ(d.local_rank, r / 4);
    EXPECT_EQ(t.local_rank, r % 4);
    EXPECT_EQ(d.group->getSize(), 2);
    EXPECT_EQ(t.group->getSize(), 4);
    EXPECT_EQ(d.group->getRank(), r / 4);
    EXPECT_EQ(t.group->getRank(), r % 4);
    EXPECT_EQ(d.ranks, (std::vector<int>{r % 4, r % 4 + 4}));
    EXPECT_EQ(t.layout, core::MeshAxis::of(4, 1));
    EXPECT_EQ(d.layout, core::MeshAxis::of(2, 4));
  });
}

TEST(DeviceMesh, AllReduceOnOneAxisLeavesTheOtherAxisUntouched2x4) {
  // x_r = r: the tp sum sees only the 4 ranks of this rank's dp row.
  run_mesh({{dp, 2}, {tp, 4}}, [](const DeviceMesh& mesh) {
    const int r = mesh.rank();
    at::Tensor x = at::full({3}, static_cast<float>(r));
    at::Tensor y = all_reduce(x, tp, P, R);
    const int row = r / 4;
    const float tp_sum = 4.f * (4 * row) + 6.f;  // sum of 4row..4row+3
    EXPECT_TRUE(TensorEq(y, at::full({3}, tp_sum)));
    at::Tensor z = all_reduce(x, dp, P, R);
    EXPECT_TRUE(
        TensorEq(z, at::full({3}, static_cast<float>(2 * (r % 4) + 4))));
    EXPECT_TRUE(TensorEq(x, at::full({3}, static_cast<float>(r))))
        << "all_reduce must not modify its input unless inplace";
  });
}

TEST(DeviceMesh, TwoByTwoMeshGroupsAreOrthogonal) {
  run_mesh({{dp, 2}, {tp, 2}}, [](const DeviceMesh& mesh) {
    const int r = mesh.rank();
    at::Tensor x = at::full({2}, static_cast<float>(1 << r));  // bit r
    // Bits of the two ranks sharing dp row / tp column.
    const int row = r / 2, col = r % 2;
    EXPECT_TRUE(TensorEq(
        all_reduce(x, tp, P, R),
        at::full({2}, float((1 << (2 * row)) + (1 << (2 * row + 1))))));
    EXPECT_TRUE(TensorEq(all_reduce(x, dp, P, R),
                         at::full({2}, float((1 << col) + (1 << (col + 2))))));
  });
}

TEST(DeviceMesh, ShapeWhoseProductIsNotTheWorldSizeIsAnError) {
  run_ranks(4, [](const std::shared_ptr<World>& world) {
    std::string msg = error_of<InvalidArgument>([&] {
      DeviceMesh mesh(world, {{dp, 3}});
    });
    EXPECT_NE(msg.find("has 3 ranks but the world has 4"), std::string::npos)
        << msg;
  });
}

TEST(DeviceMesh, RepeatedAxisNameIsAnError) {
  auto world = World::fake(0, 4);
  std::string msg = error_of<InvalidArgument>([&] {
    DeviceMesh mesh(world, {{dp, 2}, {dp, 2}});
  });
  EXPECT_NE(msg.find("'dp' appears more than once"), std::string::npos) << msg;
}

TEST(DeviceMesh, EmptyShapeIsAnError) {
  auto world = World::fake(0, 4);
  std::string msg =
      error_of<InvalidArgument>([&] { DeviceMesh mesh(world, {}); });
  EXPECT_NE(msg.find("shape is empty"), std::string::npos) << msg;
}

TEST(DeviceMesh, NonPositiveAxisSizeIsAnError) {
  auto world = World::fake(0, 4);
  std::string msg = error_of<InvalidArgument>([&] {
    DeviceMesh mesh(world, {{dp, 0}, {tp, 4}});
  });
  EXPECT_NE(msg.find("'dp' has size 0"), std::string::npos) << msg;
}

TEST(MeshGuard, NestsAndRestoresTheOuterMesh) {
  auto world = World::fake(3, 8);
  DeviceMesh outer(world, {{dp, 2}, {tp, 4}});
  DeviceMesh inner(world, {{cp, 8}});
  EXPECT_EQ(current_mesh(), nullptr);
  {
    MeshGuard g1(outer);
    EXPECT_EQ(current_mesh(), &outer);
    {
      MeshGuard g2(inner);
      EXPECT_EQ(current_mesh(), &inner);
      EXPECT_EQ(resolve_axis("cp").size, 8);
      EXPECT_THROW(resolve_axis("tp"), MeshResolutionError);
    }
    EXPECT_EQ(current_mesh(), &outer);
    EXPECT_EQ(resolve_axis("tp").local_rank, 3);
  }
  EXPECT_EQ(current_mesh(), nullptr);
}

TEST(MeshGuard, IsThreadLocal) {
  auto world = World::fake(0, 2);
  DeviceMesh mesh(world, {{dp, 2}});
  MeshGuard guard(mesh);
  const DeviceMesh* seen = &mesh;
  std::thread([&] { seen = current_mesh(); }).join();
  EXPECT_EQ(seen, nullptr);
}

TEST(MeshGuard, CollectiveOnAnAxisNotInTheMeshNamesAxisAndMesh) {
  auto world = World::fake(0, 4);
  DeviceMesh mesh(world, {{dp, 4}});
  MeshGuard guard(mesh);
  std::string msg = error_of<MeshResolutionError>(
      [&] { all_reduce(at::ones({2}), tp, P, R); });
  EXPECT_NE(msg.find("Axis 'tp' is not in the current mesh DeviceMesh(dp=4)"),
            std::string::npos)
      << msg;
}

TEST(MeshGuard, CollectiveWithoutAMeshAsksForAMeshGuard) {
  std::string msg = error_of<MeshResolutionError>(
      [&] { all_reduce(at::ones({2}), tp, P, R); });
  EXPECT_NE(msg.find("requires an ambient DeviceMesh"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("'tp'"), std::string::npos) << msg;
}

TEST(DeviceMesh, SingletonAxisHasAOneRankGroup) {
  run_mesh({{dp, 1}, {tp, 2}}, [](const DeviceMesh& mesh) {
    EXPECT_EQ(mesh.axis("dp").size, 1);
    EXPECT_EQ(mesh.axis("dp").group->getSize(), 1);
    at::Tensor x = at::full({2}, 5.f);
    EXPECT_TRUE(TensorEq(all_reduce(x, dp, P, R), x));
    EXPECT_TRUE(TensorEq(all_reduce(x, tp, P, R), at::full({2}, 10.f)));
  });
}

}  // namespace
}  // namespace spmd
