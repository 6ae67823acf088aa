// checker.cpp - the runtime type checker: a dispatcher fallback that types
// every ATen op with the core rules while a TypecheckGuard is alive.
//
// Pieces, in order: the interned type maps and the side table that stores
// them beside tensors (keyed by TensorImpl, swept when tensors die); the
// per-thread checker state that TypecheckGuard / NoTypecheckGuard push and
// pop; the ATen-name -> spec-name classification of ops; the boxed fallback
// itself (collect operand types, infer with a per-thread memo, run the op,
// stamp the outputs, apply the in-place rule); the collective hook; the
// backward() loss check; and the public annotation API. Rules come only from
// spmd::core; this file decides what the operands of an ATen call are.
#include <ATen/ATen.h>
#include <ATen/core/VariableHooksInterface.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/SmallVector.h>
#include <c10/util/flat_hash_map.h>
#include <spmd/checker.h>
#include <spmd/core/annotation_rules.h>
#include <spmd/core/collectives.h>
#include <spmd/core/propagation.h>
#include <spmd/detail/collective_hook.h>
#include <spmd/errors.h>
#include <spmd/mesh.h>
#include <torch/csrc/autograd/graph_task.h>
#include <torch/library.h>
#include <torch/version.h>

#include <algorithm>
#include <array>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace spmd::checker {
namespace {

using core::TensorType;

// The mode key of the fallback. It sits above Autograd, so composites such as
// aten::linear and aten::matmul are seen before they decompose; it is excluded
// while the op runs, so their decompositions are not typed again.
constexpr c10::DispatchKey kModeKey =
    c10::DispatchKey::TESTING_ONLY_GenericMode;

// ---------------------------------------------------------------------------
// Interned type maps. The lattice of maps a program uses is small, so each
// distinct map is stored once and referred to by pointer (nullptr = untyped);
// the side table and the inference memo then hold pointers, not maps.

using TypeRef = const TensorType*;

class TypeInterner {
 public:
  TypeRef intern(const TensorType& t) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = types_.find(t);
    if (it != types_.end()) return it->second.get();
    auto owned = std::make_unique<TensorType>(t);
    TypeRef ref = owned.get();
    types_.emplace(t, std::move(owned));
    return ref;
  }

 private:
  std::mutex mu_;
  std::unordered_map<TensorType, std::unique_ptr<TensorType>> types_;
};

TypeInterner& interner() {
  static auto* i = new TypeInterner();  // never destroyed: outlives tensors
  return *i;
}

TypeRef intern(const TensorType& t) { return interner().intern(t); }

// ---------------------------------------------------------------------------
// The side table: TensorImpl* -> type. Each entry holds a weak reference to
// its TensorImpl; a weak reference keeps the impl's memory (not its storage)
// allocated, so an address cannot be reused by another tensor while its entry
// exists. Dead entries are reclaimed incrementally: every insertion also
// re-examines the two oldest entries of its shard (a round-robin queue) and
// drops them if their tensor died, so the table holds at most about twice the
// live typed tensors and dead impls are freed soon after their tensors (no
// leak over long runs, and little heap fragmentation from kept shells).
// Sharded to keep rank threads apart.

class SideTable {
 public:
  static constexpr std::size_t kShards = 16;
  static constexpr int kReclaimPerInsert = 2;

  // nullptr when untyped.
  TypeRef lookup(const c10::TensorImpl* impl) {
    Shard& s = shard(impl);
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(impl);
    return it == s.map.end() ? nullptr : it->second.type;
  }

  void set(const at::Tensor& t, TypeRef type) {
    const c10::TensorImpl* impl = t.unsafeGetTensorImpl();
    Shard& s = shard(impl);
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(impl);
    if (it != s.map.end()) {
      it->second.type = type;
      return;
    }
    s.map.emplace(
        impl,
        Entry{c10::weak_intrusive_ptr<c10::TensorImpl>(t.getIntrusivePtr()),
              type});
    s.queue.push_back(impl);
    for (int k = 0; k < kReclaimPerInsert && !s.queue.empty(); ++k) {
      const c10::TensorImpl* old = s.queue.front();
      s.queue.pop_front();
      auto e = s.map.find(old);
      if (e == s.map.end()) continue;  // cleared explicitly
      if (e->second.owner.expired()) {
        s.map.erase(e);
      } else {
        s.queue.push_back(old);
      }
    }
  }

  void erase(const c10::TensorImpl* impl) {
    Shard& s = shard(impl);
    std::lock_guard<std::mutex> lock(s.mu);
    s.map.erase(impl);
  }

  std::size_t size() {
    std::size_t n = 0;
    for (Shard& s : shards_) {
      std::lock_guard<std::mutex> lock(s.mu);
      n += s.map.size();
    }
    return n;
  }

  // Drops every dead entry now.
  std::size_t sweep() {
    std::size_t n = 0;
    for (Shard& s : shards_) {
      std::lock_guard<std::mutex> lock(s.mu);
      std::deque<const c10::TensorImpl*> live;
      for (const c10::TensorImpl* impl : s.queue) {
        auto e = s.map.find(impl);
        if (e == s.map.end()) continue;
        if (e->second.owner.expired()) {
          s.map.erase(e);
        } else {
          live.push_back(impl);
        }
      }
      s.queue.swap(live);
      n += s.map.size();
    }
    return n;
  }

