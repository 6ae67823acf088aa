// spmd/core/collectives.h - collective and conversion type rules.
//
// Spec §7: for all_reduce, all_gather, reduce_scatter, all_to_all, convert,
// reinterpret, redistribute and the aliases shard / unshard /
// invariant_to_replicate: which (src, dst) pairs are legal, which need
// expert_mode, the argument checks, the output type (§7.2), the backward
// (dual) operation (§7.3-§7.8, §7.13), the redistribute routing table (§7.12)
// and the dtype rules (§7.10).
#ifndef SPMD_CORE_COLLECTIVES_H
#define SPMD_CORE_COLLECTIVES_H

#include <spmd/core/tensor_type.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spmd::core {

/// The SPMD collectives and type conversions (spec §7.1).
enum class Collective {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  Convert,
  Reinterpret,
  Redistribute,
  Shard,                 ///< convert with dst S(i)
  Unshard,               ///< all_gather with src S(i)
  InvariantToReplicate,  ///< convert(I, R)
  LocalSplit,  ///< backward of uneven all_gather(S(i) -> I): keep own piece
};

/// "all_reduce", "all_gather", ... (the runtime's function names).
const char* to_string(Collective c);
/// Parses a function name ("all_reduce", "spmd::all_reduce", ...).
std::optional<Collective> parse_collective(std::string_view name);

/// The fields of spmd::CollectiveOptions, in declaration order. Their names,
/// types, defaults, the collectives that accept them and their meaning are
/// described once, in <spmd/core/collective_options.h>.
enum class CollectiveOption : unsigned char {
  OpDtype,
  OutDtype,
  Backward,
  Inplace,
  ExpertMode,
  GatherDim,
  ScatterDim,
  SplitDim,
  ConcatDim,
  SplitSizes,
  InputSplitSizes,
  OutputSplitSizes,
};
/// Number of CollectiveOption values.
inline constexpr int kNumCollectiveOptions = 12;

/// One call of a collective: its src/dst and the options that affect
/// legality, data movement and the backward. Dims are tensor dims; negative
/// values are allowed until resolve() is called with the input's ndim.
struct CollectiveCall {
  Collective op = Collective::AllReduce;
  PerAxisType src{};
  PerAxisType dst{};
  bool expert_mode = false;
  bool inplace = false;
  bool has_op_dtype = false;        ///< op_dtype given
  bool has_out_dtype = false;       ///< out_dtype given
  std::optional<long> gather_dim;   ///< all_gather
  std::optional<long> scatter_dim;  ///< reduce_scatter
  std::optional<long> split_dim;    ///< all_to_all
  std::optional<long> concat_dim;   ///< all_to_all
  std::vector<long> split_sizes;  ///< all_gather / reduce_scatter, uneven S(i)
  std::vector<long> input_split_sizes;   ///< all_to_all, uneven
  std::vector<long> output_split_sizes;  ///< all_to_all, uneven
  /// Options given with a value the front end cannot read (the plugin sees
  /// `{.split_sizes = sizes}` but not `sizes`): one bit per
  /// CollectiveOption, set by set_option(). Such an option counts as given
  /// (has_option) while checks that need its value are skipped.
  std::uint32_t unread_options = 0;

  /// "all_gather(src=S(0), dst=R)" plus non-default options.
  std::string to_string() const;
  friend bool operator==(const CollectiveCall& a, const CollectiveCall& b);
};

/// The (src, dst) an operation implies because it takes none (spec §7.1,
/// §7.11): invariant_to_replicate is (I, R). nullopt for every other
/// collective, whose C++ signature takes src and dst explicitly.
std::optional<std::pair<PerAxisType, PerAxisType>> implied_types(Collective c);

/// Whether `t` is one of R, I, V, P or S(i). A PerAxisType built from an
/// out-of-range kind (`PerAxisType{TypeKind(7), 0}`) is not.
bool is_valid_type(PerAxisType t);

/// Resolves negative shard dims in src/dst (spec §2.3) against `ndim`.
/// Errors: SpmdTypeError "S(k) is out of bounds for tensor with ndim=N".
Result<CollectiveCall> resolve(const CollectiveCall& call, long ndim);

