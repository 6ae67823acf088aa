// spmd/detail/collective_hook.h - how the runtime checker observes collectives.
//
// Every runtime collective, after it has computed its output (spec §5.2 step
// 8: the operation runs first, then it is typed), calls
//   if (auto* hook = spmd::detail::current_collective_hook())
//     hook->on_collective(call, axis_name, axis_is_singleton, input, output);
// The runtime checker installs a hook while a TypecheckGuard is alive on the
// thread; with no guard this is one thread-local read ("off means off").
#ifndef SPMD_DETAIL_COLLECTIVE_HOOK_H
#define SPMD_DETAIL_COLLECTIVE_HOOK_H

#include <ATen/core/Tensor.h>
#include <spmd/core/collectives.h>

#include <string_view>

namespace spmd::detail {

class CollectiveHook {
 public:
  virtual ~CollectiveHook() = default;
  /// Validates `input`'s tracked type against call.src on `axis` and stamps
  /// `output` with call.dst (spec §7.2). Throws spmd::SpmdTypeError.
  virtual void on_collective(const core::CollectiveCall& call,
                             std::string_view axis, bool axis_is_singleton,
                             const at::Tensor& input,
                             const at::Tensor& output) = 0;
};

/// The hook of the calling thread, or nullptr (defined in the runtime).
CollectiveHook* current_collective_hook();
/// Installs `hook` for the calling thread; returns the previous one.
CollectiveHook* set_collective_hook(CollectiveHook* hook);

}  // namespace spmd::detail

#endif  // SPMD_DETAIL_COLLECTIVE_HOOK_H
