// spmd/core/annotation_rules.h - assert_type, mutate_type, the loss check and
// mesh completeness.
//
// Spec §8.1 (assert_type: set if untyped, check and refine if typed), §8.2
// (mutate_type), §6.15 (backward() on a loss) and §4.3 (mesh completeness at
// use, not at annotation).
#ifndef SPMD_CORE_ANNOTATION_RULES_H
#define SPMD_CORE_ANNOTATION_RULES_H

#include <spmd/core/tensor_type.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmd::core {

/// assert_type (spec §8.1 steps 7-8): `current` nullopt = untyped (the
/// assertion is stored). Typed: each asserted axis must equal the current
/// type, except current V asserted P becomes P; axes not mentioned are kept;
/// new axes are added. Errors: SpmdTypeError "SPMD type mismatch on axis A:
/// tensor has X, expected Y"; nothing changes on error.
Result<TensorType> assert_type(const std::optional<TensorType>& current,
                               const TensorType& asserted);

/// mutate_type for one axis (spec §8.2): the current type on `axis` must be
/// local(src); it becomes local(dst). Errors: SpmdTypeError when the axis is
/// missing or the current type differs.
Result<TensorType> mutate_type(const TensorType& current,
                               const std::string& axis, PerAxisType src,
                               PerAxisType dst);

/// The loss check of spec §6.15 for backward() without an explicit gradient:
/// I and P allowed; R and V rejected with the fix; untyped rejected when
/// strict. Errors: SpmdTypeError.
Status check_loss(const std::optional<TensorType>& loss, bool strict = true);

/// Mesh completeness (spec §4.3, §6.3): the axes of `mesh_axes` missing from
/// `type`, in sorted order.
std::vector<std::string> missing_axes(
    const TensorType& type, const std::vector<std::string>& mesh_axes);

/// Mesh completeness of one operand at a use (spec §4.3): Ok when `type`
/// has every axis of `mesh_axes`. Otherwise SpmdTypeError with `axis` = the
/// first missing axis in mesh order, `expected` = all missing axes
/// ("{dp, tp}"), `actual` = the type, message "<subject> has no type for
/// axis '<axis>' of <mesh>" and fix "annotate it on every mesh axis, e.g.
/// spmd::assert_type(x, {<axis> = R}) or [[spmd::type(<axis> = ...)]]".
/// `subject` names the operand ("x", "args[1]"); `mesh` names the mesh as
/// the front end knows it ("the current mesh {dp, tp}", "the function's
/// mesh [[spmd::mesh]]").
Status check_mesh_complete(const TensorType& type,
                           const std::vector<std::string>& mesh_axes,
                           std::string_view subject, std::string_view mesh);

}  // namespace spmd::core

#endif  // SPMD_CORE_ANNOTATION_RULES_H
