// Joins of two known shard dims (docs/type-system.md §12.6 "In the Clang
// plugin"): where branches leave a value sharded on
// two dims that are different for certain (S(2) and S(1) of one rank, or
// both written from the same end), the value is a path conflict at its use,
// not a V of unknown dim that any S(k) parameter would accept. Dims that may
// be one (S(-1) and S(1) of unknown rank) and ranks that differ between the
// paths stay an unknown dim.
// RUN-PLUGIN: -Xclang -verify -fplugin-arg-spmd-check-global
#include "Inputs/prelude.h"

SPMD_TYPE(tp = R)
Tensor take_s1(SPMD_TYPE(tp = S(1), spmd::rank(3)) const Tensor& x) {
  return spmd::all_gather(x, tp, S(1), R);
}

SPMD_TYPE(tp = R)
Tensor branch_moves_the_shard(SPMD_TYPE(tp = S(2), spmd::rank(3)) Tensor x,
                              bool flip) {
  if (flip)
    x = x.transpose(1, 2);
  return take_s1(x); // expected-error {{'x' has type S(1) on axis 'tp' on one path and S(2) on another}}
  // expected-note@-5 {{type S(1) on axis 'tp' declared here}}
  // expected-note@-6 {{type S(2) on axis 'tp' declared here}}
}

// The same dim on both paths: no conflict.
SPMD_TYPE(tp = R)
Tensor same_dim(SPMD_TYPE(tp = S(1), spmd::rank(3)) Tensor x, bool twice) {
  if (twice)
    x = x.transpose(0, 2).transpose(0, 2);
  return take_s1(x);
}
