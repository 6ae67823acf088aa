// Annotations that come through a precompiled header built with the plugin
// loaded are seen here (the PCH is annotated.h, built by the test fixture
// plugin.pch.build; this file does not include it).
void uses(const Layer& l, SPMD_TYPE(tp = R) const Tensor& r,
          SPMD_TYPE(tp = V) const Tensor& v, SPMD_TYPE(tp = P) const Tensor& p) {
  column_parallel(r, v);
  column_parallel(p, v); // expected-error {{argument 'p' of 'column_parallel' has type P on axis 'tp', but parameter 'x' is declared R there}}
  l.forward(p);
  l.forward(r); // expected-error {{argument 'r' of 'forward' has type R on axis 'tp', but parameter 'x' is declared P there}}
  auto x = column_parallel(r, v); // {tp: V}, the declared result type
  spmd::assert_type(x, {tp = V});
  auto y = column_parallel(r, v);
  spmd::assert_type(y, {tp = R}); // expected-error {{'y' has type V on axis 'tp', but the assertion says R}}
  spmd::assert_type(l.weight, {tp = V});
  spmd::assert_type(l.weight, {tp = R}); // expected-error {{'weight' has type V on axis 'tp', but the assertion says R}}
  act(r);
  act(p); // expected-error {{act: Partial type on axis tp cannot propagate through non-linear ops}}
  reduce(p);
  reduce(r); // expected-error {{argument 'r' of 'reduce' has type R on axis 'tp', but parameter 'p' is declared P there}}
}
