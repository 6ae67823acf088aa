// bench_collectives - the cost of the spmd collective wrappers over the raw
// c10d calls they make, 4 Gloo ranks as threads of one process on 127.0.0.1.
//
// For each collective and per-rank input size (4 KiB .. 64 MiB of float32)
// the wrapper with the cross-rank check on (the default), the wrapper with
// it off (WorldOptions::check_collectives, a second world) and the raw call
// run interleaved in rounds; the best sample of each is kept and the ratios
// wrapper / raw printed as a Markdown table. One run, ratios only: absolute
// times depend on the machine.
//
//   bench_collectives [--max-mib N] [--ranks N] [--samples-scale N]
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <spmd/spmd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
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

struct Row {
  std::string collective;
  std::string raw;
  int64_t bytes;
  double on_ms;   // check on
  double off_ms;  // check off
  double raw_ms;
};

// One benchmarked pair: `ours` and `raw` each run one operation on rank r.
struct Pair {
  std::string collective;
  std::string raw;
  std::function<void()> ours;  // on the current mesh (MeshGuard)
  std::function<void()> raw_call;
};

int samples_for(int64_t bytes) {
  if (bytes <= (64 << 10)) return 40;
  if (bytes <= (1 << 20)) return 15;
  if (bytes <= (16 << 20)) return 5;
  return 3;
}

void wait(const c10::intrusive_ptr<c10d::Work>& w) { w->wait(); }

}  // namespace

int main(int argc, char** argv) {
  int ranks = 4;
  int64_t max_mib = 64;
  int scale = 1;
  for (int i = 1; i + 1 < argc; ++i) {
    if (!std::strcmp(argv[i], "--samples-scale"))
      scale = std::max(1, std::atoi(argv[i + 1]));
    if (!std::strcmp(argv[i], "--ranks")) ranks = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--max-mib")) max_mib = std::atoll(argv[i + 1]);
  }
  at::set_num_threads(1);
  std::vector<int64_t> sizes;
  for (int64_t b = 4 << 10; b <= (max_mib << 20); b *= 16) sizes.push_back(b);
  if (sizes.back() != (max_mib << 20)) sizes.push_back(max_mib << 20);

  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<Row> rows;
  std::mutex mu;

  auto rank_main = [&](int r) {
    // worlds[1]: the check on (the default); worlds[0]: off.
    auto worlds = spmd::bench::check_off_and_on_worlds(r, ranks, store);
    spmd::DeviceMesh meshes[2] = {{worlds[0], {{tp, ranks}}},
                                  {worlds[1], {{tp, ranks}}}};
    auto pg = meshes[0].axis("tp").group;
    auto barrier = [&] {
      std::vector<Tensor> t{at::zeros({1})};
      wait(pg->allreduce(t));
    };
    for (int64_t bytes : sizes) {
      const int64_t numel = bytes / 4;
      const int64_t n = ranks;
      Tensor x = at::rand({numel});
      Tensor big = at::rand({(numel / n) * n});  // divisible by n
      spmd::CollectiveOptions inplace;
      inplace.inplace = true;
      std::vector<Pair> pairs = {
          {"all_reduce(P->R)", "clone + allreduce",
           [&] { spmd::all_reduce(x, tp, P, R); },
           [&] {
             std::vector<Tensor> t{x.clone()};
             wait(pg->allreduce(t));
           }},
          {"all_reduce(P->R, inplace)", "allreduce",
           [&] { spmd::all_reduce(x, tp, P, R, inplace); },
           [&] {
             std::vector<Tensor> t{x};
             wait(pg->allreduce(t));
           }},
          {"all_gather(S(0)->R)", "allgather",
           [&] { spmd::all_gather(x, tp, S(0), R); },
           [&] {
             Tensor out = at::empty({n, numel});
             std::vector<std::vector<Tensor>> outs{out.unbind(0)};
             std::vector<Tensor> in{x};
             wait(pg->allgather(outs, in));
           }},
          {"reduce_scatter(P->S(0))", "all_to_all_single + sum",
           [&] { spmd::reduce_scatter(big, tp, P, S(0)); },
           [&] {
             Tensor out = at::empty_like(big);
             std::vector<int64_t> none;
             wait(pg->all_to_all_single(out, big, none, none));
             out.view({n, -1}).sum(0);
           }},
          {"all_to_all(S(0)->S(0))", "all_to_all_single",
           [&] { spmd::all_to_all(big, tp, S(0), S(0)); },
           [&] {
             Tensor out = at::empty_like(big);
             std::vector<int64_t> none;
             wait(pg->all_to_all_single(out, big, none, none));
           }},
          {"redistribute(P->R)", "clone + allreduce",
           [&] { spmd::redistribute(x, tp, P, R); },
           [&] {
             std::vector<Tensor> t{x.clone()};
             wait(pg->allreduce(t));
           }},
      };
      for (Pair& p : pairs) {
        // Samples cycle check on, check off and raw call, each between
        // barriers, so all three see the same machine load; the fastest
        // sample of each counts (interference only ever adds time).
        const int samples = samples_for(bytes) * scale;
        double best[3] = {1e300, 1e300, 1e300};  // off, on, raw
        for (int on = 0; on < 2; ++on) {         // warm up (caches, allocator)
          spmd::MeshGuard guard(meshes[on]);
          p.ours();
        }
        p.raw_call();
        for (int i = 0; i < 3 * samples; ++i) {
          const int kind = i % 3;
          std::optional<spmd::MeshGuard> guard;  // not timed
          if (kind != 2) guard.emplace(meshes[kind]);
          barrier();
          auto t0 = Clock::now();
          (kind == 2 ? p.raw_call : p.ours)();
          barrier();
          double ms =
              std::chrono::duration<double, std::milli>(Clock::now() - t0)
                  .count();
          best[kind] = std::min(best[kind], ms);
        }
        if (r == 0) {
          std::lock_guard<std::mutex> lock(mu);
          rows.push_back(
              {p.collective, p.raw, bytes, best[1], best[0], best[2]});
          std::fprintf(stderr, "  %-28s %9lld B  done\n", p.collective.c_str(),
                       static_cast<long long>(bytes));
        }
      }
    }
  };

  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) threads.emplace_back(rank_main, r);
  for (auto& t : threads) t.join();

  auto human = [](int64_t b) {
    char buf[32];
    if (b >= (1 << 20))
      std::snprintf(buf, sizeof buf, "%lld MiB",
                    static_cast<long long>(b >> 20));
    else
      std::snprintf(buf, sizeof buf, "%lld KiB",
                    static_cast<long long>(b >> 10));
    return std::string(buf);
  };
  std::printf(
      "spmd collectives vs raw c10d, %d Gloo ranks (threads), "
      "float32, fastest of alternating samples\n\n",
      ranks);
  std::printf(
      "| collective | raw c10d baseline | size/rank | raw ms | check on "
      "/ raw | check off / raw |\n|---|---|---|---|---|---|\n");
  for (const Row& row : rows) {
    std::printf("| %s | %s | %s | %.3f | %.3f | %.3f |\n",
                row.collective.c_str(), row.raw.c_str(),
                human(row.bytes).c_str(), row.raw_ms, row.on_ms / row.raw_ms,
                row.off_ms / row.raw_ms);
  }
  return 0;
}
