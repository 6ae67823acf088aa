// spmd/core/partition_spec.h - PartitionSpec and global SPMD types.
//
// Spec §12.1 (PartitionSpec: one entry per tensor dim, each none, one axis or
// an ordered tuple of axes; normalisation), §8.1 steps 1-5 and 9 (S(i) sugar,
// spec <-> S-entries, refinement of a stored spec) and §12.2's operand check.
// A global type is a local type map plus a PartitionSpec. Static front ends
// may not know a tensor's rank: then a sharded axis has an *unknown* shard dim
// (GlobalType::unknown_shards), never a guessed one.
#ifndef SPMD_CORE_PARTITION_SPEC_H
#define SPMD_CORE_PARTITION_SPEC_H

#include <spmd/core/tensor_type.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spmd::core {

/// A tensor's local shape as far as it is known. `dims` nullopt: the rank is
/// unknown; a nullopt element: that dim's size is unknown.
struct Shape {
  std::optional<std::vector<std::optional<long>>> dims;

  static Shape unknown() { return {}; }
  /// All sizes known.
  static Shape of(const std::vector<long>& sizes);
  /// Rank known, sizes unknown.
  static Shape of_rank(long ndim);
  bool rank_known() const { return dims.has_value(); }
  /// The rank; only when rank_known().
  long rank() const { return static_cast<long>(dims->size()); }
  /// Size of dim i (0 <= i < rank), nullopt when unknown.
  std::optional<long> size(long i) const;
  /// "[4, 3]", "[4, ?]", "[?...]" (unknown rank).
  std::string to_string() const;
};

/// One PartitionSpec entry: the mesh axes that shard one tensor dim, outer to
/// inner. Empty = not sharded (printed None).
using SpecEntry = std::vector<std::string>;

/// An entry as written by a user before normalisation: nullopt = None, a
/// list of axes = a tuple (an empty list is an error, §12.1).
using RawSpecEntry = std::optional<std::vector<std::string>>;

/// A normalised PartitionSpec: one entry per tensor dim (spec §12.1).
class PartitionSpec {
 public:
  PartitionSpec() = default;
  /// Takes entries as they are (no validation); use normalize() for user
  /// input.
  explicit PartitionSpec(std::vector<SpecEntry> entries)
      : entries_(std::move(entries)) {}
  /// ndim None entries.
  static PartitionSpec none(long ndim);

  /// Normalisation of §12.1: an empty tuple entry is InvalidArgument
  /// ("empty tuple"); axes for which `is_singleton` returns true are dropped
  /// (an entry left empty becomes None); an axis appearing twice anywhere is
  /// SpmdTypeError "not orthogonal" (distinct named axes of one mesh are
  /// orthogonal). `is_singleton` may be empty (no axis is a singleton).
  static Result<PartitionSpec> normalize(
      const std::vector<RawSpecEntry>& raw,
      const std::function<bool(std::string_view)>& is_singleton = {});

  /// Parses "PartitionSpec(tp, None)", "((dp, tp), None)" or "(tp, None)"
  /// and normalises. Errors: ParseError, or those of normalize().
  static Result<PartitionSpec> parse(std::string_view text);

  long rank() const { return static_cast<long>(entries_.size()); }
  const std::vector<SpecEntry>& entries() const { return entries_; }
  const SpecEntry& entry(long dim) const { return entries_.at(dim); }
  /// The tensor dim that `axis` shards, or nullopt.
  std::optional<long> dim_of(std::string_view axis) const;
  /// True when `axis` is the last (innermost) axis of its entry.
  bool is_innermost(std::string_view axis) const;
  /// Every axis in the spec, in dim order then outer-to-inner.
  std::vector<std::string> axes() const;
  /// True when no dim is sharded.
  bool all_none() const;
  /// A copy without `axis` (entries left empty become None).
  PartitionSpec without(std::string_view axis) const;
  /// A copy with `axis` appended as the innermost axis of `dim`.
  PartitionSpec with_innermost(long dim, const std::string& axis) const;

  /// "PartitionSpec(tp, None)", "PartitionSpec((dp, tp), None)".
  std::string to_string() const;

  friend bool operator==(const PartitionSpec& a, const PartitionSpec& b) {
    return a.entries_ == b.entries_;
  }
  friend bool operator!=(const PartitionSpec& a, const PartitionSpec& b) {
    return !(a == b);
  }

 private:
  std::vector<SpecEntry> entries_;
};

