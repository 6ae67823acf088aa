// raw_c10d.cpp - raw c10d collectives under the runtime checker (spec §14).
// ProcessGroup's collectives reach the backend through dispatcher ops of the
// c10d namespace (c10d::allreduce_, c10d::_allgather_base_, ...), so the
// checker's fallback sees them: the process group is mapped to its axis of
// the current DeviceMesh, the input is checked against the table of §14, the
// outputs (which the caller pre-annotates) are validated, and the in-place
// all_reduce turns P into R. The other collectives are refused with "use the
// spmd wrapper". Backend objects called directly bypass the dispatcher and
// are not seen. The Work a collective returns is wrapped so that its wait()
// runs with checking paused: Gloo's reduce_scatter_single finishes there
// with ATen ops on untyped buffers.
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <string>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "internal.h"

namespace spmd::checker::internal {
namespace {

using namespace spmd::types;

// One row of the table of spec §14.
struct RawRule {
  const char* name;     // the torch.distributed name in messages
  const char* method;   // the ProcessGroup method
  const char* input;    // schema argument holding the input
  const char* output;   // schema argument holding the output(s), or nullptr
  PerAxisType src;      // required input type
  bool out_replicated;  // outputs R or I (all_gather), else V
  bool inplace_to_r;    // all_reduce: the input becomes R
};

const RawRule* rule_of(std::string_view op) {
  static const RawRule kRules[] = {
      {"all_reduce", "allreduce", "tensors", nullptr, P, false, true},
      {"all_gather", "allgather", "input_tensors", "output_tensors", V, true,
       false},
      {"all_gather_into_tensor", "_allgather_base", "input_tensor",
       "output_tensor", V, true, false},
      {"reduce_scatter_tensor", "_reduce_scatter_base", "input_tensor",
       "output_tensor", P, false, false},
      {"all_to_all_single", "alltoall_base", "input", "output", V, false,
       false},
  };
  static const std::pair<std::string_view, int> kOps[] = {
      {"c10d::allreduce_", 0},       {"c10d::allgather_", 1},
      {"c10d::_allgather_base_", 2}, {"c10d::_reduce_scatter_base_", 3},
      {"c10d::alltoall_base_", 4},
  };
  for (const auto& [name, index] : kOps)
    if (name == op) return &kRules[index];
  return nullptr;
}

// Synchronisation only: no tensor data is typed.
bool is_untyped_op(std::string_view op) {
  return op == "c10d::barrier" || op == "c10d::monitored_barrier_";
}

// A collective's Work whose wait() runs with checking paused: a backend may
// finish the collective inside wait() with ATen ops on its own untyped
// buffers (Gloo's reduce_scatter_single does), which a strict checker would
// reject; those ops are not part of the typed program. Everything else is
// forwarded to the backend's Work.
class UntypedWaitWork : public c10d::Work {
 public:
  explicit UntypedWaitWork(c10::intrusive_ptr<c10d::Work> inner)
      : c10d::Work(-1, inner->retrieveOpType()), inner_(std::move(inner)) {}
  bool isCompleted() override { return inner_->isCompleted(); }
  bool isSuccess() const override { return inner_->isSuccess(); }
  std::exception_ptr exception() const override { return inner_->exception(); }
  int sourceRank() const override { return inner_->sourceRank(); }
  std::vector<at::Tensor> result() override { return inner_->result(); }
  void synchronize() override {
    NoTypecheckGuard paused;
    c10::impl::ExcludeDispatchKeyGuard no_typing(kModeKey);
    inner_->synchronize();
  }
  bool wait(std::chrono::milliseconds timeout) override {
    NoTypecheckGuard paused;
    c10::impl::ExcludeDispatchKeyGuard no_typing(kModeKey);
    return inner_->wait(timeout);
  }
  void blockCurrentStream() override { inner_->blockCurrentStream(); }
  void abort() override { inner_->abort(); }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    return inner_->getFuture();
  }
  c10::intrusive_ptr<c10::ivalue::Future> getFutureResult() override {
    return inner_->getFutureResult();
  }
  float getDuration() const override { return inner_->getDuration(); }
  uint64_t getSequencenumber() const override {
    return inner_->getSequencenumber();
  }

