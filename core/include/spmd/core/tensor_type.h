// spmd/core/tensor_type.h - whole-tensor types: mesh axis -> per-axis type.
//
// Spec §3. A TensorType maps axis names to local types R/I/V/P. S(i) is never
// stored (it is recorded as V, spec §2.2); shard dims that matter to data
// movement travel separately (collective arguments, partition specs). Axes
// are ordered by name so printing and iteration are deterministic.
#ifndef SPMD_CORE_TENSOR_TYPE_H
#define SPMD_CORE_TENSOR_TYPE_H

#include <spmd/core/per_axis_type.h>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmd::core {

/// A whole-tensor type map, e.g. {dp: R, tp: V}. Axes absent from the map are
/// unknown on that tensor (spec §3.1), never implicitly R or V.
class TensorType {
 public:
  using Map = std::map<std::string, PerAxisType, std::less<>>;

  TensorType() = default;

  /// Builds from `axis = type` entries; S(i) is recorded as V.
  /// Errors: UsageError when an axis repeats.
  static Result<TensorType> from_entries(
      const std::vector<std::pair<std::string, PerAxisType>>& entries);

  /// Parses the spec's text form "{dp: R, tp: S(0)}" (S(i) recorded as V;
  /// "{}" is the empty map). Errors: ParseError naming the offending token
  /// and its column; a repeated axis is a ParseError too.
  static Result<TensorType> parse(std::string_view text);

  /// Like parse, but keeps S(i) entries as written (for annotations that
  /// carry shard dims). The result is not a normalised TensorType.
  static Result<std::vector<std::pair<std::string, PerAxisType>>> parse_entries(
      std::string_view text);

  /// Sets `axis` to local(t).
  void set(std::string axis, PerAxisType t);
  /// Removes `axis` if present.
  void erase(std::string_view axis);
  /// The type on `axis`, or nullopt when the axis is unknown.
  std::optional<PerAxisType> get(std::string_view axis) const;
  bool has(std::string_view axis) const { return map_.count(axis) != 0; }
  bool empty() const { return map_.empty(); }
  std::size_t size() const { return map_.size(); }
  const Map& map() const { return map_; }
  std::vector<std::string> axes() const;

  /// "{dp: R, tp: V}" (axes sorted by name), "{}" when empty.
  std::string to_string() const;

  /// Per-axis gradient type (spec §2.1).
  TensorType backward() const;

  friend bool operator==(const TensorType& a, const TensorType& b) {
    return a.map_ == b.map_;
  }
  friend bool operator!=(const TensorType& a, const TensorType& b) {
    return !(a == b);
  }

 private:
  Map map_;
};

std::size_t hash_value(const TensorType& t);

}  // namespace spmd::core

template <>
struct std::hash<spmd::core::TensorType> {
  std::size_t operator()(const spmd::core::TensorType& t) const {
    return spmd::core::hash_value(t);
  }
};
template <>
struct std::hash<spmd::PerAxisType> {
  std::size_t operator()(spmd::PerAxisType t) const {
    return spmd::core::hash_value(t);
  }
};

#endif  // SPMD_CORE_TENSOR_TYPE_H
