// runtime_test_util.h - runs N ranks as threads of this process, each with
// its own Gloo world process group on 127.0.0.1 over one shared HashStore.
#ifndef SPMD_TEST_RUNTIME_TEST_UTIL_H
#define SPMD_TEST_RUNTIME_TEST_UTIL_H

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <gtest/gtest.h>
#include <spmd/spmd.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <vector>

namespace spmd::testing {

/// The time budget of one multi-rank test: ctest's TIMEOUT of these tests
/// (test/runtime/CMakeLists.txt). Every bound below is derived from it, so
/// that a rank's own timeout always fires (with a message naming the
/// collective or the group) before ctest kills the process.
inline constexpr std::chrono::milliseconds kTestBudget{120000};
/// Collective timeout in tests: long enough for a loaded 2-core machine,
/// short enough that a broken test fails instead of hanging.
inline constexpr std::chrono::milliseconds kTestTimeout = kTestBudget / 4;
/// Rendezvous timeout in tests (world group and every DeviceMesh sub-group):
/// joining 8 Gloo ranks is the slowest step under load, and a test that
/// shortens the collective timeout to see it fire keeps this one.
inline constexpr std::chrono::milliseconds kRendezvousTimeout =
    kTestBudget * 3 / 4;

/// Runs `fn(world)` on `size` threads, one per rank, each with a Gloo World
/// on 127.0.0.1. An exception in any rank fails the test with its rank.
inline void run_ranks(
    int size, const std::function<void(const std::shared_ptr<World>&)>& fn,
    std::chrono::milliseconds timeout = kTestTimeout) {
  at::set_num_threads(1);  // ranks are the parallelism; 2 cores are shared
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::thread> threads;
  std::mutex mu;
  std::vector<std::string> failures;
  // Every World lives until all ranks are done: a rank whose body fails
  // early must not close its connections while a peer is still in its
  // rendezvous (that peer would see "Connection closed by peer").
  std::vector<std::shared_ptr<World>> worlds(size);
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      try {
        WorldOptions options;
        options.timeout = timeout;
        // Joining may be slow under load; only collectives get `timeout`.
        options.rendezvous_timeout = std::max(timeout, kRendezvousTimeout);
        options.gloo_hostname = "127.0.0.1";
        auto world = World::create(Backend::Gloo, r, size, store, options);
        worlds[r] = world;
        fn(world);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        failures.push_back("rank " + std::to_string(r) + ": " + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& f : failures) ADD_FAILURE() << f;
}

/// Like run_ranks, with a DeviceMesh of `shape` current on every rank.
inline void run_mesh(std::vector<MeshDim> shape,
                     const std::function<void(const DeviceMesh&)>& fn,
                     std::chrono::milliseconds timeout = kTestTimeout) {
  int size = 1;
  for (const auto& d : shape) size *= static_cast<int>(d.size);
  run_ranks(
      size,
      [&](const std::shared_ptr<World>& world) {
        DeviceMesh mesh(world, shape);
        MeshGuard guard(mesh);
        fn(mesh);
      },
      timeout);
}

/// Exact comparison with a readable failure (values are small integers or
/// dyadic fractions in these tests, so sums are exact in float).
inline ::testing::AssertionResult TensorEq(const at::Tensor& actual,
                                           const at::Tensor& expected) {
  if (actual.sizes() != expected.sizes())
    return ::testing::AssertionFailure()
           << "shape " << actual.sizes() << " != expected " << expected.sizes();
  if (actual.scalar_type() != expected.scalar_type())
    return ::testing::AssertionFailure()
           << "dtype " << actual.scalar_type() << " != expected "
           << expected.scalar_type();
  if (!at::equal(actual, expected))
    return ::testing::AssertionFailure() << "values differ:\nactual\n"
                                         << actual << "\nexpected\n"
                                         << expected;
  return ::testing::AssertionSuccess();
}

/// Runs `f` and returns the message of the exception of type E it throws;
/// fails the test if it throws nothing or something else.
template <typename E, typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "threw the wrong exception type: " << e.what();
    return "";
  }
  ADD_FAILURE() << "did not throw";
  return "";
}

}  // namespace spmd::testing

#endif  // SPMD_TEST_RUNTIME_TEST_UTIL_H
