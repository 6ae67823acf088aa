// internal.h - declarations shared by the sources of spmd::testing (not
// installed).
#ifndef SPMD_RUNTIME_SRC_TESTING_INTERNAL_H
#define SPMD_RUNTIME_SRC_TESTING_INTERNAL_H

namespace spmd::testing::detail {

/// Gives every c10d collective operator that has no Meta kernel one that
/// completes at once (meta_collectives.cpp), so that fake mode works with
/// meta tensors in C++. Idempotent and thread-safe.
void register_meta_collectives();

}  // namespace spmd::testing::detail

#endif  // SPMD_RUNTIME_SRC_TESTING_INTERNAL_H
