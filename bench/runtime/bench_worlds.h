// Worlds for the benchmarks that compare the cross-rank collective check on
// and off in one run (bench_collectives, bench_call_check).
#pragma once

#include <spmd/process_groups.h>

#include <array>
#include <chrono>
#include <memory>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

namespace spmd::bench {

/// Rank `rank`'s two Gloo worlds of `ranks` ranks over `store`: [0] with the
/// cross-rank collective check off, [1] with it on (the default). Each has
/// its own store prefix, so both can exist at once.
inline std::array<std::shared_ptr<spmd::World>, 2> check_off_and_on_worlds(
    int rank, int ranks, const c10::intrusive_ptr<c10d::Store>& store) {
  std::array<std::shared_ptr<spmd::World>, 2> worlds;
  for (int on = 0; on < 2; ++on) {
    spmd::WorldOptions options;
    options.gloo_hostname = "127.0.0.1";
    options.timeout = std::chrono::minutes(5);
    options.check_collectives = on == 1;
    worlds[on] = spmd::World::create(
        spmd::Backend::Gloo, rank, ranks,
        c10::make_intrusive<c10d::PrefixStore>(on ? "on" : "off", store),
        options);
  }
  return worlds;
}

}  // namespace spmd::bench