/// A global SPMD type: the local map (S(i) recorded as V), the PartitionSpec
/// (nullopt when the tensor carries none) and the V axes that are sharded on
/// a dim nobody knows (a static front end without the rank).
struct GlobalType {
  TensorType local;
  std::optional<PartitionSpec> spec;
  std::set<std::string> unknown_shards;
  /// V axes whose value holds rows looked up in a table sharded by rows on
  /// that axis, with the rows of indices outside the rank's shard not yet
  /// zeroed (an unmasked vocab-parallel lookup): not a shard and not a
  /// pending sum. Each is also in unknown_shards (no dim is known), so the
  /// shard rules treat it as a V of unknown dim; infer_global keeps the mark
  /// and turns it into P only where an op zeroes those rows
  /// (core::zero_fills).
  std::set<std::string> unmasked_rows;

  /// The per-axis type with shard dims: S(d) for an axis in the spec, else
  /// the local type; nullopt when the axis is absent. An unknown shard reads
  /// as V.
  std::optional<PerAxisType> axis_type(std::string_view axis) const;
  /// "{tp: S(0)}" style map (S(d) from the spec; unknown shards as "S(?)",
  /// unmasked rows as "V(unmasked rows)"), followed by " PartitionSpec(...)"
  /// when a spec is present.
  std::string to_string() const;

  friend bool operator==(const GlobalType& a, const GlobalType& b) {
    return a.local == b.local && a.spec == b.spec &&
           a.unknown_shards == b.unknown_shards &&
           a.unmasked_rows == b.unmasked_rows;
  }
  friend bool operator!=(const GlobalType& a, const GlobalType& b) {
    return !(a == b);
  }
};

/// S-entries of an annotation map -> PartitionSpec (§8.1 steps 2-4):
/// each S(i) is resolved against `shape`'s rank (SpmdTypeError "S(k) is out
/// of bounds for tensor with ndim=N"); two axes on one dim are SpmdTypeError
/// ("dim d is sharded on multiple axes ... use an explicit PartitionSpec").
/// Returns nullopt when there is no S entry. With an unknown rank the S axes
/// are returned in `unknown` and no spec is built.
struct ShardsToSpec {
  std::optional<PartitionSpec> spec;
  std::set<std::string> unknown;
};
Result<ShardsToSpec> shards_to_spec(
    const std::vector<std::pair<std::string, PerAxisType>>& entries,
    const Shape& shape);

/// PartitionSpec -> per-axis S(d) entries (every axis of a multi-axis entry
/// gets S(d) of its dim), in spec order.
std::vector<std::pair<std::string, PerAxisType>> spec_to_shards(
    const PartitionSpec& spec);

/// Builds a global type from an annotation (§8.1 steps 1-6): `entries` may
/// hold S(i); `explicit_spec` is the optional PartitionSpec argument (its
/// rank must equal the tensor's when known). S(i) together with an explicit
/// spec, an axis of the spec typed R/I/P in the map, and spec axes missing
/// from the map (recorded as V) follow §8.1.
/// Errors: SpmdTypeError naming the axis and dim.
Result<GlobalType> make_global(
    const std::vector<std::pair<std::string, PerAxisType>>& entries,
    const std::optional<PartitionSpec>& explicit_spec, const Shape& shape);

/// PartitionSpec refinement of §8.1 step 9: per dim, new None keeps the old
/// entry; old None takes the new entry unless one of its axes already shards
/// another dim ("axis A already shards dim k"); two different entries are
/// "PartitionSpec conflict at dim k". Ranks must agree.
Result<PartitionSpec> refine_spec(const std::optional<PartitionSpec>& existing,
                                  const PartitionSpec& asserted);

/// assert_type with global types (§8.1): checks/refines the local map with
/// assert_type (annotation_rules.h), then refines the spec. `current`
/// nullopt = untyped. A V axis the assertion shards that the current spec
/// shards on another dim is an error; an unknown shard becomes known.
Result<GlobalType> assert_global(const std::optional<GlobalType>& current,
                                 const GlobalType& asserted);

/// The operand check of §12.2 in global mode: for every axis with
/// `is_global(axis)`, a V axis must be backed by a spec entry (or be an
/// unknown shard), and a spec axis must be V. Errors: SpmdTypeError
/// "Varying without PartitionSpec entry ..." / "PartitionSpec on axis A but
/// local type is X".
Status check_global_operand(
    const GlobalType& t, const std::function<bool(std::string_view)>& is_global,
    std::string_view what = "operand");

}  // namespace spmd::core

#endif  // SPMD_CORE_PARTITION_SPEC_H
