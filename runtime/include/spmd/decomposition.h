// spmd/decomposition.h - typing an opaque fused kernel by a reference
// implementation (spec §13.2, the reference's register_decomposition).
//
//   spmd::register_decomposition(
//       "rms_norm_matmul",
//       [](const at::Tensor& x, const at::Tensor& g, const at::Tensor& w,
//          double eps) {
//         at::Tensor n = x * at::rsqrt(x.pow(2).mean({-1}, true) + eps);
//         return at::matmul(n * g, w);
//       });
//   at::Tensor y = spmd::call_decomposed("rms_norm_matmul", fused_kernel,
//                                        x, g, w, 1e-6);
//
// Under the runtime checker, call_decomposed runs the registered reference on
// shape-only (meta device) copies of the arguments that carry the inputs'
// types and PartitionSpecs, with the checker on: each ATen op of the
// reference applies its own rule, so a type error surfaces from the
// primitive that is wrong. Then the kernel runs for real with checking
// paused, and the types the reference inferred are given to the kernel's
// outputs, leaf by leaf (a Tensor, a std::vector<at::Tensor> or a tuple,
// flattened; the counts and the shapes must match). Without a guard
// call_decomposed is `kernel(args...)` after one thread-local read.
//
// The reference must accept the arguments call_decomposed is given, after
// decay (std::decay_t), with the same types: a reference taking `double eps`
// needs a double argument, not a float or an int.
#ifndef SPMD_DECOMPOSITION_H
#define SPMD_DECOMPOSITION_H

#include <ATen/core/Tensor.h>
#include <spmd/boundaries.h>
#include <spmd/checker.h>
#include <spmd/source_location.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <vector>

