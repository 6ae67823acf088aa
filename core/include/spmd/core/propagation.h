// spmd/core/propagation.h - type propagation through ordinary tensor ops.
//
// Spec §6: the op registry (which op is LINEAR, MULTILINEAR or NONLINEAR, its
// tensor positions and nonlinear positions, type-level decompositions such as
// addmm), the per-axis decision procedure of §6.4, the axis-set and mesh
// completeness stage of §6.3, factories (§6.10), in-place/out checks (§6.11)
// and the fix suggestions of §9.4.
#ifndef SPMD_CORE_PROPAGATION_H
#define SPMD_CORE_PROPAGATION_H

#include <spmd/core/tensor_type.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spmd::core {

class AxisTable;

/// Linearity class of an op (spec §6.4, §6.5).
enum class OpClass { Nonlinear, Linear, Multilinear };
const char* to_string(OpClass c);  ///< "nonlinear", "linear", "multilinear"
/// Parses "nonlinear" / "linear" / "multilinear". Errors: ParseError.
Result<OpClass> parse_op_class(std::string_view text);

/// How an op's operand types combine beyond its class (spec §6.5, §6.10).
enum class OpShape {
  Plain,                 ///< one class over all operands
  LinearOfProduct,       ///< addmm & co: LINEAR(MULTILINEAR(op1, op2), op0)
  DeterministicFactory,  ///< zeros, ones, full, arange, tensor, ...: R under a
                         ///< mesh
  RandomFactory,         ///< randn, rand, empty, ...: {} when no operands
  NewFactory,            ///< new_zeros/new_ones/new_full: ignore the receiver
};

/// Registry entry for one op (spec §6.5). Positions are argument indices
/// (the receiver of a method is position 0).
struct OpInfo {
  std::string name;  ///< as looked up
  OpClass op_class = OpClass::Nonlinear;
  OpShape shape = OpShape::Plain;
  std::vector<int> tensor_positions;  ///< plain numbers here are weak Scalars
  std::vector<int> nonlinear_positions;  ///< operands here must not be P
  bool known = false;  ///< false: unknown op, NONLINEAR default
  /// The op mutates its first operand (a trailing-`_` method such as
  /// ".add_", or a compound assignment "__iadd__"); see is_inplace_name.
  bool inplace = false;
};

/// Whether an op name denotes an in-place op (spec §6.11): a trailing `_`
/// that is not part of a dunder (".add_", "add_", "at::Tensor::add_",
/// "aten::add_.Tensor"), or a compound-assignment dunder or operator
/// ("__iadd__", "operator+="). "__add__" and "add" are not.
bool is_inplace_name(std::string_view name);

/// The spec registry's name for an op spelled in C++ or as an ATen schema
/// (spec §6.5 registers Python names):
///  * ATen: "aten::add.Tensor" -> "add" (overload dropped), in-place
///    "aten::add_.Tensor" -> ".add_" (in-place variants are methods), and the
///    ATen names whose Python name differs: "aten::rsub" -> "__rsub__",
///    "aten::index" -> "__getitem__", "aten::scalar_tensor" -> "tensor",
///    "aten::split_with_sizes" / "unsafe_split" -> "split", "unsafe_chunk"
///    -> "chunk", the properties "aten::T" / "numpy_T" -> "prop T",
///    "H" / "matrix_H" -> "prop H", "mT", "mH" / "adjoint" -> "prop mH",
///    "real", "imag";
///  * C++: "torch::add", "at::add", "torch::nn::functional::linear" ->
///    the last component; "at::Tensor::add" -> ".add"; "operator+" ->
///    "__add__", "operator+=" -> "__iadd__".
/// Other names are returned unchanged.
std::string normalize_op_name(std::string_view name);

/// normalize_op_name for a dispatcher operator name of any namespace
/// ("aten::add_.Tensor", "c10d::foo_"): namespace and overload dropped,
/// the ATen renames applied, in-place variants made methods (".add_").
std::string normalize_schema_name(std::string_view schema_name);

/// classify_op for a dispatcher operator name of any namespace (the runtime
/// checker's fallback sees every op this way): normalize_schema_name, then
/// the registry, then, for a function the registry lists only as a method,
/// the method ("aten::view" -> ".view"). Unknown ops are NONLINEAR, named by
/// the normalised name.
OpInfo classify_schema_op(std::string_view schema_name);

/// Looks an op up by the spec's naming: function "add", method ".add",
/// in-place method ".add_", dunder "__add__", property "prop T", or by a C++
/// or ATen spelling (normalize_op_name); "aten::..." names go through
/// classify_schema_op. Unknown names give a NONLINEAR entry with known =
/// false (spec §6.6), named by `name` as given (ATen: the normalised name).
/// `inplace` is set from is_inplace_name.
OpInfo classify_op(std::string_view name);

