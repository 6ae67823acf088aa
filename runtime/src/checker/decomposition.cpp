// decomposition.cpp - the non-template half of <spmd/decomposition.h>
// (spec §13.2): the registry of reference implementations, their run on
// meta copies of the inputs, and the typing of the fused kernel's outputs.
#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <c10/util/Type.h>
#include <spmd/decomposition.h>
#include <spmd/errors.h>

#include <map>
#include <mutex>
#include <sstream>

#include "internal.h"

namespace spmd::detail {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, std::shared_ptr<const Decomposition>, std::less<>>
      entries;
};

Registry& registry() {
  static auto* r = new Registry();  // outlives static registrations
  return *r;
}

std::string in_quotes(std::string_view name) {
  return "'" + std::string(name) + "'";
}

std::string shape_of(const at::Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream s;
  s << t.sizes();
  return s.str();
}

}  // namespace

void register_decomposition(Decomposition d) {
  if (d.name.empty())
    throw_error(
        core::ErrorKind::UsageError,
        "register_decomposition: the name is empty",
        "give the decomposition the name its call_decomposed calls use");
  if (!d.invoke)
    throw_error(
        core::ErrorKind::UsageError,
        "register_decomposition(" + in_quotes(d.name) +
            "): the reference implementation is empty",
        "pass a function that computes the kernel's result from ATen ops");
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto name = d.name;
  if (!r.entries
           .emplace(name, std::make_shared<const Decomposition>(std::move(d)))
           .second)
    throw_error(core::ErrorKind::UsageError,
                "register_decomposition(" + in_quotes(name) +
                    "): a decomposition is already registered under this name",
                "register each fused kernel once (e.g. at start-up), under a "
                "distinct name");
}

std::shared_ptr<const Decomposition> find_decomposition(std::string_view name) {
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.entries.find(name);
    if (it != r.entries.end()) return it->second;
  }
  // As for an unregistered autograd function (spec §5.1): strict rejects,
  // permissive runs the kernel with untyped outputs.
  if (!checker::is_strict()) return nullptr;
  throw_error(
      core::ErrorKind::SpmdTypeError,
      "call_decomposed(" + in_quotes(name) +
          "): no decomposition is registered under this name, so the "
          "fused kernel's outputs cannot be typed (not registered)",
      "register a reference implementation first: "
      "spmd::register_decomposition(\"" +
          std::string(name) +
          "\", reference); or type the kernel with spmd::no_typecheck("
          "{in_types, out_types}, kernel, args...); or use a permissive "
          "TypecheckGuard(false), which leaves its outputs untyped");
}

void check_signature(const Decomposition& d, std::type_index args_type,
                     const std::string& signature) {
  if (args_type == d.args_type) return;
  throw_error(
      core::ErrorKind::UsageError,
      "call_decomposed(" + in_quotes(d.name) + "): the arguments " + signature +
          " do not match the parameters of the registered reference " +
          d.signature,
      "pass arguments of the reference's parameter types (after decay, e.g. "
      "a double where it takes double, not a float or an int), or register "
      "a reference with the kernel's parameter types");
}

std::vector<at::Tensor> run_reference(const Decomposition& d, void* meta_args) {
  const std::string where = "the reference implementation of decomposition " +
                            in_quotes(d.name) +
                            " (run on shape-only meta copies of the inputs)";
  try {
    return d.invoke(meta_args);
  } catch (const SpmdError& e) {
    // A type error of a primitive of the reference: keep its kind and text,
    // say where it came from.
    core::TypeError err;
    err.kind = e.kind();
    err.message = without_call_site(e.what()) + "\n\n  In " + where;
    spmd::throw_error(err);
  } catch (const std::exception& e) {
    std::string what = e.what();
    if (const auto* c10e = dynamic_cast<const c10::Error*>(&e))
      what = c10e->what_without_backtrace();
    throw_error(
        core::ErrorKind::UsageError,
        "call_decomposed(" + in_quotes(d.name) +
            "): the reference implementation failed on shape-only (meta "
            "device) copies of the inputs: " +
            what,
        "a reference must be a pure function of its inputs' shapes: ATen "
        "ops with meta kernels only, no .item() or data-dependent branches, "
        "no communication, and any constant it creates on the meta device "
        "(x.options())");
  }
}

void type_kernel_outputs(const Decomposition& d,
                         const std::vector<at::Tensor>& reference_outputs,
                         const std::vector<at::Tensor>& kernel_outputs) {
  using namespace checker::internal;
  if (reference_outputs.size() != kernel_outputs.size())
    throw_error(core::ErrorKind::SpmdTypeError,
                "call_decomposed(" + in_quotes(d.name) +
                    "): the kernel returned " +
                    std::to_string(kernel_outputs.size()) +
                    " tensor(s) but the reference implementation returned " +
                    std::to_string(reference_outputs.size()),
                "make the reference return the same structure as the kernel (a "
                "tensor, a vector of tensors or a tuple, in the same order)");
  for (std::size_t k = 0; k < kernel_outputs.size(); ++k) {
    const at::Tensor& ref = reference_outputs[k];
    const at::Tensor& out = kernel_outputs[k];
    if (ref.defined() != out.defined() ||
        (out.defined() && ref.sizes() != out.sizes()))
      throw_error(
          core::ErrorKind::SpmdTypeError,
          "call_decomposed(" + in_quotes(d.name) + "): output " +
              std::to_string(k) + " of the kernel has shape " + shape_of(out) +
              " but the reference implementation gives " + shape_of(ref),
          "the reference must compute what the kernel computes: check its "
          "ops (a missing transpose, reduction or keepdim) against the "
          "kernel");
  }
  for (std::size_t k = 0; k < kernel_outputs.size(); ++k) {
    const at::Tensor& out = kernel_outputs[k];
    if (!out.defined()) continue;
    std::optional<core::GlobalType> g = global_of(reference_outputs[k]);
    if (!g) {
      // The reference left it untyped (e.g. a random factory): so is the
      // kernel's output.
      checker::clear_type(out);
      continue;
    }
    // A kernel output that is one of its typed inputs (an in-place kernel)
    // is checked, not retyped (spec §13.2: the types are asserted).
    TypeRef cur = type_of(out);
    if (cur != nullptr && !(*cur == g->local))
      throw_error(
          core::ErrorKind::SpmdTypeError,
          "call_decomposed(" + in_quotes(d.name) + "): output " +
              std::to_string(k) + " of the kernel already has type " +
              cur->to_string() +
              " (it is one of the inputs) but the "
              "reference implementation gives " +
              g->local.to_string(),
          "an in-place kernel keeps its operand's type: make the reference "
          "compute a result of that type too");
    stamp_global(out, *g);
  }
}

at::Tensor to_meta(const at::Tensor& t) {
  if (!t.defined()) return t;
  at::Tensor m;
  {
    checker::NoTypecheckGuard paused;
    m = at::empty_strided(t.sizes(), t.strides(),
                          t.options().device(at::kMeta));
  }
  using namespace checker::internal;
  if (TypeRef ty = type_of(t)) stamp(m, ty, shards_of(t));
  return m;
}

std::string type_name(const std::type_info& t) {
  std::string s = c10::demangle(t.name());
  return s;
}

}  // namespace spmd::detail