 private:
  struct Entry {
    c10::weak_intrusive_ptr<c10::TensorImpl> owner;
    TypeRef type;
  };
  struct Shard {
    std::mutex mu;
    ska::flat_hash_map<const c10::TensorImpl*, Entry> map;
    // Every key of `map` at least once, oldest first (may hold duplicates
    // and keys already erased; both are skipped).
    std::deque<const c10::TensorImpl*> queue;
  };

  Shard& shard(const c10::TensorImpl* impl) {
    auto bits = reinterpret_cast<std::uintptr_t>(impl);
    return shards_[(bits >> 6) % kShards];
  }

  std::array<Shard, kShards> shards_;
};

SideTable& table() {
  static auto* t =
      new SideTable();  // never destroyed: tensors may outlive main
  return *t;
}

TypeRef type_of(const at::Tensor& t) {
  return t.defined() ? table().lookup(t.unsafeGetTensorImpl()) : nullptr;
}

void stamp(const at::Tensor& t, TypeRef type) {
  if (t.defined()) table().set(t, type);
}

// ---------------------------------------------------------------------------
// Per-thread checker state.

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

std::shared_ptr<const MeshView> make_mesh_view(
    const std::vector<MeshAxisInfo>& axes) {
  auto view = std::make_shared<MeshView>();
  view->all = axes;
  for (const auto& a : axes)
    if (a.size != 1) view->axes.push_back(a.name);
  return view;
}

// An immutable inference context; its address is part of the memo key.
struct Ctx {
  bool strict = true;
  std::shared_ptr<const MeshView> mesh;     // explicit mesh from a guard
  const DeviceMesh* device_mesh = nullptr;  // the runtime mesh it came from
  core::InferenceContext inference;
};

struct ThreadState {
  int depth = 0;
  bool strict = true;
  bool trace = false;
  bool paused = false;
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

thread_local ThreadState* tls_state = nullptr;

ThreadState* active_state() {
  ThreadState* st = tls_state;
  return (st != nullptr && !st->paused) ? st : nullptr;
}

// The current context: the guard's explicit mesh wins, else the runtime's
// current spmd::MeshGuard, else no mesh (spec §4).
// Whether `c` was made for this strictness and mesh. A runtime mesh is
// compared by address and by its axes, since a destroyed mesh's address may
// be reused by another.
bool ctx_matches(const Ctx& c, const ThreadState& st, const DeviceMesh* dm) {
  if (c.strict != st.strict || c.device_mesh != dm) return false;
  if (dm == nullptr) return c.mesh == st.explicit_mesh;
  const auto& axes = dm->axes();
  if (!c.mesh || c.mesh->all.size() != axes.size()) return false;
  for (std::size_t i = 0; i < axes.size(); ++i)
    if (c.mesh->all[i].size != axes[i].size ||
        c.mesh->all[i].name != axes[i].name)
      return false;
  return true;
}

const Ctx& current_ctx(ThreadState& st) {
  const DeviceMesh* dm = st.explicit_mesh ? nullptr : spmd::current_mesh();
  if (st.ctx != nullptr && ctx_matches(*st.ctx, st, dm)) return *st.ctx;
  for (const auto& c : st.contexts) {
    if (ctx_matches(*c, st, dm)) {
      st.ctx = c.get();
      return *c;
    }
  }
  auto c = std::make_unique<Ctx>();
  c->strict = st.strict;
  c->device_mesh = dm;
  if (dm != nullptr) {
    std::vector<MeshAxisInfo> axes;
    for (const auto& a : dm->axes()) axes.push_back({a.name, long(a.size)});
    c->mesh = make_mesh_view(axes);
  } else {
    c->mesh = st.explicit_mesh;
  }
  c->inference.strict = st.strict;
  if (c->mesh) c->inference.mesh_axes = c->mesh->axes;
  st.ctx = c.get();
  st.contexts.push_back(std::move(c));
  return *st.ctx;
}

// ---------------------------------------------------------------------------
// Errors with the operator context of spec §9.3.

[[noreturn]] void throw_with_context(core::TypeError error,
                                     const std::string& context) {
  if (!context.empty()) {
    error.message = error.full_message() + "\n\n" + context;
    error.fix.clear();
    error.notes.clear();
  }
  spmd::throw_error(error);
}

const char* dtype_name(at::ScalarType t) {
  switch (t) {
    case at::kFloat:
      return "f32";
    case at::kDouble:
      return "f64";
    case at::kHalf:
      return "f16";
    case at::kBFloat16:
      return "bf16";
    case at::kLong:
      return "i64";
    case at::kInt:
      return "i32";
    case at::kShort:
      return "i16";
    case at::kChar:
      return "i8";
    case at::kByte:
      return "u8";
    case at::kBool:
      return "bool";
    case at::kComplexFloat:
      return "c64";
    case at::kComplexDouble:
      return "c128";
    default:
      return c10::toString(t);
  }
}

std::string describe_tensor(const at::Tensor& t) {
  if (!t.defined()) return "None";
  std::ostringstream os;
  os << dtype_name(t.scalar_type()) << "[";
  for (int64_t d = 0; d < t.dim(); ++d) os << (d ? ", " : "") << t.size(d);
  os << "] ";
  TypeRef ty = type_of(t);
  os << (ty ? ty->to_string() : std::string("untyped"));
  return os.str();
}

std::string describe_value(const c10::IValue& v) {
  if (v.isTensor()) return describe_tensor(v.toTensor());
  if (v.isTensorList()) {
    std::vector<std::string> items;
    for (const at::Tensor& t : v.toTensorList().vec())
      items.push_back(describe_tensor(t));
    if (items.size() > 1 &&
        std::all_of(items.begin(), items.end(),
                    [&](const std::string& s) { return s == items[0]; }))
      return "[" + items[0] + "] * " + std::to_string(items.size());
    std::string s = "[";
    for (std::size_t i = 0; i < items.size(); ++i)
      s += (i ? ", " : "") + items[i];
    return s + "]";
  }
  std::ostringstream os;
  os << v;
  return os.str();
}

std::string mesh_suffix(const Ctx& ctx) {
  if (!ctx.mesh) return "";
  std::string s = " under mesh {";
  for (std::size_t i = 0; i < ctx.mesh->axes.size(); ++i)
    s += (i ? ", " : "") + ctx.mesh->axes[i];
  return s + "}";
}

std::string op_context(const c10::FunctionSchema& schema,
                       const std::vector<c10::IValue>& args, const Ctx& ctx) {
  std::string s = "  In " + schema.name();
  if (!schema.overload_name().empty()) s += "." + schema.overload_name();
  s += "(\n";
  const auto& params = schema.arguments();
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string label = i < params.size() ? params[i].name()
                                          : "args[" + std::to_string(i) + "]";
    s += "    " + label + ": " + describe_value(args[i]) + ",\n";
  }
  return s + "  )" + mesh_suffix(ctx);
}

