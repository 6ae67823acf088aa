// mesh_axes_test.cpp - mesh axes as structure in the runtime (spec §10,
// §6.2): flattened axes as collective axes, meshes with explicit strides,
// meshes over existing c10d groups, several meshes over one World with
// reinterpret_mesh and the automatic cross-mesh lift, and an expert-parallel
// MoE layer (dense mesh {dp, tp} + expert mesh {edp, ep, etp} over 8 Gloo
// ranks) typed by the runtime checker and equal to the one-device layer.
#include <ATen/ATen.h>
#include <spmd/checker.h>
#include <spmd/collectives.h>
#include <spmd/core/mesh_region.h>
#include <spmd/errors.h>
#include <spmd/mesh.h>
#include <spmd/type_annotations.h>

#include "runtime_test_util.h"

namespace spmd {
namespace {

SPMD_AXIS(dp);
SPMD_AXIS(cp);
SPMD_AXIS(tp);
SPMD_AXIS(dp_cp);
SPMD_AXIS(edp);
SPMD_AXIS(ep);
SPMD_AXIS(etp);

using core::MeshAxis;
using testing::error_of;
using testing::run_mesh;
using testing::run_ranks;
using testing::TensorEq;

core::TensorType TT(std::string_view text) {
  return core::TensorType::parse(text).value();
}

// A fresh untyped tensor made under a TypecheckGuard (a factory op would be
// typed R on the current mesh, spec §6.10).
template <typename F>
at::Tensor Untyped(F&& make) {
  checker::NoTypecheckGuard off;
  return make();
}

// ---- flattened axes
// ----------------------------------------------------------

TEST(FlattenedAxis, GroupLayoutAndCollectivesOverDpCp) {
  // 8 ranks: dp(2:4) x cp(2:2) x tp(2:1); dp_cp = (4:2).
  run_ranks(8, [](const std::shared_ptr<World>& world) {
    DeviceMesh mesh(world, {{dp, 2}, {cp, 2}, {tp, 2}});
    const MeshAxisGroup& f = mesh.flatten({dp, cp}, dp_cp);
    const int r = world->rank();
    EXPECT_EQ(f.size, 4);
    EXPECT_EQ(f.layout, MeshAxis::of(4, 2));
    EXPECT_EQ(f.ranks,
              (std::vector<int>{r % 2, r % 2 + 2, r % 2 + 4, r % 2 + 6}));
    EXPECT_EQ(f.local_rank, r / 2);
    EXPECT_EQ(f.group->getSize(), 4);
    EXPECT_EQ(&f, mesh.find("dp_cp"));
    EXPECT_EQ(mesh.axis_names(), (std::vector<std::string>{"dp", "cp", "tp"}));
    MeshGuard guard(mesh);
    // Values: x_r = r; the dp_cp sum is over the 4 ranks with r's tp index.
    at::Tensor x = at::full({2}, float(r));
    at::Tensor sum = all_reduce(x, dp_cp, P, R);
    const float want = float(4 * (r % 2) + 0 + 2 + 4 + 6);
    EXPECT_TRUE(TensorEq(sum, at::full({2}, want)));
    at::Tensor gathered = all_gather(x.unsqueeze(0), dp_cp, S(0), R);
    EXPECT_TRUE(TensorEq(gathered.select(1, 0),
                         at::tensor({float(r % 2), float(r % 2 + 2),
                                     float(r % 2 + 4), float(r % 2 + 6)})));

    // Types (cases C049-C053): a flattened axis acts on dp and cp.
    checker::TypecheckGuard typed(true);
    at::Tensor p = Untyped([] { return at::full({6, 1}, 1.0f); });
    assert_type(p, {dp = P, cp = P, tp = R});
    EXPECT_EQ(get_type(all_reduce(p, dp_cp, P, R)),
              TT("{cp: R, dp: R, tp: R}"));  // C049
    at::Tensor q = Untyped([] { return at::full({4, 1}, 1.0f); });
    assert_type(q, {dp = P, cp = P, tp = R});
    EXPECT_EQ(get_type(reduce_scatter(q, dp_cp, P, V)),
              TT("{cp: V, dp: V, tp: R}"));  // C053
    at::Tensor bad = Untyped([] { return at::full({2}, 1.0f); });
    assert_type(bad, {dp = P, cp = R, tp = R});
    std::string msg = error_of<SpmdTypeError>(
        [&] { (void)all_reduce(bad, dp_cp, P, R); });  // C050
    EXPECT_NE(msg.find("cp"), std::string::npos) << msg;
    at::Tensor part = Untyped([] { return at::full({2}, 1.0f); });
    assert_type(part, {dp = P, tp = R});
    msg = error_of<SpmdTypeError>(
        [&] { (void)all_reduce(part, dp_cp, P, R); });  // C051
    EXPECT_NE(msg.find("no type for axis dp_cp"), std::string::npos) << msg;
  });
}

TEST(FlattenedAxis, Errors) {
  run_ranks(4, [](const std::shared_ptr<World>& world) {
    DeviceMesh mesh(world, {{dp, 2}, {tp, 2}});
    EXPECT_NE(error_of<InvalidArgument>([&] {
                mesh.flatten({dp}, dp_cp);
              }).find("at least two axes"),
              std::string::npos);
    EXPECT_NE(error_of<InvalidArgument>([&] {
                mesh.flatten({dp, cp}, dp_cp);
              }).find("'cp' is not an axis of DeviceMesh(dp=2, tp=2)"),
              std::string::npos);
    EXPECT_NE(error_of<InvalidArgument>([&] {
                mesh.flatten({dp, dp}, dp_cp);
              }).find("given twice"),
              std::string::npos);
    EXPECT_NE(error_of<InvalidArgument>([&] {
                mesh.flatten({dp, tp}, tp);
              }).find("already has an axis named 'tp'"),
              std::string::npos);
  });
}

// ---- layouts that are not row-major
// ------------------------------------------

TEST(MeshStrides, ColumnMajorMesh) {
  // dp varies fastest: dp(2:1), tp(2:2).
  run_ranks(4, [](const std::shared_ptr<World>& world) {
    DeviceMesh mesh(world, {{dp, 2, 1}, {tp, 2, 2}});
    const int r = world->rank();
    const MeshAxisGroup& d = mesh.axis("dp");
    const MeshAxisGroup& t = mesh.axis("tp");
    EXPECT_EQ(d.layout, MeshAxis::of(2, 1));
    EXPECT_EQ(t.layout, MeshAxis::of(2, 2));
    EXPECT_EQ(d.local_rank, r % 2);
    EXPECT_EQ(t.local_rank, r / 2);
    EXPECT_EQ(d.ranks, (std::vector<int>{r - r % 2, r - r % 2 + 1}));
    EXPECT_EQ(t.ranks, (std::vector<int>{r % 2, r % 2 + 2}));
    MeshGuard guard(mesh);
    at::Tensor s = all_reduce(at::full({1}, float(r)), tp, P, R);
    EXPECT_TRUE(TensorEq(s, at::full({1}, float(2 * (r % 2) + 2))));
  });
}

TEST(MeshStrides, Errors) {
  run_ranks(4, [](const std::shared_ptr<World>& world) {
    std::string m = error_of<InvalidArgument>([&] {
      DeviceMesh mesh(world, {{dp, 2, 1}, {tp, 2}});
    });
    EXPECT_NE(m.find("some axes only"), std::string::npos) << m;
    m = error_of<InvalidArgument>([&] {
      DeviceMesh mesh(world, {{dp, 2, 1}, {tp, 2, 1}});
    });
    EXPECT_NE(m.find("exactly once"), std::string::npos) << m;
    m = error_of<InvalidArgument>([&] {
      DeviceMesh mesh(world, {{dp, 2, 1}, {tp, 2, 4}});
    });
    EXPECT_NE(m.find("(4:1)"), std::string::npos) << m;
  });
}

// ---- existing c10d process groups
// --------------------------------------------

TEST(MeshFromGroups, TrainerBuiltGroupsBecomeAxes) {
  run_ranks(4, [](const std::shared_ptr<World>& world) {
    const int r = world->rank();
    // The trainer's own groups: tp = {0,1},{2,3}; dp = {0,2},{1,3}.
    auto tp_group = world->new_group({r - r % 2, r - r % 2 + 1},
                                     "trainer/tp/" + std::to_string(r / 2));
    auto dp_group = world->new_group({r % 2, r % 2 + 2},
                                     "trainer/dp/" + std::to_string(r % 2));
    DeviceMesh mesh = DeviceMesh::from_groups(
        world, {{dp, dp_group, {}}, {tp, tp_group, {}}});  // ranks discovered
    EXPECT_EQ(mesh.to_string(), "DeviceMesh(dp=2, tp=2)");
    EXPECT_EQ(mesh.axis("dp").layout, MeshAxis::of(2, 2));
    EXPECT_EQ(mesh.axis("tp").layout, MeshAxis::of(2, 1));
    EXPECT_EQ(mesh.axis("dp").local_rank, r / 2);
    EXPECT_EQ(mesh.axis("tp").ranks,
              (std::vector<int>{r - r % 2, r - r % 2 + 1}));
    MeshGuard guard(mesh);
    checker::TypecheckGuard typed(true);
    at::Tensor x = Untyped([&] { return at::full({1}, float(r)); });
    assert_type(x, {dp = R, tp = P});
    at::Tensor s = all_reduce(x, tp, P, R);
    EXPECT_TRUE(TensorEq(s, at::full({1}, float(2 * (r - r % 2) + 1))));
    EXPECT_EQ(get_type(s), TT("{dp: R, tp: R}"));

    // Errors: the same group under two names (not orthogonal); a rank list
    // that does not match the group.
    std::string m = error_of<InvalidArgument>([&] {
      (void)DeviceMesh::from_groups(
          world, {{dp, tp_group, {r - r % 2, r - r % 2 + 1}},
                  {cp, tp_group, {r - r % 2, r - r % 2 + 1}}});
    });
    EXPECT_NE(m.find("not orthogonal"), std::string::npos) << m;
    m = error_of<InvalidArgument>([&] {
      (void)DeviceMesh::from_groups(world, {{tp, tp_group, {r}}});
    });
    EXPECT_NE(m.find("lists 1 ranks but its group has 2"), std::string::npos)
        << m;
    m = error_of<InvalidArgument>([&] {
      (void)DeviceMesh::from_groups(world, {{tp, tp_group, {9, 10}}});
    });
    EXPECT_NE(m.find("does not contain this rank"), std::string::npos) << m;
  });
}

// ---- several meshes over one World
// ---------------------------------------------

TEST(SeveralMeshes, AxisTableIdentifiesAxesByLayout) {
  run_ranks(4, [](const std::shared_ptr<World>& world) {
    DeviceMesh dense(world, {{dp, 2}, {tp, 2}});
    DeviceMesh expert(world, {{edp, 1}, {ep, 2}, {etp, 2}});
    const core::AxisTable& t = *world->axis_table();
    EXPECT_TRUE(t.same_axis("tp", "etp"));
    EXPECT_TRUE(t.same_axis("dp", "ep"));
    EXPECT_EQ(t.find("edp"), nullptr);  // singleton axes are not registered
    // A name may not change its layout within one World.
    std::string m = error_of<InvalidArgument>([&] {
      DeviceMesh other(world, {{tp, 4}});
    });
    EXPECT_NE(m.find("mesh axis name 'tp' already names the layout (2:1)"),
              std::string::npos)
        << m;
  });
}

// ---- current-mesh cases of the cases file (M) that need a runtime
// -------------

SPMD_AXIS(one);
SPMD_AXIS(real);

struct MeshCase {
  const char* id;
  std::function<void()> check;
};

std::vector<MeshCase> MeshCases() {
  return {
      {"M007_singleton_axis_dropped",
       [] {
         run_ranks(2, [](const std::shared_ptr<World>& world) {
           DeviceMesh mesh(world, {{one, 1}, {real, 2}});
           MeshGuard guard(mesh);
           checker::TypecheckGuard typed(true);
           at::Tensor x = Untyped([] { return at::ones({2}); });
           at::Tensor y = Untyped([] { return at::ones({2}); });
           assert_type(x, {one = R, real = R});
           assert_type(y, {one = V, real = R});
           EXPECT_EQ(get_type(x), TT("{real: R}"));
           EXPECT_EQ(get_type(x + y), TT("{real: R}"));
         });
       }},
      {"M019_no_mesh_collective_by_name",
       [] {
         checker::TypecheckGuard typed(true);
         at::Tensor x = Untyped([] { return at::ones({3}); });
         assert_type(x, {tp = R});
         std::string m = error_of<MeshResolutionError>(
             [&] { (void)convert(x, tp, R, S(0)); });
         EXPECT_NE(m.find("requires an ambient DeviceMesh"), std::string::npos)
             << m;
       }},
      {"M020_mesh_without_process_groups",
       [] {
         checker::TypecheckOptions options;
         options.mesh = std::vector<checker::MeshAxisInfo>{{"tp", 3}};
         checker::TypecheckGuard typed(options);
         at::Tensor x = Untyped([] { return at::ones({3}); });
         assert_type(x, {tp = P});
         std::string m = error_of<MeshResolutionError>(
             [&] { (void)all_reduce(x, tp, P, R); });
         EXPECT_NE(m.find("requires an ambient DeviceMesh"), std::string::npos)
             << m;
       }},
  };
}

void PrintTo(const MeshCase& c, std::ostream* os) { *os << c.id; }
class CurrentMeshCase : public ::testing::TestWithParam<MeshCase> {};
TEST_P(CurrentMeshCase, Holds) { GetParam().check(); }
INSTANTIATE_TEST_SUITE_P(Cases, CurrentMeshCase,
                         ::testing::ValuesIn(MeshCases()),
                         [](const auto& info) { return info.param.id; });

// ---- the MoE layer
// ---------------------------------------------------------------

constexpr int64_t kTokens = 6;   // tokens per data-parallel rank (T)
constexpr int64_t kHidden = 8;   // H
constexpr int64_t kFfn = 16;     // F, sharded over etp
constexpr int64_t kExperts = 4;  // E, sharded over ep
constexpr int64_t kDp = 4;       // dense dp = edp x ep

// Deterministic data, identical on every rank (no RNG shared by threads).
at::Tensor Data(std::vector<int64_t> shape, double phase) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return at::sin(at::arange(n, at::kFloat) * 0.37 + phase).reshape(shape);
}

// One-hot of `index` over `n` classes, as float: [..., n].
at::Tensor OneHot(const at::Tensor& index, int64_t n) {
  return index.unsqueeze(-1).eq(at::arange(n, index.options())).to(at::kFloat);
}

// Top-1 routing of x [T, H]: the dispatch tensor D [T, E, C] (token t goes to
// slot c of expert e) with capacity C = T (no token dropped), and the gate.
std::pair<at::Tensor, at::Tensor> Route(const at::Tensor& x,
                                        const at::Tensor& wg) {
  at::Tensor probs = at::softmax(at::matmul(x, wg), -1);
  auto [gate, expert] = probs.max(-1);
  at::Tensor onehot = OneHot(expert, kExperts);                      // [T, E]
  at::Tensor slot = ((at::cumsum(onehot, 0) - 1) * onehot).sum(-1);  // [T]
  at::Tensor dispatch =
      onehot.unsqueeze(2) * OneHot(slot.to(at::kLong), kTokens).unsqueeze(1);
  return {dispatch, gate};
}

// The one-device layer on all kDp * T tokens: [kDp, T, H].
at::Tensor SingleDeviceMoe(const at::Tensor& xs, const at::Tensor& wg,
                           const at::Tensor& w1, const at::Tensor& w2) {
  at::Tensor x = xs.reshape({-1, kHidden});
  at::Tensor probs = at::softmax(at::matmul(x, wg), -1);
  auto [gate, expert] = probs.max(-1);
  at::Tensor y = at::zeros_like(x);
  for (int64_t t = 0; t < x.size(0); ++t) {
    int64_t e = expert[t].item<int64_t>();
    at::Tensor h = at::relu(at::matmul(x[t], w1[e]));
    y[t] = at::matmul(h, w2[e]) * gate[t];
  }
  return y.reshape({kDp, kTokens, kHidden});
}

TEST(MoE, ExpertParallelLayerOn8RanksIsTypedAndMatchesOneDevice) {
  const at::Tensor xs = Data({kDp, kTokens, kHidden}, 0.0);
  const at::Tensor wg = Data({kHidden, kExperts}, 1.0);
  const at::Tensor w1 = Data({kExperts, kHidden, kFfn}, 2.0) * 0.5;
  const at::Tensor w2 = Data({kExperts, kFfn, kHidden}, 3.0) * 0.5;
  const at::Tensor want = SingleDeviceMoe(xs, wg, w1, w2);

  run_ranks(8, [&](const std::shared_ptr<World>& world) {
    // dense dp(4:2) x tp(2:1); expert edp(2:4) x ep(2:2) x etp(2:1):
    // dp = edp x ep, and etp is tp under another name.
    DeviceMesh dense(world, {{dp, 4}, {tp, 2}});
    DeviceMesh expert(world, {{edp, 2}, {ep, 2}, {etp, 2}});
    const int64_t d = dense.axis("dp").local_rank;
    const int64_t e_rank = expert.axis("ep").local_rank;
    const int64_t t_rank = expert.axis("etp").local_rank;
    const int64_t local_experts = kExperts / 2, shard = kFfn / 2;
    // This rank's pieces, cut before typing starts (they are inputs).
    at::Tensor x_in = xs[d].clone();
    std::vector<at::Tensor> w1_in, w2_in;
    for (int64_t j = 0; j < local_experts; ++j) {
      const int64_t e = e_rank * local_experts + j;
      w1_in.push_back(w1[e].narrow(1, t_rank * shard, shard).clone());
      w2_in.push_back(w2[e].narrow(0, t_rank * shard, shard).clone());
    }
    at::Tensor wg_in = wg.clone();
    const at::Tensor want_d = want[d].clone();

    checker::TypecheckGuard typed(true);
    at::Tensor y;
    {
      MeshGuard on_dense(dense);
      at::Tensor x = assert_type(x_in, {dp = V, tp = R});
      at::Tensor router = assert_type(wg_in, {dp = R, tp = R});
      auto [dispatch, gate] = Route(x, router);  // dense-mesh types
      EXPECT_EQ(get_type(dispatch), TT("{dp: V, tp: R}"));

      MeshGuard on_expert(expert);
      // Dispatch: operands typed on the dense mesh are lifted (§6.2).
      at::Tensor d2 = dispatch.reshape({kTokens, kExperts * kTokens});
      at::Tensor buf = at::matmul(d2.t(), x).reshape(
          {2, local_experts, kTokens, kHidden});  // [ep dst, E_l, C, H]
      EXPECT_EQ(get_type(buf), TT("{edp: V, ep: V, etp: R}"));
      at::Tensor recv = all_to_all(buf, ep, V, V);  // [ep src, E_l, C, H]
      std::vector<at::Tensor> outs;
      at::Tensor expert_weight;
      for (int64_t j = 0; j < local_experts; ++j) {
        at::Tensor w_up = assert_type(w1_in[j], {edp = R, ep = V, etp = S(1)});
        expert_weight = w_up;
        at::Tensor w_down =
            assert_type(w2_in[j], {edp = R, ep = V, etp = S(0)});
        at::Tensor in = recv.select(1, j).reshape({-1, kHidden});
        at::Tensor h = at::relu(at::matmul(in, w_up));
        at::Tensor o = reinterpret(at::matmul(h, w_down), etp, V, P);
        o = all_reduce(o, etp, P, R);
        outs.push_back(o.reshape({2, kTokens, kHidden}));
      }
      at::Tensor back = all_to_all(at::stack(outs, 1), ep, V, V);
      y = at::matmul(d2, back.reshape({kExperts * kTokens, kHidden})) *
          gate.unsqueeze(1);
      EXPECT_EQ(get_type(y), TT("{edp: V, ep: V, etp: R}"));

      // Expert weights (R on edp, V on ep) have no dense presentation: dp
      // would need one type for edp x ep.
      MeshGuard back_on_dense(dense);
      std::string m =
          error_of<SpmdTypeError>([&] { (void)at::relu(expert_weight); });
      EXPECT_NE(m.find("cannot be auto-reinterpreted from {edp, ep, etp} to "
                       "the current mesh {dp, tp}"),
                std::string::npos)
          << m;
      EXPECT_NE(m.find("edp has type R while ep has type V"), std::string::npos)
          << m;
    }
    // Back on the dense mesh: explicitly, and automatically.
    MeshGuard on_dense(dense);
    at::Tensor yd = reinterpret_mesh(y, dense);
    EXPECT_EQ(get_type(yd), TT("{dp: V, tp: R}"));
    EXPECT_EQ(get_type(y + yd), TT("{dp: V, tp: R}"));
    checker::NoTypecheckGuard off;
    EXPECT_TRUE(at::allclose(y, want_d, 1e-5, 1e-6))
        << "rank " << world->rank() << "\n"
        << y << "\n"
        << want_d;
  });
}

}  // namespace
}  // namespace spmd
