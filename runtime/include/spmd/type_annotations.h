// spmd/type_annotations.h - assert_type and type queries on live tensors.
//
// CONTRACT (fixed; the plugin treats assert_type as a refinement point):
//   const at::Tensor& assert_type(const at::Tensor& x,
//                                 std::initializer_list<spmd::AxisType> type,
//                                 spmd::SourceLocation loc =
//                                     spmd::SourceLocation::current());
// (`loc` is never written: it names the caller's line in errors, and the
// plugin counts only the arguments actually written.)
// Spec §8. A runtime check only while a spmd::checker::TypecheckGuard is
// alive; otherwise it returns x and does nothing else (one thread-local read).
// Queries (spmd::get_type, spmd::has_type), the guards and the other
// annotation functions are in <spmd/checker.h>; docs/runtime-checker.md.
#ifndef SPMD_TYPE_ANNOTATIONS_H
#define SPMD_TYPE_ANNOTATIONS_H

#include <ATen/core/Tensor.h>
#include <spmd/annotations.h>
#include <spmd/source_location.h>

#include <initializer_list>

namespace spmd {

/// Sets the type of an untyped tensor, or checks and refines a typed one
/// (spec §8.1): partial annotations are allowed (mesh completeness is checked
/// when x is used), S(i) is checked against x.dim() and recorded as V, V
/// asserted P becomes P, singleton mesh axes are dropped. Returns x.
/// Throws spmd::SpmdTypeError on a mismatch, an out-of-bounds shard, two
/// axes sharding one dim, or an axis not in the current mesh;
/// spmd::UsageError for an axis given twice. Errors end with the caller's
/// line (`loc`, spmd/source_location.h).
const at::Tensor& assert_type(const at::Tensor& x,
                              std::initializer_list<AxisType> type,
                              SourceLocation loc = SourceLocation::current());

}  // namespace spmd

#endif  // SPMD_TYPE_ANNOTATIONS_H