 private:
  c10::intrusive_ptr<c10d::Work> inner_;
};

// Replaces every Work among the op's outputs by an UntypedWaitWork.
void wrap_works(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const auto& returns = op.schema().returns();
  if (stack->size() < returns.size()) return;
  c10::IValue* out = stack->data() + (stack->size() - returns.size());
  for (std::size_t i = 0; i < returns.size(); ++i) {
    c10::IValue& v = out[i];
    if (!v.isCustomClass()) continue;
    auto cls = v.type()->cast<c10::ClassType>();
    if (!cls ||
        cls != c10::getCustomClassType<c10::intrusive_ptr<c10d::Work>>())
      continue;
    auto work = v.toCustomClass<c10d::Work>();
    if (!work || dynamic_cast<UntypedWaitWork*>(work.get()) != nullptr)
      continue;
    v = c10::IValue(c10::intrusive_ptr<c10d::Work>(
        c10::make_intrusive<UntypedWaitWork>(std::move(work))));
  }
}

// Runs the collective with checking paused. Pausing (not only excluding the
// mode key) matters: a backend may restore a thread-local state captured
// earlier while it works (Gloo's reduce_scatter does), which re-includes the
// key; a paused checker still leaves its internal ops untyped. The Work it
// returns waits with checking paused too.
void run_collective_untyped(const c10::OperatorHandle& op,
                            c10::DispatchKeySet ks, torch::jit::Stack* stack) {
  {
    NoTypecheckGuard paused;
    run_untyped(op, ks, stack);
  }
  wrap_works(op, stack);
}

[[noreturn]] void fail(core::ErrorKind kind, std::string message,
                       std::string fix, const std::string& context) {
  core::TypeError e;
  e.kind = kind;
  e.message = std::move(message);
  e.fix = std::move(fix);
  throw_with_context(e, context);
}

// Every tensor of an argument (Tensor, Tensor[], Tensor[][]).
void tensors_in(const c10::IValue& v, std::vector<at::Tensor>& out) {
  if (v.isTensor()) {
    if (v.toTensor().defined()) out.push_back(v.toTensor());
  } else if (v.isTensorList()) {
    for (const at::Tensor& t : v.toTensorList().vec()) out.push_back(t);
  } else if (v.isList()) {
    for (const c10::IValue& item : v.toListRef()) tensors_in(item, out);
  }
}

// The process group argument, or null.
c10::intrusive_ptr<c10d::ProcessGroup> group_of(
    const c10::FunctionSchema& schema, const c10::IValue* args) {
  for (std::size_t i = 0; i < schema.arguments().size(); ++i) {
    if (schema.arguments()[i].name() == "process_group" &&
        args[i].isCustomClass())
      return args[i].toCustomClass<c10d::ProcessGroup>();
  }
  return {};
}

// The mesh axis `pg` stands for: an axis group of the current DeviceMesh, or
// the world group when one axis spans the world (spec §14: the group
// defaults to the world). Empty when it is none of these.
std::string axis_of(const c10d::ProcessGroup& pg, const Ctx& ctx) {
  // A guard's explicit mesh names axes only: the groups come from the
  // runtime's current DeviceMesh.
  const DeviceMesh* mesh = ctx.device_mesh ? ctx.device_mesh : current_mesh();
  if (mesh == nullptr) return {};
  for (const MeshAxisGroup& a : mesh->axes())
    if (a.group.get() == &pg) return a.name;
  if (&pg == mesh->world()->process_group().get()) {
    for (const MeshAxisGroup& a : mesh->axes())
      if (a.size == mesh->size()) return a.name;
  }
  return {};
}

std::string call_context(const std::string& op, const RawRule* rule,
                         const std::string& axis,
                         const std::vector<at::Tensor>& inputs,
                         const std::vector<at::Tensor>& outputs,
                         const Ctx& ctx) {
  std::string s = "  In " + op;
  if (rule != nullptr)
    s += std::string(" (ProcessGroup::") + rule->method + ", " + rule->name +
         ")";
  s += "(\n";
  for (const at::Tensor& t : inputs)
    s += "    input: " + describe_tensor(t) + ",\n";
  for (const at::Tensor& t : outputs)
    s += "    output: " + describe_tensor(t) + ",\n";
  if (!axis.empty()) s += "    group: axis " + axis + ",\n";
  return s + "  )" + mesh_suffix(ctx);
}

/// The inputs of a raw collective must have the rule's src on `axis` (in
/// strict mode, a type there at all): throws otherwise. Returns the types the
/// inputs get when the collective writes them in place (all_reduce: R on
/// `axis`).
std::vector<TensorType> check_raw_inputs(const RawRule& rule,
                                         const std::string& axis,
                                         const std::vector<at::Tensor>& inputs,
                                         const ThreadState& st,
                                         const std::string& ctx_text) {
  std::vector<TensorType> after;
  for (const at::Tensor& t : inputs) {
    TypeRef ty = type_of(t);
    std::optional<PerAxisType> cur = ty ? ty->get(axis) : std::nullopt;
    if (cur && *cur != rule.src)
      fail(core::ErrorKind::SpmdTypeError,
           std::string(rule.name) + ": expected input type " +
               core::to_string(rule.src) + " on axis " + axis + ", got " +
               core::to_string(*cur),
           rule.src == P ? "make it partial first (reinterpret(x, " + axis +
                               ", V, P)) or use spmd::all_reduce / "
                               "reduce_scatter with the matching src"
                         : "use the spmd wrapper with src matching the "
                           "input, e.g. spmd::all_gather(x, " +
                               axis + ", " + core::to_string(*cur) + ", R)",
           ctx_text);
    if (!cur && st.strict)
      fail(core::ErrorKind::SpmdTypeError,
           std::string(rule.name) + ": tensor has no type for axis " + axis,
           "annotate it first: spmd::assert_type(x, {" + axis + " = " +
               core::to_string(rule.src) + "})",
           ctx_text);
    if (rule.inplace_to_r) {
      TensorType t2 = ty ? *ty : TensorType();
      t2.set(axis, R);
      after.push_back(t2);
    }
  }
  return after;
}

/// The output buffers of a raw collective must already have the type it
/// produces on `axis`, R/I or V (in strict mode, a type there at all).
void check_raw_outputs(const RawRule& rule, const std::string& name,
                       const std::string& axis,
                       const std::vector<at::Tensor>& outputs,
                       const ThreadState& st, const std::string& ctx_text) {
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    TypeRef ty = type_of(outputs[k]);
    std::optional<PerAxisType> cur = ty ? ty->get(axis) : std::nullopt;
    const std::string which =
        outputs.size() > 1 || name == "c10d::allgather_"
            ? "output tensor_list[" + std::to_string(k) + "]"
            : std::string("output tensor");
    const bool ok =
        cur && (rule.out_replicated ? (*cur == R || *cur == I) : *cur == V);
    if (cur && !ok)
      fail(core::ErrorKind::SpmdTypeError,
           std::string(rule.name) + ": expected " + which + " type " +
               (rule.out_replicated ? "R/I" : "V") + " on axis " + axis +
               ", got " + core::to_string(*cur),
           "annotate the output buffer with the type the collective produces "
           "(spmd::assert_type(out, {" +
               axis + " = " + (rule.out_replicated ? "R" : "V") + "}))",
           ctx_text);
    if (!cur && st.strict)
      fail(core::ErrorKind::SpmdTypeError,
           std::string(rule.name) + ": " + which + " has no type for axis " +
               axis,
           "annotate the output buffer first: spmd::assert_type(out, {" + axis +
               " = " + (rule.out_replicated ? "R" : "V") + "})",
           ctx_text);
  }
}

}  // namespace

