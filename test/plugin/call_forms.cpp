// Arguments are matched to the callee's real parameters in every call form:
// free and static functions, member calls, C++23 explicit object parameters
// (`this const Self&`, the object is parameter 0), member and C++23 static
// operator() / operator[], free operators and constructors. Each form has a
// call that must be accepted and one whose error names the right parameter.
// RUN-PLUGIN: -std=c++23 -Xclang -verify -Xclang -verify-ignore-unexpected=note
#include "Inputs/prelude.h"

// A free function.
SPMD_TYPE(tp = V)
Tensor free_fn(SPMD_TYPE(tp = R) const Tensor& x, SPMD_TYPE(tp = V) const Tensor& w);

struct Layer {
  // An implicit object member function.
  SPMD_TYPE(tp = V)
  Tensor forward(SPMD_TYPE(tp = R) const Tensor& x, SPMD_TYPE(tp = V) const Tensor& w) const;
  // An explicit object member function: `self` is parameter 0.
  SPMD_TYPE(tp = V)
  Tensor deduced(this const Layer& self, SPMD_TYPE(tp = R) const Tensor& x,
                 SPMD_TYPE(tp = V) const Tensor& w);
  // A static member function.
  SPMD_TYPE(tp = V)
  static Tensor make(SPMD_TYPE(tp = R) const Tensor& x, SPMD_TYPE(tp = V) const Tensor& w);
};

// operator() in its three forms: implicit object, explicit object, static.
struct Implicit {
  SPMD_TYPE(tp = V)
  Tensor operator()(SPMD_TYPE(tp = R) const Tensor& x, SPMD_TYPE(tp = V) const Tensor& w) const;
};
struct Explicit {
  SPMD_TYPE(tp = V)
  Tensor operator()(this const Explicit& self, SPMD_TYPE(tp = R) const Tensor& x,
                    SPMD_TYPE(tp = V) const Tensor& w);
};
struct Static {
  SPMD_TYPE(tp = V)
  static Tensor operator()(SPMD_TYPE(tp = R) const Tensor& x, SPMD_TYPE(tp = V) const Tensor& w);
  // C++23 multi-argument static subscript.
  SPMD_TYPE(tp = V)
  static Tensor operator[](SPMD_TYPE(tp = R) const Tensor& x, SPMD_TYPE(tp = V) const Tensor& w);
};

// A free operator on a non-tensor class (the user's, not a torch op).
struct Scale {};
SPMD_TYPE(tp = R)
Tensor operator*(Scale s, SPMD_TYPE(tp = R) const Tensor& x);

// Constructors.
struct Block {
  Block(SPMD_TYPE(tp = R) const Tensor& x, SPMD_TYPE(tp = V) const Tensor& w);
};

void free_and_members(const Layer& l, SPMD_TYPE(tp = R) const Tensor& r,
                      SPMD_TYPE(tp = V) const Tensor& v,
                      SPMD_TYPE(tp = P) const Tensor& p) {
  free_fn(r, v);
  free_fn(p, v); // expected-error {{argument 'p' of 'free_fn' has type P on axis 'tp', but parameter 'x' is declared R there}}
  free_fn(r, p); // expected-error {{argument 'p' of 'free_fn' has type P on axis 'tp', but parameter 'w' is declared V there}}

  l.forward(r, v);
  l.forward(p, v); // expected-error {{argument 'p' of 'forward' has type P on axis 'tp', but parameter 'x' is declared R there}}
  l.forward(r, p); // expected-error {{argument 'p' of 'forward' has type P on axis 'tp', but parameter 'w' is declared V there}}

  l.deduced(r, v);
  l.deduced(p, v); // expected-error {{argument 'p' of 'deduced' has type P on axis 'tp', but parameter 'x' is declared R there}}
  l.deduced(r, p); // expected-error {{argument 'p' of 'deduced' has type P on axis 'tp', but parameter 'w' is declared V there}}

  Layer::make(r, v);
  l.make(r, v);
  Layer::make(p, v); // expected-error {{argument 'p' of 'make' has type P on axis 'tp', but parameter 'x' is declared R there}}
  l.make(r, p); // expected-error {{argument 'p' of 'make' has type P on axis 'tp', but parameter 'w' is declared V there}}
}

void call_operators(const Implicit& i, const Explicit& e, const Static& s,
                    SPMD_TYPE(tp = R) const Tensor& r,
                    SPMD_TYPE(tp = V) const Tensor& v,
                    SPMD_TYPE(tp = P) const Tensor& p) {
  i(r, v);
  i(p, v); // expected-error {{argument 'p' of 'operator()' has type P on axis 'tp', but parameter 'x' is declared R there}}
  i(r, p); // expected-error {{argument 'p' of 'operator()' has type P on axis 'tp', but parameter 'w' is declared V there}}

  e(r, v);
  e(p, v); // expected-error {{argument 'p' of 'operator()' has type P on axis 'tp', but parameter 'x' is declared R there}}
  e(r, p); // expected-error {{argument 'p' of 'operator()' has type P on axis 'tp', but parameter 'w' is declared V there}}

  s(r, v);
  Static::operator()(r, v);
  s(p, v); // expected-error {{argument 'p' of 'operator()' has type P on axis 'tp', but parameter 'x' is declared R there}}
  s(r, p); // expected-error {{argument 'p' of 'operator()' has type P on axis 'tp', but parameter 'w' is declared V there}}
  Static::operator()(p, v); // expected-error {{argument 'p' of 'operator()' has type P on axis 'tp', but parameter 'x' is declared R there}}

  s[r, v];
  s[p, v]; // expected-error {{argument 'p' of 'operator[]' has type P on axis 'tp', but parameter 'x' is declared R there}}

  Scale k;
  k * r;
  k * p; // expected-error {{argument 'p' of 'operator*' has type P on axis 'tp', but parameter 'x' is declared R there}}
}

SPMD_TYPE(tp = V)
Tensor results_flow(const Explicit& e, const Static& s,
                    SPMD_TYPE(tp = R) const Tensor& r,
                    SPMD_TYPE(tp = V) const Tensor& v) {
  auto a = e(r, v); // {tp: V}, the declared result
  auto b = s(r, v); // {tp: V}
  spmd::assert_type(a, {tp = V});
  spmd::assert_type(b, {tp = R}); // expected-error {{'b' has type V on axis 'tp', but the assertion says R}}
  return a + b;
}

void constructors(SPMD_TYPE(tp = R) const Tensor& r,
                  SPMD_TYPE(tp = V) const Tensor& v,
                  SPMD_TYPE(tp = P) const Tensor& p) {
  Block ok(r, v);
  Block braced{r, v};
  Block bad(p, v); // expected-error {{argument 'p' of 'Block' has type P on axis 'tp', but parameter 'x' is declared R there}}
  Block bad_w{r, p}; // expected-error {{argument 'p' of 'Block' has type P on axis 'tp', but parameter 'w' is declared V there}}
  (void)Block(r, v);
  (void)Block(p, v); // expected-error {{argument 'p' of 'Block' has type P on axis 'tp', but parameter 'x' is declared R there}}
}
