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

#include <optional>
#include <string>
#include <string_view>
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

  /// "all_gather(src=S(0), dst=R)" plus non-default options.
  std::string to_string() const;
  friend bool operator==(const CollectiveCall& a, const CollectiveCall& b);
};

/// The default src / dst of spec §7.1 (nullopt = required argument).
std::optional<PerAxisType> default_src(Collective c);
std::optional<PerAxisType> default_dst(Collective c);

/// Resolves negative shard dims in src/dst (spec §2.3) against `ndim`.
/// Errors: SpmdTypeError "S(k) is out of bounds for tensor with ndim=N".
Result<CollectiveCall> resolve(const CollectiveCall& call, long ndim);

/// Argument legality in the order the spec gives for each op (§7.3-§7.11):
/// src/dst pairs, expert-mode gate, split-size and dim conflicts, inplace
/// with dtypes. Shards may be unresolved; dim-conflict checks that need a
/// resolved dim are done only when the dims are non-negative.
/// Errors: InvalidArgument with the spec's key phrases ("must be P",
/// "must be R or I", "must be V or S(i)", "expert_mode", "not supported",
/// "does not support S(i)", "only supported with src=S(i)", "conflict", ...).
Status check_arguments(const CollectiveCall& call);

/// True when the call returns its input unchanged (same base type for
/// convert/redistribute, src == dst for reinterpret, group of size 1 aside).
bool is_noop(const CollectiveCall& call);

/// Type transfer of spec §7.2 for a collective on `axis`: checks that the
/// input's type on the axis is local(src) (V accepted where src is P) and
/// sets it to local(dst); other axes are carried over. An input without the
/// axis: skipped when `axis_is_singleton`, SpmdTypeError "no type for axis"
/// when strict, unchanged map when permissive.
/// Errors: SpmdTypeError "<op>: expected input type X on axis A, got Y".
Result<TensorType> transfer(const CollectiveCall& call,
                            const std::optional<TensorType>& input,
                            std::string_view axis, bool strict = true,
                            bool axis_is_singleton = false);

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
/// out dtype's bit widths (the "fewer bits" rule). Never returns Narrower:
/// it is resolved to Input or Out. (Dtype identity is the runtime's
/// business; the core decides which one.)
enum class DtypeChoice { Input, Op, Out, Narrower };
struct DtypePlan {
  DtypeChoice op;   ///< which dtype the operation runs in
  DtypeChoice out;  ///< which dtype the result is cast to
};
DtypePlan plan_dtypes(const CollectiveCall& call, int input_bits, int out_bits);

/// Allowed keys of backward_options: "op_dtype", "out_dtype",
/// "backward_options". Errors: InvalidArgument "Unknown keys in
/// backward_options: ...".
Status check_backward_option_keys(const std::vector<std::string>& keys);

}  // namespace spmd::core

#endif  // SPMD_CORE_COLLECTIVES_H
