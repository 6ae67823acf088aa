// Calls through function pointers, std::function and callable members reach
// the annotated function they hold (a local never reassigned, or a member
// every constructor initialises with the same function); a callable member
// can also be annotated with [[spmd::op(kind)]].
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
// RUN-PLUGIN: -Xclang -verify=strict -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

#include <functional>

[[spmd::type(tp = I)]] Tensor reduce([[spmd::type(tp = P)]] const Tensor& x);
[[spmd::type(tp = R)]] Tensor other([[spmd::type(tp = P)]] const Tensor& x);

[[spmd::type(tp = I)]]
Tensor through_pointer([[spmd::type(tp = V)]] const Tensor& x) {
  auto fn = &reduce;
  return fn(x); // expected-error {{argument 'x' of 'reduce' has type V on axis 'tp', but parameter 'x' is declared P there}} strict-error {{argument 'x'}}
}

[[spmd::type(tp = I)]]
Tensor through_deref([[spmd::type(tp = P)]] const Tensor& p,
                     [[spmd::type(tp = R)]] const Tensor& r) {
  Tensor (*fn)(const Tensor&) = reduce;
  return (*fn)(p) + r; // expected-error {{operator+: Invariant type on axis tp cannot mix}} strict-error {{Invariant}}
}

[[spmd::type(tp = I)]]
Tensor through_std_function([[spmd::type(tp = P)]] const Tensor& p) {
  std::function<Tensor(const Tensor&)> fn = reduce;
  return fn(p); // I: no error
}

[[spmd::type(tp = I)]]
Tensor through_lambda([[spmd::type(tp = V)]] const Tensor& x) {
  std::function<Tensor(const Tensor&)> fn =
      []([[spmd::type(tp = P)]] const Tensor& t) { return reduce(t); };
  return fn(x); // expected-error {{argument 'x' of 'operator()' has type V on axis 'tp', but parameter 't' is declared P there}} strict-error {{argument 'x'}} strict-warning {{unknown SPMD type}}
}

// Reassigned: which function it holds is not known; nothing is guessed.
[[spmd::type(tp = I)]]
Tensor reassigned([[spmd::type(tp = V)]] const Tensor& x, bool b) {
  auto fn = &reduce;
  if (b)
    fn = &other;
  return fn(x); // strict-warning {{unknown SPMD type}}
}

class Layer {
public:
  Layer() : fn_(&reduce) {}
  [[spmd::type(tp = I)]]
  Tensor forward([[spmd::type(tp = V)]] const Tensor& x) {
    return fn_(x); // expected-error {{argument 'x' of 'reduce' has type V on axis 'tp', but parameter 'x' is declared P there}} strict-error {{argument 'x'}}
  }

private:
  Tensor (*fn_)(const Tensor&);
};

// A callable member set from outside: [[spmd::op]] says how it propagates.
class Activation {
public:
  explicit Activation(std::function<Tensor(const Tensor&)> fn) : act_(fn) {}
  [[spmd::type(tp = I)]]
  Tensor forward([[spmd::type(tp = P)]] const Tensor& x) {
    return act_(x); // expected-error {{act_: Partial type on axis tp cannot propagate through non-linear ops}} strict-error {{Partial}}
  }
  [[spmd::type(tp = I)]]
  Tensor ok([[spmd::type(tp = I)]] const Tensor& x) { return act_(x); }

private:
  [[spmd::op(nonlinear)]] std::function<Tensor(const Tensor&)> act_;
};
