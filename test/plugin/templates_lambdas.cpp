// Templates are checked in their instantiations and reported once, at the
// template's own lines; lambdas, generic lambdas, macros and coroutines
// neither crash nor confuse the checker.
// RUN-PLUGIN: -Xclang -verify -std=c++20
#include "Inputs/prelude.h"

#include <coroutine>

template <typename T>
Tensor scaled(SPMD_TYPE(tp = P) const Tensor& p, T factor) { // #p
  return torch::relu(p * factor); // expected-error {{cannot propagate through non-linear ops}} expected-note {{insert}}
  // expected-note@#p {{declared here}}
}
template Tensor scaled<double>(const Tensor&, double);
template Tensor scaled<int>(const Tensor&, int);

template <typename TensorT>
struct Wrapper {
  SPMD_TYPE(tp = V) TensorT value; // #value
  SPMD_TYPE(tp = R) TensorT gathered() const {
    return spmd::all_gather(value, tp, V, R);
  }
  SPMD_TYPE(tp = R) TensorT wrong() const {  // #wrong
    return value; // expected-error {{returned value has type V on axis 'tp', but 'wrong' is declared to return R there}}
    // expected-note@#value {{type V on axis 'tp' declared here}}
    // expected-note@#wrong {{declared type is {tp: R}}}
  }
};
template struct Wrapper<Tensor>;

// An uninstantiated template is not checked (nothing to check yet).
template <typename T>
T never_instantiated(SPMD_TYPE(tp = P) const T& p) { return torch::relu(p); }

void lambdas(SPMD_TYPE(tp = P) const Tensor& p) { // #p2
  SPMD_TYPE(tp = P) Tensor q = p;
  auto f = [&] { return torch::relu(q); }; // expected-error {{cannot propagate through non-linear ops}} expected-note {{insert}}
  // expected-note@-2 {{declared here}}
  auto g = [](SPMD_TYPE(tp = P) const Tensor& x) { return x.exp(); }; // expected-error {{cannot propagate through non-linear ops}} expected-note {{insert}} expected-note {{declared here}}
  auto h = [](const auto& x) { return spmd::all_reduce(x, tp, P, R); };
  h(p);
  h(opaque(p));
  f();
  g(p);
}

#define ALL_REDUCE_TP(x) spmd::all_reduce(x, tp, P, R)
#define RELU(x) torch::relu(x)
Tensor macros(SPMD_TYPE(tp = P) const Tensor& p) { // #p3
  auto r = ALL_REDUCE_TP(p);
  auto bad = RELU(p); // expected-error {{cannot propagate through non-linear ops}} expected-note {{suggestion: Are you missing a collective}}
  // expected-note@#p3 {{declared here}}
  return r;
}

// A minimal coroutine type.
struct Task {
  struct promise_type {
    Task get_return_object() { return {}; }
    std::suspend_never initial_suspend() noexcept { return {}; }
    std::suspend_never final_suspend() noexcept { return {}; }
    void return_void() {}
    void unhandled_exception() {}
  };
};

Task coroutine(SPMD_TYPE(tp = P) const Tensor& p) {
  auto r = spmd::all_reduce(p, tp, P, R);
  co_return;
}
