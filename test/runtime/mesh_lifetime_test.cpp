// mesh_lifetime_test.cpp - a MeshGuard shares ownership of its mesh: the
// mesh object may be destroyed (or reassigned) while the guard lives
// (issue 17: this was a use-after-free).
#include "runtime_test_util.h"

namespace spmd {
namespace {

SPMD_AXIS(dp);
SPMD_AXIS(tp);
// The second meshes use `ep`, not `tp`: one World names one layout per axis
// name (spec §10.1), and tp=4 is already (4:1).
SPMD_AXIS(ep);

using namespace spmd::types;
using testing::run_ranks;
using testing::TensorEq;

TEST(MeshLifetime, CurrentMeshIsTheGuardedObjectWhileItLives) {
  auto world = World::fake(1, 4);
  DeviceMesh mesh(world, {{tp, 4}});
  MeshGuard guard(mesh);
  EXPECT_EQ(current_mesh(), &mesh);
}

TEST(MeshLifetime, DestroyedMeshStaysCurrentThroughTheGuardsCopy) {
  auto world = World::fake(1, 4);
  auto mesh =
      std::make_unique<DeviceMesh>(world, std::vector<MeshDim>{{tp, 4}});
  MeshGuard guard(*mesh);
  mesh.reset();
  ASSERT_NE(current_mesh(), nullptr);
  EXPECT_EQ(current_mesh()->to_string(), "DeviceMesh(tp=4)");
  EXPECT_EQ(resolve_axis("tp").local_rank, 1);
  {
    // An inner guard on another mesh, then back to the copy.
    DeviceMesh inner(world, {{dp, 2}, {ep, 2}});
    MeshGuard g2(inner);
    EXPECT_EQ(current_mesh(), &inner);
  }
  EXPECT_EQ(current_mesh()->to_string(), "DeviceMesh(tp=4)");
}

TEST(MeshLifetime, ReassignedMeshLeavesTheGuardOnTheOldValue) {
  auto world = World::fake(0, 4);
  DeviceMesh mesh(world, {{tp, 4}});
  MeshGuard guard(mesh);
  mesh = DeviceMesh(world, {{dp, 2}, {ep, 2}});
  EXPECT_EQ(current_mesh()->to_string(), "DeviceMesh(tp=4)");
}

TEST(MeshLifetime, CollectivesWorkAfterTheMeshIsDestroyed) {
  run_ranks(2, [](const std::shared_ptr<World>& world) {
    auto mesh =
        std::make_unique<DeviceMesh>(world, std::vector<MeshDim>{{tp, 2}});
    MeshGuard guard(*mesh);
    mesh.reset();
    EXPECT_TRUE(
        TensorEq(all_reduce(at::ones({2}), tp, P, R), at::full({2}, 2.0f)));
  });
}

TEST(MeshLifetime, MeshDroppedRightAfterConstructionLeavesPeersConnecting) {
  // Each rank drops every mesh as soon as its constructor returns. Before,
  // a rank could return from an axis group's rendezvous while a peer was
  // still connecting to it, close the connection, and the peer's
  // rendezvous failed with "Connection closed by peer" (seen under load).
  run_ranks(8, [](const std::shared_ptr<World>& world) {
    for (int k = 0; k < 24; ++k) DeviceMesh mesh(world, {{dp, 2}, {tp, 4}});
  });
}

}  // namespace
}  // namespace spmd