// ---------------------------------------------------------------------------
// Op classification: ATen schema -> the spec's op naming (spec §6.5).

enum class ArgRole : unsigned char {
  Input,       // contributes its type
  InputWrite,  // contributes and is mutated (in-place self)
  Out,         // out= destination: mutated, does not contribute (§6.11)
};

struct OpEntry {
  std::string qualified;  // "aten::add.Tensor"
  core::OpInfo info;      // classified under the spec name
  bool passthrough = false;
  std::vector<ArgRole> roles;
  std::vector<bool> tensor_position;  // plain numbers here are weak scalars
  std::size_t num_args = 0;
  std::size_t num_returns = 0;
};

// Metadata and autograd bookkeeping: pass through untyped (spec §5.2 step 3,
// plus the C++-only bookkeeping ops libtorch routes through the dispatcher).
bool is_passthrough(std::string_view base) {
  static const std::unordered_set<std::string_view> kNames = {
      "requires_grad_",
      "retain_grad",
      "retains_grad",
      "dim",
      "element_size",
      "get_device",
      "is_complex",
      "is_contiguous",
      "is_floating_point",
      "nelement",
      "numel",
      "size",
      "stride",
      "untyped_storage",
      "storage_offset",
      "_version",
      "output_nr",
      "is_leaf",
      "set_data",
      "_fw_primal",
      "is_same_size",
      "_has_compatible_shallow_copy_type",
      "record_stream",
      "is_signed",
      "is_inference",
      "_backward",
      "is_conj",
      "is_neg",
      "sym_size",
      "sym_stride",
      "sym_numel"};
  return kNames.count(base) != 0;
}

// ATen names whose spec name differs (spec §6.5 registers Python names).
std::string_view rename(std::string_view base) {
  static const std::unordered_map<std::string_view, std::string_view> kMap = {
      {"rsub", "__rsub__"},         // 2.0 - x
      {"scalar_tensor", "tensor"},  // torch::tensor(0.5)
      {"index", "__getitem__"},     // x.index({idx})
      {"split_with_sizes", "split"},
      {"unsafe_split", "split"},
      {"unsafe_chunk", "chunk"},
      // The transposing / complex-part properties are LINEAR (spec §5.2).
      {"T", "prop T"},
      {"numpy_T", "prop T"},
      {"H", "prop H"},
      {"matrix_H", "prop H"},
      {"mT", "prop mT"},
      {"mH", "prop mH"},
      {"adjoint", "prop mH"},
      {"real", "prop real"},
      {"imag", "prop imag"},
  };
  auto it = kMap.find(base);
  return it == kMap.end() ? base : it->second;
}

std::unique_ptr<OpEntry> classify(const c10::FunctionSchema& schema) {
  auto e = std::make_unique<OpEntry>();
  const std::string& full = schema.name();
  e->qualified = full;
  if (!schema.overload_name().empty())
    e->qualified += "." + schema.overload_name();
  std::string_view base = full;
  if (auto pos = base.rfind("::"); pos != std::string_view::npos)
    base = base.substr(pos + 2);
  e->passthrough = is_passthrough(base);
  const bool inplace =
      base.size() > 1 && base.back() == '_' && base.substr(0, 2) != "__";
  std::string name(rename(base));
  if (inplace) {
    // In-place variants are methods in the spec (".add_"); unregistered ones
    // are NONLINEAR like in the reference.
    e->info = core::classify_op("." + name);
  } else {
    e->info = core::classify_op(name);
    // Some ops are registered only as methods (".view", ".expand", ...).
    if (!e->info.known) {
      core::OpInfo method = core::classify_op("." + name);
      if (method.known) e->info = method;
    }
  }
  if (e->info.name.empty()) e->info.name = name;
  const auto& args = schema.arguments();
  e->num_args = args.size();
  e->num_returns = schema.returns().size();
  e->roles.resize(args.size(), ArgRole::Input);
  e->tensor_position.resize(args.size(), false);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const c10::AliasInfo* alias = args[i].alias_info();
    if (alias != nullptr && alias->isWrite())
      e->roles[i] = args[i].kwarg_only() ? ArgRole::Out : ArgRole::InputWrite;
  }
  for (int p : e->info.tensor_positions)
    if (p >= 0 && std::size_t(p) < args.size()) e->tensor_position[p] = true;
  return e;
}

