// spmd/core/global_collectives.h - collectives in global mode, local_axes and
// typed local regions.
//
// Spec §12.4 (a collective on a global axis: the innermost-axis rule, a V
// input backed by a spec entry, src = S(i) matching the input's spec, the
// output spec updated; a collective axis spanning local and global axes is an
// error), §12.5 (local_axes: an outer prefix of the mesh that keeps local
// semantics) and §12.3 (local() / local_map: the body is typed locally, the
// boundary with assert_type semantics).
#ifndef SPMD_CORE_GLOBAL_COLLECTIVES_H
#define SPMD_CORE_GLOBAL_COLLECTIVES_H

#include <spmd/core/collectives.h>
#include <spmd/core/sharding_propagation.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmd::core {

/// The innermost-axis rule of spec §12.4: a collective `op` on `axis`,
/// which is one of the axes of `entry` (the normalised tuple that shards dim
/// `dim` of its input, outer to inner), is legal only when `axis` is the
/// entry's last (innermost) axis. An axis not in `entry` passes.
/// Errors: RedistributeError naming the axis, the tuple, the dim and the
/// innermost axis, with a fix (move the innermost axis off the dim first).
Status check_innermost(std::string_view op, std::string_view axis,
                       const SpecEntry& entry, long dim);

/// The same rule for a collective over a flattened axis (`axis`, e.g.
/// dp_cp) that acts on its component axes `group` (outer to inner, §7.2):
/// the components that shard dim `dim` must be the innermost axes of
/// `entry`, in the same order, so that gathering over the flattened group
/// reassembles the dim (`(dp, cp)` gathered over dp_cp is legal, over a
/// flattened cp_dp or with `(cp, dp)` it is not). A group of one is
/// check_innermost. Errors: RedistributeError as check_innermost.
Status check_innermost_group(std::string_view op, std::string_view axis,
                             const std::vector<std::string>& group,
                             const SpecEntry& entry, long dim);

/// How S(a) and S(b) of one tensor compare; a negative dim counts from the
/// end. Without `rank`, dims of opposite signs are one dim for some ranks
/// only (Unknown).
enum class DimMatch { Same, Different, Unknown };

/// Compares S(a) and S(b) of a tensor of rank `rank` (nullopt = unknown).
DimMatch compare_shard_dims(long a, long b, std::optional<long> rank);

/// Whether the plain src = S(i) of `call` (no gather/split dim given) names
/// another dim than `shard`, the dim its input is known to be sharded on
/// (spec §12.4); `rank` is the input's rank when known.
bool src_names_other_dim(const CollectiveCall& call, long shard,
                         std::optional<long> rank);

/// Why the input's shard is unknown to a collective whose plain src = S(i)
/// and the input's shard S(`shard`) are one dim for some ranks only (the
/// rank is unknown); nullopt when the two compare without a rank.
std::optional<TypeError> src_shard_rank_dependent(const CollectiveCall& call,
                                                  long shard,
                                                  std::optional<long> rank);

/// The input check of a collective on global axis `axis` whose input is
/// known to be sharded on dim `shard` (the plugin's tracked shard, spec
/// §12.4 and issue #11): src = S(i) must name that dim, and a shard is not a
/// pending sum (not accepted where src is P, nor reinterpreted as P). Passes
/// in expert mode. Errors: SpmdTypeError with axis, expected (S(i) or P),
/// actual S(shard) and a fix (gather along the shard's dim).
Status check_sharded_input(const CollectiveCall& call, std::string_view axis,
                           long shard, std::optional<long> rank);

/// Whether `call` needs its input to be a pending sum: src = P, or a
/// reinterpret to P.
bool wants_pending_sum(const CollectiveCall& call);

/// The input check of a collective on `axis` whose input holds rows looked
/// up in a table sharded by rows on `axis` whose rows outside this rank's
/// shard are not zeroed (the plugin's unmasked-rows mark): such rows are not
/// a pending sum. Passes in expert mode or when `call` does not need a
/// pending sum. Errors: SpmdTypeError with axis, expected P, actual V, and a
/// fix (zero the rows first).
Status check_unmasked_rows_input(const CollectiveCall& call,
                                 std::string_view axis);

/// assert_type of S(`asserted`) on global axis `axis` of a V known to be
/// sharded on dim `have` (spec §8.1 step 9): the two must be one dim (a
/// rank-dependent pair passes). Errors: SpmdTypeError "it is sharded on dim
/// <have>, not <asserted>" with axis, expected S(asserted), actual S(have).
Status check_asserted_shard_dim(std::string_view axis, long have, long asserted,
                                std::optional<long> rank);

/// assert_type of P on global axis `axis` of a V known to be sharded on dim
/// `have` (spec §8.1 step 8 with §12.2: a shard is not a pending sum, so the
/// V -> P refinement does not apply to it; the reference's checker rejects
/// the P with a PartitionSpec entry at the next op). Errors: SpmdTypeError
/// "it is sharded on dim <have>: a shard is not a pending sum"
/// with axis, expected P, actual S(have), and a fix (assert the shard, or
/// gather it).
Status check_asserted_partial(std::string_view axis, long have);

/// Why a front end's sharding propagation (global mode, spec §12.2) leaves
/// the result's shard dim on an axis unknown; the reasons of the strict-mode
/// "unknown shard" report. `operand` indexes the op's tensor operands
/// ("args[i]"), `op` is the op's canonical name.
enum class ShardLossReason {
  OperandShardUnknown,  ///< an operand is V with no known shard dim
  OperandRankUnknown,   ///< an operand is S(d < 0) of unknown rank
  OpRejected,           ///< the op's rule rejected the operands on the axis
  ResultRankUnknown,    ///< a shard counted from the end, rank unknown
  RuleNeedsRank,        ///< the op's rule needs an operand's rank
  RuleUndecided,        ///< a size or dim argument is not a constant
  OpDidNotSay,          ///< the V was made by an op that gave no shard dim
  DeclaredV,            ///< the V comes from a type that says V, not S(i)
};

