// spmd/core/mesh_region.h - mesh axes as structure: the axis table (names and
// layouts of every mesh over one world), reinterpret_mesh and the automatic
// cross-mesh lift (spec §10.3, §6.2), collectives over a flattened axis, and
// the axis-mismatch hints of §9.5.
//
// Type maps (TensorType) are keyed by axis *name*. An AxisTable gives each
// name its layout, so that rules compare axes by identity: two names with one
// layout (a dense mesh's `tp` and an expert mesh's `etp`) are the same axis,
// and a flattened axis (`dp_cp`) is related to the axes it flattens.
#ifndef SPMD_CORE_MESH_REGION_H
#define SPMD_CORE_MESH_REGION_H

#include <spmd/core/collectives.h>
#include <spmd/core/error.h>
#include <spmd/core/mesh_axis.h>
#include <spmd/core/partition_spec.h>
#include <spmd/core/tensor_type.h>

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmd::core {

/// Axis names and their layouts, e.g. the name tables of a dense mesh
/// {dp, tp} and an expert mesh {edp, ep, etp} over one world, plus flattened
/// axes such as dp_cp. A name has one layout; a layout may have several names.
class AxisTable {
 public:
  /// Registers `name` for `layout`. Registering a name again with the same
  /// layout is a no-op. Errors: InvalidArgument when the name is already
  /// registered for another layout (the message names both layouts); the
  /// table is unchanged then.
  Status add(const std::string& name, const MeshAxis& layout);
  /// The layout of `name`, or nullptr.
  const MeshAxis* find(std::string_view name) const;
  /// The names registered for `layout`, sorted.
  std::vector<std::string> names_of(const MeshAxis& layout) const;
  /// Whether the two names denote the same axis (equal layouts). A name not
  /// in the table is only the same as itself.
  bool same_axis(std::string_view a, std::string_view b) const;
  bool empty() const { return by_name_.empty(); }
  std::size_t size() const { return by_name_.size(); }
  const std::map<std::string, MeshAxis, std::less<>>& entries() const {
    return by_name_;
  }

 private:
  std::map<std::string, MeshAxis, std::less<>> by_name_;
};

/// reinterpret_mesh, full form (spec §10.3): re-expresses `src` on the axes
/// of `dst`, whose types must agree with the ones derived from `src`.
/// Returns the destination map (keyed by `dst`'s names). Axes are compared
/// through `table` (a name missing from it is an error naming the axis).
/// Errors (SpmdTypeError): a shared axis that changes type, source axes left
/// with no destination, a group whose source or destination axes have mixed
/// types, source and destination group types that differ, groups that
/// flatten to different rank regions, unrelated meshes.
Result<TensorType> reinterpret_mesh(const TensorType& src,
                                    const TensorType& dst,
                                    const AxisTable& table);

/// reinterpret_mesh, axes-only form: the destination types are derived from
/// `src`. Same errors.
Result<TensorType> reinterpret_mesh(const TensorType& src,
                                    const std::vector<std::string>& dst_axes,
                                    const AxisTable& table);

/// reinterpret_mesh of a global type (spec §10.3 step 5): the type map as
/// in the two forms above (`dst` a full map, or `dst_axes` names only when
/// `dst` is nullopt) and the PartitionSpec remapped onto the destination
/// axes. Each spec entry must split into consecutive segments, each exactly
/// one matched source group in outer-to-inner order (an axis shared by both
/// meshes is its own group); a segment is replaced by the group's
/// destination axes, e.g. dense (dp) -> expert (edp, ep) where dp = edp x ep,
/// (dp, cp) -> (dp_cp). Unknown shards move to the group's destination
/// axes. Errors: those of reinterpret_mesh; SpmdTypeError when a spec axis
/// has no counterpart (it is only part of a group, so no destination axis
/// covers exactly its ranks), or a group's axes appear split over entries or
/// out of order.
Result<GlobalType> reinterpret_mesh_global(
    const GlobalType& src, const std::optional<TensorType>& dst,
    const std::vector<std::string>& dst_axes, const AxisTable& table);

/// The cross-mesh lift of spec §6.2 for one operand: unchanged when every
/// axis of `operand` is a mesh axis (by identity: an axis with another name
/// but a mesh axis's layout is renamed to the mesh's name); otherwise the
/// axes-only reinterpret_mesh onto `mesh_axes`. Errors: SpmdTypeError
/// "cannot be auto-reinterpreted from {...} to the current mesh {...}.
/// <reason>" (callers prefix "args[i] ").
Result<TensorType> lift_to_mesh(const TensorType& operand,
                                const std::vector<std::string>& mesh_axes,
                                const AxisTable& table);

/// The §9.5 hint for operands whose axis sets differ, or "" when none
/// applies: (a) the sets are reinterpret_mesh-compatible -> suggest it;
/// (b) a non-shared axis is a proper sub-axis of the other operand's
/// non-shared axis -> say so with both rank sets and name the complementary
/// axis when the table has one; (c) partial overlap -> list the orthogonal
/// axes each operand is missing.
std::string axis_mismatch_hint(const std::vector<TensorType>& operands,
                               const AxisTable& table);

/// The axes among `candidates` that `axis` stands for: the one with the
/// same layout (another name of it, e.g. an expert mesh's etp = tp), or the
/// proper sub-axes that flatten exactly to it (dp_cp = dp x cp), outermost
/// first (the flattened axis's rank order). nullopt when `axis` is not in
/// `table` or no such set exists. Used for collective axes and annotation
/// names alike.
std::optional<std::vector<std::string>> axis_components(
    std::string_view axis, const std::vector<std::string>& candidates,
    const AxisTable& table);

/// The axes of `x` that a collective on `axis` acts on: {axis} when x has
/// it (or an axis with the same layout), the sub-axes of x that flatten
/// exactly to `axis` (a flattened collective axis such as dp_cp over a
/// tensor typed on dp and cp), outermost first (the flattened axis's rank
/// order, which global mode's innermost-axis rule compares with the spec),
/// or nullopt.
std::optional<std::vector<std::string>> resolve_collective_axes(
    std::string_view axis, const TensorType& x, const AxisTable& table);

/// core::transfer (spec §7.2) for a collective on `axis`, which may be a
/// flattened axis: the input's type on each resolved sub-axis is checked
/// against src and becomes dst (cases C049-C053). With no table, or when
/// the axis resolves to itself or to nothing, this is core::transfer (so a
/// strict check of an unresolved axis says "tensor has no type for axis
/// dp_cp"). Errors: those of transfer, each naming the sub-axis.
Result<TensorType> transfer_on_axis(const CollectiveCall& call,
                                    const std::optional<TensorType>& input,
                                    std::string_view axis, bool strict,
                                    bool axis_is_singleton,
                                    const AxisTable* table);

}  // namespace spmd::core

#endif  // SPMD_CORE_MESH_REGION_H
