// Global mode knows the dims of local size 1 that a keepdim reduction or
// unsqueeze makes (core::result_shape), so a replicated operand with such a
// dim broadcasts along a sharded operand's dim: `logits - global_max` of the
// vocab-parallel softmax keeps the shard (and the sum over it is a pending
// sum). Where the size is not known (after a gather, a join of a size-1 and
// another size, an annotation) the shard is still lost, as before.
// RUN-PLUGIN: -Xclang -verify=strict,both -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict-shards
// RUN-PLUGIN: -Xclang -verify=both -fplugin-arg-spmd-check-global
#include "Inputs/prelude.h"

void sink(SPMD_TYPE(tp = S(2), spmd::rank(3)) const Tensor& t);

// --- keepdim reductions and unsqueeze broadcast along the shard --------------

SPMD_TYPE(tp = I)
Tensor stable_sum_exp(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& logits,
                      SPMD_TYPE(tp = R, spmd::rank(3)) const Tensor& all_max) {
  auto global_max = std::get<0>(all_max.max(-1, /*keepdim=*/true));
  auto shifted = logits - global_max; // size 1 on dim 2: S(2)
  sink(shifted);
  // A sum over the shard is a pending sum: no reinterpret needed.
  return spmd::all_reduce(shifted.exp().sum(-1), tp, P, I);
}

SPMD_TYPE(tp = I)
Tensor stale_reinterpret(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& logits,
                         SPMD_TYPE(tp = R, spmd::rank(3)) const Tensor& all_max) {
  auto shifted = logits - std::get<0>(all_max.max(-1, /*keepdim=*/true));
  auto local = shifted.exp().sum(-1); // both-note {{type P on axis 'tp' inferred from this operation}}
  return spmd::all_reduce(spmd::reinterpret(local, tp, V, P), tp, P, I); // both-error {{reinterpret: expected input type V on axis tp, got P: 'local' is P already; remove this reinterpret}} both-note {{remove this spmd::reinterpret ('local' is P already)}}
}

void unsqueezed(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& x,
                SPMD_TYPE(tp = R, spmd::rank(2)) const Tensor& r) {
  sink(x * r.unsqueeze(-1));            // [b, s, 1]
  sink(x + r.mean(-1, true).unsqueeze(0)); // [1, b, 1]
  sink(x / (r.unsqueeze(2) + 1.0));     // pointwise keeps the size 1
}

// --- where the size is not known, the shard is lost --------------------------

void unknown_sizes(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& x,
                   SPMD_TYPE(tp = R, spmd::rank(3)) const Tensor& r, bool c) {
  // An annotated R operand: its dim 2 may have the whole extent.
  auto a = x - r; // strict-note {{type V on axis 'tp' inferred from this operation}}
  sink(a); // strict-warning {{'a' is sharded on axis 'tp' on an unknown dim (global mode): args[1] dim 2 has unknown size: broadcast or not}}
  // A gather along the size-1 dim makes it tp long.
  auto m = spmd::convert(r.sum(-1, true), tp, R, S(2));
  auto g = spmd::all_gather(m, tp, S(2), R);
  auto b = x - g; // strict-note {{type V on axis 'tp' inferred from this operation}}
  sink(b); // strict-warning {{args[1] dim 2 has unknown size: broadcast or not}}
  // A join of a size-1 dim and an unknown one.
  auto j = c ? r.sum(-1, true) : r;
  auto d = x - j; // strict-note {{type V on axis 'tp' inferred from this operation}}
  sink(d); // strict-warning {{args[1] dim 2 has unknown size: broadcast or not}}
}
