// Before C++20 the translation unit's traversal skips a function body that
// holds no other function, deciding from the function's own declarations (a
// lambda's closure class, a local class, ...): every function held in a body
// must still be found and checked. C++17 here; templates_lambdas.cpp runs
// the C++20 path.
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note -std=c++17
#include "Inputs/prelude.h"

void in_lambda(SPMD_TYPE(tp = P) const Tensor& p) {
  auto f = [&](const Tensor& x) {
    return torch::relu(p); // expected-error {{cannot propagate through non-linear ops}}
  };
  (void)f;
}

void in_nested_lambda(SPMD_TYPE(tp = P) const Tensor& p) {
  auto f = [&]() {
    auto g = [&]() {
      return torch::relu(p); // expected-error {{cannot propagate through non-linear ops}}
    };
    return g();
  };
  (void)f;
}

void in_local_class() {
  struct Local {
    static Tensor g(SPMD_TYPE(tp = P) const Tensor& q) {
      return torch::relu(q); // expected-error {{cannot propagate through non-linear ops}}
    }
  };
  (void)&Local::g;
}

void in_generic_lambda(SPMD_TYPE(tp = P) const Tensor& p) {
  auto f = [&](auto scale) {
    return torch::relu(p * scale); // expected-error {{cannot propagate through non-linear ops}}
  };
  (void)f(2.0);
}

// No function inside: the body is skipped by the traversal, still analysed.
void plain(SPMD_TYPE(tp = P) const Tensor& p) {
  auto y = torch::relu(p); // expected-error {{cannot propagate through non-linear ops}}
  (void)y;
}

// Only variables and a lambda-free loop: nothing inside is reported twice.
void plain_loop(SPMD_TYPE(tp = R) const Tensor& r, int n) {
  Tensor acc = r;
  for (int i = 0; i < n; ++i)
    acc = torch::relu(acc);
  (void)acc;
}
