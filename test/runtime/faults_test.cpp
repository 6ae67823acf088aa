// faults_test.cpp - runtime faults with real processes on 127.0.0.1: every
// surviving rank gets a named error within the configured timeout, never a
// hang or a crash (issue 17). Each test starts fault_rank (fault_rank.cpp)
// once per rank under a torchrun-like environment, kills the job if it
// outlives a deadline (a hang fails the test), and checks every rank's exit
// status, error class, message and time to error.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

using Clock = std::chrono::steady_clock;

/// What one rank did.
struct RankResult {
  bool exited = false;  ///< false: killed by a signal (crash or the deadline)
  int code = -1;        ///< exit status, or the signal number
  std::string line;     ///< its report line (stdout)
  std::string err;      ///< its stderr
  long ms = -1;         ///< its own time to the report
  bool timed_out = false;
};

int free_port() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  return port;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// Runs `scenario` on ranks `start_ranks` of a world of `world` processes
/// (ranks not listed are never started), with SPMD_TIMEOUT_MS=timeout_ms;
/// every process still running after `deadline_ms` is killed.
std::vector<RankResult> run_job(const std::string& scenario, int world,
                                std::vector<int> start_ranks, int timeout_ms,
                                int deadline_ms,
                                std::vector<std::string> extra_env = {}) {
  const int port = free_port();
  const std::string dir = ::testing::TempDir();
  std::vector<pid_t> pids(start_ranks.size(), -1);
  std::vector<RankResult> results(start_ranks.size());
  for (size_t k = 0; k < start_ranks.size(); ++k) {
    const int r = start_ranks[k];
    std::vector<std::string> env = {
        "RANK=" + std::to_string(r),
        "WORLD_SIZE=" + std::to_string(world),
        "LOCAL_RANK=" + std::to_string(r),
        "MASTER_ADDR=127.0.0.1",
        "MASTER_PORT=" + std::to_string(port),
        "SPMD_TIMEOUT_MS=" + std::to_string(timeout_ms),
        "SPMD_BACKEND=gloo",
        "OMP_NUM_THREADS=1"};
    for (auto& e : extra_env) env.push_back(e);
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      const std::string key = kv.substr(0, kv.find('='));
      if (key == "PATH" || key == "HOME" || key == "LD_LIBRARY_PATH")
        env.push_back(kv);
    }
    std::vector<char*> envp;
    for (auto& e : env) envp.push_back(e.data());
    envp.push_back(nullptr);
    const std::string out = dir + "fault_" + scenario + "_" +
                            std::to_string(port) + "_" + std::to_string(r);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, (out + ".out").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, 2, (out + ".err").c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::string exe = SPMD_FAULT_RANK;
    std::string arg = scenario;
    char* argv[] = {exe.data(), arg.data(), nullptr};
    EXPECT_EQ(
        posix_spawn(&pids[k], exe.c_str(), &fa, nullptr, argv, envp.data()), 0);
    posix_spawn_file_actions_destroy(&fa);
  }
  const auto deadline = Clock::now() + std::chrono::milliseconds(deadline_ms);
  size_t left = pids.size();
  std::vector<bool> done(pids.size(), false);
  while (left > 0) {
    for (size_t k = 0; k < pids.size(); ++k) {
      if (done[k]) continue;
      int status = 0;
      if (::waitpid(pids[k], &status, WNOHANG) == pids[k]) {
        done[k] = true;
        --left;
        results[k].exited = WIFEXITED(status);
        results[k].code =
            WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status);
      }
    }
    if (left == 0) break;
    if (Clock::now() > deadline) {
      for (size_t k = 0; k < pids.size(); ++k) {
        if (done[k]) continue;
        ::kill(pids[k], SIGKILL);
        int status = 0;
        ::waitpid(pids[k], &status, 0);
        results[k].timed_out = true;
        results[k].code = SIGKILL;
      }
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (size_t k = 0; k < pids.size(); ++k) {
    const std::string out = dir + "fault_" + scenario + "_" +
                            std::to_string(port) + "_" +
                            std::to_string(start_ranks[k]);
    results[k].line = slurp(out + ".out");
    results[k].err = slurp(out + ".err");
    std::smatch m;
    if (std::regex_search(results[k].line, m, std::regex(R"(after (\d+) ms)")))
      results[k].ms = std::stol(m[1]);
    std::remove((out + ".out").c_str());
    std::remove((out + ".err").c_str());
    // The table of the report: scenario | rank | outcome | time.
    std::printf("[fault] %s rank %d: exit %s%d, %ld ms: %s%s", scenario.c_str(),
                start_ranks[k], results[k].exited ? "" : "signal ",
                results[k].code, results[k].ms, results[k].line.c_str(),
                results[k].line.empty() ? "\n" : "");
  }
  return results;
}

