// spmd/type_annotations.h - assert_type and type queries on live tensors.
//
// CONTRACT (fixed; the plugin treats assert_type as a refinement point):
//   const at::Tensor& assert_type(const at::Tensor& x,
//                                 std::initializer_list<spmd::AxisType> type);
// Spec §8. A runtime check only while a spmd::checker::TypecheckGuard is
// alive; otherwise it returns x and does nothing else (one thread-local read).
#ifndef SPMD_TYPE_ANNOTATIONS_H
#define SPMD_TYPE_ANNOTATIONS_H

#include <spmd/annotations.h>

#include <ATen/core/Tensor.h>

#include <initializer_list>

namespace spmd {

/// Sets the type of an untyped tensor, or checks and refines a typed one
/// (spec §8.1). Returns x. Throws spmd::SpmdTypeError on a mismatch.
const at::Tensor& assert_type(const at::Tensor& x,
                              std::initializer_list<AxisType> type);

}  // namespace spmd

#endif  // SPMD_TYPE_ANNOTATIONS_H