/// Argument legality: first that src and dst are valid type values
/// (UsageError "src of convert is not a valid SPMD type") and that every
/// given option is accepted by the op (InvalidArgument "gather_dim is not an
/// option of all_reduce", from the table of collective_options.h); then, in
/// the order the spec gives for each op (§7.3-§7.11): src/dst pairs,
/// expert-mode gate, split-size and dim conflicts, inplace with dtypes.
/// Shards may be unresolved; dim-conflict checks that need a resolved dim
/// are done only when the dims are non-negative.
/// Errors: InvalidArgument with the spec's key phrases ("must be P",
/// "must be R or I", "must be V or S(i)", "expert_mode", "not supported",
/// "does not support S(i)", "only supported with src=S(i)", "conflict", ...).
Status check_arguments(const CollectiveCall& call);

/// The split and concat dims of an all_to_all (spec §7.6 table):
/// S(i)->S(j): (j, i); S(i)->V: (i, concat_dim or 0); V->S(j): (split_dim or
/// 0, j); V->V: (split_dim or 0, concat_dim or 0). Given dims are returned
/// as given (possibly negative); shard dims as in the call (resolve first).
struct AllToAllDims {
  long split = 0;
  long concat = 0;
  friend bool operator==(AllToAllDims a, AllToAllDims b) {
    return a.split == b.split && a.concat == b.concat;
  }
};
AllToAllDims all_to_all_dims(const CollectiveCall& call);

/// The primitive that performs a legal, resolved call: shard -> convert,
/// unshard -> all_gather, invariant_to_replicate -> convert(I, R),
/// redistribute -> its route (§7.12, dtype options kept); other ops are
/// their own primitive. The result carries expert_mode = true (legality was
/// checked on the user's call; a lowering may need a gated primitive such as
/// convert(R, I)). nullopt when nothing needs to run (is_noop of the
/// primitive).
std::optional<CollectiveCall> lower_to_primitive(const CollectiveCall& call);

/// True when the call returns its input unchanged (same base type for
/// convert/redistribute, src == dst for reinterpret, group of size 1 aside).
bool is_noop(const CollectiveCall& call);

/// Type transfer of spec §7.2 for a collective on `axis`: checks that the
/// input's type on the axis is local(src) (V accepted where src is P) and
/// sets it to local(dst); other axes are carried over. An input without the
/// axis: skipped when `axis_is_singleton`, SpmdTypeError "no type for axis"
/// when strict, unchanged map when permissive.
/// Errors: SpmdTypeError "<op>: expected input type X on axis A, got Y".
/// `input_shard`: the input's shard dim on the axis when it is known (global
/// mode keeps it in the spec, not in the map): the messages then name the
/// input S(k), not V, and so does the suggested route.
Result<TensorType> transfer(const CollectiveCall& call,
                            const std::optional<TensorType>& input,
                            std::string_view axis, bool strict = true,
                            bool axis_is_singleton = false,
                            std::optional<long> input_shard = std::nullopt);

/// The backward of a (legal, resolved) call: the dual operations applied to
/// the output gradient, in order (two steps for reinterpret(I,V) and
/// reinterpret(I,P)). Internal duals carry expert_mode = true. Redistribute
/// is routed first (its backward is its route's backward).
std::vector<CollectiveCall> backward_of(const CollectiveCall& call);

/// One step of the redistribute routing table (spec §7.12): the primitive that
/// performs redistribute(src, dst), or nullopt for a no-op. Delegations to
/// convert carry expert_mode = true. Shards must be resolved.
std::optional<CollectiveCall> route_redistribute(PerAxisType src,
                                                 PerAxisType dst);

/// Whether the op is "reducing" for dtype resolution (spec §7.10).
bool is_reducing(const CollectiveCall& call);

/// Whether the backward contains a reduction, so that a reduced-precision
/// forward must be told the backward op_dtype (spec §7.10 guard).
bool backward_reduces(const CollectiveCall& call);

/// Forward dtype resolution of spec §7.10: which of the input, op and out
/// dtypes the operation runs in and casts to, given the input's and the
/// out dtype's bit widths (the "fewer bits" rule is resolved here to Input
/// or Out). (Dtype identity is the runtime's business; the core decides
/// which one.)
enum class DtypeChoice { Input, Op, Out };
struct DtypePlan {
  DtypeChoice op;   ///< which dtype the operation runs in
  DtypeChoice out;  ///< which dtype the result is cast to
};
DtypePlan plan_dtypes(const CollectiveCall& call, int input_bits, int out_bits);

}  // namespace spmd::core

#endif  // SPMD_CORE_COLLECTIVES_H
