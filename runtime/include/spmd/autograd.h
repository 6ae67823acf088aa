// spmd/autograd.h - custom autograd functions under the runtime checker
// (spec §13.1): the C++ counterpart of the reference's spmd_typecheck hook,
// register_autograd_function and register_local_autograd_function.
//
// A torch::autograd::Function<T> is opaque to the dispatcher: the checker
// sees the ATen ops of T::forward one by one, not the call of T::apply. To
// type the call as a whole, derive from spmd::autograd::Function<T> instead
// (a drop-in: it derives from torch::autograd::Function<T>) or call
// spmd::autograd::apply<T>(args...). Then, while a TypecheckGuard is alive:
//
//  1. T has a static `spmd_typecheck(outputs, args...)` member (detected at
//     compile time, no registration): T::forward runs with checking paused,
//     then the hook runs with checking on, given the exact return value and
//     the forward arguments (ctx excluded). It asserts the input and output
//     types (assert_type / assert_type_like), which checks and stamps.
//  2. T was registered with register_function<T>(hook): the same, with that
//     hook (for a class one cannot edit).
//  3. T declares itself communication-free (`static constexpr bool
//     spmd_local = true;`, or register_local_function<T>()): the outputs are
//     typed from the tensor arguments by the rule of an unknown op (spec
//     §6.6: NONLINEAR; R/V mix to V, all I stays I, P rejected).
//  4. Otherwise: strict -> spmd::SpmdTypeError "<T>.apply: autograd Function
//     is not registered for SPMD type checking"; permissive -> the function
//     runs and its outputs are untyped.
//
// Without a guard, apply is torch's apply and nothing else.
#ifndef SPMD_AUTOGRAD_H
#define SPMD_AUTOGRAD_H

#include <ATen/core/Tensor.h>
#include <c10/util/Type.h>
#include <torch/csrc/autograd/custom_function.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <typeindex>
#include <utility>
#include <vector>

namespace spmd::autograd {

/// A typecheck hook given at registration (rule 2): the outputs and the
/// tensor arguments of apply, in order (lists flattened, numbers skipped).
using TypecheckHook =
    std::function<void(const std::vector<at::Tensor>& outputs,
                       const std::vector<at::Tensor>& inputs)>;

namespace detail {

/// How the checker types one class (its registration, or its members).
enum class Rule { Unregistered, Hook, RegisteredHook, Local };

/// The registration of `type` merged with what the class declares.
/// Errors: spmd::UsageError when the class defines spmd_typecheck and was
/// also registered with a hook (spec §13.1: not both).
Rule rule_for(std::type_index type, const std::string& name, bool has_hook,
              bool declared_local);
/// The hook registered for `type` (rule 2).
const TypecheckHook& registered_hook(std::type_index type);
/// Whether the calling thread's checker is on (a guard alive, not paused).
bool checking();
/// Pauses the checker while alive (spmd::checker::NoTypecheckGuard without
/// including <spmd/checker.h> here).
class Paused {
 public:
  Paused();
  ~Paused();
  Paused(const Paused&) = delete;
  Paused& operator=(const Paused&) = delete;

