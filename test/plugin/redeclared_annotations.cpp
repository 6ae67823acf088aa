// Redeclarations of a function that annotate its result or a parameter
// differently are a warning at the later one (which annotation a call uses
// depends on the declaration it sees); agreeing or single annotations are
// fine.
#include "Inputs/prelude.h"

SPMD_TYPE(tp = V)
Tensor agree(SPMD_TYPE(tp = V) const Tensor& x);
SPMD_TYPE(tp = V)
Tensor agree(SPMD_TYPE(tp = V) const Tensor& x) { return x; }

SPMD_TYPE(tp = I)
Tensor once(SPMD_TYPE(tp = I) const Tensor& x);
Tensor once(const Tensor& x) { return x; }

// A definition without annotations takes the declaration's.
SPMD_TYPE(tp = V)
Tensor declared_only(SPMD_TYPE(tp = V) const Tensor& x);
Tensor declared_only(const Tensor& x) { return x; }

SPMD_TYPE(tp = R) // expected-note {{earlier annotation is here}}
Tensor result_differs(const Tensor& x);
SPMD_TYPE(tp = V) // expected-warning {{'spmd::type' on the result of 'result_differs' is {tp: V} here but {tp: R} on an earlier declaration}}
Tensor result_differs(const Tensor& x);

Tensor param_differs(SPMD_TYPE(tp = P) const Tensor& x); // expected-note {{earlier annotation is here}}
Tensor param_differs(SPMD_TYPE(tp = I) const Tensor& x); // expected-warning {{'spmd::type' on parameter 'x' of 'param_differs' is {tp: I} here but {tp: P} on an earlier declaration}}

struct Layer {
  SPMD_TYPE(tp = V)
  Tensor forward(SPMD_TYPE(dp = R, tp = R) const Tensor& x); // expected-note {{earlier annotation is here}}
};
SPMD_TYPE(tp = V)
Tensor Layer::forward(SPMD_TYPE(tp = R) const Tensor& x) { // expected-warning {{'spmd::type' on parameter 'x' of 'Layer::forward' is {tp: R} here but {dp: R, tp: R} on an earlier declaration}}
  return opaque(x);
}
