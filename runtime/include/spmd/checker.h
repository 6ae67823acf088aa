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
// Global SPMD (spec §12) is opt-in: TypecheckOptions::local = false (the
// reference's `typecheck(local=False)`). Tensors then carry their shard dims
// (a PartitionSpec beside the type map) and ops propagate them through
// core's sharding rules (docs/runtime-checker.md, "Global mode").
//
// Differences from the reference (documented in docs/runtime-checker.md):
// typed scalars are 0-d
// typed tensors (typed_scalar); ops are classified by their ATen names, and
// C++ inline helpers that libtorch decomposes before the dispatcher (e.g.
// torch::nn::functional::linear, `2.0 / x`) are typed as the ops they call.
#ifndef SPMD_CHECKER_H
#define SPMD_CHECKER_H

#include <ATen/core/Tensor.h>
#include <spmd/annotations.h>
#include <spmd/core/global_collectives.h>
#include <spmd/core/partition_spec.h>
#include <spmd/core/tensor_type.h>
#include <spmd/type_annotations.h>

#include <cstddef>
#include <functional>
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
const at::Tensor& assert_type(const at::Tensor& x, PerAxisType type,
                              SourceLocation loc = SourceLocation::current());

/// assert_type with an explicit PartitionSpec (spec §8.1 form 1, §12.1):
/// `type` holds R/I/V/P (no S(i) together with a spec), `spec` has one entry
/// per dim of `x` and its axes become V. A typed tensor is refined: the spec
/// may add shard dims but not contradict the stored ones ("PartitionSpec
/// conflict at dim k"). Stored in local mode too; ops use it in global mode
/// only. A no-op without a guard. Throws SpmdTypeError.
const at::Tensor& assert_type(const at::Tensor& x,
                              std::initializer_list<AxisType> type,
                              const core::PartitionSpec& spec,
                              SourceLocation loc = SourceLocation::current());

/// The PartitionSpec stored beside `x` (spec §12.1 get_partition_spec), or
/// nullopt when no axis is known to shard a dim of `x`. Works with or without
/// a guard.
std::optional<core::PartitionSpec> get_partition_spec(const at::Tensor& x);

/// The global type of `x`: its type map, its PartitionSpec and the axes whose
/// shard dim is unknown (an op the core has no sharding rule for). Printed
/// as "{tp: S(0)}" by GlobalType::to_string.
core::GlobalType get_global_type(const at::Tensor& x);

/// assert_type applied to each tensor of `xs` (spec §8.1: lists).
const std::vector<at::Tensor>& assert_type(
    const std::vector<at::Tensor>& xs, std::initializer_list<AxisType> type,
    SourceLocation loc = SourceLocation::current());

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
  /// Log one line per typed op to stderr: op, input types, output type and
  /// the last spmd call site of the thread (spec §5.2 tracing; lines whose
  /// types are all `{}` are suppressed).
  std::optional<bool> trace;
  /// Local (true, the default of the outermost guard) or global SPMD (false):
  /// the reference's `typecheck(local=...)` knob (spec §12.2). In global mode
  /// every V operand on a global axis needs a shard dim (S(i) or a
  /// PartitionSpec), ops propagate shard dims (an op that would need a
  /// redistribution is an error), and a V result that is a pending sum by
  /// propagation becomes P.
  std::optional<bool> local;
  /// Outer mesh axes that keep local semantics in global mode (spec §12.5):
  /// an outer prefix of the current mesh, outer to inner (checked when the
  /// first op is typed).
  std::optional<std::vector<std::string>> local_axes;
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

/// A typed local region inside global mode (spec §12.3 `local()`): while
/// alive, ops on this thread are typed with the local rules (no shard
/// propagation, V needs no spec) and their results carry no PartitionSpec; a
/// V result used by global code after the region needs a fresh S(i) or
/// PartitionSpec from assert_type. A no-op outside a guard or in local mode.
class LocalRegionGuard {
 public:
  LocalRegionGuard();
  ~LocalRegionGuard();
  LocalRegionGuard(const LocalRegionGuard&) = delete;
  LocalRegionGuard& operator=(const LocalRegionGuard&) = delete;