const OpEntry& op_entry(const c10::OperatorHandle& op) {
  thread_local std::unordered_map<const c10::FunctionSchema*,
                                  std::unique_ptr<OpEntry>>
      cache;
  const c10::FunctionSchema* key = &op.schema();
  auto it = cache.find(key);
  if (it != cache.end()) return *it->second;
  return *cache.emplace(key, classify(*key)).first->second;
}

// ---------------------------------------------------------------------------
// The fallback.

void run_untyped(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                 torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard no_typing(kModeKey);
  op.redispatchBoxed(ks.remove(kModeKey), stack);
}

// The backward pass is not typed (spec §6.14); the autograd engine runs it
// with the forward thread's dispatch keys, on this or a worker thread.
bool in_backward_pass() {
  return torch::autograd::get_current_graph_task_nodes_in_graph() != nullptr;
}

struct OperandRec {
  core::Operand::Kind kind;
  int position;
  TypeRef type;
  // Tensors only: for the identity rule of spec §6.11 (an op that returns
  // one of its inputs mutates it).
  const c10::TensorImpl* impl = nullptr;
  bool requires_grad = false;
  bool written = false;  // already handled as an in-place target
};

struct MutatedRec {
  at::Tensor tensor;
  TypeRef before;
  bool requires_grad;
};

struct Collected {
  c10::SmallVector<OperandRec, 8> tensors;
  c10::SmallVector<OperandRec, 4> scalars;
  c10::SmallVector<MutatedRec, 2> mutated;
};

bool is_plain_number(const c10::IValue& v) {
  return v.isDouble() || v.isInt() || v.isComplexDouble();
}

void collect_tensor(const OpEntry& e, std::size_t i, const at::Tensor& t,
                    Collected& out) {
  if (!t.defined()) return;
  // A wrapped number (C++ `x * 2.0` after promotion) is a plain number.
  if (t.unsafeGetTensorImpl()->is_wrapped_number()) {
    if (e.tensor_position[i])
      out.scalars.push_back({core::Operand::Kind::WeakScalar, int(i), nullptr});
    return;
  }
  TypeRef ty = type_of(t);
  const ArgRole role = e.roles[i];
  if (role != ArgRole::Input) out.mutated.push_back({t, ty, t.requires_grad()});
  if (role != ArgRole::Out)
    out.tensors.push_back({core::Operand::Kind::Tensor, int(i), ty,
                           t.unsafeGetTensorImpl(), t.requires_grad(),
                           role == ArgRole::InputWrite});
}

void collect(const OpEntry& e, const c10::IValue* args, Collected& out) {
  for (std::size_t i = 0; i < e.num_args; ++i) {
    const c10::IValue& v = args[i];
    if (v.isTensor()) {
      collect_tensor(e, i, v.toTensor(), out);
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorList().vec())
        collect_tensor(e, i, t, out);
    } else if (v.isList()) {  // Tensor?[] (index)
      for (const c10::IValue& item : v.toListRef())
        if (item.isTensor()) collect_tensor(e, i, item.toTensor(), out);
    } else if (is_plain_number(v) && e.tensor_position[i]) {
      out.scalars.push_back({core::Operand::Kind::WeakScalar, int(i), nullptr});
    }
  }
}

// Inference through the memo. The key lists the op, the context and each
// operand's kind, position and interned type, so a hit is exactly the call
// core::infer would have made.
const ThreadState::Memo& infer_cached(ThreadState& st, const OpEntry& e,
                                      const Ctx& ctx, const Collected& c) {
  auto& key = st.key;
  key.clear();
  key.push_back(reinterpret_cast<std::uintptr_t>(&e));
  key.push_back(reinterpret_cast<std::uintptr_t>(&ctx));
  for (const c10::SmallVectorImpl<OperandRec>* list :
       {static_cast<const c10::SmallVectorImpl<OperandRec>*>(&c.tensors),
        static_cast<const c10::SmallVectorImpl<OperandRec>*>(&c.scalars)}) {
    for (const OperandRec& o : *list) {
      key.push_back(reinterpret_cast<std::uintptr_t>(o.type));
      key.push_back((std::uintptr_t(o.position) << 2) | std::uintptr_t(o.kind));
    }
  }
  auto it = st.infer_memo.find(key);
  if (it != st.infer_memo.end()) return it->second;

  std::vector<core::Operand> operands;
  operands.reserve(c.tensors.size() + c.scalars.size());
  for (const c10::SmallVectorImpl<OperandRec>* list :
       {static_cast<const c10::SmallVectorImpl<OperandRec>*>(&c.tensors),
        static_cast<const c10::SmallVectorImpl<OperandRec>*>(&c.scalars)}) {
    for (const OperandRec& o : *list) {
      if (o.kind == core::Operand::Kind::WeakScalar) {
        operands.push_back(core::Operand::weak_scalar(o.position));
      } else {
        operands.push_back(core::Operand::tensor(
            o.type ? std::optional<TensorType>(*o.type) : std::nullopt,
            o.position));
      }
    }
  }
  ThreadState::Memo m;
  core::Result<TensorType> r = core::infer(e.info, operands, ctx.inference);
  if (r.ok()) {
    m.type = intern(r.value());
  } else {
    m.error = std::make_shared<core::TypeError>(r.error());
  }
  return st.infer_memo.emplace(key, std::move(m)).first->second;
}