 private:
  void* guard_;
};
/// Rule 3: types `outputs` from `inputs` and the plain numbers (count) by the
/// unknown-op rule. Throws SpmdTypeError naming "<name>.apply".
void type_local(const std::string& name, const std::vector<at::Tensor>& inputs,
                int numbers, const std::vector<at::Tensor>& outputs);
/// Rule 4 in strict mode: throws SpmdTypeError. Permissive: does nothing.
void unregistered(const std::string& name);
/// Runs a hook; an SpmdError it throws gets "In <name>.apply" appended.
void run_hook(const std::string& name, const std::function<void()>& hook);

// Tensors and numbers of an argument list (lists flattened).
inline void collect(std::vector<at::Tensor>& ts, int& n, const at::Tensor& t) {
  if (t.defined()) ts.push_back(t);
}
inline void collect(std::vector<at::Tensor>& ts, int& n,
                    const std::vector<at::Tensor>& v) {
  for (const at::Tensor& t : v) collect(ts, n, t);
}
inline void collect(std::vector<at::Tensor>& ts, int& n,
                    const std::optional<at::Tensor>& t) {
  if (t) collect(ts, n, *t);
}
template <typename... Xs>
void collect(std::vector<at::Tensor>& ts, int& n, const std::tuple<Xs...>& t) {
  std::apply([&](const auto&... x) { (collect(ts, n, x), ...); }, t);
}
template <typename X>
void collect(std::vector<at::Tensor>& ts, int& n, const X&) {
  if constexpr (std::is_arithmetic_v<X>) ++n;  // a plain number: weak scalar
}

template <typename... Args>
std::vector<at::Tensor> tensors_of(int& numbers, const Args&... args) {
  std::vector<at::Tensor> ts;
  (collect(ts, numbers, args), ...);
  return ts;
}

template <typename T, typename = void>
struct HasHook : std::false_type {};
template <typename T>
struct HasHook<T, std::void_t<decltype(&T::spmd_typecheck)>> : std::true_type {
};

template <typename T, typename = void>
struct DeclaredLocal : std::false_type {};
template <typename T>
struct DeclaredLocal<T, std::void_t<decltype(T::spmd_local)>>
    : std::bool_constant<T::spmd_local> {};

}  // namespace detail

/// Declares T communication-free (rule 3) without editing it. Returns true
/// (usable as a static initialiser).
bool register_local_function(std::type_index type, const std::string& name);
template <typename T>
bool register_local_function() {
  return register_local_function(std::type_index(typeid(T)),
                                 std::string(c10::demangle_type<T>()));
}

/// Registers a typecheck hook for T (rule 2). Errors: spmd::UsageError for
/// an empty hook, or when T already has one (a static spmd_typecheck member
/// or an earlier registration).
bool register_function(std::type_index type, const std::string& name,
                       TypecheckHook hook, bool has_member_hook);
template <typename T>
bool register_function(TypecheckHook hook) {
  return register_function(std::type_index(typeid(T)),
                           std::string(c10::demangle_type<T>()),
                           std::move(hook), detail::HasHook<T>::value);
}

/// T::apply(args...) typed by the rules above; torch's apply without a guard.
template <typename T, typename... Args>
auto apply(Args&&... args) {
  using Torch = torch::autograd::Function<T>;
  if (!detail::checking())
    return Torch::template apply<T>(std::forward<Args>(args)...);
  const std::string name(c10::demangle_type<T>());
  const detail::Rule rule = detail::rule_for(std::type_index(typeid(T)), name,
                                             detail::HasHook<T>::value,
                                             detail::DeclaredLocal<T>::value);
  int numbers = 0;
  std::vector<at::Tensor> inputs = detail::tensors_of(numbers, args...);
  auto outputs = [&] {
    detail::Paused paused;  // forward's own ops are not typed (spec §13.1)
    return Torch::template apply<T>(args...);
  }();
  switch (rule) {
    case detail::Rule::Hook:
      if constexpr (detail::HasHook<T>::value) {
        static_assert(
            std::is_invocable_v<decltype(&T::spmd_typecheck),
                                const decltype(outputs)&, const Args&...>,
            "spmd_typecheck must be a static member callable as "
            "spmd_typecheck(outputs, args...) with apply's return value and "
            "arguments");
        detail::run_hook(name, [&] { T::spmd_typecheck(outputs, args...); });
      }
      break;
    case detail::Rule::RegisteredHook: {
      int unused = 0;
      std::vector<at::Tensor> outs = detail::tensors_of(unused, outputs);
      const TypecheckHook& hook =
          detail::registered_hook(std::type_index(typeid(T)));
      detail::run_hook(name, [&] { hook(outs, inputs); });
      break;
    }
    case detail::Rule::Local: {
      int unused = 0;
      detail::type_local(name, inputs, numbers,
                         detail::tensors_of(unused, outputs));
      break;
    }
    case detail::Rule::Unregistered:
      detail::unregistered(name);
      break;
  }
  return outputs;
}

/// Drop-in base for custom autograd functions: `struct F :
/// spmd::autograd::Function<F> { static at::Tensor forward(...); ... }`
/// makes `F::apply(...)` the typed spmd::autograd::apply<F>.
template <typename T>
struct Function : torch::autograd::Function<T> {
  template <typename X = T, typename... Args>
  static auto apply(Args&&... args) {
    return spmd::autograd::apply<X>(std::forward<Args>(args)...);
  }
};

}  // namespace spmd::autograd

#endif  // SPMD_AUTOGRAD_H
