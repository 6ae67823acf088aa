// ignore=opaque-call in strict mode: the call is not reported, so what it
// leaves unknown is reported at its first use (unknown-type), as any other
// unknown value: nothing goes silent (docs/plugin.md "Calls the checker
// cannot see through").
// RUN-PLUGIN: -Xclang -verify -fplugin-arg-spmd-check-strict -fplugin-arg-spmd-check-ignore=opaque-call
#include "Inputs/prelude.h"

void attn_kernel(Tensor& out, const Tensor& q);

SPMD_TYPE(tp = R)
Tensor written(SPMD_TYPE(tp = R) const Tensor& q) {
  auto out = torch::zeros_like(q);
  attn_kernel(out, q);
  return out; // expected-warning {{'out' has an unknown SPMD type}}
}

SPMD_TYPE(tp = R)
Tensor result(SPMD_TYPE(tp = R) const Tensor& x) {
  auto y = opaque(x);
  return y; // expected-warning {{'y' has an unknown SPMD type}}
  // expected-note@Inputs/prelude.h:16 {{'opaque' is declared here without a result type}}
}
