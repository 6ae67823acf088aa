// Annotations that come through a C++20 module precompiled with the plugin
// loaded are seen by its importers.
#include "../Inputs/prelude.h"
import annotated;

void uses(const Layer& l, SPMD_TYPE(tp = R) const Tensor& r,
          SPMD_TYPE(tp = V) const Tensor& v, SPMD_TYPE(tp = P) const Tensor& p) {
  column_parallel(r, v);
  column_parallel(p, v); // expected-error {{argument 'p' of 'column_parallel' has type P on axis 'tp', but parameter 'x' is declared R there}}
  l.forward(p);
  l.forward(r); // expected-error {{argument 'r' of 'forward' has type R on axis 'tp', but parameter 'x' is declared P there}}
  auto y = column_parallel(r, v);
  spmd::assert_type(y, {tp = R}); // expected-error {{'y' has type V on axis 'tp', but the assertion says R}}
}
