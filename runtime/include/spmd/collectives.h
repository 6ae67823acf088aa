// spmd/collectives.h - differentiable, typed collectives over a device mesh.
//
// CONTRACT (fixed; the plugin recognises these by qualified name and reads
// `axis`, `src` and `dst` by constant evaluation): every collective is
//   at::Tensor f(const at::Tensor& x, const spmd::Axis& axis,
//                spmd::PerAxisType src, spmd::PerAxisType dst,
//                const spmd::CollectiveOptions& options = {},
//                spmd::SourceLocation loc = spmd::SourceLocation::current());
// `loc` is never written by callers: it names the caller's line in errors
// (spmd/source_location.h), and the plugin ignores it.
// `axis` is resolved through the current spmd::MeshGuard to a process group.
// Semantics: spec §7 (per-rank forward, backward = dual collective).
#ifndef SPMD_COLLECTIVES_H
#define SPMD_COLLECTIVES_H

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <spmd/annotations.h>
#include <spmd/source_location.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace spmd {

/// Options passed to the dual operation in backward (spec §7.10).
struct BackwardOptions {
  std::optional<c10::ScalarType> op_dtype;   ///< backward communication dtype
  std::optional<c10::ScalarType> out_dtype;  ///< defaults to the input dtype
  /// Options for double backward.
  std::shared_ptr<BackwardOptions> backward_options;
};

/// Options of every collective (spec §7.1-§7.10). Unused fields must stay at
/// their defaults; a field that does not apply to the op is InvalidArgument.
struct CollectiveOptions {
  std::optional<c10::ScalarType> op_dtype;   ///< compute/communication dtype
  std::optional<c10::ScalarType> out_dtype;  ///< result dtype
  BackwardOptions backward;                  ///< for the dual in backward
  bool inplace = false;                      ///< all_reduce only
  bool expert_mode = false;                  ///< convert / reinterpret gate
  std::optional<int64_t> gather_dim;         ///< all_gather with src V
  std::optional<int64_t> scatter_dim;        ///< reduce_scatter with dst V
  std::optional<int64_t> split_dim;          ///< all_to_all
  std::optional<int64_t> concat_dim;         ///< all_to_all
  std::vector<int64_t> split_sizes;          ///< uneven S(i), one per rank
  std::vector<int64_t> input_split_sizes;    ///< uneven all_to_all
  std::vector<int64_t> output_split_sizes;   ///< uneven all_to_all
};

at::Tensor all_reduce(const at::Tensor& x, const Axis& axis, PerAxisType src,
                      PerAxisType dst, const CollectiveOptions& options = {},
                      SourceLocation loc = SourceLocation::current());
at::Tensor all_gather(const at::Tensor& x, const Axis& axis, PerAxisType src,
                      PerAxisType dst, const CollectiveOptions& options = {},
                      SourceLocation loc = SourceLocation::current());
at::Tensor reduce_scatter(const at::Tensor& x, const Axis& axis,
                          PerAxisType src, PerAxisType dst,
                          const CollectiveOptions& options = {},
                          SourceLocation loc = SourceLocation::current());
at::Tensor all_to_all(const at::Tensor& x, const Axis& axis, PerAxisType src,
                      PerAxisType dst, const CollectiveOptions& options = {},
                      SourceLocation loc = SourceLocation::current());
at::Tensor convert(const at::Tensor& x, const Axis& axis, PerAxisType src,
                   PerAxisType dst, const CollectiveOptions& options = {},
                   SourceLocation loc = SourceLocation::current());
at::Tensor reinterpret(const at::Tensor& x, const Axis& axis, PerAxisType src,
                       PerAxisType dst, const CollectiveOptions& options = {},
                       SourceLocation loc = SourceLocation::current());
at::Tensor redistribute(const at::Tensor& x, const Axis& axis, PerAxisType src,
                        PerAxisType dst, const CollectiveOptions& options = {},
                        SourceLocation loc = SourceLocation::current());
at::Tensor shard(const at::Tensor& x, const Axis& axis, PerAxisType src,
                 PerAxisType dst, const CollectiveOptions& options = {},
                 SourceLocation loc = SourceLocation::current());
at::Tensor unshard(const at::Tensor& x, const Axis& axis, PerAxisType src,
                   PerAxisType dst, const CollectiveOptions& options = {},
                   SourceLocation loc = SourceLocation::current());
/// convert(I, R): the Megatron copy-to-tensor-parallel region.
at::Tensor invariant_to_replicate(
    const at::Tensor& x, const Axis& axis,
    const CollectiveOptions& options = {},
    SourceLocation loc = SourceLocation::current());

}  // namespace spmd

#endif  // SPMD_COLLECTIVES_H