 private:
  bool active_;
};

/// Whether ops on this thread are typed in global mode now (a guard alive
/// with local = false, outside a LocalRegionGuard).
bool is_global_mode();

/// A normalised PartitionSpec (spec §12.1) for assert_type: one entry per
/// tensor dim, each `{}` (None) or the axes that shard it, outer to inner,
/// e.g. `partition_spec({{dp, tp}, {}})`. Singleton axes of the current mesh
/// are dropped. Throws SpmdTypeError when an axis appears twice.
core::PartitionSpec partition_spec(
    std::initializer_list<std::vector<Axis>> entries);

/// One leaf of local_map's in_types / out_types (spec §12.3).
core::BoundaryType boundary(std::initializer_list<AxisType> type);
core::BoundaryType boundary(std::initializer_list<AxisType> type,
                            const core::PartitionSpec& spec);
/// A bare PartitionSpec leaf: its axes are V.
core::BoundaryType boundary(const core::PartitionSpec& spec);

/// local_map (spec §12.3): checks `inputs` against `in_types` with
/// assert_type semantics (nullopt = Infer: unchecked), runs `body` in a
/// typed local region, then stamps its results with `out_types` (S(i) and
/// specs allowed). An undefined tensor is a non-tensor leaf. Leaf counts
/// must match. Throws SpmdTypeError naming `name` and the leaf. Outside a
/// guard it only calls `body`.
std::vector<at::Tensor> local_map(
    const std::function<
        std::vector<at::Tensor>(const std::vector<at::Tensor>&)>& body,
    const std::vector<at::Tensor>& inputs,
    const std::optional<std::vector<core::BoundaryType>>& in_types,
    const std::vector<core::BoundaryType>& out_types,
    std::string_view name = "local_map");

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
    std::initializer_list<AxisType> overrides = {},
    SourceLocation loc = SourceLocation::current());

/// Checked overwrite of the type on one axis (spec §8.2 mutate_type): the
/// current type on `axis` must be local(src); it becomes local(dst).
/// Singleton axes are skipped. Returns x. Throws SpmdTypeError.
const at::Tensor& mutate_type(const at::Tensor& x, const Axis& axis,
                              PerAxisType src, PerAxisType dst,
                              SourceLocation loc = SourceLocation::current());

/// mutate_type without an axis: every axis currently on `x` must be `src`
/// and becomes `dst`. Throws SpmdTypeError; `x` is unchanged on error.
const at::Tensor& mutate_type(const at::Tensor& x, PerAxisType src,
                              PerAxisType dst,
                              SourceLocation loc = SourceLocation::current());

/// R <-> I retag for a tensor without gradient (spec §8.2
/// reinterpret_no_grad): R and I hold the same values on every rank and
/// differ only in their backward contract, so with no gradient the type on
/// `axis` (R or I) simply becomes `dst`. The data is not touched; returns x.
/// Singleton axes are skipped; a no-op without a guard. Throws UsageError
/// when x requires grad or `dst` is not R or I, SpmdTypeError when `axis` is
/// not in x's type or its type there is not R or I.
const at::Tensor& reinterpret_no_grad(
    const at::Tensor& x, const Axis& axis, PerAxisType dst,
    SourceLocation loc = SourceLocation::current());

/// The loss check of spec §6.15 on `loss`'s tracked type (I and P allowed,
/// R and V rejected with the fix, untyped rejected when strict). Throws
/// SpmdTypeError. `loss.backward()` without a gradient performs this check
/// by itself while a guard is alive; call this before
/// torch::autograd::backward / grad, which bypass it.
void check_loss(const at::Tensor& loss,
                SourceLocation loc = SourceLocation::current());

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