void raw_c10d(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
              torch::jit::Stack* stack, ThreadState& st, const OpEntry& e) {
  const std::string& name = e.qualified;
  if (is_untyped_op(name)) return run_collective_untyped(op, ks, stack);
  const c10::FunctionSchema& schema = op.schema();
  const c10::IValue* args = stack->data() + (stack->size() - e.num_args);
  const Ctx& ctx = current_ctx(st);
  const RawRule* rule = rule_of(name);

  auto arg = [&](const char* n) -> const c10::IValue* {
    if (n == nullptr) return nullptr;
    std::optional<int> i = schema.argumentIndexWithName(n);
    return i ? &args[*i] : nullptr;
  };
  std::vector<at::Tensor> inputs, outputs;
  if (rule != nullptr) {
    if (const c10::IValue* v = arg(rule->input)) tensors_in(*v, inputs);
    if (const c10::IValue* v = arg(rule->output)) tensors_in(*v, outputs);
  } else {
    for (std::size_t i = 0; i < e.num_args; ++i) tensors_in(args[i], inputs);
  }

  c10::intrusive_ptr<c10d::ProcessGroup> pg = group_of(schema, args);
  // A one-rank group never communicates: nothing to type (spec §14).
  if (pg && pg->getSize() == 1) return run_collective_untyped(op, ks, stack);
  const std::string axis = pg ? axis_of(*pg, ctx) : std::string();

  if (rule == nullptr)
    fail(core::ErrorKind::SpmdTypeError,
         "spmd-check: type checking for the raw c10d collective " + name +
             " is not yet implemented; use the spmd wrapper instead",
         "call spmd::all_reduce / all_gather / reduce_scatter / all_to_all "
         "(spmd/collectives.h) with the axis, src and dst",
         call_context(name, rule, axis, inputs, outputs, ctx));
  if (axis.empty())
    fail(core::ErrorKind::UsageError,
         std::string(rule->name) + ": the process group (size " +
             std::to_string(pg ? pg->getSize() : 0) +
             ") is not an axis of the current mesh, so the call cannot be "
             "typed",
         "pass the group of a mesh axis (DeviceMesh::axis(name).group) under "
         "a spmd::MeshGuard, or use the spmd wrapper",
         call_context(name, rule, axis, inputs, outputs, ctx));
  const std::string ctx_text =
      call_context(name, rule, axis, inputs, outputs, ctx);
  if (ctx.mesh && ctx.mesh->is_singleton(axis))
    return run_collective_untyped(op, ks, stack);

  // Validate everything before anything runs or changes (spec §14).
  std::vector<TensorType> after =
      check_raw_inputs(*rule, axis, inputs, st, ctx_text);
  check_raw_outputs(*rule, name, axis, outputs, st, ctx_text);

  run_collective_untyped(op, ks, stack);
  for (std::size_t k = 0; k < after.size(); ++k)
    stamp(inputs[k], intern(after[k]));
}

}  // namespace spmd::checker::internal
