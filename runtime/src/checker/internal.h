// internal.h - what the pieces of the runtime checker share (private to
// runtime/src/checker). The pieces: type_store.cpp (interned type maps and
// the side table beside tensors), thread_state.cpp (per-thread state and the
// guards), error_context.cpp (operator context of errors), classify.cpp (ATen
// schema -> spec op), fallback.cpp (the boxed dispatcher fallback), hooks.cpp
// (the collective hook and the backward() check; the version-specific part
// sits in ../torch_compat.cpp) and annotations.cpp (the public annotation
// API). Rules come only from spmd::core.
#ifndef SPMD_RUNTIME_CHECKER_INTERNAL_H
#define SPMD_RUNTIME_CHECKER_INTERNAL_H

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/function_schema.h>
#include <ATen/core/ivalue.h>
#include <ATen/core/stack.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/util/SmallVector.h>
#include <spmd/checker.h>
#include <spmd/core/error.h>
#include <spmd/core/global_collectives.h>
#include <spmd/core/propagation.h>
#include <spmd/core/tensor_type.h>
#include <spmd/detail/collective_hook.h>
#include <spmd/mesh.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "../torch_compat.h"

namespace c10 {
class OperatorHandle;
}

namespace spmd::checker::internal {

using core::TensorType;

/// The mode key of the fallback (see compat::kCheckerModeKey). It sits above
/// Autograd, so composites such as aten::linear and aten::matmul are seen
/// before they decompose; it is excluded while the op runs, so their
/// decompositions are not typed again.
inline constexpr c10::DispatchKey kModeKey = compat::kCheckerModeKey;

// --- the dispatcher fallback (fallback.cpp) ----------------------------------

/// Runs `op` below the checker's mode key: its result is not typed and the
/// ATen ops it calls internally are not seen by the checker.
void run_untyped(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                 torch::jit::Stack* stack);

// --- type store (type_store.cpp) ---------------------------------------------

/// An interned type map; nullptr means untyped.
using TypeRef = const TensorType*;

/// The one stored copy of `t` (thread-safe; never freed).
TypeRef intern(const TensorType& t);
/// The type stored beside `t`, or nullptr (also for an undefined tensor).
TypeRef type_of(const at::Tensor& t);
/// Shard information of a global type (spec §12.1): the PartitionSpec and the
/// V axes whose shard dim is unknown. Interned like type maps; nullptr = none.
struct ShardInfo {
  std::optional<core::PartitionSpec> spec;
  std::set<std::string> unknown;
  std::set<std::string> unmasked;  ///< core::GlobalType::unmasked_rows
};
using ShardRef = const ShardInfo*;
/// The one stored copy of `g`'s shard information, nullptr when it has none.
ShardRef intern_shards(const core::GlobalType& g);
/// The shard information stored beside `t`, or nullptr.
ShardRef shards_of(const at::Tensor& t);
/// `t`'s global type (nullopt = untyped).
std::optional<core::GlobalType> global_of(const at::Tensor& t);
/// Stores `type` beside `t` and drops its shard information (local results
/// carry no PartitionSpec, spec §12.3). Nothing for an undefined tensor.
void stamp(const at::Tensor& t, TypeRef type);
/// Stores a type map and its shard information beside `t`.
void stamp(const at::Tensor& t, TypeRef type, ShardRef shards);
/// stamp(t, intern(g.local), intern_shards(g)).
void stamp_global(const at::Tensor& t, const core::GlobalType& g);
/// Removes the entry of `impl`.
void erase_type(const c10::TensorImpl* impl);
/// The live typed tensors other than `t` whose bytes overlap `t`'s in the
/// same storage: its base and other views (spec §6.11.1). Strided tensors
/// only; empty for a tensor without storage or elements.
c10::SmallVector<at::Tensor, 4> typed_aliases(const at::Tensor& t);
/// Number of entries; sweep drops dead ones first.
std::size_t store_size();
std::size_t sweep_store();

// --- thread state (thread_state.cpp) -----------------------------------------

// The mesh the checker sees: non-singleton axes in mesh order, and every
// name of the mesh (singletons included) for annotation checks.
struct MeshView {
  std::vector<std::string> axes;
  std::vector<MeshAxisInfo> all;
  bool is_singleton(std::string_view name) const {
    for (const auto& a : all)
      if (a.name == name) return a.size == 1;
    return false;
  }
  bool has_name(std::string_view name) const {
    for (const auto& a : all)
      if (a.name == name) return true;
    return false;
  }
};

// An immutable inference context; its address is part of the memo key.
struct Ctx {
  bool strict = true;
  std::shared_ptr<const MeshView> mesh;     // explicit mesh from a guard
  const DeviceMesh* device_mesh = nullptr;  // the runtime mesh it came from
  core::InferenceContext inference;
  // Global SPMD (spec §12): global session and outside a local region;
  // `global.local` mirrors `inference`.
  bool is_global = false;
  core::GlobalContext global;
};

struct ThreadState {
  int depth = 0;
  bool strict = true;
  bool trace = false;
  bool paused = false;
  bool global = false;   // TypecheckOptions::local == false
  int local_region = 0;  // LocalRegionGuard nesting
  std::vector<std::string> local_axes;
  std::shared_ptr<const MeshView> explicit_mesh;  // from TypecheckOptions
  // Inference contexts, kept for the state's lifetime so that their
  // addresses stay unique memo-key components.
  std::vector<std::unique_ptr<Ctx>> contexts;
  const Ctx* ctx = nullptr;

