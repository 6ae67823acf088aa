// spmd/core/mesh_axis.h - structural mesh axes (layouts of ranks).
//
// Spec §10.1: a MeshAxis is a list of (size, stride) atoms, canonicalised
// (size-1 atoms dropped, adjacent atoms merged when stride_outer ==
// size_inner * stride_inner), compared structurally; sub-axis order by rank
// sets; joint orthogonality by the running-span test; flatten.
#ifndef SPMD_CORE_MESH_AXIS_H
#define SPMD_CORE_MESH_AXIS_H

#include <spmd/core/error.h>

#include <cstddef>
#include <functional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace spmd::core {

class MeshAxis {
 public:
  using Atom = std::pair<long, long>;  ///< (size, stride)

  MeshAxis() = default;
  /// One-atom layout (size:stride).
  static MeshAxis of(long size, long stride);
  /// From atoms listed outermost first; canonicalised.
  static MeshAxis from_layout(std::vector<Atom> atoms);
  /// From a group's ranks (sorted, offset by the smallest). Errors:
  /// InvalidArgument when the ranks are not a strided layout.
  static Result<MeshAxis> from_ranks(std::vector<long> ranks);

  long size() const;
  bool is_singleton() const { return size() == 1; }
  const std::vector<Atom>& atoms() const { return atoms_; }
  /// Rank set relative to the group's first rank (spec §10.1).
  std::set<long> rank_set() const;
  /// Sub-axis order: rank set of *this is a subset of other's.
  bool is_sub_axis_of(const MeshAxis& other) const;
  /// A < B of spec §10.1: a sub-axis and not equal.
  bool is_proper_sub_axis_of(const MeshAxis& other) const {
    return *this != other && is_sub_axis_of(other);
  }
  /// The largest stride of the layout (0 for a singleton): the sort key
  /// "outermost first" of reinterpret_mesh and local_axes.
  long max_stride() const;
  /// "(4:1)" or "(2,2):(8,1)".
  std::string to_string() const;

  friend bool operator==(const MeshAxis& a, const MeshAxis& b) {
    return a.atoms_ == b.atoms_;
  }
  friend bool operator!=(const MeshAxis& a, const MeshAxis& b) {
    return !(a == b);
  }
  /// The sub-axis partial order A <= B (spec §10.1). Not a strict weak
  /// order: there is deliberately no operator<, so a MeshAxis cannot be a
  /// std::map key by accident; key containers by name or use LayoutLess.
  friend bool operator<=(const MeshAxis& a, const MeshAxis& b) {
    return a.is_sub_axis_of(b);
  }
  friend bool operator>=(const MeshAxis& a, const MeshAxis& b) {
    return b.is_sub_axis_of(a);
  }

 private:
  std::vector<Atom> atoms_;
};

std::size_t hash_value(const MeshAxis& a);

/// A strict weak order on canonical layouts (lexicographic on atoms), for
/// ordered containers keyed by axis identity. Unrelated to the sub-axis order.
struct LayoutLess {
  bool operator()(const MeshAxis& a, const MeshAxis& b) const {
    return a.atoms() < b.atoms();
  }
};

/// Joint orthogonality of a collection of axes (spec §10.1). A singleton
/// axis is orthogonal to everything; an axis is not orthogonal to itself.
bool are_orthogonal(const std::vector<MeshAxis>& axes);

/// Flattens orthogonal axes into one. Errors: InvalidArgument "axes not
/// orthogonal".
Result<MeshAxis> flatten(const std::vector<MeshAxis>& axes);

}  // namespace spmd::core

template <>
struct std::hash<spmd::core::MeshAxis> {
  std::size_t operator()(const spmd::core::MeshAxis& a) const {
    return spmd::core::hash_value(a);
  }
};

#endif  // SPMD_CORE_MESH_AXIS_H
