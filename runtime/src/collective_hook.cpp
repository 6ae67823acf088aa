// collective_hook.cpp - the thread-local hook through which the runtime
// checker observes collectives ("off means off": one thread-local read).
#include <spmd/detail/collective_hook.h>

namespace spmd::detail {
namespace {
thread_local CollectiveHook* tls_hook = nullptr;
}  // namespace

CollectiveHook* current_collective_hook() { return tls_hook; }

CollectiveHook* set_collective_hook(CollectiveHook* hook) {
  CollectiveHook* previous = tls_hook;
  tls_hook = hook;
  return previous;
}

}  // namespace spmd::detail