  // Memo of core::infer: (op, ctx, operand kinds/positions/types) -> result.
  struct Memo {
    TypeRef type = nullptr;
    std::shared_ptr<const core::TypeError> error;
  };
  struct KeyHash {
    std::size_t operator()(const std::vector<std::uintptr_t>& k) const {
      std::size_t h = 1469598103934665603ull;
      for (std::uintptr_t w : k) h = (h ^ w) * 1099511628211ull;
      return h;
    }
  };
  std::unordered_map<std::vector<std::uintptr_t>, Memo, KeyHash> infer_memo;
  std::unordered_map<std::vector<std::uintptr_t>, Memo, KeyHash> inplace_memo;
  std::vector<std::uintptr_t> key;  // scratch
};

/// The mesh view of `axes` (singletons kept in `all`, dropped from `axes`).
std::shared_ptr<const MeshView> make_mesh_view(
    const std::vector<MeshAxisInfo>& axes);

/// The calling thread's state while a guard is alive, else nullptr.
extern thread_local ThreadState* tls_state;

/// The thread's state if checking is on (a guard alive, not paused).
inline ThreadState* active_state() {
  ThreadState* st = tls_state;
  return (st != nullptr && !st->paused) ? st : nullptr;
}

/// The current context: the guard's explicit mesh wins, else the runtime's
/// current spmd::MeshGuard, else no mesh (spec §4).
const Ctx& current_ctx(ThreadState& st);

// --- errors with the operator context of spec §9.3 (error_context.cpp) ------

/// Throws `error` with `context` (the operator call) appended.
[[noreturn]] void throw_with_context(core::TypeError error,
                                     const std::string& context);
/// "f32[2, 3] {tp: V}" (or "None", "untyped").
std::string describe_tensor(const at::Tensor& t);
/// " under mesh {dp, tp}", or "" without a mesh.
std::string mesh_suffix(const Ctx& ctx);
/// "  In aten::add.Tensor(\n    self: ...,\n  ) under mesh {...}".
std::string op_context(const c10::FunctionSchema& schema,
                       const std::vector<c10::IValue>& args, const Ctx& ctx);

// --- op classification (classify.cpp) ----------------------------------------

enum class ArgRole : unsigned char {
  Input,       // contributes its type
  InputWrite,  // contributes and is mutated (in-place self)
  Out,         // out= destination: mutated, does not contribute (§6.11)
  Attributes,  // gives dtype/device only (Tensor::to(other)): ignored
};

struct OpEntry {
  std::string qualified;  // "aten::add.Tensor"
  core::OpInfo info;      // classified under the spec name
  bool passthrough = false;
  bool c10d = false;  // a raw c10d collective (raw_c10d.cpp, spec §14)
  std::vector<ArgRole> roles;
  std::vector<bool> tensor_position;  // plain numbers here are weak scalars
  std::size_t num_args = 0;
  std::size_t num_returns = 0;
};

/// The classification of `op`, cached per thread by schema.
const OpEntry& op_entry(const c10::OperatorHandle& op);

/// Walks an op's arguments as the type rules see them: `on_tensor(i, t)` for
/// every tensor, tensor-list element and Tensor?[] element of argument `i`,
/// `on_scalar(i)` for a plain number at a tensor position (a weak scalar).
/// Shared by the local (fallback.cpp) and global (global.cpp) transfer.
template <typename OnTensor, typename OnScalar>
void for_each_operand(const OpEntry& e, const c10::IValue* args,
                      OnTensor&& on_tensor, OnScalar&& on_scalar) {
  for (std::size_t i = 0; i < e.num_args; ++i) {
    const c10::IValue& v = args[i];
    if (v.isTensor()) {
      on_tensor(i, v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList().vec()) on_tensor(i, t);
    } else if (v.isList()) {  // Tensor?[] (index)
      for (const c10::IValue& item : v.toListRef())
        if (item.isTensor()) on_tensor(i, item.toTensor());
    } else if ((v.isDouble() || v.isInt() || v.isComplexDouble()) &&
               e.tensor_position[i]) {
      on_scalar(i);
    }
  }
}

// --- annotations (annotations.cpp) ------------------------------------------

/// assert_type with the entries of a vector; `what` names the caller in
/// errors ("no_typecheck in_types[0]").
const at::Tensor& assert_entries(const at::Tensor& x,
                                 const std::vector<AxisType>& type,
                                 const std::string& what);

/// A local_map boundary leaf with its axis names resolved as assert_type
/// resolves them (spec §12.3): a flattened axis (dp_cp) stands for its
/// components, outermost first, in the map and in the PartitionSpec, and
/// singleton components are dropped. An S(i) on a flattened axis of several
/// components becomes V plus the tuple (dp, cp) on dim i of the tensor `t`,
/// so the leaf's other S(i) move into that spec too. Errors: SpmdTypeError
/// for an unknown name or two axes on one dim; UsageError for an axis given
/// twice. `what` names the leaf ("local_map[f] input 0").
core::BoundaryType resolve_boundary_names(const core::BoundaryType& leaf,
                                          const at::Tensor& t,
                                          const std::string& what);

// --- raw c10d collectives (raw_c10d.cpp) -------------------------------------

/// Types a c10d-namespace op (a raw ProcessGroup collective) by the table of
/// spec §14 and runs it; refuses the collectives the table does not cover.
void raw_c10d(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
              torch::jit::Stack* stack, ThreadState& st, const OpEntry& e);

// --- global mode (global.cpp)
// -------------------------------------------------

/// Types one op in global mode (spec §12.2) in place of the local path:
/// operand global types and local shapes, core::infer_global, in-place rule,
/// run, stamp type maps and PartitionSpecs.
void typecheck_global(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                      torch::jit::Stack* stack, const OpEntry& e,
                      const Ctx& ctx, ThreadState& st);
/// The collective hook in global mode (spec §12.4): returns false (nothing
/// done) when `ctx` is not global.
bool collective_global(const Ctx& ctx, const core::CollectiveCall& call,
                       std::string_view axis, bool axis_is_singleton,
                       const at::Tensor& input, const at::Tensor& output);
/// "{tp: S(0)}" (with the PartitionSpec appended when an entry has several
/// axes), or the type map when `t` has no shard information.
std::string type_string(const at::Tensor& t);

// --- hooks (hooks.cpp)
// ---------------------------------------------------------

/// The hook the runtime collectives call while a guard is alive (spec §7.2).
spmd::detail::CollectiveHook& collective_hook();
/// Routes Tensor::backward through the loss check (once per process).
void install_backward_check();
/// The loss check of spec §6.15 (throws SpmdTypeError).
void check_loss_impl(const at::Tensor& loss, const ThreadState& st);
/// assert_type_like (spec §8.2): `src`'s type map with `overrides` on top
/// and, when `with_spec`, `src`'s PartitionSpec less the overridden axes
/// (plus the shard dims of S(i) overrides), asserted on `t`. Throws
/// SpmdTypeError when the copied spec does not fit `t`'s ndim.
const at::Tensor& assert_like(const at::Tensor& t, const at::Tensor& src,
                              std::initializer_list<AxisType> overrides,
                              bool with_spec);
/// Applies (axis, src, dst) type updates to `x` all at once (spec §8.2):
/// validated first, so `x` keeps its type on error (SpmdTypeError with the
/// mutate_type context).
const at::Tensor& mutate_axes(
    const at::Tensor& x,
    const std::vector<std::tuple<std::string, PerAxisType, PerAxisType>>& ups);

}  // namespace spmd::checker::internal

#endif  // SPMD_RUNTIME_CHECKER_INTERNAL_H
