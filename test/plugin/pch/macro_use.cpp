// The annotations of macro-generated declarations that come through a
// precompiled header (pch/macro_decls.h, built by plugin.pch.macro_build)
// are each declaration's own: no error from another declaration's type, none
// missed. The same file checked with the header included directly
// (plugin.pch.macro_direct) gives the same errors.
void uses(SPMD_TYPE(tp = R) const Tensor& r, SPMD_TYPE(tp = V) const Tensor& v,
          SPMD_TYPE(tp = P) const Tensor& p) {
  up_proj(r);
  up_proj(p); // expected-error {{argument 'p' of 'up_proj' has type P on axis 'tp', but parameter 'x' is declared R there}}
  down_proj(p);
  down_proj(r); // expected-error {{argument 'r' of 'down_proj' has type R on axis 'tp', but parameter 'x' is declared P there}}
  fixed_r(r);
  fixed_r(v); // expected-error {{argument 'v' of 'fixed_r' has type V on axis 'tp', but parameter 'x' is declared R there}}
  fixed_p(v);
  fixed_p(r); // expected-error {{argument 'r' of 'fixed_p' has type R on axis 'tp', but parameter 'x' is declared V there}}
  auto a = fixed_p(v);
  spmd::assert_type(a, {tp = R}); // expected-error {{'a' has type P on axis 'tp', but the assertion says R}}
  auto b = fixed_r(r);
  spmd::assert_type(b, {tp = R});
  inner_up(r);
  inner_up(p); // expected-error {{argument 'p' of 'inner_up' has type P on axis 'tp', but parameter 'x' is declared R there}}
  inner_down(p);
  inner_down(r); // expected-error {{argument 'r' of 'inner_down' has type R on axis 'tp', but parameter 'x' is declared P there}}
}
