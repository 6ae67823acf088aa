// meta_collectives.cpp - c10d's collectives on meta tensors, for fake mode.
//
// Since torch 2.0 a c10d::ProcessGroup dispatches every collective through
// a c10d:: operator keyed on the tensors' device, and libtorch registers
// those operators for CPU and CUDA only (PyTorch adds the Meta kernels from
// Python, in torch/distributed/_meta_registrations.py). A C++ program that
// hands meta tensors to a process group therefore fails before reaching the
// fake backend. Meta tensors have no data and their shapes are fixed by the
// caller, so here every collective operator without a Meta kernel gets one
// that completes at once: it returns the output arguments as they are and a
// completed Work. Operators are found by their schema (a ProcessGroup
// argument, a Work result), so nothing depends on the libtorch release's
// list of collectives.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <memory>
#include <mutex>
#include <string>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "internal.h"

namespace spmd::testing::detail {
namespace {

class CompletedWork : public c10d::Work {
 public:
  CompletedWork() { finish(); }
  bool isCompleted() override { return true; }
  bool isSuccess() const override { return true; }
  bool wait(std::chrono::milliseconds) override { return true; }
};

bool is_work(const c10::TypePtr& t) {
  return t->str().find("c10d.Work") != std::string::npos;
}

bool is_process_group(const c10::TypePtr& t) {
  return t->str().find("c10d.ProcessGroup") != std::string::npos;
}

// Each result is the first argument of the same type (the outputs the
// caller allocated), or a completed Work.
void complete_on_meta(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const c10::FunctionSchema& schema = op.schema();
  const size_t n = schema.arguments().size();
  std::vector<c10::IValue> args(stack->end() - n, stack->end());
  torch::jit::drop(*stack, n);
  for (const c10::Argument& ret : schema.returns()) {
    if (is_work(ret.type())) {
      torch::jit::push(*stack, c10::IValue(c10::intrusive_ptr<c10d::Work>(
                                   c10::make_intrusive<CompletedWork>())));
      continue;
    }
    bool pushed = false;
    for (size_t i = 0; i < n && !pushed; ++i) {
      if (*schema.arguments()[i].type() == *ret.type()) {
        torch::jit::push(*stack, args[i]);
        pushed = true;
      }
    }
    if (!pushed)
      throw std::runtime_error(
          "spmd::testing fake mode: " + toString(schema.operator_name()) +
          " has a result of type " + ret.type()->str() +
          " that no argument provides");
  }
}

// True for a collective this kernel can complete: a ProcessGroup argument,
// a Work result, every other result matched by an argument.
bool completable(const c10::FunctionSchema& schema) {
  bool group = false, work = false;
  for (const c10::Argument& a : schema.arguments())
    group |= is_process_group(a.type());
  for (const c10::Argument& r : schema.returns()) {
    if (is_work(r.type())) {
      work = true;
      continue;
    }
    bool matched = false;
    for (const c10::Argument& a : schema.arguments())
      matched |= *a.type() == *r.type();
    if (!matched) return false;
  }
  return group && work;
}

}  // namespace

void register_meta_collectives() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Lives as long as the process: the registrations go with it.
    static std::unique_ptr<torch::Library> lib;
    auto& dispatcher = c10::Dispatcher::singleton();
    for (const c10::OperatorName& name : dispatcher.getAllOpNames()) {
      if (name.name.rfind("c10d::", 0) != 0) continue;
      auto op = dispatcher.findOp(name);
      if (!op || !op->hasSchema() || !completable(op->schema())) continue;
      if (op->hasKernelForDispatchKey(c10::DispatchKey::Meta)) continue;
      if (!lib)
        lib = std::make_unique<torch::Library>(torch::Library::IMPL, "c10d",
                                               c10::DispatchKey::Meta, __FILE__,
                                               __LINE__);
      std::string unqualified = name.name.substr(6);
      if (!name.overload_name.empty()) unqualified += "." + name.overload_name;
      lib->impl(unqualified.c_str(),
                torch::CppFunction::makeFromBoxedFunction<&complete_on_meta>());
    }
  });
}

}  // namespace spmd::testing::detail
