// spmd/core/sharding_propagation.h - global SPMD: where shards go through ops.
//
// Spec §12.2. After the local rule (propagation.h) has typed an op, every
// global mesh axis that shards at least one operand is propagated on its own,
// as on a 1-d mesh: each operand is Replicate (R or I), Shard(d) or Partial on
// that axis, and the op either keeps a consistent sharding (the output is
// Shard(d') or, for a contraction or reduction over the sharded dim, Partial)
// or has no valid sharding without a redistribution, which is an error naming
// the op, the axis, the dims and a fix. A Varying result that propagation
// reports Partial becomes P (§12.2). Shapes are local shapes; a static front
// end may know only part of them: a rule that needs an unknown rank, size or
// argument answers Placement::unknown(), never a guess.
#ifndef SPMD_CORE_SHARDING_PROPAGATION_H
#define SPMD_CORE_SHARDING_PROPAGATION_H

#include <spmd/core/masks.h>
#include <spmd/core/partition_spec.h>
#include <spmd/core/propagation.h>

#include <cstddef>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace spmd::core {

/// A tensor's placement on one mesh axis (a 1-d view of its global type).
struct Placement {
  enum class Kind { Replicate, Shard, Partial, Unknown };
  Kind kind = Kind::Replicate;
  long dim = 0;  ///< for Shard

  static Placement replicate() { return {Kind::Replicate, 0}; }
  static Placement shard(long d) { return {Kind::Shard, d}; }
  static Placement partial() { return {Kind::Partial, 0}; }
  static Placement unknown() { return {Kind::Unknown, 0}; }
  bool is_shard() const { return kind == Kind::Shard; }
  /// "R", "S(d)", "P", "?".
  std::string to_string() const;
  friend bool operator==(Placement a, Placement b) {
    return a.kind == b.kind && (a.kind != Kind::Shard || a.dim == b.dim);
  }
  friend bool operator!=(Placement a, Placement b) { return !(a == b); }
};

/// One item of a subscript `x[...]` (for "__getitem__" / "index").
struct IndexItem {
  enum class Kind {
    Integer,    ///< x[3]: removes the dim
    FullSlice,  ///< x[:]: keeps the whole dim
    Slice,      ///< x[1:4], x[::2]: part of the dim
    NewAxis,    ///< x[None]: inserts a dim of size 1
    Ellipsis,   ///< x[...]: as many full slices as needed
    Tensor,     ///< x[idx]: advanced indexing with a tensor
  };
  Kind kind = Kind::FullSlice;
};

/// The structural (non-tensor) arguments of an op. Only the fields an op
/// reads matter. Dims may be negative (resolved against the input's rank).
/// `known = false` says the front end could not evaluate them: a result that
/// depends on them is unknown.
struct ShardingArgs {
  /// Dim arguments: reduction dims (has_dims false = all dims), the two dims
  /// of transpose/movedim, the order of permute, the dims of
  /// squeeze/flip/roll, start and end of flatten, or the single dim of
  /// softmax, cat, stack, chunk, split, unbind, narrow, select, slice,
  /// index_select, sort, cumsum, unsqueeze, unflatten.
  std::vector<long> dims;
  bool has_dims = false;
  bool keepdim = false;
  /// Target sizes of view/reshape/expand/broadcast_to/unflatten/repeat (local
  /// sizes; -1 allowed where torch allows it; nullopt = unknown).
  std::vector<std::optional<long>> sizes;
  /// einsum equation, e.g. "bij,bjk->bik".
  std::string equation;
  /// cross_entropy / nll_loss reduction: "mean" (default), "sum", "none".
  std::string reduction = "mean";
  /// layer_norm / rms_norm: number of trailing normalised dims (the length of
  /// normalized_shape); 0 = unknown.
  long normalized_ndim = 0;
  /// narrow / slice covering the whole dim (a no-op, allowed on a sharded
  /// dim).
  bool full_range = false;
  /// Subscript items of __getitem__ / index.
  std::vector<IndexItem> index;
  bool known = true;
};

/// One tensor operand on one axis: its placement and local shape.
struct AxisArg {
  Placement placement;
  Shape shape;
};

/// Result of propagating one axis: the output placement (the same for every
/// output of a multi-output op), the output rank when known, and notes that
/// the caller should show (e.g. what a mean over a shard means).
struct AxisOutcome {
  Placement placement;
  std::optional<long> out_rank;
  std::string note;
  /// With an unknown placement: what to write so that it is known (empty
  /// when there is no one repair).
  std::string fix = {};
  /// The result holds rows looked up in a table sharded by rows on this
  /// axis, not yet zeroed outside the rank's shard (embedding with a
  /// vocab-sharded table and replicated indices): V, not a pending sum; the
  /// placement is unknown (no dim is sharded).
  bool unmasked_rows = false;
};

