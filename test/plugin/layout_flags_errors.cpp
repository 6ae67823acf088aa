// Malformed layout-flag annotations, override conflicts, and annotations
// that can have no effect.
// RUN-PLUGIN: -Xclang -verify
#include "Inputs/prelude.h"

class Layer : public torch::nn::Module {
public:
  [[spmd::type(tp = V)]] [[spmd::when(no_such_flag_, tp = I)]] // expected-error {{'spmd::when' names 'no_such_flag_', which is not a bool data member of 'Layer'}}
  Tensor a([[spmd::type(tp = I)]] const Tensor& x);
  [[spmd::type(tp = V)]] [[spmd::unless(size_, tp = I)]] // expected-error {{'spmd::unless' names 'size_', which is not a bool data member of 'Layer' (it has type 'int64_t')}}
  Tensor b([[spmd::type(tp = I)]] const Tensor& x);
  [[spmd::when(flag_)]] // expected-error {{'spmd::when' takes the name of a bool data member and at least one 'axis = type'}}
  Tensor c(const Tensor& x);
  [[spmd::when(flag_, tp)]] // expected-error {{argument of 'spmd::when' must be 'axis = type'}}
  Tensor d(const Tensor& x);

private:
  bool flag_;
  int64_t size_;
};

[[spmd::type(tp = V)]] [[spmd::when(flag_, tp = I)]] // expected-error {{'spmd::when' applies to non-static methods (the flag is a data member of the instance), but 'free_function' is not one}}
Tensor free_function([[spmd::type(tp = I)]] const Tensor& x);

// An override keeps the types of the method it overrides.
class Base {
public:
  virtual ~Base() = default;
  [[spmd::type(tp = V)]] // expected-note {{'Base::forward' declares {tp: V} here}}
  virtual Tensor forward([[spmd::type(tp = I)]] const Tensor& x) = 0; // expected-note {{'Base::forward' declares {tp: I} here}}
};

class Same : public Base {
public:
  [[spmd::type(tp = V)]]
  Tensor forward([[spmd::type(tp = I)]] const Tensor& x) override;
};

class Conflicting : public Base {
public:
  [[spmd::type(tp = R)]] // expected-error {{the result of 'Conflicting::forward' is declared {tp: R}, but the method it overrides, 'Base::forward', declares {tp: V}}}
  Tensor forward([[spmd::type(tp = V)]] const Tensor& x) override; // expected-error {{the parameter 'x' of 'Conflicting::forward' is declared {tp: V}, but the method it overrides, 'Base::forward', declares {tp: I}}}
};

// Annotations on values the checker does not track have no effect.
struct Config {
  [[spmd::type(tp = R)]] bool gather; // expected-warning {{'spmd::type' on 'gather' has no effect: its type 'bool' is not a tensor or a container of tensors}}
  [[spmd::type(tp = R)]] Tensor weight;
};

[[spmd::type(tp = R)]] int64_t count_tokens(const Tensor& t); // expected-warning {{'spmd::type' on the result of 'count_tokens' has no effect: its type 'int64_t'}}

void scale([[spmd::type(tp = R)]] double factor, // expected-warning {{'spmd::type' on 'factor' has no effect: its type 'double'}}
           [[spmd::type(tp = R)]] const Tensor& x);

void locals() {
  [[spmd::type(tp = R)]] int64_t n = 0; // expected-warning {{'spmd::type' on 'n' has no effect}}
  (void)n;
}

// Layout notes point at the member the layer is, and at the constructor
// argument that set its flag; a type the base annotation gives (no layout
// chose it) gets none.
class Gather : public torch::nn::Module {
public:
  explicit Gather(bool gather_output) : gather_output_(gather_output) {}
  [[spmd::type(tp = V)]] [[spmd::when(gather_output_, tp = I)]]
  Tensor forward([[spmd::type(tp = I)]] const Tensor& x);

private:
  bool gather_output_;
};

class Holder : public torch::nn::Module {
public:
  Holder() : gathered_(true), split_(false) {} // expected-note {{the layout of 'gathered_' ('gather_output_' = true) is chosen by this constructor argument}}
  [[spmd::type(tp = V)]] Tensor a([[spmd::type(tp = I)]] const Tensor& x) {
    return gathered_.forward(x); // expected-error {{returned value has type I on axis 'tp', but 'a' is declared to return V there}}
    // expected-note@-1 {{type I on axis 'tp' returned by this call}}
    // expected-note@-3 {{declared type is {tp: V}}}
    // expected-note@-3 {{insert spmd::convert(..., tp, spmd::I, spmd::V)}}
    // expected-note@#gathered {{'gathered_' is declared here; its layout ('gather_output_' = true) chooses the declared result type of this call}}
  }
  [[spmd::type(tp = I)]] Tensor b([[spmd::type(tp = I)]] const Tensor& x) {
    return split_.forward(x); // expected-error {{returned value has type V on axis 'tp', but 'b' is declared to return I there}}
    // expected-note@-1 {{type V on axis 'tp' returned by this call}}
    // expected-note@-3 {{declared type is {tp: I}}}
  }

private:
  Gather gathered_; // #gathered
  Gather split_;
};