namespace spmd {

namespace detail {

/// A registered reference, type-erased: `invoke` takes a pointer to a
/// std::tuple of the decayed parameter types and returns the flattened
/// outputs.
struct Decomposition {
  std::string name;
  std::type_index args_type = typeid(void);
  std::string signature;  // "(at::Tensor, at::Tensor, double)"
  std::function<std::vector<at::Tensor>(void*)> invoke;
};

/// Registers `d` under d.name. Errors: UsageError for an empty name, an empty
/// reference or a name already registered.
void register_decomposition(Decomposition d);
/// The decomposition registered under `name`; nullptr when there is none in
/// permissive mode. Errors: SpmdTypeError in strict mode when there is none.
std::shared_ptr<const Decomposition> find_decomposition(std::string_view name);
/// Errors: UsageError when the arguments' types are not the reference's.
void check_signature(const Decomposition& d, std::type_index args_type,
                     const std::string& signature);
/// Runs the reference on the meta arguments with the checker on; a failure
/// becomes an error naming the decomposition (SpmdError kinds kept, anything
/// else a UsageError).
std::vector<at::Tensor> run_reference(const Decomposition& d, void* meta_args);
/// Gives the kernel's outputs the types of the reference's outputs. Errors:
/// SpmdTypeError for a different number of outputs or a different shape.
void type_kernel_outputs(const Decomposition& d,
                         const std::vector<at::Tensor>& reference_outputs,
                         const std::vector<at::Tensor>& kernel_outputs);
/// A tensor of the same shape, dtype and layout on the meta device, carrying
/// `t`'s type and PartitionSpec (undefined stays undefined).
at::Tensor to_meta(const at::Tensor& t);
/// "at::Tensor", "double", ... (demangled).
std::string type_name(const std::type_info& t);

inline std::vector<at::Tensor> to_meta(const std::vector<at::Tensor>& v) {
  std::vector<at::Tensor> out;
  out.reserve(v.size());
  for (const at::Tensor& t : v) out.push_back(to_meta(t));
  return out;
}
inline std::optional<at::Tensor> to_meta(const std::optional<at::Tensor>& t) {
  if (!t) return std::nullopt;
  return to_meta(*t);
}
template <typename X>
X to_meta(const X& x) {
  return x;  // not a tensor: passed as it is
}

template <typename... Ps>
std::string signature_of() {
  std::string s = "(";
  bool first = true;
  ((s += (first ? "" : ", ") + type_name(typeid(Ps)), first = false), ...);
  return s + ")";
}

template <typename R, typename... Ps>
Decomposition make_decomposition(std::string name,
                                 std::function<R(Ps...)> reference) {
  using Args = std::tuple<std::decay_t<Ps>...>;
  Decomposition d;
  d.name = std::move(name);
  d.args_type = typeid(Args);
  d.signature = signature_of<std::decay_t<Ps>...>();
  if (reference)
    d.invoke = [ref = std::move(reference)](void* args) {
      std::vector<at::Tensor> out;
      flatten(out, std::apply(ref, *static_cast<Args*>(args)));
      return out;
    };
  return d;
}

}  // namespace detail

/// The name of a decomposition at a call_decomposed call, with the caller's
/// line (converted implicitly from a string; never written by hand). The
/// line is that of the name argument: keep it on the line of the call.
struct DecompositionName {
  DecompositionName(const char* n, SourceLocation l = SourceLocation::current())
      : name(n), loc(l) {}
  DecompositionName(const std::string& n,
                    SourceLocation l = SourceLocation::current())
      : name(n), loc(l) {}
  std::string_view name;  // valid for the full-expression of the call
  SourceLocation loc;
};

/// Registers `reference` as the decomposition `name` (spec §13.2): a pure
/// function of its inputs' shapes and types (ATen ops with meta kernels; no
/// .item(), data-dependent branches or communication) returning a Tensor, a
/// std::vector<at::Tensor> or a tuple of tensors. `reference` may be a
/// function pointer, a std::function or a non-generic lambda. Errors:
/// UsageError for an empty name or reference, or a name already registered.
template <typename F>
void register_decomposition(std::string name, F reference) {
  std::function fn{std::move(reference)};
  detail::register_decomposition(
      detail::make_decomposition(std::move(name), std::move(fn)));
}

/// Calls `kernel(args...)` and, under a TypecheckGuard, types its outputs by
/// the decomposition `name` (see the top of this header). Without a guard it
/// is the plain call. Errors (each names the decomposition and the fix):
/// SpmdTypeError for a name not registered in strict mode (permissive: the
/// kernel runs unchecked and its outputs stay untyped, as for an
/// unregistered autograd function, spec §5.1), for a different number of
/// outputs or a different shape between reference and kernel, and for type
/// errors in the reference; UsageError for arguments whose types are not
/// the reference's parameters or a reference that fails on meta tensors.
/// Errors end with "Called from <file>:<line> (spmd::call_decomposed)".
template <typename Kernel, typename... Args>
std::invoke_result_t<Kernel&, Args&&...> call_decomposed(
    const DecompositionName& name, Kernel&& kernel, Args&&... args) {
  using R = std::invoke_result_t<Kernel&, Args&&...>;
  if (!checker::is_type_checking())
    return std::invoke(kernel, std::forward<Args>(args)...);
  detail::CallSiteScope site("call_decomposed", name.loc);
  std::shared_ptr<const detail::Decomposition> d =
      detail::find_decomposition(name.name);
  auto run_kernel = [&]() -> R {
    checker::NoTypecheckGuard paused;  // the kernel is opaque
    return std::invoke(kernel, std::forward<Args>(args)...);
  };
  if (d == nullptr) return run_kernel();  // permissive: untyped outputs
  using Tuple = std::tuple<std::decay_t<Args>...>;
  detail::check_signature(*d, typeid(Tuple),
                          detail::signature_of<std::decay_t<Args>...>());
  std::vector<at::Tensor> reference_outputs;
  {
    Tuple meta{detail::to_meta(args)...};
    reference_outputs = detail::run_reference(*d, &meta);
  }
  R result = run_kernel();
  std::vector<at::Tensor> outs;
  detail::flatten(outs, result);
  detail::type_kernel_outputs(*d, reference_outputs, outs);
  return result;
}

}  // namespace spmd

#endif  // SPMD_DECOMPOSITION_H
