// mesh_test.cpp - DeviceMesh axes and groups, MeshGuard, axis resolution.
#include <functional>
#include <string>
#include <vector>

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

// Builds on every rank the mesh that `shape_of(rank)` gives and returns each
// rank's InvalidArgument message (a rank whose construction succeeds or
// throws something else fails the test).
std::vector<std::string> mesh_errors(
    int size, const std::function<std::vector<MeshDim>(int)>& shape_of) {
  std::vector<std::string> messages(size);
  run_ranks(size, [&](const std::shared_ptr<World>& world) {
    messages[world->rank()] = error_of<InvalidArgument>(
        [&] { DeviceMesh mesh(world, shape_of(world->rank())); });
  });
  return messages;
}

TEST(DeviceMeshAgreement, AxesInAnotherOrderOnSomeRanksAreOneErrorOnEveryRank) {
  // The odd ranks' tp group would be {1, 3} and the even ranks' {0, 1}:
  // all_reduce over tp would combine other ranks on each side, silently.
  auto messages = mesh_errors(4, [](int r) {
    return r % 2 == 0 ? std::vector<MeshDim>{{dp, 2}, {tp, 2}}
                      : std::vector<MeshDim>{{tp, 2}, {dp, 2}};
  });
  for (const std::string& m : messages) {
    EXPECT_EQ(m, messages[0]);
    EXPECT_NE(m.find("the ranks did not construct the same mesh: ranks 0, 2 "
                     "built DeviceMesh(dp=2, tp=2); ranks 1, 3 built "
                     "DeviceMesh(tp=2, dp=2), which differs in axis 'tp' "
                     "(position 0, not 1) and axis 'dp' (position 1, not 0)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("same axis names, sizes, strides and order"),
              std::string::npos)
        << m;
  }
}

TEST(DeviceMeshAgreement, OtherSizesNamesOrStridesOnOneRankAreNamed) {
  auto sizes = mesh_errors(4, [](int r) {
    return r == 3 ? std::vector<MeshDim>{{dp, 4}, {tp, 1}}
                  : std::vector<MeshDim>{{dp, 2}, {tp, 2}};
  });
  for (const std::string& m : sizes)
    EXPECT_NE(m.find("ranks 0-2 built DeviceMesh(dp=2, tp=2); rank 3 built "
                     "DeviceMesh(dp=4, tp=1), which differs in axis 'dp' "
                     "(size 4, not 2) and axis 'tp' (size 1, not 2)"),
              std::string::npos)
        << m;
  auto names = mesh_errors(2, [](int r) {
    return r == 1 ? std::vector<MeshDim>{{cp, 2}}
                  : std::vector<MeshDim>{{tp, 2}};
  });
  for (const std::string& m : names)
    EXPECT_NE(m.find("rank 1 built DeviceMesh(cp=2), which differs in axis "
                     "'cp' (not on rank 0) and axis 'tp' (missing)"),
              std::string::npos)
        << m;
  auto strides = mesh_errors(4, [](int r) {
    return r == 0 ? std::vector<MeshDim>{{dp, 2, 1}, {tp, 2, 2}}
                  : std::vector<MeshDim>{{dp, 2, 2}, {tp, 2, 1}};
  });
  for (const std::string& m : strides)
    EXPECT_NE(m.find("rank 0 built DeviceMesh(dp=2:1, tp=2:2); ranks 1-3 "
                     "built DeviceMesh(dp=2:2, tp=2:1), which differs in axis "
                     "'dp' (stride 2, not 1) and axis 'tp' (stride 1, not 2)"),
              std::string::npos)
        << m;
}

TEST(DeviceMeshAgreement, AShapeOnlyOneRankGetsWrongIsStillReportedEverywhere) {
  // Rank 1's shape is invalid on its own (a repeated axis): it still takes
  // part in the comparison, so no rank waits for it until the timeout.
  auto messages = mesh_errors(2, [](int r) {
    return r == 1 ? std::vector<MeshDim>{{tp, 1}, {tp, 2}}
                  : std::vector<MeshDim>{{tp, 2}};
  });
  for (const std::string& m : messages)
    EXPECT_NE(m.find("rank 1 built DeviceMesh(tp=1, tp=2)"), std::string::npos)
        << m;
}

TEST(DeviceMesh, SizesWhoseProductWrapsAroundToTheWorldSizeAreAnError) {
  // 4 x (2^62 + 1) is 4 modulo 2^64: accepted before, then the axis's rank
  // list grew without bound.
  const int64_t huge = (int64_t{1} << 62) + 1;
  for (const std::string& m : mesh_errors(4, [&](int) {
         return std::vector<MeshDim>{{dp, 4}, {tp, huge}};
       }))
    EXPECT_NE(m.find("the axis sizes of the mesh DeviceMesh(dp=4, "
                     "tp=4611686018427387905) multiply to more than 2^63 - 1 "
                     "ranks but the world has 4"),
              std::string::npos)
        << m;
}

}  // namespace
}  // namespace spmd
