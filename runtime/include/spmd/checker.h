// spmd/checker.h - the runtime type checker: SPMD types on live tensors.
//
// While a spmd::checker::TypecheckGuard is alive on a thread, every ATen op
// that thread runs is intercepted in the c10 dispatcher (a boxed fallback on a
// mode key above Autograd), executed, and typed with the core rules (spec §5,
// §6): the output type map is inferred from the input type maps and stored
// beside the output tensors. An illegal combination throws
// spmd::SpmdTypeError naming the op, the axis, the input types and the fix,
// followed by the operator context of spec §9.3. The runtime collectives
// validate their input against `src` and stamp `dst` through the same
// checker (spec §7.2), and `loss.backward()` checks the loss type (§6.15).
//
// Types live in a process-wide side table keyed by the tensor's TensorImpl
// (never inside the tensor); an entry dies with its tensor. With no guard
// alive, nothing is intercepted and spmd::assert_type is one thread-local
// read ("off means off").
//
// Differences from the reference (documented in docs/runtime-checker.md):
// only local SPMD (no PartitionSpecs / global mode); typed scalars are 0-d
// typed tensors (typed_scalar); ops are classified by their ATen names, and
// C++ inline helpers that libtorch decomposes before the dispatcher (e.g.
// torch::nn::functional::linear, `2.0 / x`) are typed as the ops they call.
#ifndef SPMD_CHECKER_H
#define SPMD_CHECKER_H

