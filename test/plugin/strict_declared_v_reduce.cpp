// Strict global mode: a V as declared V (not S(i)), named at a collective
// with src = P (the implicit V -> P of spec 7.2), needs no shard dim: a
// declaration that says V names per-rank values with no global tensor
// behind them (each replica's loss), which is what the sum adds up
// (core::shard_dim_needed). Strict mode still asks where a dim matters: a V
// whose dim an op lost, reduced as P (it may be a shard: issue 11), a value
// computed from a declared V (a sum over some dims, a mean: what is summed
// depends on the dims), and a declared V gathered with src = S(i).
// RUN-PLUGIN: -Xclang -verify=strict -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=lax -fplugin-arg-spmd-check-global
// lax-no-diagnostics
#include "Inputs/prelude.h"

SPMD_MESH(dp, tp)
SPMD_TYPE(dp = R, tp = R)
Tensor average_loss(SPMD_TYPE(dp = V, tp = R) Tensor local_loss, double n) {
  return spmd::all_reduce(local_loss, dp, P, R) / n;
}

SPMD_MESH(dp, tp)
SPMD_TYPE(dp = I, tp = R)
Tensor summed_loss(SPMD_TYPE(dp = V, tp = R) const Tensor& local_loss) {
  return spmd::all_reduce(local_loss, dp, P, I);
}

// A declared local and a field, named as they are.
struct Replica {
  SPMD_TYPE(dp = V) Tensor last_loss_;
  SPMD_MESH(dp, tp)
  SPMD_TYPE(dp = R, tp = R) Tensor logged() {
    return spmd::all_reduce(last_loss_, dp, P, R);
  }
};

SPMD_MESH(dp, tp)
SPMD_TYPE(dp = R, tp = R)
Tensor declared_local(SPMD_TYPE(dp = V, tp = R) const Tensor& x) {
  SPMD_TYPE(dp = V, tp = R) Tensor l = x * 2.0;
  return spmd::all_reduce(l, dp, P, R);
}

// Where strict mode still asks: computed from a declared V ...
SPMD_MESH(dp, tp)
SPMD_TYPE(dp = R, tp = R)
Tensor computed(SPMD_TYPE(dp = V, tp = R) const Tensor& per_token) { // strict-note {{type V on axis 'dp' declared here}}
  return spmd::all_reduce(per_token.mean(), dp, P, R); // strict-warning {{is sharded on axis 'dp' on an unknown dim}}
}

// ... the dim was lost by a view.
SPMD_MESH(dp, tp)
SPMD_TYPE(dp = R, tp = R)
Tensor lost_by_view(SPMD_TYPE(dp = S(0), tp = R) const Tensor& x, int64_t n) {
  auto y = x.view({n, 2, -1}); // strict-note {{type V on axis 'dp' inferred from this operation}}
  return spmd::all_reduce(y, dp, P, R); // strict-warning {{'y' is sharded on axis 'dp' on an unknown dim}}
}

// ... and a declared V gathered as a shard of dim 0.
SPMD_MESH(dp, tp)
SPMD_TYPE(dp = R, tp = R)
Tensor gathered(SPMD_TYPE(dp = V, tp = R) const Tensor& x) { // strict-note {{type V on axis 'dp' declared here}}
  return spmd::all_gather(x, dp, S(0), R); // strict-warning {{'x' is sharded on axis 'dp' on an unknown dim (global mode): its type says V, not S(i)}}
}
