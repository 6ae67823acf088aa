// fallback.cpp - the runtime checker's boxed dispatcher fallback: collect
// the operand types, infer with a per-thread memo, run the op, stamp the
// outputs, apply the in-place rule (spec §5.2, §6).
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <c10/util/SmallVector.h>
#include <torch/library.h>

#include <algorithm>
#include <iostream>

#include "internal.h"

namespace spmd::checker::internal {

void run_untyped(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                 torch::jit::Stack* stack) {
  c10::impl::ExcludeDispatchKeyGuard no_typing(kModeKey);
  op.redispatchBoxed(ks.remove(kModeKey), stack);
}

namespace {

// The backward pass is not typed (spec §6.14); the autograd engine runs it
// with the forward thread's dispatch keys, on this or a worker thread.
bool in_backward_pass() { return compat::in_backward_pass(); }

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
  if (role == ArgRole::Attributes) return;
  if (role != ArgRole::Input) out.mutated.push_back({t, ty, t.requires_grad()});
  if (role != ArgRole::Out)
    out.tensors.push_back({core::Operand::Kind::Tensor, int(i), ty,
                           t.unsafeGetTensorImpl(), t.requires_grad(),
                           role == ArgRole::InputWrite});
}

void collect(const OpEntry& e, const c10::IValue* args, Collected& out) {
  for_each_operand(
      e, args,
      [&](std::size_t i, const at::Tensor& t) { collect_tensor(e, i, t, out); },
      [&](std::size_t i) {
        out.scalars.push_back(
            {core::Operand::Kind::WeakScalar, int(i), nullptr});
      });
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
  // The spec's trace names the call site (§5.2); C++ knows the last spmd
  // call's (spmd/source_location.h).
  const std::string where = spmd::detail::last_call_site();
  std::cerr << s << ") -> " << out->to_string()
            << (where.empty() ? "" : "  [" + where + "]") << "\n";
}

void typecheck_fallback(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
                        torch::jit::Stack* stack) {
  ThreadState* st = active_state();
  if (st == nullptr || in_backward_pass()) return run_untyped(op, ks, stack);
  const OpEntry& e = op_entry(op);
  if (e.passthrough) return run_untyped(op, ks, stack);
  if (e.c10d) return raw_c10d(op, ks, stack, *st, e);
  const Ctx& ctx = current_ctx(*st);
  if (ctx.is_global) return typecheck_global(op, ks, stack, e, ctx, *st);

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
  // Writes through aliases (spec §6.11.1): the base and the other views of
  // each mutated tensor's storage take the written value's type too.
  std::optional<core::TypeError> alias_error;
  c10::SmallVector<std::pair<at::Tensor, TypeRef>, 4> alias_after;
  for (std::size_t i = 0; error == nullptr && i < c.mutated.size(); ++i) {
    for (at::Tensor& a : typed_aliases(c.mutated[i].tensor)) {
      TypeRef before = type_of(a);
      core::Result<std::optional<TensorType>> r = core::apply_alias_write(
          e.info.name,
          before ? std::optional<TensorType>(*before) : std::nullopt,
          *inferred.type, a.requires_grad());
      if (!r.ok()) {
        alias_error = r.error();
        error = &*alias_error;
        break;
      }
      if (r.value() && intern(*r.value()) != before)
        alias_after.emplace_back(std::move(a), intern(*r.value()));
    }
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
  for (auto& [a, type] : alias_after) stamp(a, type);
  if (st->trace) trace_line(e, c, out);
}

// TORCH_LIBRARY_IMPL(_, <mode key>, m) spelled with the key as a value, so
// that the key is named once (compat::kCheckerModeKey). Registered when the
// library loads; the Library lives as long as the process.
[[maybe_unused]] const bool fallback_registered = [] {
  static torch::Library lib(torch::Library::IMPL, "_", kModeKey, __FILE__,
                            __LINE__);
  lib.fallback(
      torch::CppFunction::makeFromBoxedFunction<&typecheck_fallback>());
  return true;
}();

}  // namespace
}  // namespace spmd::checker::internal