/// The op's sharding rule family, for messages and the docs (one per rule).
enum class ShardRule {
  Pointwise,           ///< elementwise with broadcasting
  Contraction,         ///< mm, bmm, matmul, einsum, linear, addmm, baddbmm, ...
  LinearReduction,     ///< sum, mean: over the shard -> Partial
  NonlinearReduction,  ///< max, min, argmax, norm, var, ...: over the shard
                       ///< -> error
  AlongDim,            ///< softmax, log_softmax, sort, cumsum, ...: along the
                       ///< shard -> error
  Norm,                ///< layer_norm, rms_norm
  Shape,               ///< view, reshape, transpose, cat, ... (moves the shard)
  Embedding,           ///< embedding
  Loss,                ///< cross_entropy, nll_loss
  Attention,           ///< scaled_dot_product_attention: heads or batch
  Unknown,             ///< not modelled: the result is unknown
};
const char* to_string(ShardRule r);

/// The rule family of an op, by the spec's naming ("add", ".view",
/// "__matmul__", "prop T") or a C++ spelling ("torch::matmul",
/// "at::Tensor::view", "aten::mm", "torch::nn::functional::linear").
ShardRule shard_rule_of(std::string_view op);

/// Where a reduction's structural arguments are among its non-tensor
/// arguments, counted in the order of libtorch's C++ API (which is the ATen
/// schema's): `sum(dim, keepdim, dtype)`, `amax(dim, keepdim)`,
/// `var(dim, unbiased or correction, keepdim)`, `norm(p, dim, keepdim)`,
/// `count_nonzero(dim)`. For a front end that reads a call by position (the
/// plugin); the runtime checker reads the ATen schema's argument names.
struct ReductionArgRoles {
  std::size_t dim = 0;                     ///< the dim or dim list
  std::optional<std::size_t> keepdim = 1;  ///< nullopt: the op has none
};

/// The argument roles of a reduction (any spelling canonical_op_name
/// accepts); nullopt when `op` is not a reduction (ShardRule
/// LinearReduction or NonlinearReduction).
std::optional<ReductionArgRoles> reduction_arg_roles(std::string_view op);

/// The canonical op name the rules use: namespaces, a leading '.', an
/// in-place '_' and an ATen overload suffix stripped; dunders mapped
/// ("__matmul__" -> "matmul", "__getitem__" -> "index").
std::string canonical_op_name(std::string_view op);

/// Propagates one mesh axis through `op` (spec §12.2). `tensors` are the
/// op's tensor operands in call order (embedding: input, weight; addmm:
/// self, mat1, mat2; linear: input, weight[, bias]; cat/stack: the list).
/// Errors: SpmdTypeError "No valid sharding strategy for <op> on axis A: ..."
/// (message names the operands `args[i]`, their dims and shapes; `fix` says
/// what to do), DTensorPropagationError for an ambiguous reshape of a
/// sharded dim.
Result<AxisOutcome> propagate_axis(std::string_view op,
                                   const std::vector<AxisArg>& tensors,
                                   const ShardingArgs& args,
                                   std::string_view axis);

/// The result's local shape as far as `op`'s sizes follow from its operands'
/// (`tensors`, their local shapes in call order) and `args`: rank
/// `out_rank` (as propagate_axis gives it; unknown shape when nullopt), and
/// the sizes that are certain: a dim reduced with keepdim or inserted by
/// unsqueeze has size 1; a reduction keeps the sizes of the dims it does not
/// reduce; a pointwise result's dim has the broadcast size when every
/// operand that has the dim knows its size there. Every other size (and
/// every size of the other rule families) is unknown. Lets a front end that
/// tracks sizes see that `x - x_max` (keepdim) broadcasts along x's shard.
Shape result_shape(std::string_view op, const std::vector<Shape>& tensors,
                   const ShardingArgs& args, std::optional<long> out_rank);

