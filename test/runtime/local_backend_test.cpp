// local_backend_test.cpp - Backend::Local, the in-process c10d backend of
// spmd::testing::simulate: joining a group whose rank 0 already left, and
// the errors of a collective on it.
#include <gtest/gtest.h>

#include "runtime_test_util.h"

namespace spmd {
namespace {

using testing::error_of;

// Rank 0 of a local group does not wait for its peers when it creates the
// group, so it may destroy the group before a slow peer joins. The peer must
// still join (no rendezvous error), and its first collective must name the
// rank that left instead of waiting for the timeout.
TEST(LocalBackend, APeerJoiningAfterRankZeroLeftFailsItsCollectiveAtOnce) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  WorldOptions o;
  o.timeout = std::chrono::milliseconds(60000);
  // Rank 0 creates its World and destroys it before rank 1 starts.
  World::create(Backend::Local, 0, 2, store, o).reset();
  std::shared_ptr<World> w1;
  ASSERT_NO_THROW(w1 = World::create(Backend::Local, 1, 2, store, o));
  const auto start = std::chrono::steady_clock::now();
  std::vector<at::Tensor> xs = {at::ones({2})};
  std::string msg = error_of<std::runtime_error>(
      [&] { w1->process_group()->allreduce(xs)->wait(); });
  EXPECT_NE(msg.find("rank 0 of the group has left it"), std::string::npos)
      << msg;
  // A functional bound: far below the 60 s collective timeout.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(30));
}

}  // namespace
}  // namespace spmd
