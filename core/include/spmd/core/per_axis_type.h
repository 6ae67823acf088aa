// spmd/core/per_axis_type.h - per-mesh-axis types and gradient duality.
//
// Spec §2. The per-axis type value itself (R, I, V, P, S(i)) is
// spmd::PerAxisType from <spmd/annotations.h>, so annotated user code, the
// plugin and the runtime share one definition.
#ifndef SPMD_CORE_PER_AXIS_TYPE_H
#define SPMD_CORE_PER_AXIS_TYPE_H

#include <spmd/annotations.h>
#include <spmd/core/error.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace spmd::core {

using spmd::PerAxisType;
using spmd::TypeKind;

/// Gradient (backward) type, spec §2.1: R<->P, I->I, V->V, S(i)->S(i).
constexpr PerAxisType backward_type(PerAxisType t) {
  switch (t.kind) {
    case TypeKind::Replicate:
      return spmd::types::P;
    case TypeKind::Partial:
      return spmd::types::R;
    default:
      return t;
  }
}

/// Prints "R", "I", "V", "P" or "S(i)" (spec §2.2).
std::string to_string(PerAxisType t);

/// Full English name: "Replicate", "Invariant", "Varying", "Partial",
/// "Shard(i)" (used in messages, spec §9.4).
std::string full_name(PerAxisType t);

/// Parses "R", "I", "V", "P", "S(i)" (i may be negative; surrounding spaces
/// allowed). Errors: ParseError naming the offending token.
Result<PerAxisType> parse_per_axis_type(std::string_view text);

/// Resolves a negative shard dim against `ndim` (spec §2.3): S(i) with i < 0
/// becomes S(i + ndim). Non-shard types pass unchanged.
/// Errors: SpmdTypeError "S(k) is out of bounds for tensor with ndim=N".
Result<PerAxisType> resolve_shard_dim(PerAxisType t, long ndim);

/// Hash of a PerAxisType (kind and, for shards, dim).
std::size_t hash_value(PerAxisType t);

}  // namespace spmd::core

#endif  // SPMD_CORE_PER_AXIS_TYPE_H
