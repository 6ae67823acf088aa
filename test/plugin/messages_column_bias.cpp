// A column-parallel bias typed R (docs/plugin.md "Diagnostics"): the output
// of linear(x, w S(0), b) is sharded on its features, and spec §12.2's S+R
// rule rejects a replicated operand of the whole extent there, but accepts
// one of size 1 (it broadcasts). The checker does not know b's size, so it
// is no error: strict global mode warns, naming what to write on the bias.
// A bias declared S(0) is fine; outside
// strict mode an unknown shard is not reported.
// RUN-PLUGIN: -Xclang -verify=strict -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify -fplugin-arg-spmd-check-global
// expected-no-diagnostics
#include "Inputs/prelude.h"
namespace F = torch::nn::functional;

SPMD_TYPE(tp = S(-1))
Tensor replicated_bias(SPMD_TYPE(tp = R) const Tensor& x,
                       SPMD_TYPE(tp = S(0)) const Tensor& w,
                       SPMD_TYPE(tp = R) const Tensor& b) {
  return F::linear(x, w, b); // strict-warning {{this value is sharded on axis 'tp' on an unknown dim (global mode): args[2] dim 0 has unknown size: broadcast or not; if args[2] has the whole extent on its dim 0 (a bias of the sharded features), it must be sharded like args[0] @ args[1]^T: declare it [[spmd::type(tp = S(0))]] (one of size 1 there broadcasts and is right as it is; the checker does not see sizes)}}
  // strict-note@-1 {{type V on axis 'tp' inferred from this operation}}
}

SPMD_TYPE(tp = S(-1))
Tensor sharded_bias(SPMD_TYPE(tp = R) const Tensor& x,
                    SPMD_TYPE(tp = S(0)) const Tensor& w,
                    SPMD_TYPE(tp = S(0)) const Tensor& b) {
  return F::linear(x, w, b);
}
