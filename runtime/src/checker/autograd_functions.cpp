// autograd_functions.cpp - the non-template half of <spmd/autograd.h>:
// the registry of custom autograd functions (spec §13.1) and the typing of
// their outputs.
#include <spmd/autograd.h>
#include <spmd/errors.h>

#include <mutex>
#include <unordered_map>

#include "internal.h"

namespace spmd::autograd {
namespace {

struct Registration {
  bool local = false;
  TypecheckHook hook;
};

struct Registry {
  std::mutex mu;
  std::unordered_map<std::type_index, Registration> classes;
};

Registry& registry() {
  static auto* r = new Registry();  // outlives static registrations
  return *r;
}

std::string context_of(const std::string& name,
                       const std::vector<at::Tensor>& inputs) {
  std::string s = "  In " + name + ".apply(";
  for (std::size_t i = 0; i < inputs.size(); ++i)
    s += "\n    args[" + std::to_string(i) +
         "]: " + checker::internal::describe_tensor(inputs[i]) + ",";
  s += inputs.empty() ? ")" : "\n  )";
  if (checker::internal::ThreadState* st = checker::internal::active_state())
    s += checker::internal::mesh_suffix(checker::internal::current_ctx(*st));
  return s;
}

}  // namespace

bool register_local_function(std::type_index type, const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  Registration& reg = r.classes[type];
  if (reg.hook)
    throw_error(core::ErrorKind::UsageError,
                name +
                    ": already registered with a typecheck hook; a class "
                    "is either communication-free or has a hook");
  reg.local = true;
  return true;
}

bool register_function(std::type_index type, const std::string& name,
                       TypecheckHook hook, bool has_member_hook) {
  if (!hook)
    throw_error(core::ErrorKind::UsageError,
                "register_function<" + name + ">: the hook is empty",
                "pass a callable hook(outputs, inputs)");
  if (has_member_hook)
    throw_error(core::ErrorKind::UsageError,
                "register_function<" + name + ">: " + name +
                    " already defines spmd_typecheck; it cannot also be "
                    "registered with a hook",
                "keep one of the two");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  Registration& reg = r.classes[type];
  if (reg.hook || reg.local)
    throw_error(
        core::ErrorKind::UsageError,
        "register_function<" + name + ">: " + name + " is already registered");
  reg.hook = std::move(hook);
  return true;
}

namespace detail {

Rule rule_for(std::type_index type, const std::string& name, bool has_hook,
              bool declared_local) {
  bool local = declared_local;
  bool registered_hook = false;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.classes.find(type);
    if (it != r.classes.end()) {
      local = local || it->second.local;
      registered_hook = static_cast<bool>(it->second.hook);
    }
  }
  if (has_hook) return Rule::Hook;
  if (registered_hook) return Rule::RegisteredHook;
  if (local) return Rule::Local;
  return Rule::Unregistered;
}

const TypecheckHook& registered_hook(std::type_index type) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  // Entries are never erased: the reference stays valid.
  return r.classes.at(type).hook;
}

bool checking() { return checker::internal::active_state() != nullptr; }

Paused::Paused() : guard_(new checker::NoTypecheckGuard()) {}
Paused::~Paused() { delete static_cast<checker::NoTypecheckGuard*>(guard_); }

void type_local(const std::string& name, const std::vector<at::Tensor>& inputs,
                int numbers, const std::vector<at::Tensor>& outputs) {
  using namespace checker::internal;
  ThreadState* st = active_state();
  if (st == nullptr) return;
  const Ctx& ctx = current_ctx(*st);
  // The unknown-op rule (spec §6.6, §13.1 item 3) under the class's name.
  core::OpInfo info;
  info.name = name + ".apply";
  std::vector<core::Operand> operands;
  int pos = 0;
  for (const at::Tensor& t : inputs) {
    TypeRef ty = type_of(t);
    operands.push_back(core::Operand::tensor(
        ty ? std::optional<TensorType>(*ty) : std::nullopt, pos++));
  }
  for (int k = 0; k < numbers; ++k)
    operands.push_back(core::Operand::weak_scalar(pos++));
  core::Result<TensorType> r = core::infer(info, operands, ctx.inference);
  if (!r.ok()) throw_with_context(r.error(), context_of(name, inputs));
  TypeRef out = intern(r.value());
  for (const at::Tensor& t : outputs) stamp(t, out);
}

void unregistered(const std::string& name) {
  checker::internal::ThreadState* st = checker::internal::active_state();
  if (st == nullptr || !st->strict) return;  // permissive: outputs untyped
  throw_error(core::ErrorKind::SpmdTypeError,
              name +
                  ".apply: autograd Function is not registered for SPMD type "
                  "checking",
              "declare it communication-free (static constexpr bool "
              "spmd_local = true, or spmd::autograd::register_local_function<" +
                  name + ">()), or define a static " + name +
                  "::spmd_typecheck(outputs, args...) that asserts the types");
}

void run_hook(const std::string& name, const std::function<void()>& hook) {
  try {
    hook();
  } catch (const SpmdError& e) {
    core::TypeError err;
    err.kind = e.kind();
    err.message = std::string(e.what()) + "\n\n  In " + name +
                  ".spmd_typecheck (the typecheck hook of " + name + ".apply)";
    spmd::throw_error(err);
  }
}

}  // namespace detail
}  // namespace spmd::autograd
