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
  /// "(4:1)" or "(2,2):(8,1)".
  std::string to_string() const;

  friend bool operator==(const MeshAxis& a, const MeshAxis& b) {
    return a.atoms_ == b.atoms_;
  }
  friend bool operator!=(const MeshAxis& a, const MeshAxis& b) {
    return !(a == b);
  }

 private:
  std::vector<Atom> atoms_;
};

std::size_t hash_value(const MeshAxis& a);

/// Joint orthogonality of a collection of axes (spec §10.1). A singleton
/// axis is orthogonal to everything; an axis is not orthogonal to itself.
bool are_orthogonal(const std::vector<MeshAxis>& axes);

/// Flattens orthogonal axes into one. Errors: InvalidArgument "axes not
/// orthogonal".
Result<MeshAxis> flatten(const std::vector<MeshAxis>& axes);

}  // namespace spmd::core

#endif  // SPMD_CORE_MESH_AXIS_H
