// Strict mode (-fplugin-arg-spmd-check-strict): the first use of a tensor of
// unknown SPMD type in a checked function is a warning (naming the function
// that declares no result type, when the value holds its result, with a note
// there; at the call when the result is used right there), and what is
// computed from an unknown value is not reported again. Without strict mode,
// unknown flows silently.
// RUN-PLUGIN: -Xclang -verify=strict -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=strict -Xclang -plugin-arg-spmd-check -Xclang strict
// RUN-PLUGIN: -Xclang -verify=lax
// lax-no-diagnostics
#include "Inputs/prelude.h"

SPMD_TYPE(tp = R)
Tensor checked(SPMD_TYPE(tp = V) const Tensor& w, const Tensor& x) {
  auto y = torch::matmul(x, w); // strict-warning {{'x' has an unknown SPMD type; annotate it with [[spmd::type(...)]] or spmd::assert_type}}
  auto z = torch::relu(x);      // reported once per variable
  auto u = opaque(y);
  // strict-note@Inputs/prelude.h:16 2 {{'opaque' is declared here without a result type}}
  return spmd::all_reduce(u, tp, P, R); // strict-warning {{'u' has an unknown SPMD type: it holds the result of 'opaque', which declares no [[spmd::type]] for its result; annotate 'opaque' or state the type with spmd::assert_type}}
}

// Functions without any annotation or SPMD call are not checked at all.
Tensor unchecked_function(const Tensor& a) { return torch::relu(a) + a; }

// Unknown arguments of annotated functions.
void caller(const Tensor& raw, SPMD_TYPE(tp = V) const Tensor& w) {
  checked(w, raw);
  Tensor r = checked(opaque(raw), w); // strict-warning {{the result of 'opaque' has an unknown SPMD type}}
}