std::vector<int> ranks(int n) {
  std::vector<int> v;
  for (int r = 0; r < n; ++r) v.push_back(r);
  return v;
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// The rank exited normally with `code`, and its line names `outcome` and
/// holds every one of `parts`.
void expect_rank(const RankResult& r, int code, const std::string& outcome,
                 const std::vector<std::string>& parts) {
  ASSERT_FALSE(r.timed_out) << "hung: " << r.line << r.err;
  ASSERT_TRUE(r.exited) << "killed by signal " << r.code << ": " << r.err;
  EXPECT_EQ(r.code, code) << r.line << r.err;
  EXPECT_TRUE(contains(r.line, ": " + outcome + ": ")) << r.line << r.err;
  for (const auto& p : parts) EXPECT_TRUE(contains(r.line, p)) << r.line;
}

constexpr int kTimeout = 4000;    // SPMD_TIMEOUT_MS of the jobs
constexpr int kDeadline = 60000;  // a job still running then has hung

// A mismatch found by the consistency check must not wait for the timeout.
void expect_fast(const RankResult& r) { EXPECT_LT(r.ms, kTimeout) << r.line; }

TEST(Faults, HealthyJobPasses) {
  for (const auto& r : run_job("ok", 2, ranks(2), kTimeout, kDeadline))
    expect_rank(r, 0, "ok", {});
}

TEST(Faults, AllReduceOfDifferentShapesIsACollectiveErrorOnEveryRank) {
  // Before: gloo::EnforceNotMet on Gloo's I/O thread, SIGABRT.
  auto res = run_job("shape_all_reduce", 2, ranks(2), kTimeout, kDeadline);
  for (const auto& r : res) {
    expect_rank(r, 10, "CollectiveError",
                {"all_reduce on axis 'tp'", "did not make the same call",
                 "rank 0: all_reduce(P, R) of Float[2] on cpu",
                 "rank 1: all_reduce(P, R) of Float[3] on cpu"});
    expect_fast(r);
  }
  EXPECT_TRUE(contains(res[1].line, "(rank 1 of 2 on the axis")) << res[1].line;
}

TEST(Faults, AllReduceOfDifferentDtypesIsACollectiveErrorOnEveryRank) {
  for (const auto& r :
       run_job("dtype_all_reduce", 2, ranks(2), kTimeout, kDeadline)) {
    expect_rank(r, 10, "CollectiveError",
                {"rank 0: all_reduce(P, R) of Float[2] on cpu",
                 "rank 1: all_reduce(P, R) of Double[2] on cpu"});
    expect_fast(r);
  }
}

TEST(Faults, AllGatherOfDifferentLocalSizesIsACollectiveError) {
  // Before: one rank aborted, the other returned a corrupted tensor.
  for (const auto& r :
       run_job("shape_all_gather", 2, ranks(2), kTimeout, kDeadline)) {
    expect_rank(r, 10, "CollectiveError",
                {"all_gather on axis 'tp'", "of Float[1] on cpu",
                 "of Float[2] on cpu", "pass the same split_sizes"});
    expect_fast(r);
  }
}

TEST(Faults, DifferentShapesAfterTheCheckRoomGrewAreACollectiveError) {
  // The room for data in the check's message grew on every rank alike: the
  // messages still have one size, and the mismatch is reported.
  for (const auto& r :
       run_job("shape_after_room_grew", 2, ranks(2), kTimeout, kDeadline)) {
    expect_rank(r, 10, "CollectiveError",
                {"all_gather on axis 'tp'", "of Float[3000] on cpu",
                 "of Float[3500] on cpu"});
    expect_fast(r);
  }
}

TEST(Faults,
     MismatchAfterVerifiedCallsAtTheSameSiteIsACollectiveErrorOn4Ranks) {
  // Calls at one site that passed the check do not exempt the next one:
  // rank 2's larger all_to_all and all_gather are each found on every rank.
  for (const auto& r : run_job("shape_after_verified_calls", 4, ranks(4),
                               kTimeout, kDeadline)) {
    expect_rank(r, 10, "CollectiveError",
                {"all_gather on axis 'tp'", "did not make the same call",
                 "ranks 0, 1, 3: all_gather(S(0), R) of Float[262144] on cpu",
                 "rank 2: all_gather(S(0), R) of Float[262145] on cpu"});
    EXPECT_TRUE(contains(r.err + r.line, "first: all_to_all on axis 'tp'"))
        << r.err << r.line;
    EXPECT_TRUE(contains(r.err + r.line,
                         "ranks 0, 1, 3: all_to_all(S(0), S(0)) of "
                         "Float[262144] on cpu; rank 2: all_to_all(S(0), "
                         "S(0)) of Float[262148] on cpu"))
        << r.err << r.line;
    expect_fast(r);
  }
}

TEST(Faults, ReduceScatterOfDifferentShapesIsACollectiveError) {
  for (const auto& r :
       run_job("shape_reduce_scatter", 2, ranks(2), kTimeout, kDeadline)) {
    expect_rank(r, 10, "CollectiveError",
                {"reduce_scatter on axis 'tp'", "Float[4]", "Float[8]"});
    expect_fast(r);
  }
}

TEST(Faults, AllToAllOfDifferentShapesIsACollectiveError) {
  for (const auto& r :
       run_job("shape_all_to_all", 2, ranks(2), kTimeout, kDeadline)) {
    expect_rank(r, 10, "CollectiveError",
                {"all_to_all on axis 'tp'", "Float[2, 1]", "Float[2, 2]"});
    expect_fast(r);
  }
}

TEST(Faults, UnevenShardThatDisagreesWithSplitSizesIsAShapeErrorOnEveryRank) {
  auto res = run_job("uneven_extent", 2, ranks(2), kTimeout, kDeadline);
  expect_rank(res[0], 11, "ShapeError",
              {"rank 1's extent along dim 0 is 2 but split_sizes[1] is 1"});
  expect_rank(res[1], 11, "ShapeError",
              {"this rank's extent along dim 0 is 2 but split_sizes[1] is 1"});
  for (const auto& r : res) expect_fast(r);
}

TEST(Faults, UnevenAllToAllRowsThatDoNotPairUpAreACollectiveError) {
  for (const auto& r :
       run_job("all_to_all_rows", 2, ranks(2), kTimeout, kDeadline)) {
    expect_rank(r, 10, "CollectiveError",
                {"rank 0 sends 2 rows to rank 1", "rank 1 expects 1"});
    expect_fast(r);
  }
}

TEST(Faults, RanksCallingDifferentCollectivesGetACollectiveError) {
  for (const auto& r :
       run_job("different_collectives", 2, ranks(2), kTimeout, kDeadline)) {
    expect_rank(r, 10, "CollectiveError",
                {"rank 0: all_reduce(P, R) of Float[2] on cpu",
                 "rank 1: all_gather(V, R) of Float[2] on cpu"});
    expect_fast(r);
  }
}

TEST(Faults, TensorsOnDifferentDevicesAreACollectiveError) {
  for (const auto& r :
       run_job("mixed_devices", 2, ranks(2), kTimeout, kDeadline)) {
    expect_rank(r, 10, "CollectiveError",
                {"rank 0: all_reduce(P, R) of Float[2] on cpu",
                 "rank 1: all_reduce(P, R) of Float[2] on meta"});
    expect_fast(r);
  }
}

TEST(Faults, CudaTensorWithoutCudaIsAClearError) {
  // libtorch refuses to make the tensor; the job ends, no rank hangs.
  for (const auto& r :
       run_job("cuda_tensor", 2, ranks(2), kTimeout, kDeadline)) {
    ASSERT_FALSE(r.timed_out) << r.line;
    ASSERT_TRUE(r.exited) << r.err;
    EXPECT_EQ(r.code, 12) << r.line;
    EXPECT_TRUE(contains(r.line, "not linked with support for cuda")) << r.line;
  }
}

TEST(Faults, UnsupportedDtypeIsNamedFirstWithAndWithoutTheCheck) {
  for (const char* check : {"1", "0"}) {
    for (const auto& r :
         run_job("unsupported_dtype", 2, ranks(2), kTimeout, kDeadline,
                 {std::string("SPMD_CHECK_COLLECTIVES=") + check})) {
      expect_rank(r, 11, "InvalidArgument",
                  {"all_gather on axis 'tp': unsupported dtype Short for the "
                   "gloo backend",
                   "op_dtype"});
      EXPECT_FALSE(contains(r.line, "did not arrive")) << r.line;
      expect_fast(r);
    }
  }
}

TEST(Faults, AxisWithoutANameIsAUsageError) {
  // Before: a segfault on every rank.
  for (const auto& r : run_job("null_axis", 2, ranks(2), kTimeout, kDeadline))
    expect_rank(r, 11, "UsageError",
                {"all_reduce: the axis has no name", "SPMD_AXIS(tp)"});
}

TEST(Faults, OutOfRangeTypeValueIsAUsageError) {
  for (const auto& r :
       run_job("out_of_range_type", 2, ranks(2), kTimeout, kDeadline))
    expect_rank(r, 11, "UsageError", {"not a valid SPMD type"});
}

TEST(Faults, DestroyingTheMeshUnderItsGuardKeepsTheGroupsAlive) {
  // Before: a use-after-free.
  for (const auto& r :
       run_job("mesh_destroyed_under_guard", 2, ranks(2), kTimeout, kDeadline))
    expect_rank(r, 0, "ok", {});
}

TEST(Faults, MeshThatDoesNotDivideTheWorldIsAnInvalidArgument) {
  for (const auto& r :
       run_job("mesh_not_dividing", 3, ranks(3), kTimeout, kDeadline))
    expect_rank(r, 11, "InvalidArgument",
                {"DeviceMesh(tp=2) has 2 ranks but the world has 3"});
}

TEST(Faults, RankThatStallsGivesTheOthersATimeoutError) {
  auto res = run_job("stall", 2, ranks(2), kTimeout, kDeadline);
  expect_rank(res[0], 10, "CollectiveError",
              {"all_reduce on axis 'tp'", "timeout of 4000 ms"});
  expect_rank(res[1], 0, "ok", {});
}

TEST(Faults, RankKilledMidCollectiveGivesTheSurvivorsACollectiveError) {
  auto res = run_job("exit_mid", 3, ranks(3), kTimeout, kDeadline);
  expect_rank(res[0], 10, "CollectiveError", {"all_reduce on axis 'tp'"});
  EXPECT_FALSE(res[1].exited);  // SIGKILL, as intended
  expect_rank(res[2], 10, "CollectiveError", {"all_reduce on axis 'tp'"});
  // Both within the timeout, from the start of the process (init included)
  // plus the last rank's late start.
  EXPECT_LT(res[0].ms, 2 * kTimeout) << res[0].line;
  EXPECT_LT(res[2].ms, 2 * kTimeout) << res[2].line;
}

TEST(Faults, PeerThatExitsDuringALoopOfAllReducesIsACollectiveError) {
  // Before: the survivor's next write to the closed connection raised
  // SIGPIPE, which ended it (exit -13) without a message.
  // Three ranks: rank 0 only writes to rank 1 in Gloo's ring, so it finds
  // the dead peer through a write, not a read.
  auto res = run_job("exit_in_loop", 3, ranks(3), kTimeout, kDeadline);
  expect_rank(res[0], 10, "CollectiveError", {"all_reduce on axis 'tp'"});
  EXPECT_TRUE(res[1].exited && res[1].code == 0) << res[1].err;
  expect_rank(res[2], 10, "CollectiveError", {"all_reduce on axis 'tp'"});
}

TEST(Faults, CollectiveAfterThePeersGroupIsGoneIsACollectiveError) {
  auto res = run_job("group_gone", 2, ranks(2), kTimeout, kDeadline);
  expect_rank(res[0], 10, "CollectiveError", {"all_reduce on axis 'tp'"});
  expect_rank(res[1], 0, "ok", {});
}

TEST(Faults, RankThatNeverStartsIsReportedWithinAboutTheTimeout) {
  // Before: after 2.4x the timeout (the store's wait for workers, then
  // Gloo's rendezvous, each with the full timeout).
  auto res = run_job("ok", 2, {0}, kTimeout, kDeadline);
  expect_rank(
      res[0], 10, "CollectiveError",
      {"rendezvous of rank 0 with 1 peer(s) failed", "timeout 4000 ms"});
  EXPECT_LT(res[0].ms, kTimeout * 3 / 2) << res[0].line;
}

TEST(Faults, RankZeroThatNeverStartsIsReportedWithinAboutTheTimeout) {
  // Before: about 2x the timeout (c10d's client gives each connection try
  // the whole timeout, then backs off and tries again).
  auto res = run_job("ok", 2, {1}, kTimeout, kDeadline);
  expect_rank(res[0], 10, "CollectiveError",
              {"TCPStore rendezvous at 127.0.0.1:", "failed for rank 1 of 2",
               "nothing listened there within the timeout of 4000 ms"});
  EXPECT_LT(res[0].ms, kTimeout * 3 / 2) << res[0].line;
}

}  // namespace
