// mesh_spec_test.cpp - PartitionSpecs across meshes and flattened axes in
// the runtime checker (issue 14, spec §10.3 step 5, §12.1, §8.2, §12.3):
// reinterpret_mesh carries the spec to the destination axes (dense {dp, tp}
// <-> expert {edp, ep, etp}, split <-> flattened dp_cp), assert_type takes a
// flattened axis name, assert_type_like copies the spec in global mode,
// mutate_type keeps the shard dims of axes that stay V, no_typecheck keeps
// S(i) out_types, and a raw reduce_scatter_single on Gloo ranks needs no
// NoTypecheckGuard around its wait() in strict mode. Meshes are real
// DeviceMeshes over Gloo ranks that are threads of this process.
#include <spmd/boundaries.h>
#include <spmd/collectives.h>
#include <spmd/mesh.h>

#include "checker_test_util.h"
#include "runtime_test_util.h"

namespace spmd::testing {
namespace {

using namespace spmd::types;

SPMD_AXIS(cp);
SPMD_AXIS(dp_cp);
SPMD_AXIS(edp);
SPMD_AXIS(ep);
SPMD_AXIS(etp);

// "{tp: S(0)} PartitionSpec(tp, None)": the type map with shard dims.
std::string gtype(const at::Tensor& t) {
  return has_type(t) ? get_global_type(t).to_string() : "untyped";
}

std::string spec_str(const at::Tensor& t) {
  auto s = get_partition_spec(t);
  return s ? s->to_string() : "none";
}

checker::TypecheckOptions global_options(bool strict = true) {
  checker::TypecheckOptions o;
  o.strict = strict;
  o.local = false;
  return o;
}

// A deterministic untyped f32 tensor, equal on every rank.
at::Tensor Data(std::vector<int64_t> shape, double scale = 1.0) {
  checker::NoTypecheckGuard paused;
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (at::arange(n, at::kFloat) * scale).reshape(shape);
}

// Exact equality, compared with checking paused (the expected values are
// untyped).
::testing::AssertionResult Same(const at::Tensor& a, const at::Tensor& b) {
  checker::NoTypecheckGuard paused;
  return TensorEq(a, b);
}

// ----------------------------------------------- reinterpret_mesh + spec ----

// 8 ranks: dense dp(4:2) x tp(2:1); expert edp(2:4) x ep(2:2) x etp(2:1).
// dp = edp x ep and tp = etp, so a dim sharded on dp is sharded on (edp, ep).
TEST(ReinterpretMeshSpec, DenseToExpertAndBackOn8Ranks) {
  run_ranks(8, [](const std::shared_ptr<World>& world) {
    DeviceMesh dense(world, {{dp, 4}, {tp, 2}});
    DeviceMesh expert(world, {{edp, 2}, {ep, 2}, {etp, 2}});
    MeshGuard on_dense(dense);
    checker::TypecheckGuard guard(global_options());
    // The local block of a [16, 4] tensor: dim 0 over dp, dim 1 over tp.
    at::Tensor x = Data({4, 2});
    assert_type(x, {dp = S(0), tp = S(1)});
    EXPECT_EQ(gtype(x), "{dp: S(0), tp: S(1)} PartitionSpec(dp, tp)");

    at::Tensor y = reinterpret_mesh(x, expert);
    EXPECT_EQ(gtype(y),
              "{edp: S(0), ep: S(0), etp: S(1)} "
              "PartitionSpec((edp, ep), etp)");
    EXPECT_TRUE(Same(y, x));  // an alias: no data change
    {
      // On the expert mesh the carried spec drives the global collectives:
      // gathering etp along dim 1 is accepted, along dim 0 is not.
      MeshGuard on_expert(expert);
      at::Tensor g = all_gather(y, etp, S(1), R);
      EXPECT_EQ(gtype(g),
                "{edp: S(0), ep: S(0), etp: R} PartitionSpec((edp, ep), None)");
      EXPECT_EQ(g.sizes(), (at::IntArrayRef{4, 4}));
      EXPECT_TYPE_ERROR(all_gather(y, etp, S(0), R),
                        "expected input shard S(0) on axis etp, got S(1)");
      // The automatic lift (spec §6.2) carries the spec too: a dense
      // operand used under the expert mesh.
      EXPECT_EQ(gtype(x * 2.0),
                "{edp: S(0), ep: S(0), etp: S(1)} "
                "PartitionSpec((edp, ep), etp)");
      at::Tensor back = reinterpret_mesh(g, dense);
      EXPECT_EQ(gtype(back), "{dp: S(0), tp: R} PartitionSpec(dp, None)");
    }
    // The round trip gives the original spec back.
    EXPECT_EQ(gtype(reinterpret_mesh(y, dense)),
              "{dp: S(0), tp: S(1)} PartitionSpec(dp, tp)");
    // Full form with the destination types.
    EXPECT_EQ(spec_str(reinterpret_mesh(x, {edp = V, ep = V, etp = V}, expert)),
              "PartitionSpec((edp, ep), etp)");
  });
}

TEST(ReinterpretMeshSpec, AxisWithoutCounterpartIsAnErrorOn8Ranks) {
  run_ranks(8, [](const std::shared_ptr<World>& world) {
    DeviceMesh dense(world, {{dp, 4}, {tp, 2}});
    DeviceMesh expert(world, {{edp, 2}, {ep, 2}, {etp, 2}});
    MeshGuard on_expert(expert);
    checker::TypecheckGuard guard(global_options());
    // Experts sharded on ep alone (edp replicated): dense dp covers edp x ep,
    // so no dense axis shards exactly ep's ranks.
    at::Tensor w = Data({2, 3});
    assert_type(w, {edp = R, ep = S(0), etp = R});
    EXPECT_TYPE_ERROR(reinterpret_mesh(w, dense),
                      "Axes {edp, ep} would need to be flattened");
    // Same types on the group but the spec names ep alone.
    at::Tensor v = Data({2, 3});
    assert_type(v, {edp = V, ep = V, etp = R},
                checker::partition_spec({{ep}, {edp}}));
    std::string m = spmd_error([&] { (void)reinterpret_mesh(v, dense); });
    EXPECT_NE(m.find("reinterpret_mesh cannot carry PartitionSpec(ep, edp)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("axis ep has no counterpart in the destination mesh: it "
                     "is only part of the source group {edp, ep}, which "
                     "becomes {dp}"),
              std::string::npos)
        << m;
    // edp and ep on different dims: each is part of the {edp, ep} group.
    at::Tensor u = Data({2, 3});
    assert_type(u, {edp = S(0), ep = S(1), etp = R});
    EXPECT_TYPE_ERROR(reinterpret_mesh(u, dense), "has no counterpart");
    // The group in the inner-to-outer order is rejected too.
    at::Tensor r = Data({2, 3});
    assert_type(r, {edp = V, ep = V, etp = R},
                checker::partition_spec({{ep, edp}, {}}));
    EXPECT_TYPE_ERROR(reinterpret_mesh(r, dense),
                      "only in their outer-to-inner order (edp, ep)");
    // The tensor keeps its type after a failed reinterpret.
    EXPECT_EQ(spec_str(r), "PartitionSpec((ep, edp), None)");
    // Used under the dense mesh, the automatic lift fails the same way.
    MeshGuard on_dense(dense);
    EXPECT_TYPE_ERROR(v * 2.0,
                      "args[0] cannot be auto-reinterpreted to the current "
                      "mesh. reinterpret_mesh cannot carry PartitionSpec(ep, "
                      "edp)");
  });
}

// 8 ranks: dp(2:4) x cp(2:2) x tp(2:1), dp_cp = dp x cp = (4:2), and a mesh
// whose first axis is the flattened one.
TEST(ReinterpretMeshSpec, SplitToFlattenedAndBackOn8Ranks) {
  run_ranks(8, [](const std::shared_ptr<World>& world) {
    DeviceMesh split(world, {{dp, 2}, {cp, 2}, {tp, 2}});
    split.flatten({dp, cp}, dp_cp);
    DeviceMesh flat(world, {{dp_cp, 4}, {tp, 2}});
    MeshGuard on_split(split);
    checker::TypecheckGuard guard(global_options());
    at::Tensor x = Data({2, 3});
    assert_type(x, {dp = V, cp = V, tp = R},
                checker::partition_spec({{dp, cp}, {}}));
    at::Tensor y = reinterpret_mesh(x, flat);
    EXPECT_EQ(gtype(y), "{dp_cp: S(0), tp: R} PartitionSpec(dp_cp, None)");
    at::Tensor z = reinterpret_mesh(y, split);
    EXPECT_EQ(spec_str(z), "PartitionSpec((dp, cp), None)");
    // cp alone has no counterpart on {dp_cp, tp}.
    at::Tensor c = Data({2, 3});
    assert_type(c, {dp = V, cp = V, tp = R},
                checker::partition_spec({{cp}, {dp}}));
    EXPECT_TYPE_ERROR(reinterpret_mesh(c, flat),
                      "axis cp has no counterpart in the destination mesh");
    // Local mode carries the spec the same way (it is stored there too).
    checker::TypecheckOptions local;
    local.local = true;
    checker::TypecheckGuard local_guard(local);
    EXPECT_EQ(spec_str(reinterpret_mesh(x, flat)),
              "PartitionSpec(dp_cp, None)");
    // A tensor without a spec stays without one.
    at::Tensor r = Data({2, 3});
    assert_type(r, {dp = R, cp = R, tp = R});
    EXPECT_EQ(gtype(reinterpret_mesh(r, flat)), "{dp_cp: R, tp: R}");
  });
}

// --------------------------------------- flattened axes in assert_type ----

TEST(FlattenedAssertType, NameResolvesToComponentAxesOn8Ranks) {
  run_ranks(8, [](const std::shared_ptr<World>& world) {
    DeviceMesh mesh(world, {{dp, 2}, {cp, 2}, {tp, 2}});
    mesh.flatten({dp, cp}, dp_cp);
    MeshGuard on_mesh(mesh);
    checker::TypecheckGuard guard(global_options());
    // By the axis object and by name.
    at::Tensor x = Data({4, 3});
    assert_type(x, {dp_cp = S(0), tp = R});
    EXPECT_EQ(gtype(x),
              "{cp: S(0), dp: S(0), tp: R} PartitionSpec((dp, cp), None)");
    at::Tensor r = Data({4, 3});
    assert_type(r, {{"dp_cp", R}, {"tp", P}});
    EXPECT_EQ(type_str(r), "{cp: R, dp: R, tp: P}");
    // A re-assert through the flattened name checks both components.
    assert_type(x, {dp_cp = V});
    EXPECT_TYPE_ERROR(assert_type(r, {dp_cp = V}), "dp");
    // In an explicit PartitionSpec.
    at::Tensor s = Data({4, 3});
    assert_type(s, {dp_cp = V, tp = R}, checker::partition_spec({{}, {dp_cp}}));
    EXPECT_EQ(spec_str(s), "PartitionSpec(None, (dp, cp))");
    // The flattened axis together with one of its components.
    std::string twice = spmd_error<UsageError>([&] {
      assert_type(Data({4}), {dp = R, dp_cp = R});
    });
    EXPECT_NE(twice.find("axis 'dp' is given twice (through the flattened "
                         "axis dp_cp)"),
              std::string::npos)
        << twice;
    // A collective on the flattened axis acts on both components.
    at::Tensor p = Data({4, 3});
    assert_type(p, {dp_cp = P, tp = R});
    at::Tensor sum = all_reduce(p, dp_cp, P, R);
    EXPECT_EQ(type_str(sum), "{cp: R, dp: R, tp: R}");
    EXPECT_TRUE(Same(sum, Data({4, 3}, 4.0)));
    // Unknown names list the mesh axes and the flattened ones.
    std::string m = spmd_error([&] { assert_type(Data({4}), {{"dpcp", R}}); });
    EXPECT_NE(m.find("no mesh axis named 'dpcp' in the current mesh. "
                     "Available: dp, cp, tp; flattened axes: dp_cp = dp x cp"),
              std::string::npos)
        << m;
  });
}

// A dim sharded on (dp, cp) is gathered in one all_gather over the
// flattened dp_cp (dp outer, cp inner: the ranks' shards are in dp_cp
// order); with the components the other way round on the dim it is refused.
TEST(FlattenedCollective, GatherOverFlattenedAxisOfATupleShardOn8Ranks) {
  run_ranks(8, [](const std::shared_ptr<World>& world) {
    DeviceMesh mesh(world, {{dp, 2}, {cp, 2}, {tp, 2}});
    mesh.flatten({dp, cp}, dp_cp);
    MeshGuard on_mesh(mesh);
    checker::TypecheckGuard guard(global_options());
    const int64_t k =
        mesh.axis("dp").local_rank * 2 + mesh.axis("cp").local_rank;
    at::Tensor full = Data({8, 3});
    at::Tensor x;
    {
      checker::NoTypecheckGuard paused;
      x = full.narrow(0, 2 * k, 2).clone();
    }
    assert_type(x, {dp = V, cp = V, tp = R},
                checker::partition_spec({{dp, cp}, {}}));
    at::Tensor g = all_gather(x, dp_cp, S(0), R);
    EXPECT_EQ(gtype(g), "{cp: R, dp: R, tp: R} PartitionSpec(None, None)");
    EXPECT_TRUE(Same(g, full));
    at::Tensor swapped = Data({2, 3});
    assert_type(swapped, {dp = V, cp = V, tp = R},
                checker::partition_spec({{cp, dp}, {}}));
    std::string m = spmd_error<RedistributeError>(
        [&] { all_gather(swapped, dp_cp, S(0), R); });
    EXPECT_NE(m.find("all_gather on axis dp_cp is not allowed because its "
                     "axes are not the innermost axes, in order, in its "
                     "PartitionSpec group (cp, dp)"),
              std::string::npos)
        << m;
  });
}

// local_map boundary leaves name a flattened axis as assert_type does:
// S(0) on dp_cp is the tuple (dp, cp) on dim 0, in the map and in a spec.
TEST(FlattenedCollective, LocalMapLeavesResolveFlattenedNamesOn8Ranks) {
  run_ranks(8, [](const std::shared_ptr<World>& world) {
    DeviceMesh mesh(world, {{dp, 2}, {cp, 2}, {tp, 2}});
    mesh.flatten({dp, cp}, dp_cp);
    MeshGuard on_mesh(mesh);
    checker::TypecheckGuard guard(global_options());
    at::Tensor x = Data({2, 3});
    assert_type(x, {dp = V, cp = V, tp = R},
                checker::partition_spec({{dp, cp}, {}}));
    auto body = [](const std::vector<at::Tensor>& in) {
      return std::vector<at::Tensor>{in[0] * 2.0};
    };
    auto out = checker::local_map(
        body, {x},
        std::vector<core::BoundaryType>{
            checker::boundary({dp_cp = S(0), tp = R})},
        {checker::boundary({dp_cp = V, tp = R},
                           checker::partition_spec({{dp_cp}, {}}))},
        "scale");
    ASSERT_EQ(out.size(), 1u);
    EXPECT_EQ(gtype(out[0]),
              "{cp: S(0), dp: S(0), tp: R} PartitionSpec((dp, cp), None)");
    // The wrong dim on the flattened axis is the boundary's type error.
    EXPECT_TYPE_ERROR(
        checker::local_map(body, {x},
                           std::vector<core::BoundaryType>{
                               checker::boundary({dp_cp = S(1), tp = R})},
                           {checker::boundary({dp_cp = S(0), tp = R})}, "f"),
        "local_map[f]");
    // A component given twice.
    std::string twice = spmd_error<UsageError>([&] {
      checker::local_map(body, {x},
                         std::vector<core::BoundaryType>{
                             checker::boundary({dp_cp = S(0), dp = V})},
                         {checker::boundary({dp_cp = S(0), tp = R})}, "g");
    });
    EXPECT_NE(twice.find("axis 'dp' is given twice"), std::string::npos)
        << twice;
  });
}

TEST(FlattenedAssertType, OtherMeshNamesOfTheSameRanksOn4Ranks) {
  run_ranks(4, [](const std::shared_ptr<World>& world) {
    DeviceMesh dense(world, {{dp, 2}, {tp, 2}});
    DeviceMesh expert(world, {{ep, 2}, {etp, 2}});  // ep = dp, etp = tp
    DeviceMesh other(world, {{edp, 4}});            // all ranks: dp x tp
    MeshGuard on_dense(dense);
    checker::TypecheckGuard guard(global_options());
    at::Tensor x = Data({4, 2});
    assert_type(x, {etp = S(1), ep = R});  // stored under the dense names
    EXPECT_EQ(gtype(x), "{dp: R, tp: S(1)} PartitionSpec(None, tp)");
    at::Tensor w = Data({4});
    assert_type(w, {edp = S(0)});  // the whole world = (dp, tp)
    EXPECT_EQ(spec_str(w), "PartitionSpec((dp, tp))");
  });
}

// ------------------------------------------ assert_type_like and the spec ----

checker::TypecheckOptions global_mesh2() {
  checker::TypecheckOptions o = global_options();
  o.mesh = std::vector<checker::MeshAxisInfo>{{"dp", 2}, {"tp", 2}};
  return o;
}

TEST(AssertTypeLike, CopiesThePartitionSpecInGlobalMode) {
  checker::TypecheckGuard guard(global_mesh2());
  at::Tensor x = typed({dp = R, tp = S(0)}, {4, 3});
  at::Tensor out = untyped({4, 3});
  assert_type_like(out, x);
  EXPECT_EQ(gtype(out), "{dp: R, tp: S(0)} PartitionSpec(tp, None)");
  // The copied spec is usable by global ops (a V without it is not).
  EXPECT_EQ(gtype(out * 2.0), "{dp: R, tp: S(0)} PartitionSpec(tp, None)");
  // An override drops the axis from the copied spec, or moves its shard.
  at::Tensor rep = untyped({4, 3});
  assert_type_like(rep, x, {tp = R});
  EXPECT_EQ(gtype(rep), "{dp: R, tp: R}");
  at::Tensor moved = untyped({4, 3});
  assert_type_like(moved, x, {tp = S(1)});
  EXPECT_EQ(gtype(moved), "{dp: R, tp: S(1)} PartitionSpec(None, tp)");
  // A second axis added by an override.
  at::Tensor two = untyped({4, 3});
  assert_type_like(two, x, {dp = S(1)});
  EXPECT_EQ(gtype(two), "{dp: S(1), tp: S(0)} PartitionSpec(tp, dp)");
  // A target whose existing spec contradicts the source's.
  at::Tensor other = typed({dp = R, tp = S(1)}, {4, 3});
  EXPECT_TYPE_ERROR(assert_type_like(other, x), "tp");
  // A copied spec that does not fit the target's ndim.
  EXPECT_TYPE_ERROR(assert_type_like(untyped({12}), x),
                    "PartitionSpec(tp, None) has 2 entries but the tensor "
                    "has ndim 1");
  // assert_local_type_like copies the map only: in global code the V then
  // lacks a shard dim.
  at::Tensor local = untyped({4, 3});
  assert_local_type_like(local, x);
  EXPECT_EQ(gtype(local), "{dp: R, tp: V}");
  EXPECT_TYPE_ERROR(local * 2.0, "no PartitionSpec entry");
}

TEST(AssertTypeLike, LocalModeAndLocalRegionsCopyTheMapOnly) {
  checker::TypecheckOptions o = global_mesh2();
  o.local = true;
  checker::TypecheckGuard guard(o);
  at::Tensor x = typed({dp = R, tp = S(0)}, {4, 3});
  at::Tensor out = untyped({12});  // another rank: fine in local mode
  assert_type_like(out, x);
  EXPECT_EQ(gtype(out), "{dp: R, tp: V}");
  checker::TypecheckGuard global(global_options());
  checker::LocalRegionGuard region;
  at::Tensor in_region = untyped({12});
  assert_type_like(in_region, x);
  EXPECT_EQ(gtype(in_region), "{dp: R, tp: V}");
}

// ---------------------------------------------- mutate_type and the spec ----

TEST(MutateType, KeepsShardDimsOfAxesThatStayV) {
  checker::TypecheckGuard guard(global_mesh2());
  at::Tensor x = typed({dp = R, tp = S(0)}, {4, 3});
  mutate_type(x, dp, R, I);
  EXPECT_EQ(gtype(x), "{dp: I, tp: S(0)} PartitionSpec(tp, None)");
  EXPECT_EQ(gtype(x * 2.0), "{dp: I, tp: S(0)} PartitionSpec(tp, None)");
  // Every form leaves the spec of untouched V axes alone.
  mutate_type(x, {dp = I}, R);
  mutate_type(x, R, {dp = I});
  mutate_type(x, {dp = I}, {dp = R});
  EXPECT_EQ(gtype(x), "{dp: R, tp: S(0)} PartitionSpec(tp, None)");
  // An axis that leaves V leaves the spec (only V axes shard a dim).
  mutate_type(x, tp, V, P);
  EXPECT_EQ(gtype(x), "{dp: R, tp: P}");
  // A failed mutation changes nothing.
  at::Tensor y = typed({dp = S(1), tp = S(0)}, {4, 3});
  EXPECT_TYPE_ERROR(mutate_type(y, {dp = V, tp = R}, {dp = P, tp = P}), "tp");
  EXPECT_EQ(spec_str(y), "PartitionSpec(tp, dp)");
  // The all-axes form.
  mutate_type(y, V, P);
  EXPECT_EQ(gtype(y), "{dp: P, tp: P}");
  // Spec §8.2: only an already-typed tensor can be mutated (the all-axes
  // form would otherwise give an untyped tensor the empty type).
  at::Tensor u = untyped({2});
  EXPECT_TYPE_ERROR(mutate_type(u, V, R), "the tensor has no SPMD type");
  EXPECT_TYPE_ERROR(mutate_type(u, tp, V, R), "the tensor has no SPMD type");
  EXPECT_TYPE_ERROR(mutate_type(u, R, {tp = V}), "no SPMD type");
  EXPECT_FALSE(has_type(u));
}

// ----------------------------------- typed boundaries with inferred inputs
// ----

TEST(Boundaries, NoTypecheckKeepsShardDimsOfOutTypesInGlobalMode) {
  checker::TypecheckGuard guard(global_mesh2());
  at::Tensor x = typed({dp = R, tp = S(0)}, {4, 3});
  // in_types unset: Infer, the argument's own type is trusted.
  at::Tensor y = no_typecheck(
      {std::nullopt,
       std::vector<LeafType>{std::vector<AxisType>{dp = R, tp = S(1)}}},
      [](const at::Tensor& a) { return a.t().contiguous(); }, x);
  EXPECT_EQ(gtype(y), "{dp: R, tp: S(1)} PartitionSpec(None, tp)");
  EXPECT_EQ(gtype(y * 2.0), "{dp: R, tp: S(1)} PartitionSpec(None, tp)");
  // A declared in_type is checked against the argument, shard dim included.
  EXPECT_TYPE_ERROR(
      no_typecheck(
          {std::vector<LeafType>{std::vector<AxisType>{dp = R, tp = S(1)}},
           std::vector<LeafType>{std::vector<AxisType>{dp = R, tp = R}}},
          [](const at::Tensor& a) { return a.sum(0); }, x),
      "tp");
}

TEST(Boundaries, LocalMapWithInferredInputsOnGlooRanks) {
  run_mesh({{tp, 2}}, [](const DeviceMesh& mesh) {
    checker::TypecheckGuard guard(global_options());
    at::Tensor x = Data({2, 3});
    assert_type(x, {tp = S(0)});
    // A data-dependent body: the inputs keep their types (Infer), the body
    // runs with the local rules, the result is stamped, then gathered.
    auto out = checker::local_map(
        [](const std::vector<at::Tensor>& in) {
          return std::vector<at::Tensor>{at::cumsum(in[0], 0)};
        },
        {x}, std::nullopt, {checker::boundary({tp = S(0)})}, "cumsum_rows");
    EXPECT_EQ(gtype(out[0]), "{tp: S(0)} PartitionSpec(tp, None)");
    EXPECT_EQ(gtype(x), "{tp: S(0)} PartitionSpec(tp, None)");
    at::Tensor g = all_gather(out[0], tp, S(0), R);
    EXPECT_EQ(g.sizes(), (at::IntArrayRef{4, 3}));
    checker::NoTypecheckGuard paused;
    at::Tensor one = at::cumsum(Data({2, 3}), 0);
    EXPECT_TRUE(TensorEq(g, at::cat({one, one}, 0)));
    (void)mesh;
  });
}

// --------------------------- raw reduce_scatter_single on Gloo, strict ----

void StrictRawReduceScatter(int n) {
  run_mesh({{tp, n}}, [n](const DeviceMesh& mesh) {
    checker::TypecheckGuard strict(true);
    auto pg = mesh.axis("tp").group;
    at::Tensor in = Data({2 * n});
    at::Tensor out = untyped({2});
    assert_type(in, {tp = P});
    assert_type(out, {tp = V});
    // No NoTypecheckGuard: the runtime pauses the checker inside wait().
    pg->reduce_scatter_single(out, in)->wait();
    EXPECT_EQ(type_str(out), "{tp: V}");
    const int r = mesh.rank();
    at::Tensor want = Data({2 * n});
    {
      checker::NoTypecheckGuard paused;
      want = want.narrow(0, 2 * r, 2) * n;
    }
    EXPECT_TRUE(Same(out, want));
    // The checker is on again after wait(): an untyped operand is rejected.
    EXPECT_TRUE(checker::is_type_checking());
    EXPECT_TYPE_ERROR(out + untyped({2}), "");
  });
}

TEST(RawC10dStrict, ReduceScatterSingleWaitOn2GlooRanks) {
  StrictRawReduceScatter(2);
}
TEST(RawC10dStrict, ReduceScatterSingleWaitOn4GlooRanks) {
  StrictRawReduceScatter(4);
}

}  // namespace
}  // namespace spmd::testing