/// The order of mesh axes within multi-axis PartitionSpec entries through an
/// op (spec §12.2: "multi-axis entries impose an order; inputs with
/// conflicting orders -> SpmdTypeError; outputs keep the input order").
/// Built from the operands' entries (each outer to inner); `a` is outer to
/// `b` when some entry puts `a` before `b`, directly or through other axes.
class AxisOrder {
 public:
  /// The order given by `entries`. Errors: SpmdTypeError "<op>: PartitionSpec
  /// axis order conflict: ..." when two entries order two axes oppositely.
  static Result<AxisOrder> of(std::string_view op,
                              const std::vector<SpecEntry>& entries);
  /// Whether some input entry puts `a` outer to `b`.
  bool outer(const std::string& a, const std::string& b) const;
  /// The axes that propagation placed on output dim `dim` (in first-seen
  /// order), sorted outer to inner. Errors: SpmdTypeError "<op>: axes A and B
  /// both shard output dim d but no input PartitionSpec gives their order".
  Result<SpecEntry> order(std::string_view op, long dim, SpecEntry axes) const;

 private:
  std::map<std::string, std::set<std::string>> after_;  // a -> axes inner to a
};

/// Settings of a global session (spec §5.1, §12.2, §12.5).
struct GlobalContext {
  InferenceContext local;  ///< strictness and the current mesh
  bool global = true;      ///< false: a local session or a local() region
  /// Outer mesh axes that keep local semantics (spec §12.5).
  std::vector<std::string> local_axes;
  /// Issue #11 (extension, see docs/type-system.md): a value whose axis is
  /// known sharded (S(i)) is not accepted where P is expected (implicit V->P
  /// of a collective, reinterpret(V, P) outside expert mode).
  bool shard_is_not_partial = true;

  /// True when `axis` is checked globally: global session and not a local
  /// axis.
  bool is_global(std::string_view axis) const;
};

/// One operand of a global op, in the collection order of spec §6.1.
struct GlobalOperand {
  Operand::Kind kind = Operand::Kind::Tensor;
  std::optional<GlobalType> type;  ///< nullopt: untyped tensor / plain number
  Shape shape;                     ///< local shape (tensors)
  int position = -1;
  /// For the unmasked-rows rule (masks.h): what is known of a tensor's
  /// values (a bool tensor, a 0/1 mask) and a plain number's value. Only
  /// read when some operand carries unmasked rows.
  MaskKind mask = MaskKind::None;
  std::optional<double> constant;

  static GlobalOperand tensor(std::optional<GlobalType> t, Shape s = {},
                              int pos = -1) {
    return {Operand::Kind::Tensor, std::move(t), std::move(s), pos, {}, {}};
  }
  static GlobalOperand weak_scalar(int pos = -1) {
    return {
        Operand::Kind::WeakScalar, std::nullopt, Shape::of({}), pos, {}, {}};
  }
  static GlobalOperand typed_scalar(TensorType t, int pos = -1) {
    return {Operand::Kind::TypedScalar,
            GlobalType{std::move(t), {}, {}, {}},
            Shape::of({}),
            pos,
            {},
            {}};
  }
};

/// The global type of an op's result(s) and notes for the user.
struct GlobalResult {
  GlobalType type;
  std::vector<std::string> notes;
  /// The result's rank when a sharding rule computed it (only axes that some
  /// operand shards are propagated); otherwise the front end's own shape
  /// rules decide.
  std::optional<long> out_rank;
};

/// Only a V axis can shard a dim (spec §12.1: "axes in the spec are V"):
/// removes from `g` the spec entries and unknown shards of every axis whose
/// local type is R, I or P (e.g. the R result of a factory such as
/// new_zeros whose operand was sharded); a spec
/// left with no axis is dropped. infer_global applies it to its result.
void drop_shards_of_unvarying_axes(GlobalType& g);

/// Whole-op typing in a session (spec §6, §12.2): in global mode every
/// operand is checked (check_global_operand); the local rule (infer) types
/// the map; then every global axis that some operand shards is propagated
/// with propagate_axis; Partial promotes V to P (and the axis leaves the
/// spec), Shard(d) builds the output PartitionSpec with multi-axis entries
/// ordered as in the inputs (conflicting orders are an error); shards of
/// axes the local rule made R, I or P are dropped
/// (drop_shards_of_unvarying_axes). Unmasked rows (GlobalType::unmasked_rows):
/// an op that zeroes them where a mask says (core::zero_fills on the
/// operands' `mask` and `constant`) gives P on that axis; any other op keeps
/// the mark on a V result, and one that would make them a pending sum (a sum
/// over every dim) is an SpmdTypeError naming the masking fix. Outside
/// global mode (ctx.global false) the result carries no spec (§12.3).
Result<GlobalResult> infer_global(std::string_view op,
                                  const std::vector<GlobalOperand>& operands,
                                  const ShardingArgs& args,
                                  const GlobalContext& ctx = {});

}  // namespace spmd::core

#endif  // SPMD_CORE_SHARDING_PROPAGATION_H