const ThreadState::Memo& inplace_cached(ThreadState& st, const OpEntry& e,
                                        TypeRef before, TypeRef inferred,
                                        bool requires_grad) {
  std::vector<std::uintptr_t> key = {reinterpret_cast<std::uintptr_t>(&e),
                                     reinterpret_cast<std::uintptr_t>(before),
                                     reinterpret_cast<std::uintptr_t>(inferred),
                                     requires_grad ? 1u : 0u};
  auto it = st.inplace_memo.find(key);
  if (it != st.inplace_memo.end()) return it->second;
  ThreadState::Memo m;
  core::Result<TensorType> r = core::apply_inplace(
      e.info.name, before ? std::optional<TensorType>(*before) : std::nullopt,
      *inferred, requires_grad);
  if (r.ok()) {
    m.type = intern(r.value());
  } else {
    m.error = std::make_shared<core::TypeError>(r.error());
  }
  return st.inplace_memo.emplace(std::move(key), std::move(m)).first->second;
}

void trace_line(const OpEntry& e, const Collected& c, TypeRef out) {
  bool all_empty = out->empty();
  std::string s = "spmd-check trace: " + e.qualified + "(";
  bool first = true;
  for (const OperandRec& o : c.tensors) {
    s += first ? "" : ", ";
    first = false;
    s += o.type ? o.type->to_string() : "untyped";
    if (o.type && !o.type->empty()) all_empty = false;
  }
  if (all_empty) return;
  std::cerr << s << ") -> " << out->to_string() << "\n";
}

void typecheck_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                        torch::jit::Stack* stack) {
  ThreadState* st = active_state();
  if (st == nullptr || in_backward_pass()) return run_untyped(op, ks, stack);
  const OpEntry& e = op_entry(op);
  if (e.passthrough) return run_untyped(op, ks, stack);
  const Ctx& ctx = current_ctx(*st);

  Collected c;
  const c10::IValue* args = stack->data() + (stack->size() - e.num_args);
  collect(e, args, c);

  // Inference needs only the types, so it happens first; an error is raised
  // after the op has run, so that the op's own errors win (spec §5.2 step 8).
  const ThreadState::Memo& inferred = infer_cached(*st, e, ctx, c);
  const core::TypeError* error = inferred.error.get();
  c10::SmallVector<TypeRef, 2> mutated_after(c.mutated.size(), nullptr);
  for (std::size_t i = 0; error == nullptr && i < c.mutated.size(); ++i) {
    const ThreadState::Memo& m = inplace_cached(
        *st, e, c.mutated[i].before, inferred.type, c.mutated[i].requires_grad);
    if (m.error) error = m.error.get();
    mutated_after[i] = m.type;
  }
  if (error != nullptr) {
    const core::TypeError copy = *error;
    std::vector<c10::IValue> saved(args, args + e.num_args);
    std::string context = op_context(op.schema(), saved, ctx);
    run_untyped(op, ks, stack);
    throw_with_context(copy, context);
  }

  run_untyped(op, ks, stack);

  TypeRef out = inferred.type;
  const std::size_t n = std::min(e.num_returns, stack->size());
  for (auto it = stack->end() - n; it != stack->end(); ++it) {
    if (it->isTensor()) {
      const at::Tensor& t = it->toTensor();
      // Identity (e.g. type_as, contiguous, to returning self): the input is
      // mutated, so the in-place rule applies (spec §6.11).
      for (const OperandRec& o : c.tensors) {
        if (o.impl != t.unsafeGetTensorImpl() || o.written || o.type == out)
          continue;
        const ThreadState::Memo& m =
            inplace_cached(*st, e, o.type, out, o.requires_grad);
        if (m.error)
          throw_with_context(*m.error, "  In " + e.qualified + "(\n    " +
                                           describe_tensor(t) +
                                           ", returned as the result,\n  )" +
                                           mesh_suffix(ctx));
        out = m.type;
        break;
      }
      stamp(t, out);
      out = inferred.type;
    } else if (it->isTensorList()) {
      for (const at::Tensor& t : it->toTensorList().vec()) stamp(t, out);
    }
  }
  for (std::size_t i = 0; i < c.mutated.size(); ++i)
    stamp(c.mutated[i].tensor, mutated_after[i]);
  if (st->trace) trace_line(e, c, out);
}

TORCH_LIBRARY_IMPL(_, TESTING_ONLY_GenericMode, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&typecheck_fallback>());
}

// ---------------------------------------------------------------------------
// Collectives (spec §7.2): the runtime calls this after computing the output.

class CheckerCollectiveHook final : public spmd::detail::CollectiveHook {
 public:
  void on_collective(const core::CollectiveCall& call, std::string_view axis,
                     bool axis_is_singleton, const at::Tensor& input,
                     const at::Tensor& output) override {
    ThreadState* st = active_state();
    if (st == nullptr) return;
    TypeRef in = type_of(input);
    core::Result<TensorType> r =
        core::transfer(call, in ? std::optional<TensorType>(*in) : std::nullopt,
                       axis, st->strict, axis_is_singleton);
    if (!r.ok()) {
      const Ctx& ctx = current_ctx(*st);
      std::string context =
          "  In " + call.to_string() + "(\n    x: " + describe_tensor(input) +
          ",\n    axis: " + std::string(axis) + ",\n  )" + mesh_suffix(ctx);
      throw_with_context(r.error(), context);
    }
    // Permissive on an untyped input: the output stays untyped (§7.2 item 4).
    if (in == nullptr && r.value().empty()) return;
    stamp(output, intern(r.value()));
  }
};

