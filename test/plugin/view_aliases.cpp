// Views alias their base (spec §6.11.1): an in-place op on a variable bound
// to a view of x (view, select, narrow, transpose, `x[i]`, chains of them)
// retypes x and x's other views, or is rejected when one of them cannot take
// the written type. A clone, an indexed copy or a reassigned view does not.
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
#include "Inputs/prelude.h"

Tensor view_add_retypes_base(SPMD_TYPE(tp = R) const Tensor& r,
                             SPMD_TYPE(tp = V) const Tensor& v) {
  Tensor x = r * 2.0;
  auto flat = x.view({-1});
  flat.add_(v);
  return spmd::convert(x, tp, R, S(0)); // expected-error {{convert: expected input type R on axis tp, got V}}
}

Tensor select_copy_retypes_base(SPMD_TYPE(tp = R) const Tensor& r,
                                SPMD_TYPE(tp = V) const Tensor& v) {
  Tensor x = r * 2.0;
  Tensor row = x[0];
  row.copy_(v);
  return spmd::convert(x, tp, R, S(0)); // expected-error {{convert: expected input type R on axis tp, got V}}
}

Tensor narrow_mul_retypes_sibling(SPMD_TYPE(tp = R) const Tensor& r,
                                  SPMD_TYPE(tp = V) const Tensor& v) {
  Tensor x = r * 2.0;
  Tensor head = x.narrow(0, 0, 1);
  Tensor all = x.transpose(0, 1);
  head.mul_(v);
  return spmd::convert(all, tp, R, S(0)); // expected-error {{convert: expected input type R on axis tp, got V}}
}

Tensor view_of_a_view(SPMD_TYPE(tp = R) const Tensor& r,
                      SPMD_TYPE(tp = V) const Tensor& v) {
  Tensor x = r * 2.0;
  Tensor a = x.select(0, 1);
  Tensor b = a.view({-1});
  b.add_(v);
  return spmd::convert(x, tp, R, S(0)); // expected-error {{convert: expected input type R on axis tp, got V}}
}

// A write to the base reaches its views.
Tensor base_write_retypes_view(SPMD_TYPE(tp = R) const Tensor& r,
                               SPMD_TYPE(tp = V) const Tensor& v) {
  Tensor x = r * 2.0;
  Tensor t = x.transpose(0, 1);
  x.add_(v);
  return spmd::convert(t, tp, R, S(0)); // expected-error {{convert: expected input type R on axis tp, got V}}
}

// A declared base keeps its type: the write through the view is the error.
Tensor declared_base(SPMD_TYPE(tp = V) const Tensor& v) {
  SPMD_TYPE(tp = R) Tensor x = torch::zeros({4});
  Tensor flat = x.view({-1});
  flat.add_(v); // expected-error {{in-place write through a view changes 'x', declared {tp: R}, to {tp: V}}}
  return x;
}

// A P base keeps P under a P write through a view of a detached alias.
Tensor partial_base(SPMD_TYPE(tp = P) const Tensor& p,
                    SPMD_TYPE(tp = V) const Tensor& v) {
  Tensor x = p * 2.0;
  Tensor d = x.detach();
  Tensor row = d.select(0, 0);
  row.mul_(2.0);
  Tensor u = spmd::all_reduce(x, tp, P, R); // still P: fine
  Tensor vv = v.view({-1});
  vv.add_(v);
  return u;
}

// ------------------------------------------------------ must not fire ----

Tensor clone_is_not_a_view(SPMD_TYPE(tp = R) const Tensor& r,
                           SPMD_TYPE(tp = V) const Tensor& v) {
  Tensor x = r * 2.0;
  Tensor c = x.view({-1}).clone();
  c.add_(v);
  return spmd::convert(x, tp, R, S(0)); // x stays R
}

Tensor indexed_copy_is_not_a_view(SPMD_TYPE(tp = R) const Tensor& r,
                                  SPMD_TYPE(tp = V) const Tensor& v,
                                  SPMD_TYPE(tp = R) const Tensor& idx) {
  Tensor x = r * 2.0;
  Tensor picked = x.index_select(0, idx);
  picked.add_(v);
  return spmd::convert(x, tp, R, S(0));
}

Tensor reassigned_view(SPMD_TYPE(tp = R) const Tensor& r,
                       SPMD_TYPE(tp = R) const Tensor& other,
                       SPMD_TYPE(tp = V) const Tensor& v) {
  Tensor x = r * 2.0;
  Tensor w = x.view({-1});
  w = other * 1.0;
  w.add_(v);
  return spmd::convert(x, tp, R, S(0));
}

Tensor same_type_write(SPMD_TYPE(tp = R) const Tensor& r) {
  Tensor x = r * 2.0;
  Tensor flat = x.view({-1});
  flat.mul_(3.0);
  return spmd::convert(x, tp, R, S(0));
}

Tensor replicated_write_into_varying_base(SPMD_TYPE(tp = V) const Tensor& v,
                                          SPMD_TYPE(tp = R) const Tensor& r) {
  Tensor x = v * 2.0;
  Tensor row = x[1];
  row.copy_(r);
  return spmd::all_gather(x, tp, V, R); // V absorbs an R write
}