/// Maps a C++ operator spelling to the spec's dunder: "+" -> "__add__",
/// "+=" -> "__iadd__", "*" -> "__mul__", "/" -> "__truediv__", "-" with
/// `unary` -> "__neg__", "[]" -> "__getitem__", ">=" -> "__ge__", ...
/// `reflected`: the left operand is a plain number and the tensor is on the
/// right (`2.0 / x` -> "__rtruediv__", `2 * x` -> "__rmul__"); the caller then
/// passes the tensor as operand position 0 and the number as position 1.
/// Empty string when the operator has no tensor meaning (e.g. "=").
std::string dunder_for_operator(std::string_view op, bool unary,
                                bool reflected = false);

/// One operand of one axis for the per-axis rule: a type, or the weak scalar
/// sentinel of a plain number (spec §6.4, §6.9).
struct AxisOperand {
  bool weak_scalar = false;
  PerAxisType type{};  ///< ignored when weak_scalar

  static AxisOperand of(PerAxisType t) { return {false, t.local()}; }
  static AxisOperand scalar() { return {true, {}}; }
};

/// The per-axis decision procedure of spec §6.4 (rows 1-10, first match
/// wins). `axis` only names the axis in messages. Errors: SpmdTypeError with
/// the §9.4 suggestions attached to `fix` ("Are you missing a collective ...").
Result<PerAxisType> infer_axis(const std::vector<AxisOperand>& operands,
                               OpClass op_class, std::string_view axis,
                               std::string_view op_name = {});

/// One operand of an op (spec §6.1), in collection order.
struct Operand {
  enum class Kind {
    Tensor,       ///< a tensor: `type` nullopt when untyped (contributes {})
    WeakScalar,   ///< a plain number at a declared tensor position
    TypedScalar,  ///< a Scalar wrapper: `type` holds its map
  };
  Kind kind = Kind::Tensor;
  std::optional<TensorType> type;
  int position = -1;  ///< argument index, for nonlinear positions; -1 = unknown

  static Operand tensor(std::optional<TensorType> t, int pos = -1) {
    return {Kind::Tensor, std::move(t), pos};
  }
  static Operand weak_scalar(int pos = -1) {
    return {Kind::WeakScalar, {}, pos};
  }
  static Operand typed_scalar(TensorType t, int pos = -1) {
    return {Kind::TypedScalar, std::move(t), pos};
  }
};

/// Session settings that inference depends on (spec §5.1, §4.3).
struct InferenceContext {
  bool strict = true;
  /// Axes of the current mesh (mesh completeness); nullopt = no current mesh.
  std::optional<std::vector<std::string>> mesh_axes;
  /// Layouts of the axis names (spec §10): when set, operands typed on
  /// another mesh are lifted onto the current mesh first (§6.2, see
  /// mesh_region.h) and missing-axis errors carry the §9.5 hint.
  std::shared_ptr<const AxisTable> axis_table;
};

/// Whole-op inference (spec §6.1-§6.10): nonlinear-position check,
/// type-level decompositions, factories, axis set and completeness (strict:
/// every operand must carry every axis of the union and of the mesh), then
/// the per-axis rule on each axis in sorted order; the first failing axis is
/// reported. Errors name the op, the axis, `args[i]` and the types.
Result<TensorType> infer(const OpInfo& op, const std::vector<Operand>& operands,
                         const InferenceContext& ctx = {});

/// Convenience: classify_op(op_name) then infer.
Result<TensorType> infer(std::string_view op_name,
                         const std::vector<Operand>& operands,
                         const InferenceContext& ctx = {});

/// In-place / out= rule (spec §6.11): the mutated tensor had `before`
/// (nullopt = untyped), the op inferred `inferred`. Returns the mutated
/// tensor's new type. Widening R->V or I->V is allowed only when the tensor
/// did not require grad before the op. Errors: SpmdTypeError "in-place/out
/// operation would change SPMD type on axis A from X to Y".
Result<TensorType> apply_inplace(std::string_view op_name,
                                 const std::optional<TensorType>& before,
                                 const TensorType& inferred,
                                 bool requires_grad);

/// Whether the op `name` (a method or function name, `aten::` prefix and
/// overload allowed: "view", "aten::select.int", "narrow") may return a tensor
/// sharing its input's storage (spec §6.11.1): the view ops, and those that
/// may return their input itself (`contiguous`, `reshape`). Front ends that
/// cannot see storage (the plugin) use it to know which names alias.
bool is_view_op(std::string_view name);

/// Aliasing rule (spec §6.11.1): an in-place write of a value typed `written`
/// through one tensor also changes every other tensor whose memory overlaps
/// it (its base, other views of the same storage). `alias` is such a tensor's
/// type before the write; returns its type after. Per axis: unchanged when
/// equal; V absorbs R and I writes; R or I widen to V only when the alias did
/// not require grad; anything else (P mixed with another type, R with I) is
/// an SpmdTypeError naming the axis, with the fix (clone the view first, or
/// write through the base). An untyped alias stays untyped (nullopt).
Result<std::optional<TensorType>> apply_alias_write(
    std::string_view op_name, const std::optional<TensorType>& alias,
    const TensorType& written, bool requires_grad);

}  // namespace spmd::core

#endif  // SPMD_CORE_PROPAGATION_H