CheckerCollectiveHook& collective_hook() {
  static CheckerCollectiveHook hook;
  return hook;
}

// ---------------------------------------------------------------------------
// backward() on a loss (spec §6.15). Tensor::backward reaches autograd
// through at::impl::VariableHooksInterface, not the dispatcher, so the
// checker wraps those hooks once: the wrapper checks the loss when a guard is
// alive and runs the backward pass untyped; everything else is forwarded.

void check_loss_impl(const at::Tensor& loss, const ThreadState& st);

#if TORCH_VERSION_MAJOR == 1
class CheckingVariableHooks final : public at::impl::VariableHooksInterface {
 public:
  explicit CheckingVariableHooks(at::impl::VariableHooksInterface* inner)
      : inner_(inner) {}
  at::TensorBase tensor_data(const at::TensorBase& t) const override {
    return inner_->tensor_data(t);
  }
  at::TensorBase variable_data(const at::TensorBase& t) const override {
    return inner_->variable_data(t);
  }
  const std::shared_ptr<torch::autograd::Node>& grad_fn(
      const at::TensorBase& t) const override {
    return inner_->grad_fn(t);
  }
  unsigned _register_hook(const at::TensorBase& t,
                          std::function<at::TensorBase(const at::TensorBase&)>
                              hook) const override {
    return inner_->_register_hook(t, std::move(hook));
  }
  void remove_hook(const at::TensorBase& t, unsigned pos) const override {
    inner_->remove_hook(t, pos);
  }
  bool is_view(const at::TensorBase& t) const override {
    return inner_->is_view(t);
  }
  const at::TensorBase& base(const at::TensorBase& t) const override {
    return inner_->base(t);
  }
  const std::string& name(const at::TensorBase& t) const override {
    return inner_->name(t);
  }
  bool is_leaf(const at::TensorBase& t) const override {
    return inner_->is_leaf(t);
  }
  int64_t output_nr(const at::TensorBase& t) const override {
    return inner_->output_nr(t);
  }
  void set_data(const at::TensorBase& t,
                const at::TensorBase& d) const override {
    inner_->set_data(t, d);
  }
  at::TensorBase data(const at::TensorBase& t) const override {
    return inner_->data(t);
  }
  int64_t _version(const at::TensorBase& t) const override {
    return inner_->_version(t);
  }
  void retain_grad(const at::TensorBase& t) const override {
    inner_->retain_grad(t);
  }
  bool retains_grad(const at::TensorBase& t) const override {
    return inner_->retains_grad(t);
  }
  void _backward(const at::Tensor& self, at::TensorList inputs,
                 const c10::optional<at::Tensor>& gradient,
                 c10::optional<bool> keep_graph,
                 bool create_graph) const override {
    ThreadState* st = active_state();
    if (st == nullptr) {
      inner_->_backward(self, inputs, gradient, keep_graph, create_graph);
      return;
    }
    // An explicit gradient carries its own meaning: no check (§6.15).
    if (!gradient.has_value() || !gradient->defined())
      check_loss_impl(self, *st);
    NoTypecheckGuard untyped_backward;  // the seed and the pass (§6.14)
    inner_->_backward(self, inputs, gradient, keep_graph, create_graph);
  }
  void requires_grad_(const at::TensorBase& t, bool value) const override {
    inner_->requires_grad_(t, value);
  }

 private:
  at::impl::VariableHooksInterface* inner_;
};
#endif

void install_backward_check() {
#if TORCH_VERSION_MAJOR == 1
  static std::once_flag once;
  std::call_once(once, [] {
    at::impl::SetVariableHooks(
        new CheckingVariableHooks(at::impl::GetVariableHooks()));
  });
#endif
}

void check_loss_impl(const at::Tensor& loss, const ThreadState& st) {
  TypeRef ty = type_of(loss);
  core::Status s = core::check_loss(
      ty ? std::optional<TensorType>(*ty) : std::nullopt, st.strict);
  if (!s.ok())
    throw_with_context(s.error(), "  In backward(\n    loss: " +
                                      describe_tensor(loss) + ",\n  )");
}

// ---------------------------------------------------------------------------
// Annotations.

[[noreturn]] void throw_type(std::string message) {
  core::TypeError e;
  e.kind = core::ErrorKind::SpmdTypeError;
  e.message = std::move(message);
  spmd::throw_error(e);
}

[[noreturn]] void throw_usage(std::string message) {
  core::TypeError e;
  e.kind = core::ErrorKind::UsageError;
  e.message = std::move(message);
  spmd::throw_error(e);
}

