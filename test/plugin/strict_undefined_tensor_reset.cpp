// A declared field or variable reset to an undefined tensor
// (`torch::Tensor()`, `torch::Tensor{}`, `{}`: a cache's clear()) keeps its
// declared type: the undefined tensor holds no data and has no type to give,
// so strict mode does not report it as unknown. A value of unknown type
// assigned there is still reported, and a typed one still checked.
// RUN-PLUGIN: -Xclang -verify=strict -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=strict -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

struct KVCache {
  SPMD_TYPE(tp = S(1), spmd::rank(3)) Tensor key_cache_;
  SPMD_TYPE(tp = S(1), spmd::rank(3)) Tensor value_cache_; // strict-note {{declared type is {tp: S(1)}}}

  void clear() {
    key_cache_ = torch::Tensor();
    value_cache_ = torch::Tensor{};
  }
  void clear_braces() { key_cache_ = {}; }
  void set(SPMD_TYPE(tp = S(1), spmd::rank(3)) const Tensor& k) {
    key_cache_ = k;
  }
  // Where it must still fire: an unknown value, a value of another type.
  void from_opaque(SPMD_TYPE(tp = S(1), spmd::rank(3)) const Tensor& k) {
    key_cache_ = opaque(k); // strict-warning {{this value has an unknown SPMD type}}
  }
  void from_replicated(SPMD_TYPE(tp = R, spmd::rank(3)) const Tensor& k) { // strict-note {{type R on axis 'tp' declared here}}
    value_cache_ = k; // strict-error {{has type R on axis 'tp'}} strict-note {{insert spmd::convert(..., tp, spmd::R, spmd::S(1))}}
  }
};

SPMD_TYPE(tp = R)
Tensor local_reset(SPMD_TYPE(tp = R) const Tensor& x, bool drop) {
  SPMD_TYPE(tp = R) Tensor kept = x;
  if (drop)
    kept = torch::Tensor();
  return kept;
}
