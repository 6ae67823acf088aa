// bench_call_check - the cost of the cross-rank consistency check
// (WorldOptions::check_collectives): the same collective on a world with the
// check on and on one with it off, N Gloo ranks as threads on 127.0.0.1.
//
// Rounds alternate between the two worlds; each round times `--calls` calls
// and the median round of each is kept (robust to a loaded machine). Prints
// a Markdown table: ms per call with and without the check, and the
// difference (one all-gather of 23 int64 values plus the comparison).
//
//   bench_call_check [--ranks N] [--rounds N] [--calls N]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <spmd/spmd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <vector>

#include "bench_worlds.h"

SPMD_AXIS(tp);

namespace {

using at::Tensor;
using Clock = std::chrono::steady_clock;
using namespace spmd::types;

struct Case {
  std::string name;
  int64_t bytes;
  std::function<void(const Tensor&)> call;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 2, rounds = 15, calls = 20;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--calls")) calls = std::atoi(argv[i + 1]);
  }
  at::set_num_threads(1);
  const std::vector<Case> cases = {
      {"all_reduce(P->R)", 4 << 10,
       [](const Tensor& x) { spmd::all_reduce(x, tp, P, R); }},
      {"all_reduce(P->R)", 1 << 20,
       [](const Tensor& x) { spmd::all_reduce(x, tp, P, R); }},
      {"all_gather(S(0)->R)", 4 << 10,
       [](const Tensor& x) { spmd::all_gather(x, tp, S(0), R); }},
      {"all_gather(S(0)->R)", 1 << 20,
       [](const Tensor& x) { spmd::all_gather(x, tp, S(0), R); }},
  };
  // results[case][0 = off, 1 = on]: rank 0's median ms per call.
  std::vector<std::array<double, 2>> results(cases.size());
  auto store = c10::make_intrusive<c10d::HashStore>();

  auto rank_main = [&](int r) {
    auto worlds = spmd::bench::check_off_and_on_worlds(r, ranks, store);
    spmd::DeviceMesh meshes[2] = {{worlds[0], {{tp, ranks}}},
                                  {worlds[1], {{tp, ranks}}}};
    for (size_t c = 0; c < cases.size(); ++c) {
      Tensor x = at::rand({cases[c].bytes / 4});
      std::vector<double> samples[2];
      for (int round = 0; round < rounds; ++round) {
        for (int on = 0; on < 2; ++on) {
          spmd::MeshGuard guard(meshes[on]);
          const auto t0 = Clock::now();
          for (int k = 0; k < calls; ++k) cases[c].call(x);
          samples[on].push_back(
              std::chrono::duration<double, std::milli>(Clock::now() - t0)
                  .count() /
              calls);
        }
      }
      if (r == 0) results[c] = {median(samples[0]), median(samples[1])};
    }
  };
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back(rank_main, r);
  for (auto& t : threads) t.join();

  std::printf(
      "consistency check cost, %d Gloo ranks (threads), float32, median of "
      "%d rounds x %d calls\n\n",
      ranks, rounds, calls);
  std::printf(
      "| collective | size/rank | check off ms | check on ms | added ms |\n"
      "|---|---|---|---|---|\n");
  for (size_t c = 0; c < cases.size(); ++c) {
    const int64_t b = cases[c].bytes;
    std::printf("| %s | %lld %s | %.3f | %.3f | %+.3f |\n",
                cases[c].name.c_str(),
                static_cast<long long>(b >= (1 << 20) ? b >> 20 : b >> 10),
                b >= (1 << 20) ? "MiB" : "KiB", results[c][0], results[c][1],
                results[c][1] - results[c][0]);
  }
  return 0;
}