// Builds the asserted map (spec §8.1 steps 2-6): names checked against the
// current mesh, singleton axes dropped, S(i) resolved against x's ndim and
// recorded as V, one shard dim per axis.
TensorType asserted_map(
    const at::Tensor& x,
    const std::vector<std::pair<std::string, PerAxisType>>& entries,
    const Ctx& ctx) {
  TensorType t;
  std::vector<std::pair<long, std::string>> shard_dims;
  for (const auto& [axis, type] : entries) {
    if (ctx.mesh && !ctx.mesh->has_name(axis)) {
      std::string avail;
      for (const auto& a : ctx.mesh->all)
        avail += (avail.empty() ? "" : ", ") + a.name;
      throw_type("no mesh axis named '" + axis +
                 "' in the current mesh. Available: " +
                 (avail.empty() ? "(no named axes)" : avail));
    }
    if (ctx.mesh && ctx.mesh->is_singleton(axis)) continue;
    if (t.has(axis))
      throw_usage("assert_type: axis '" + axis + "' is given twice");
    PerAxisType local = type;
    if (type.is_shard()) {
      core::Result<PerAxisType> r = core::resolve_shard_dim(type, x.dim());
      if (!r.ok()) throw_with_context(r.error(), "");
      for (const auto& [dim, other] : shard_dims) {
        if (dim == r.value().dim)
          throw_type("assert_type: tensor dim " + std::to_string(dim) +
                     " is sharded on multiple axes (" + other + " and " + axis +
                     "); the order of the axes on one dim is ambiguous, "
                     "shard different dims or annotate V");
      }
      shard_dims.emplace_back(r.value().dim, axis);
      local = type.local();
    }
    t.set(axis, local);
  }
  return t;
}

void assert_on(const at::Tensor& x, const TensorType& asserted,
               const std::string& what, const Ctx& ctx) {
  if (!x.defined()) throw_usage(what + ": the tensor is undefined");
  TypeRef cur = type_of(x);
  core::Result<TensorType> r = core::assert_type(
      cur ? std::optional<TensorType>(*cur) : std::nullopt, asserted);
  if (!r.ok())
    throw_with_context(r.error(), "  In " + what +
                                      "(\n    x: " + describe_tensor(x) +
                                      ",\n    type: " + asserted.to_string() +
                                      ",\n  )" + mesh_suffix(ctx));
  stamp(x, intern(r.value()));
}

std::vector<std::pair<std::string, PerAxisType>> entries_of(
    std::initializer_list<AxisType> type) {
  std::vector<std::pair<std::string, PerAxisType>> entries;
  for (const AxisType& a : type) {
    if (a.axis == nullptr) throw_usage("assert_type: an axis has no name");
    entries.emplace_back(a.axis, a.type);
  }
  return entries;
}

}  // namespace

// ---------------------------------------------------------------------------
// TypecheckGuard / NoTypecheckGuard.

struct TypecheckGuard::Saved {
  bool created = false;
  bool strict = true;
  bool trace = false;
  bool paused = false;
  std::shared_ptr<const MeshView> mesh;
  bool included = false;
  bool excluded = false;
  spmd::detail::CollectiveHook* hook = nullptr;
};

TypecheckGuard::TypecheckGuard(bool strict)
    : TypecheckGuard(TypecheckOptions{strict, std::nullopt, std::nullopt}) {}

TypecheckGuard::TypecheckGuard(TypecheckOptions options) : saved_(new Saved) {
  install_backward_check();
  if (tls_state == nullptr) {
    tls_state = new ThreadState();
    saved_->created = true;
  }
  ThreadState& st = *tls_state;
  saved_->strict = st.strict;
  saved_->trace = st.trace;
  saved_->paused = st.paused;
  saved_->mesh = st.explicit_mesh;
  ++st.depth;
  if (options.strict) st.strict = *options.strict;
  if (options.trace) st.trace = *options.trace;
  if (options.mesh) st.explicit_mesh = make_mesh_view(*options.mesh);
  st.paused = false;
  saved_->included = c10::impl::tls_is_dispatch_key_included(kModeKey);
  saved_->excluded = c10::impl::tls_is_dispatch_key_excluded(kModeKey);
  c10::impl::tls_set_dispatch_key_included(kModeKey, true);
  c10::impl::tls_set_dispatch_key_excluded(kModeKey, false);
  saved_->hook = spmd::detail::set_collective_hook(&collective_hook());
}

TypecheckGuard::~TypecheckGuard() {
  ThreadState* st = tls_state;
  spmd::detail::set_collective_hook(saved_->hook);
  c10::impl::tls_set_dispatch_key_included(kModeKey, saved_->included);
  c10::impl::tls_set_dispatch_key_excluded(kModeKey, saved_->excluded);
  if (st != nullptr) {
    st->strict = saved_->strict;
    st->trace = saved_->trace;
    st->paused = saved_->paused;
    st->explicit_mesh = saved_->mesh;
    --st->depth;
    if (saved_->created) {
      delete st;
      tls_state = nullptr;
    }
  }
  delete saved_;
}

NoTypecheckGuard::NoTypecheckGuard()
    : was_paused_(false), was_excluded_(false), active_(tls_state != nullptr) {
  if (!active_) return;
  was_paused_ = tls_state->paused;
  tls_state->paused = true;
  // Excluding the key makes paused ops skip the fallback entirely.
  was_excluded_ = c10::impl::tls_is_dispatch_key_excluded(kModeKey);
  c10::impl::tls_set_dispatch_key_excluded(kModeKey, true);
}

NoTypecheckGuard::~NoTypecheckGuard() {
  if (!active_) return;
  c10::impl::tls_set_dispatch_key_excluded(kModeKey, was_excluded_);
  if (tls_state != nullptr) tls_state->paused = was_paused_;
}

bool is_type_checking() { return active_state() != nullptr; }

bool is_strict() { return tls_state == nullptr || tls_state->strict; }

std::optional<std::vector<std::string>> current_mesh_axes() {
  ThreadState* st = tls_state;
  if (st == nullptr) {
    const DeviceMesh* dm = spmd::current_mesh();
    if (dm == nullptr) return std::nullopt;
    std::vector<std::string> axes;
    for (const auto& a : dm->axes())
      if (a.size != 1) axes.push_back(a.name);
    return axes;
  }
  const Ctx& ctx = current_ctx(*st);
  if (!ctx.mesh) return std::nullopt;
  return ctx.mesh->axes;
}

