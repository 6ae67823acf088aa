// An unannotated layer or helper called from annotated code (docs/plugin.md
// "Diagnostics"): strict mode reports its unknown result once, with a note
// at the callee: at the call (the boundary) when the result is used there,
// else at the first use of the variable that holds it (whose type may still
// be asserted before); the values computed from it are not reported again. A stated type (assert_type, a typed
// variable) is no news; library functions are not the code's to annotate.
// Real errors on the same path are still reported. Outside strict mode
// unknown flows silently.
// RUN-PLUGIN: -Xclang -verify=strict -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify
#include "Inputs/prelude.h"

struct Mlp : torch::nn::Module {
  Tensor forward(const Tensor& x); // strict-note {{'forward' is declared here without a result type}}
};
Tensor helper(const Tensor& x); // strict-note 3 {{'helper' is declared here without a result type}}

SPMD_TYPE(tp = I)
Tensor chain(SPMD_TYPE(tp = I) const Tensor& x, Mlp& mlp) {
  auto a = helper(x);
  auto b = a * 2; // strict-warning {{'a' has an unknown SPMD type: it holds the result of 'helper', which declares no [[spmd::type]] for its result; annotate 'helper' or state the type with spmd::assert_type}}
  auto c = torch::relu(b);
  auto d = c + x;
  auto e = mlp.forward(d);
  auto f = e.sum(); // strict-warning {{'e' has an unknown SPMD type: it holds the result of 'forward'}}
  return f;
}

// A real error next to the unknown chain is still reported.
SPMD_TYPE(tp = R)
Tensor error_kept(SPMD_TYPE(tp = P) const Tensor& p, const Tensor& x) { // strict-note {{'p' has type P}} expected-note {{'p' has type P}}
  auto a = helper(x);
  auto b = a + 1; // strict-warning {{'a' has an unknown SPMD type: it holds the result of 'helper'}}
  return torch::relu(p) + b; // strict-error {{cannot propagate through non-linear ops}} strict-note {{insert spmd::all_reduce}} expected-error {{cannot propagate through non-linear ops}} expected-note {{insert spmd::all_reduce}}
}

// Where it must not fire: the type asserted at the call, a library function
// (std::move). A typed variable's initializer is checked against its type:
// the usual warning of an unknown value there, not the boundary one.
SPMD_TYPE(tp = I)
Tensor stated(SPMD_TYPE(tp = I) const Tensor& x) {
  auto a = spmd::assert_type(helper(x), {tp = I});
  SPMD_TYPE(tp = I) Tensor b = helper(a); // strict-warning {{this value has an unknown SPMD type}}
  return std::move(b);
}

// Used right at the call: reported there, once.
SPMD_TYPE(tp = I)
Tensor used_at_call(SPMD_TYPE(tp = I) const Tensor& x) {
  return helper(x) * 2 + x; // strict-warning {{the result of 'helper' has an unknown SPMD type: 'helper' declares no [[spmd::type]] for its result, so neither this value nor what is computed from it is checked; annotate 'helper' or state the type here with spmd::assert_type}}
}

// Asserted after the call, before any use: nothing to report.
SPMD_TYPE(tp = I)
Tensor asserted_later(SPMD_TYPE(tp = I) const Tensor& x) {
  auto a = helper(x);
  spmd::assert_type(a, {tp = I});
  return a * 2;
}

// A tensor from an unannotated loader registered as a module's parameter
// takes the type declared for the field it initialises: no report.
Tensor load_weight(int64_t rows);
struct Loaded : torch::nn::Module {
  explicit Loaded(int64_t rows) {
    weight = register_parameter("weight", load_weight(rows));
  }
  SPMD_TYPE(tp = S(0)) Tensor weight;
};

// A result turned into a plain number at once (logging, a conversion) has
// no SPMD type to check further: no report.
double to_double(const Tensor& t);
void consumed(SPMD_TYPE(tp = I) const Tensor& x) {
  double v = to_double(helper(x));
}