#include <ATen/core/Tensor.h>
#include <spmd/annotations.h>
#include <spmd/core/tensor_type.h>
#include <spmd/type_annotations.h>

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spmd {

/// The tracked type map of `x` (spec §8.2 get_local_type): `{}` when `x` is
/// untyped or typed-empty. Works with or without a guard.
core::TensorType get_type(const at::Tensor& x);

/// Whether `x` carries a type map at all (typed-empty `{}` counts as typed,
/// spec §1 "untyped vs empty").
bool has_type(const at::Tensor& x);

/// The type of `x` on `axis`, or nullopt when the axis is unknown on `x`
/// (spec §8.2 maybe_get_axis_local_type).
std::optional<PerAxisType> get_axis_type(const at::Tensor& x, const Axis& axis);

/// Bare-type assertion (spec §8.1 form 3): `type` on every non-singleton axis
/// of the current mesh. Throws SpmdTypeError without a current mesh. A no-op
/// without a guard.
const at::Tensor& assert_type(const at::Tensor& x, PerAxisType type);

/// assert_type applied to each tensor of `xs` (spec §8.1: lists).
const std::vector<at::Tensor>& assert_type(
    const std::vector<at::Tensor>& xs, std::initializer_list<AxisType> type);

namespace checker {

/// One axis of the checker's current mesh: its name and its size. Axes of
/// size 1 are singleton: dropped from annotations and from completeness
/// (spec §3.1, §4.1).
struct MeshAxisInfo {
  std::string name;
  long size = 0;
};

/// Settings of a TypecheckGuard. Unset fields keep the enclosing guard's
/// value (spec §5.1: a nested typecheck overrides only what it is given);
/// the outermost guard defaults to strict mode and no mesh.
struct TypecheckOptions {
  /// true = strict (missing axes, untyped losses and collective inputs are
  /// errors), false = permissive (spec §5.1 table).
  std::optional<bool> strict;
  /// The current mesh for mesh completeness (§4.3), deterministic factories
  /// (§6.10), bare-type annotations and singleton axes. When unset and no
  /// enclosing guard set one, there is no current mesh.
  std::optional<std::vector<MeshAxisInfo>> mesh;
  /// Log one line per typed op to stderr: op, input types, output type
  /// (spec §5.2 tracing; lines whose types are all `{}` are suppressed).
  std::optional<bool> trace;
};

/// Turns type checking on for the calling thread while alive (the
/// reference's `typecheck()` context, spec §5.1). Guards nest: an inner guard
/// overrides only the options it is given and re-enables checking inside a
/// NoTypecheckGuard; everything is restored on destruction. Guards must be
/// destroyed in reverse order of construction on the thread that made them.
class TypecheckGuard {
 public:
  explicit TypecheckGuard(TypecheckOptions options = {});
  /// Shorthand: TypecheckGuard(strict) with no other override.
  explicit TypecheckGuard(bool strict);
  ~TypecheckGuard();
  TypecheckGuard(const TypecheckGuard&) = delete;
  TypecheckGuard& operator=(const TypecheckGuard&) = delete;

 private:
  struct Saved;
  Saved* saved_;
};

/// Pauses type checking on the calling thread while alive (spec §5.1
/// no_typecheck): ops run untyped, assert_type does nothing, collectives are
/// not checked. A no-op outside a guard.
class NoTypecheckGuard {
 public:
  NoTypecheckGuard();
  ~NoTypecheckGuard();
  NoTypecheckGuard(const NoTypecheckGuard&) = delete;
  NoTypecheckGuard& operator=(const NoTypecheckGuard&) = delete;

 private:
  bool was_paused_;
  bool was_excluded_;
  bool active_;
};

/// True iff a TypecheckGuard is alive on this thread and not paused
/// (spec §5.1 is_type_checking).
bool is_type_checking();

/// Whether the calling thread's checker is strict (true outside a guard).
bool is_strict();

/// The checker's current mesh axes (non-singleton ones, in mesh order), or
/// nullopt when no mesh is set.
std::optional<std::vector<std::string>> current_mesh_axes();

/// A 0-d tensor holding `value` typed with `type`: the C++ counterpart of the
/// reference's `Scalar(value, type)` wrapper (spec §11), usable as an operand
/// wherever ATen takes a tensor (e.g. `x * typed_scalar(2.0, {tp = R})`,
/// `at::narrow(x, 0, typed_scalar(0, {tp = V}), 2)`). Outside a guard it is
/// an untyped 0-d tensor. Throws UsageError for S(i) entries.
at::Tensor typed_scalar(const at::Scalar& value,
                        std::initializer_list<AxisType> type);

/// Copies the type of `src` onto `t` with assert_type semantics (spec §8.2
/// assert_local_type_like); `overrides` replace entries of src's map first.
/// Returns t. Throws SpmdTypeError on a mismatch.
const at::Tensor& assert_type_like(
    const at::Tensor& t, const at::Tensor& src,
    std::initializer_list<AxisType> overrides = {});

/// Checked overwrite of the type on one axis (spec §8.2 mutate_type): the
/// current type on `axis` must be local(src); it becomes local(dst).
/// Singleton axes are skipped. Returns x. Throws SpmdTypeError.
const at::Tensor& mutate_type(const at::Tensor& x, const Axis& axis,
                              PerAxisType src, PerAxisType dst);

/// mutate_type without an axis: every axis currently on `x` must be `src`
/// and becomes `dst`. Throws SpmdTypeError; `x` is unchanged on error.
const at::Tensor& mutate_type(const at::Tensor& x, PerAxisType src,
                              PerAxisType dst);

/// The loss check of spec §6.15 on `loss`'s tracked type (I and P allowed,
/// R and V rejected with the fix, untyped rejected when strict). Throws
/// SpmdTypeError. `loss.backward()` without a gradient performs this check
/// by itself while a guard is alive; call this before
/// torch::autograd::backward / grad, which bypass it.
void check_loss(const at::Tensor& loss);

/// `loss.backward(gradient)`: with no gradient, checks the loss first
/// (spec §6.15); the backward pass itself runs untyped (spec §6.14).
void backward(const at::Tensor& loss, const at::Tensor& gradient = {});

/// Number of entries in the side table (live tensors with a type plus dead
/// ones not yet swept). For tests and diagnostics.
std::size_t side_table_size();

/// Drops the entries of dead tensors now (it also happens incrementally: each
/// new entry re-examines the two oldest ones). Returns the new size.
std::size_t sweep_side_table();

/// Removes `x`'s type (it becomes untyped). For tests and tools.
void clear_type(const at::Tensor& x);

}  // namespace checker
}  // namespace spmd

#endif  // SPMD_CHECKER_H