at::Tensor typed_scalar(const at::Scalar& value,
                        std::initializer_list<AxisType> type) {
  if (value.isBoolean())
    throw_usage("typed_scalar: bool is not a numeric scalar (spec §11)");
  at::Tensor t;
  {
    NoTypecheckGuard untyped;
    t = at::scalar_tensor(
        value, at::TensorOptions().dtype(value.isIntegral(false) ? at::kLong
                                                                 : at::kFloat));
  }
  ThreadState* st = active_state();
  if (st == nullptr) return t;
  for (const AxisType& a : type)
    if (a.type.is_shard())
      throw_usage("typed_scalar: S(i) is not a scalar type; use V");
  stamp(t, intern(asserted_map(t, entries_of(type), current_ctx(*st))));
  return t;
}

const at::Tensor& assert_type_like(const at::Tensor& t, const at::Tensor& src,
                                   std::initializer_list<AxisType> overrides) {
  ThreadState* st = active_state();
  if (st == nullptr) return t;
  const Ctx& ctx = current_ctx(*st);
  TensorType type = get_type(src);
  TensorType over = asserted_map(t, entries_of(overrides), ctx);
  for (const auto& [axis, ty] : over.map()) type.set(axis, ty);
  assert_on(t, type, "assert_type_like", ctx);
  return t;
}

const at::Tensor& mutate_type(const at::Tensor& x, const Axis& axis,
                              PerAxisType src, PerAxisType dst) {
  ThreadState* st = active_state();
  if (st == nullptr) return x;
  const Ctx& ctx = current_ctx(*st);
  if (ctx.mesh && ctx.mesh->is_singleton(axis.name)) return x;
  TypeRef cur = type_of(x);
  core::Result<TensorType> r =
      core::mutate_type(cur ? *cur : TensorType(), axis.name, src, dst);
  if (!r.ok())
    throw_with_context(r.error(), "  In mutate_type(\n    x: " +
                                      describe_tensor(x) + ",\n  )");
  stamp(x, intern(r.value()));
  return x;
}

const at::Tensor& mutate_type(const at::Tensor& x, PerAxisType src,
                              PerAxisType dst) {
  ThreadState* st = active_state();
  if (st == nullptr) return x;
  TypeRef cur = type_of(x);
  TensorType t = cur ? *cur : TensorType();
  for (const std::string& axis : t.axes()) {
    core::Result<TensorType> r = core::mutate_type(t, axis, src, dst);
    if (!r.ok())
      throw_with_context(r.error(), "  In mutate_type(\n    x: " +
                                        describe_tensor(x) + ",\n  )");
    t = r.value();
  }
  stamp(x, intern(t));
  return x;
}

void check_loss(const at::Tensor& loss) {
  ThreadState* st = active_state();
  if (st != nullptr) check_loss_impl(loss, *st);
}

void backward(const at::Tensor& loss, const at::Tensor& gradient) {
  ThreadState* st = active_state();
  if (st != nullptr && !gradient.defined()) check_loss_impl(loss, *st);
  NoTypecheckGuard untyped_backward;
  loss.backward(gradient);
}

std::size_t side_table_size() { return table().size(); }
std::size_t sweep_side_table() { return table().sweep(); }
void clear_type(const at::Tensor& x) {
  if (x.defined()) table().erase(x.unsafeGetTensorImpl());
}

}  // namespace spmd::checker

namespace spmd {

using checker::TypeRef;

core::TensorType get_type(const at::Tensor& x) {
  TypeRef t = checker::type_of(x);
  return t ? *t : core::TensorType();
}

bool has_type(const at::Tensor& x) { return checker::type_of(x) != nullptr; }

std::optional<PerAxisType> get_axis_type(const at::Tensor& x,
                                         const Axis& axis) {
  TypeRef t = checker::type_of(x);
  if (t == nullptr) return std::nullopt;
  return t->get(axis.name);
}

const at::Tensor& assert_type(const at::Tensor& x,
                              std::initializer_list<AxisType> type) {
  checker::ThreadState* st = checker::active_state();
  if (st == nullptr) return x;  // off means off: one thread-local read
  const checker::Ctx& ctx = checker::current_ctx(*st);
  checker::assert_on(x,
                     checker::asserted_map(x, checker::entries_of(type), ctx),
                     "assert_type", ctx);
  return x;
}

const at::Tensor& assert_type(const at::Tensor& x, PerAxisType type) {
  checker::ThreadState* st = checker::active_state();
  if (st == nullptr) return x;
  const checker::Ctx& ctx = checker::current_ctx(*st);
  if (!ctx.mesh)
    checker::throw_type(
        "assert_type(x, " + core::to_string(type) +
        "): a bare type needs a current mesh (spmd::MeshGuard or "
        "TypecheckOptions::mesh); or name the axes: {tp = " +
        core::to_string(type) + "}");
  std::vector<std::pair<std::string, PerAxisType>> entries;
  for (const std::string& a : ctx.mesh->axes) entries.emplace_back(a, type);
  checker::assert_on(x, checker::asserted_map(x, entries, ctx), "assert_type",
                     ctx);
  return x;
}

const std::vector<at::Tensor>& assert_type(
    const std::vector<at::Tensor>& xs, std::initializer_list<AxisType> type) {
  for (const at::Tensor& x : xs) assert_type(x, type);
  return xs;
}

}  // namespace spmd
