// fault_rank.cpp - one rank of a faulty multi-process job, for
// faults_test.cpp: init_from_env() over 127.0.0.1, a 1-D mesh {tp: world},
// then the scenario named by argv[1].
//
// Prints one line "rank R: <outcome>: <message> [after N ms]" and exits with
//   0  no error, 10 CollectiveError, 11 another spmd error (its class is the
//   outcome), 12 any other exception.
// A crash (signal) or a hang is what the test must never see.
#include <ATen/ATen.h>
#include <spmd/spmd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

SPMD_AXIS(tp);

namespace {

using namespace spmd::types;
using Clock = std::chrono::steady_clock;

std::string class_of(const spmd::SpmdError& e) {
  if (dynamic_cast<const spmd::ShapeError*>(&e)) return "ShapeError";
  if (dynamic_cast<const spmd::UsageError*>(&e)) return "UsageError";
  if (dynamic_cast<const spmd::InvalidArgument*>(&e)) return "InvalidArgument";
  if (dynamic_cast<const spmd::MeshResolutionError*>(&e))
    return "MeshResolutionError";
  return "SpmdError";
}

void sleep_ms(int ms) {
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

// Runs the scenario; returns normally when the rank has nothing to report.
void run(const std::string& scenario, int r, int n,
         std::shared_ptr<spmd::World> world) {
  if (scenario == "mesh_not_dividing") {
    spmd::DeviceMesh mesh(world, {{tp, 2}});  // world is 3
    return;
  }
  auto mesh = std::make_unique<spmd::DeviceMesh>(
      world, std::vector<spmd::MeshDim>{{tp, n}});
  spmd::MeshGuard guard(*mesh);

  if (scenario == "ok") {
    at::Tensor y = spmd::all_reduce(at::ones({2}), tp, P, R);
    if (y[0].item<float>() != float(n)) throw std::runtime_error("wrong sum");
  } else if (scenario == "shape_all_reduce") {
    spmd::all_reduce(at::ones({2 + r}), tp, P, R);
  } else if (scenario == "dtype_all_reduce") {
    spmd::all_reduce(at::ones({2}, r == 1 ? at::kDouble : at::kFloat), tp, P,
                     R);
  } else if (scenario == "shape_all_gather") {
    // Different local sizes without split_sizes: Gloo gathered garbage.
    spmd::all_gather(at::ones({1 + r}), tp, S(0), R);
  } else if (scenario == "shape_after_room_grew") {
    // Agreed 16 KiB all_gathers grow the room of the check's message; then
    // shapes that differ (both within that room) are still found.
    for (int k = 0; k < 3; ++k) spmd::all_gather(at::ones({4096}), tp, S(0), R);
    spmd::all_gather(at::ones({3000 + 500 * r}), tp, S(0), R);
  } else if (scenario == "shape_after_verified_calls") {
    // The same call site passes the check three times with 1 MiB tensors
    // (beyond the check's room for data), then rank 2 passes one more
    // element to all_to_all and to all_gather: every rank must still get
    // the named error, not a Gloo abort or a corrupted result.
    for (int k = 0; k < 4; ++k) {
      const int64_t extra = k == 3 && r == 2 ? 1 : 0;
      try {
        spmd::all_to_all(at::ones({n * (65536 + extra)}), tp, S(0), S(0));
      } catch (const spmd::CollectiveError& e) {
        if (k != 3) throw;
        std::printf("rank %d: first: %s\n", r, e.what());
      }
    }
    for (int k = 0; k < 4; ++k) {
      const int64_t extra = k == 3 && r == 2 ? 1 : 0;
      spmd::all_gather(at::ones({262144 + extra}), tp, S(0), R);
    }
  } else if (scenario == "shape_reduce_scatter") {
    spmd::reduce_scatter(at::ones({2 * n * (1 + r)}), tp, P, S(0));
  } else if (scenario == "shape_all_to_all") {
    spmd::all_to_all(at::ones({n, 1 + r}), tp, V, V);
  } else if (scenario == "uneven_extent") {
    // split_sizes agree, but the last rank's shard is one row too long.
    spmd::CollectiveOptions o;
    o.split_sizes.assign(n, 1);
    spmd::all_gather(at::ones({r == n - 1 ? 2 : 1, 3}), tp, S(0), R, o);
  } else if (scenario == "all_to_all_rows") {
    // Rank 0 sends 2 rows to rank 1, which expects 1.
    spmd::CollectiveOptions o;
    o.input_split_sizes =
        r == 0 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1, 1};
    o.output_split_sizes = {1, 1};
    spmd::all_to_all(at::ones({r == 0 ? 3 : 2}), tp, S(0), S(0), o);
  } else if (scenario == "different_collectives") {
    if (r == 0)
      spmd::all_reduce(at::ones({2}), tp, P, R);
    else
      spmd::all_gather(at::ones({2}), tp, V, R);
  } else if (scenario == "mixed_devices") {
    // A meta tensor stands in for a CUDA one: this build has no CUDA.
    spmd::all_reduce(at::ones({2}, r == 1 ? at::kMeta : at::kCPU), tp, P, R);
  } else if (scenario == "cuda_tensor") {
    // Asking for CUDA without CUDA fails in libtorch, before the runtime.
    spmd::all_reduce(at::ones({2}).to(at::kCUDA), tp, P, R);
  } else if (scenario == "unsupported_dtype") {
    spmd::all_gather(at::ones({2}, at::kShort), tp, V, R);
  } else if (scenario == "null_axis") {
    spmd::all_reduce(at::ones({2}), spmd::Axis{nullptr}, P, R);
  } else if (scenario == "out_of_range_type") {
    const spmd::PerAxisType bad{static_cast<spmd::TypeKind>(7), 0};
    spmd::redistribute(at::ones({2}), tp, bad, R);
  } else if (scenario == "mesh_destroyed_under_guard") {
    mesh.reset();  // the guard keeps the axes and groups alive
    at::Tensor y = spmd::all_reduce(at::ones({2}), tp, P, R);
    if (y[0].item<float>() != float(n)) throw std::runtime_error("wrong sum");
  } else if (scenario == "stall") {
    // The last rank never calls the collective (it idles past the timeout).
    if (r == n - 1) {
      sleep_ms(std::atoi(std::getenv("SPMD_TIMEOUT_MS")) * 3 / 2);
      return;
    }
    spmd::all_reduce(at::ones({2}), tp, P, R);
  } else if (scenario == "exit_mid") {
    // Rank 1 dies (SIGKILL) while it and rank 0 are inside all_reduce, which
    // cannot finish: the last rank joins only later.
    if (r == 1)
      std::thread([] {
        sleep_ms(300);
        std::raise(SIGKILL);
      }).detach();
    if (r == n - 1) sleep_ms(1500);
    spmd::all_reduce(at::ones({2}), tp, P, R);
  } else if (scenario == "exit_in_loop") {
    // Rank 1 exits (no error, no goodbye) in the middle of a loop of small
    // all_reduces; rank 0 keeps writing to its closed connection.
    for (int k = 0; k < 100000; ++k) {
      if (r == 1 && k == 200) std::_Exit(0);
      spmd::all_reduce(at::ones({2}), tp, P, R);
    }
  } else if (scenario == "group_gone") {
    // Rank 1 drops its mesh and world (its process groups close), stays up;
    // rank 0 calls a collective afterwards.
    if (r == 1) {
      mesh.reset();
      world.reset();
      sleep_ms(2000);
      return;
    }
    sleep_ms(700);
    spmd::all_reduce(at::ones({2}), tp, P, R);
  } else {
    throw std::runtime_error("unknown scenario '" + scenario + "'");
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = Clock::now();
  const std::string scenario = argc > 1 ? argv[1] : "ok";
  const char* rank_env = std::getenv("RANK");
  const int r = rank_env ? std::atoi(rank_env) : 0;
  auto report = [&](const char* outcome, const char* message, int code) {
    const long ms =
        static_cast<long>(std::chrono::duration_cast<std::chrono::milliseconds>(
                              Clock::now() - start)
                              .count());
    // One line: newlines in messages would split it.
    std::string m = message;
    for (char& c : m)
      if (c == '\n') c = ' ';
    std::printf("rank %d: %s: %s [after %ld ms]\n", r, outcome, m.c_str(), ms);
    std::fflush(stdout);
    return code;
  };
  try {
    auto world = spmd::init_from_env();
    // Every rank is past the rendezvous before a scenario may end one early
    // (rank 0 hosts the store the others would still read).
    world->process_group()->barrier()->wait();
    const int n = world->size();
    run(scenario, r, n, std::move(world));
    return report("ok", "", 0);
  } catch (const spmd::CollectiveError& e) {
    return report("CollectiveError", e.what(), 10);
  } catch (const spmd::SpmdError& e) {
    return report(class_of(e).c_str(), e.what(), 11);
  } catch (const std::exception& e) {
    return report("exception", e.what(), 12);
  }
}
