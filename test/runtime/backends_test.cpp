// backends_test.cpp - the fake backend (a world of 8192 ranks in one
// process), launcher environments (torchrun, mpirun, srun) and the explicit
// TCPStore init.
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <map>

#include "runtime_test_util.h"

namespace spmd {
namespace {

SPMD_AXIS(dp);
SPMD_AXIS(tp);

using at::Tensor;
using testing::error_of;
using testing::TensorEq;

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::vector<int64_t> shape_of(const Tensor& t) { return t.sizes().vec(); }
using Shape = std::vector<int64_t>;

TEST(FakeBackend, WorldOf8192RunsEveryCollectiveWithSpecShapes) {
  constexpr int64_t n = 8192;
  auto world = World::fake(5000, n);
  EXPECT_EQ(world->process_group()->getSize(), n);
  DeviceMesh mesh(world, {{tp, n}});
  MeshGuard guard(mesh);
  EXPECT_EQ(mesh.axis("tp").local_rank, 5000);
  auto opt = [](auto f) {
    CollectiveOptions o;
    f(o);
    return o;
  };
  Tensor x = at::ones({2, 3}).requires_grad_(true);
  struct Row {
    std::string name;
    std::function<Tensor()> run;
    Shape expected;
  };
  std::vector<Row> rows = {
      {"all_reduce(P->R)", [&] { return all_reduce(x, tp, P, R); }, {2, 3}},
      {"all_gather(V->R)", [&] { return all_gather(x, tp, V, R); }, {n, 2, 3}},
      {"all_gather(V->R, gather_dim=2)",
       [&] {
         return all_gather(x, tp, V, R, opt([](auto& o) { o.gather_dim = 2; }));
       },
       {2, 3, n}},
      {"all_gather(V->I)", [&] { return all_gather(x, tp, V, I); }, {n, 2, 3}},
      {"all_gather(S(-1)->R)",
       [&] { return all_gather(x, tp, S(-1), R); },
       {2, 3 * n}},
      {"reduce_scatter(P->V)",
       [&] {
         return reduce_scatter(at::ones({n, 2}).requires_grad_(true), tp, P, V);
       },
       {2}},
      {"reduce_scatter(P->S(1))",
       [&] {
         return reduce_scatter(at::ones({2, 2 * n}).requires_grad_(true), tp, P,
                               S(1));
       },
       {2, 2}},
      {"all_to_all(V->V)",
       [&] {
         return all_to_all(at::ones({n, 2}).requires_grad_(true), tp, V, V);
       },
       {n, 2}},
      {"all_to_all(S(0)->S(1))",
       [&] {
         return all_to_all(at::ones({2, n}).requires_grad_(true), tp, S(0),
                           S(1));
       },
       {2 * n, 1}},
      {"convert(R->V)",
       [&] {
         return convert(at::ones({n, 2}).requires_grad_(true), tp, R, V);
       },
       {2}},
      {"convert(I->S(0))",
       [&] {
         return convert(at::ones({3 * n}).requires_grad_(true), tp, I, S(0));
       },
       {3}},
      {"convert(R->P)", [&] { return convert(x, tp, R, P); }, {2, 3}},
      {"convert(I->R)", [&] { return convert(x, tp, I, R); }, {2, 3}},
      {"reinterpret(V->P)", [&] { return reinterpret(x, tp, V, P); }, {2, 3}},
      {"redistribute(S(0)->R)",
       [&] {
         return redistribute(at::ones({1, 2}).requires_grad_(true), tp, S(0),
                             R);
       },
       {n, 2}},
      {"redistribute(P->S(0))",
       [&] {
         return redistribute(at::ones({n}).requires_grad_(true), tp, P, S(0));
       },
       {1}},
      {"shard(R->S(1))",
       [&] {
         return shard(at::ones({2, n}).requires_grad_(true), tp, R, S(1));
       },
       {2, 1}},
      {"unshard(S(0)->I)", [&] { return unshard(x, tp, S(0), I); }, {2 * n, 3}},
      {"invariant_to_replicate",
       [&] { return invariant_to_replicate(x, tp); },
       {2, 3}},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.name);
    Tensor y = row.run();
    EXPECT_EQ(shape_of(y), row.expected);
    // The backward runs the dual on the fake group too.
    ASSERT_TRUE(y.requires_grad());
    EXPECT_NO_THROW(y.sum().backward());
  }
  EXPECT_EQ(shape_of(x.grad()), (Shape{2, 3}));
}

TEST(FakeBackend, TwoDimensionalMeshOf8192) {
  auto world = World::fake(8191, 8192);
  DeviceMesh mesh(world, {{dp, 64}, {tp, 128}});
  MeshGuard guard(mesh);
  EXPECT_EQ(mesh.axis("dp").local_rank, 63);
  EXPECT_EQ(mesh.axis("tp").local_rank, 127);
  EXPECT_EQ(mesh.axis("dp").ranks.front(), 127);
  EXPECT_EQ(shape_of(all_gather(at::ones({1}), dp, S(0), R)), (Shape{64}));
  EXPECT_EQ(shape_of(all_gather(at::ones({1}), tp, S(0), R)), (Shape{128}));
}

TEST(FakeBackend, SizeOneWorldIsExact) {
  auto world = World::fake(0, 1);
  DeviceMesh mesh(world, {{tp, 1}});
  MeshGuard guard(mesh);
  Tensor x = at::arange(4.);
  EXPECT_TRUE(TensorEq(all_reduce(x, tp, P, R), x));
  EXPECT_TRUE(TensorEq(all_gather(x, tp, S(0), R), x));
  EXPECT_TRUE(TensorEq(reduce_scatter(x, tp, P, S(0)), x));
  EXPECT_TRUE(TensorEq(all_to_all(x, tp, S(0), S(0)), x));
}

// --- Launcher environments.

using Env = std::map<std::string, std::string>;
std::function<const char*(const char*)> from(const Env& env) {
  return [&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
}

TEST(LaunchEnv, Torchrun) {
  Env env{{"RANK", "3"},
          {"WORLD_SIZE", "8"},
          {"LOCAL_RANK", "1"},
          {"MASTER_ADDR", "10.0.0.1"},
          {"MASTER_PORT", "29500"}};
  LaunchEnv e = parse_launch_env(from(env));
  EXPECT_EQ(e.launcher, "torchrun");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.world_size, 8);
  EXPECT_EQ(e.local_rank, 1);
  EXPECT_EQ(e.master_addr, "10.0.0.1");
  EXPECT_EQ(e.master_port, 29500);
}

TEST(LaunchEnv, OpenMpi) {
  Env env{{"OMPI_COMM_WORLD_RANK", "2"},
          {"OMPI_COMM_WORLD_SIZE", "4"},
          {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
          {"MASTER_ADDR", "h"},
          {"MASTER_PORT", "1234"}};
  LaunchEnv e = parse_launch_env(from(env));
  EXPECT_EQ(e.launcher, "mpirun");
  EXPECT_EQ(e.rank, 2);
  EXPECT_EQ(e.world_size, 4);
  EXPECT_EQ(e.local_rank, 2);
}

TEST(LaunchEnv, Slurm) {
  Env env{{"SLURM_PROCID", "5"},
          {"SLURM_NTASKS", "16"},
          {"SLURM_LOCALID", "1"},
          {"MASTER_ADDR", "node0"},
          {"MASTER_PORT", "29400"}};
  LaunchEnv e = parse_launch_env(from(env));
  EXPECT_EQ(e.launcher, "srun");
  EXPECT_EQ(e.rank, 5);
  EXPECT_EQ(e.world_size, 16);
}

TEST(LaunchEnv, NestedLaunchersThatAgreeAreFine) {
  Env env{{"RANK", "1"},         {"WORLD_SIZE", "2"},  {"SLURM_PROCID", "1"},
          {"SLURM_NTASKS", "2"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}};
  EXPECT_EQ(parse_launch_env(from(env)).rank, 1);
}

TEST(LaunchEnv, MissingOrBadVariablesAreNamed) {
  struct Bad {
    Env env;
    std::string names;
  };
  std::vector<Bad> cases = {
      {{{"RANK", "0"}, {"MASTER_ADDR", "a"}, {"MASTER_PORT", "1"}},
       "WORLD_SIZE is not set"},
      {{{"OMPI_COMM_WORLD_RANK", "0"},
        {"MASTER_ADDR", "a"},
        {"MASTER_PORT", "1"}},
       "OMPI_COMM_WORLD_SIZE is not set"},
      {{{"SLURM_PROCID", "x"}, {"SLURM_NTASKS", "2"}}, "SLURM_PROCID='x'"},
      {{{"RANK", "4"}, {"WORLD_SIZE", "4"}},
       "RANK=4 is not below WORLD_SIZE=4"},
      {{{"RANK", "1"},
        {"WORLD_SIZE", "4"},
        {"OMPI_COMM_WORLD_RANK", "2"},
        {"OMPI_COMM_WORLD_SIZE", "4"}},
       "RANK=1 but OMPI_COMM_WORLD_RANK=2"},
      {{{"RANK", "1"},
        {"WORLD_SIZE", "4"},
        {"SLURM_PROCID", "1"},
        {"SLURM_NTASKS", "8"}},
       "WORLD_SIZE=4 but SLURM_NTASKS=8"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_PORT", "1"}},
       "MASTER_ADDR is not set"},
      {{{"RANK", "0"}, {"WORLD_SIZE", "1"}, {"MASTER_ADDR", "a"}},
       "MASTER_PORT is not set"},
      {{{"RANK", "0"},
        {"WORLD_SIZE", "1"},
        {"MASTER_ADDR", "a"},
        {"MASTER_PORT", "99999"}},
       "MASTER_PORT='99999'"},
      {{}, "no launcher environment found"},
  };
  for (const Bad& b : cases) {
    SCOPED_TRACE(b.names);
    std::string msg =
        error_of<InvalidArgument>([&] { parse_launch_env(from(b.env)); });
    EXPECT_TRUE(contains(msg, b.names)) << msg;
  }
}

TEST(Backends, ParseBackendNamesTheAlternatives) {
  EXPECT_EQ(parse_backend("gloo"), Backend::Gloo);
  EXPECT_EQ(parse_backend("fake"), Backend::Fake);
  std::string msg = error_of<InvalidArgument>([] { parse_backend("mpi"); });
  EXPECT_TRUE(contains(msg, "'gloo', 'nccl' or 'fake'")) << msg;
#ifndef SPMD_WITH_CUDA
  msg = error_of<InvalidArgument>([] { parse_backend("nccl"); });
  EXPECT_TRUE(contains(msg, "SPMD_WITH_CUDA")) << msg;
#endif
}

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

TEST(Init, TcpStoreRendezvousOnLoopback) {
  const int port = free_port();
  std::vector<std::thread> ranks;
  std::vector<std::string> errors(3);
  for (int r = 0; r < 3; ++r) {
    ranks.emplace_back([&, r] {
      try {
        WorldOptions o;
        o.timeout = testing::kTestTimeout;
        auto world = init(Backend::Gloo, r, 3, "127.0.0.1", port, o);
        DeviceMesh mesh(world, {{tp, 3}});
        MeshGuard guard(mesh);
        Tensor y = all_reduce(at::full({1}, float(r)), tp, P, R);
        if (y.item<float>() != 3.f) errors[r] = "wrong sum";
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < 3; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

// SIGPIPE's handler in this process (SIG_DFL, SIG_IGN or a function).
void (*sigpipe_handler())(int) {
  struct sigaction current {};
  ::sigaction(SIGPIPE, nullptr, &current);
  return current.sa_handler;
}

void set_sigpipe(void (*handler)(int)) {
  struct sigaction a {};
  a.sa_handler = handler;
  sigemptyset(&a.sa_mask);
  ::sigaction(SIGPIPE, &a, nullptr);
}

void count_sigpipe(int) {}

TEST(Backends, GlooWorldIgnoresSigpipeOnlyWhileItHasTheDefaultAction) {
  // A write to a peer that has exited must fail with EPIPE (and become a
  // CollectiveError), not end this rank through SIGPIPE's default action.
  auto* before = sigpipe_handler();
  set_sigpipe(SIG_DFL);
  testing::run_ranks(2, [](const std::shared_ptr<World>&) {});
  EXPECT_EQ(sigpipe_handler(), SIG_IGN);
  // A handler the program installed stays.
  set_sigpipe(count_sigpipe);
  testing::run_ranks(2, [](const std::shared_ptr<World>&) {});
  EXPECT_EQ(sigpipe_handler(), &count_sigpipe);
  // The fake backend has no sockets and leaves SIGPIPE alone.
  set_sigpipe(SIG_DFL);
  World::fake(0, 2);
  EXPECT_EQ(sigpipe_handler(), SIG_DFL);
  set_sigpipe(before);
}

}  // namespace
}  // namespace spmd