/// Whether `call` needs the shard dim of a V input whose dim is unknown
/// for `why` (strict mode reports it when it does). A collective with src
/// S(i) does, to check the dim. One with src P (the implicit V -> P of spec
/// §7.2 step 3) does too, to tell a shard from a pending sum (issue 11),
/// except for DeclaredV, the value as declared V (a front end passes it for
/// an input that names a declaration saying V, not S(i)): per-rank values
/// with no global tensor behind them (spec §2.1), which is what the implicit
/// V -> P sums. Other calls: no.
bool shard_dim_needed(const CollectiveCall& call, ShardLossReason why);

/// The reason `why` as a TypeError (message, and a fix where one helps)
/// naming `axis`; `dim` is the operand's shard dim (OperandRankUnknown).
TypeError shard_loss(ShardLossReason why, std::string_view op,
                     std::string_view axis, std::size_t operand = 0,
                     long dim = 0);

/// Type transfer of a collective in a session (spec §7.2 then §12.4).
/// `axis` is the collective's axis; `resolved_axes` the tensor axes it acts
/// on (spec §7.2 step 1: [axis] or the sub-axes it flattens; empty = not
/// resolved). `shape` is the input's local shape (the rank resolves S(i) and
/// places the output shard). In global mode, for the global axes: the axis
/// must be innermost in its spec entry (RedistributeError); a V input must be
/// backed by a spec entry; src S(i) must equal the input's shard ("expected
/// input shard S(i) on axis A, got S(k)"); with ctx.shard_is_not_partial, a
/// sharded input is not accepted where src is P (a shard is not a pending
/// sum) unless `call.expert_mode`. The output spec drops the axis and, for
/// dst S(d), appends it as the innermost axis of dim d.
/// Errors: those of transfer(), SpmdTypeError, RedistributeError.
Result<GlobalType> transfer_global(
    const CollectiveCall& call, const std::optional<GlobalType>& input,
    std::string_view axis, const std::vector<std::string>& resolved_axes,
    const Shape& shape, const GlobalContext& ctx = {},
    bool axis_is_singleton = false);

/// local_axes of set_current_mesh (spec §12.5): every name must be a mesh axis
/// (InvalidArgument "not present in this mesh"), none twice ("duplicate"),
/// and they must be an outer prefix of the mesh, outer to inner ("must come
/// before all global axes").
Status check_local_axes(const std::vector<std::string>& mesh_axes,
                        const std::vector<std::string>& local_axes);

/// Whether `axis` is checked globally under `ctx`; with local axes set, an
/// axis outside the current mesh has no policy (SpmdTypeError "not in the
/// current mesh").
Result<bool> axis_is_global(const GlobalContext& ctx, std::string_view axis);

/// A context for the body of local() / local_map (spec §12.3): the same
/// session in local mode.
GlobalContext local_region(const GlobalContext& ctx);

/// One leaf of local_map's in_types / out_types (spec §12.3).
struct BoundaryType {
  enum class Kind {
    Types,      ///< a map (S(i) allowed), optionally with a PartitionSpec
    Spec,       ///< a bare PartitionSpec (V inferred for its axes)
    NonTensor,  ///< None: the leaf must not be a tensor
    Infer,      ///< the Infer sentinel (only valid as the whole in_types)
  };
  Kind kind = Kind::Types;
  std::vector<std::pair<std::string, PerAxisType>> entries;
  std::optional<PartitionSpec> spec;
};

/// A value crossing the boundary: a tensor with its type (nullopt = untyped)
/// and shape, or a non-tensor.
struct BoundaryValue {
  bool is_tensor = true;
  std::optional<GlobalType> type;
  Shape shape;
};

/// Checks and refines the inputs at a local_map entry, or stamps the outputs
/// at its exit (both are assert_type, spec §12.3): leaf counts must match,
/// a tensor must not meet NonTensor nor a non-tensor a type leaf, and Infer
/// is an error at any leaf. `in_types_is_infer`: the whole in_types is Infer,
/// so inputs pass unchecked. Returns the values' new types (nullopt for
/// non-tensors). `what` is "input" or "output"; `fn` names the function.
/// Errors: SpmdTypeError naming the leaf index, and assert_type's errors.
Result<std::vector<std::optional<GlobalType>>> check_boundary(
    const std::vector<BoundaryValue>& values,
    const std::vector<BoundaryType>& types, std::string_view what,
    std::string_view fn, bool in_types_is_infer = false);

/// local_map's output side: the body ran in local mode, so its results carry
/// no spec; each output is stamped with its out_types leaf (assert_type
/// semantics). Same as check_boundary(values-without-specs, out_types,
/// "output", fn).
Result<std::vector<std::optional<GlobalType>>> stamp_outputs(
    const std::vector<BoundaryValue>& body_results,
    const std::vector<BoundaryType>& out_types, std::string_view fn);

/// no_typecheck(in_types=..., out_types=...) without out_types is a
/// UsageError (spec §12.3).
Status check_no_typecheck_boundary(bool has_in_types, bool has_out_types);

}  // namespace spmd::core

#endif  // SPMD_CORE_GLOBAL_COLLECTIVES_H
