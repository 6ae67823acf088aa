// A loop that carries a chain of 63 copies needs more rounds than a fixed
// cap would allow; the analysis widens what still changes to unknown
// instead of giving up, so the definite error outside the loop is still
// reported, and strict mode says which values it lost.
// RUN-PLUGIN: -Xclang -verify
// RUN-PLUGIN: -Xclang -verify=strict -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

void chain(bool c, SPMD_TYPE(tp = R) const Tensor& r,
           SPMD_TYPE(tp = P) const Tensor& p) { // #p
  Tensor x0 = r;
  Tensor x1 = x0;
  Tensor x2 = x1;
  Tensor x3 = x2;
  Tensor x4 = x3;
  Tensor x5 = x4;
  Tensor x6 = x5;
  Tensor x7 = x6;
  Tensor x8 = x7;
  Tensor x9 = x8;
  Tensor x10 = x9;
  Tensor x11 = x10;
  Tensor x12 = x11;
  Tensor x13 = x12;
  Tensor x14 = x13;
  Tensor x15 = x14;
  Tensor x16 = x15;
  Tensor x17 = x16;
  Tensor x18 = x17;
  Tensor x19 = x18;
  Tensor x20 = x19;
  Tensor x21 = x20;
  Tensor x22 = x21;
  Tensor x23 = x22;
  Tensor x24 = x23;
  Tensor x25 = x24;
  Tensor x26 = x25;
  Tensor x27 = x26;
  Tensor x28 = x27;
  Tensor x29 = x28;
  Tensor x30 = x29;
  Tensor x31 = x30;
  Tensor x32 = x31;
  Tensor x33 = x32;
  Tensor x34 = x33;
  Tensor x35 = x34;
  Tensor x36 = x35;
  Tensor x37 = x36;
  Tensor x38 = x37;
  Tensor x39 = x38;
  Tensor x40 = x39;
  Tensor x41 = x40;
  Tensor x42 = x41;
  Tensor x43 = x42;
  Tensor x44 = x43;
  Tensor x45 = x44;
  Tensor x46 = x45;
  Tensor x47 = x46;
  Tensor x48 = x47;
  Tensor x49 = x48;
  Tensor x50 = x49;
  Tensor x51 = x50;
  Tensor x52 = x51;
  Tensor x53 = x52;
  Tensor x54 = x53;
  Tensor x55 = x54;
  Tensor x56 = x55;
  Tensor x57 = x56;
  Tensor x58 = x57;
  Tensor x59 = x58;
  Tensor x60 = x59;
  Tensor x61 = x60;
  Tensor x62 = x61;
  Tensor x63 = x62;
  while (c) {
    x63 = x62;
    x62 = x61;
    x61 = x60;
    x60 = x59;
    x59 = x58;
    x58 = x57;
    x57 = x56;
    x56 = x55;
    x55 = x54;
    x54 = x53;
    x53 = x52;
    x52 = x51;
    x51 = x50;
    x50 = x49;
    x49 = x48;
    x48 = x47;
    x47 = x46;
    x46 = x45;
    x45 = x44;
    x44 = x43;
    x43 = x42;
    x42 = x41;
    x41 = x40;
    x40 = x39;
    x39 = x38;
    x38 = x37;
    x37 = x36;
    x36 = x35;
    x35 = x34;
    x34 = x33;
    x33 = x32;
    x32 = x31;
    x31 = x30;
    x30 = x29;
    x29 = x28;
    x28 = x27;
    x27 = x26;
    x26 = x25;
    x25 = x24;
    x24 = x23;
    x23 = x22;
    x22 = x21;
    x21 = x20;
    x20 = x19;
    x19 = x18;
    x18 = x17;
    x17 = x16;
    x16 = x15;
    x15 = x14;
    x14 = x13;
    x13 = x12;
    x12 = x11;
    x11 = x10;
    x10 = x9;
    x9 = x8;
    x8 = x7;
    x7 = x6;
    x6 = x5;
    x5 = x4;
    x4 = x3;
    x3 = x2;
    x2 = x1;
    x1 = x0;
    x0 = opaque(r); // strict-warning {{the result of 'opaque' has an unknown SPMD type}}
    // strict-note@Inputs/prelude.h:16 {{'opaque' is declared here}}
  }
  Tensor bad = torch::relu(p); // expected-error {{relu: Partial type on axis tp cannot propagate through non-linear ops}} strict-error {{relu: Partial type on axis tp cannot propagate through non-linear ops}}
  // expected-note@#p {{'p' has type P on axis 'tp' declared here}} strict-note@#p {{'p' has type P on axis 'tp' declared here}}
  // expected-note@-2 {{insert spmd::all_reduce(..., tp, spmd::P, spmd::R) to make 'p' R on axis 'tp'}} strict-note@-2 {{insert spmd::all_reduce(..., tp, spmd::P, spmd::R) to make 'p' R on axis 'tp'}}
  Tensor first = x1 + r; // 'x1' holds opaque's result: reported there
  Tensor last = x63 + r; // strict-warning {{'x63' has an unknown SPMD type}}
}

// A short chain settles before any widening: its types stay exact.
void short_chain(bool c, SPMD_TYPE(tp = R) const Tensor& r,
                 SPMD_TYPE(tp = P) const Tensor& p) {
  Tensor a = r;
  Tensor b = a;
  Tensor d = b;
  while (c) {
    d = b;
    b = a;
    a = r + r;
  }
  spmd::all_reduce(d, tp, P, R); // expected-error {{expected input type P on axis tp, got R}} strict-error {{expected input type P on axis tp, got R}} expected-note {{remove this spmd::all_reduce ('d' is R already)}} strict-note {{remove this spmd::all_reduce ('d' is R already)}}
  // expected-note@-11 {{type R on axis 'tp' declared here}} strict-note@-11 {{type R on axis 'tp' declared here}}
}
