// Strict global mode (strict; strict-shards is an alias) reports a V whose
// shard dim is unknown (here: lost by a view) where the dim matters: an op with a dim argument (chunk, split,
// narrow, sum), a contraction, a parameter, a return or a variable declared
// S(k). Pointwise ops and permutes do not need the dim; an assert_type that
// restates the spec makes it known again; non-strict mode says nothing, nor
// does strict with no-strict-shards (the opt-out).
// Bitwise and comparison operators are pointwise (broadcasting like +), and
// their errors name the operator as written.
// RUN-PLUGIN: -Xclang -verify=strict,both -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=strict,both -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict-shards
// RUN-PLUGIN: -Xclang -verify=both -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-no-strict-shards -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=both -fplugin-arg-spmd-check-global
#include "Inputs/prelude.h"

void sink(SPMD_TYPE(tp = S(0), spmd::rank(4)) const Tensor& t);

// --- a view loses the shard dim; its uses where the dim matters ------------

SPMD_TYPE(tp = S(2), spmd::rank(4))
Tensor heads(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& x, int64_t s,
             int64_t b, int64_t hl, int64_t hd) {
  auto fused = x.view({s, b, hl, 3 * hd}); // strict-note 3 {{type V on axis 'tp' inferred from this operation}}
  auto parts = fused.chunk(3, 2); // strict-warning {{'fused' is sharded on axis 'tp' on an unknown dim (global mode): the core's sharding rule for view could not decide}}
  sink(parts[0]); // strict-warning {{this value is sharded on axis 'tp' on an unknown dim}}
  return parts[1]; // strict-warning {{this value is sharded on axis 'tp' on an unknown dim}}
}

void dim_ops(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& x, int64_t n) {
  auto v = x.view({n, 2, -1}); // strict-note 2 {{type V on axis 'tp' inferred from this operation}}
  auto w = v.narrow(1, 0, 1); // strict-warning {{'v' is sharded on axis 'tp' on an unknown dim}}
  auto u = x.reshape({n, -1}); // strict-note {{type V on axis 'tp' inferred from this operation}}
  auto r = u.sum(1); // strict-warning {{'u' is sharded on axis 'tp' on an unknown dim}}
  // A declared variable.
  SPMD_TYPE(tp = S(0)) Tensor d = v + 1; // strict-warning {{this value is sharded on axis 'tp' on an unknown dim}}
}

// Pointwise ops, permutes and an unannotated variable do not need the dim.
void no_need(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& x, int64_t n) {
  auto v = x.view({n, 2, -1});
  auto a = v * 2 + v;
  auto p = a.permute({2, 0, 1});
  auto m = p.lt(0) | p.ge(1);
  Tensor plain = m;
}

// assert_type restating the spec after the view: nothing to report.
SPMD_TYPE(tp = S(2), spmd::rank(4))
Tensor restated(SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& x, int64_t s,
                int64_t b, int64_t hl, int64_t hd) {
  auto fused = x.view({s, b, hl, 3 * hd});
  spmd::assert_type(fused, {tp = S(2)});
  auto parts = fused.chunk(3, 3);
  sink(parts[0].transpose(0, 2));
  return parts[0];
}

// S(-1) against a declared S(k >= 0) without a rank: one dim only for some
// ranks.
void rankless(SPMD_TYPE(tp = S(-1)) const Tensor& x) { // strict-note {{type S(-1) on axis 'tp' declared here}}
  sink(x); // strict-warning {{'x' is sharded on axis 'tp' on an unknown dim (global mode): its shard S(-1) and the declared S(0) are one dim only for some ranks, and its rank is unknown}}
}

// --- bitwise and comparison operators are pointwise -------------------------

SPMD_TYPE(dp = S(0), tp = R, spmd::rank(2))
Tensor mask_ids(SPMD_TYPE(dp = S(0), tp = R, spmd::rank(2)) const Tensor& t,
                SPMD_TYPE(dp = R, tp = R, spmd::rank(1)) const Tensor& lim) {
  auto outside = (t.lt(10) | t.ge(20)) & ~t.eq(lim);
  auto flip = outside ^ t.logical_or(t) ^ (t < 3) ^ (t >= 4) ^ (t != 3);
  return t.masked_fill(flip, 0);
}

Tensor or_mixed(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& a, // both-note {{type S(0) on axis 'tp' declared here}}
                SPMD_TYPE(tp = S(1), spmd::rank(2)) const Tensor& b) { // both-note {{type S(1) on axis 'tp' declared here}}
  return a | b; // both-error {{operator|}} both-note {{suggestion: spmd::all_to_all(args[1], tp, S(1), S(0))}}
}
