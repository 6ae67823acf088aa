// Optional tensors (c10::optional, std::optional) are seen through: a tensor
// passed where an optional is expected (the bias of at::linear, the weights
// of at::layer_norm), .value(), *opt, opt->, has_value() branches, and
// annotated optional fields, parameters and locals. Notes are not checked.
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
// RUN-PLUGIN: -Xclang -verify=strict -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

#include <optional>

// The row-parallel bias handed to linear is added on every rank before the
// reduce: linear(V, V, I) mixes I with V.
SPMD_TYPE(tp = I)
Tensor bias_in_linear(SPMD_TYPE(tp = V) const Tensor& a,
                      SPMD_TYPE(tp = V) const Tensor& w,
                      SPMD_TYPE(tp = I) const Tensor& b) {
  auto bad = at::linear(a, w, b); // expected-error {{linear: Invariant type on axis tp cannot mix}} strict-error {{linear: Invariant}}
  auto y = at::linear(a, w);
  return spmd::all_reduce(spmd::reinterpret(y, tp, V, P), tp, P, I) + b;
}

// Sequence parallelism: a LayerNorm weight I on a V input (the gradient of
// the weight is never summed over tp). The weight is what the error names.
SPMD_TYPE(tp = V)
Tensor sp_layer_norm_invariant(SPMD_TYPE(tp = V) const Tensor& x,
                               SPMD_TYPE(tp = I) const Tensor& w,
                               SPMD_TYPE(tp = R) const Tensor& b) {
  auto bad = at::layer_norm(x, {8}, w, b); // expected-error {{layer_norm: Invariant type on axis tp cannot mix}} strict-error {{layer_norm: Invariant}}
  return x;
}

// Correct: weights R under sequence parallelism, I on duplicated input, no
// weight at all, an explicit nullopt.
SPMD_TYPE(tp = V)
Tensor sp_layer_norm_ok(SPMD_TYPE(tp = V) const Tensor& x,
                        SPMD_TYPE(tp = R) const Tensor& w,
                        SPMD_TYPE(tp = R) const Tensor& b) {
  auto y = at::layer_norm(x, {8}, w, b);
  auto z = at::layer_norm(y, {8});
  return at::layer_norm(z, {8}, c10::nullopt, c10::nullopt);
}

// Annotated optional fields, as engines keep their biases.
struct RowParallel {
  SPMD_TYPE(tp = V) Tensor weight;
  SPMD_TYPE(tp = I) c10::optional<Tensor> bias;

  SPMD_TYPE(tp = I)
  Tensor good(SPMD_TYPE(tp = V) const Tensor& a) {
    auto p = spmd::reinterpret(at::linear(a, weight), tp, V, P);
    auto y = spmd::all_reduce(p, tp, P, I);
    if (bias.has_value())
      y = y + bias.value();
    return y;
  }

  SPMD_TYPE(tp = I)
  Tensor bad(SPMD_TYPE(tp = V) const Tensor& a) {
    auto bad = at::linear(a, weight, bias); // expected-error {{linear: Invariant type on axis tp cannot mix}} strict-error {{linear: Invariant}}
    return good(a);
  }

  SPMD_TYPE(tp = I)
  Tensor deref(SPMD_TYPE(tp = P) const Tensor& p) {
    if (bias)
      auto bad = p + *bias; // expected-error {{operator+: Invariant type on axis tp cannot mix}} strict-error {{operator+: Invariant}}
    return spmd::all_reduce(p, tp, P, I);
  }
};

// Optional parameters (std::optional, as in libtorch 2.x) and locals.
SPMD_TYPE(tp = V)
Tensor add_optional(SPMD_TYPE(tp = V) const Tensor& x,
                    SPMD_TYPE(tp = V) std::optional<Tensor> extra,
                    SPMD_TYPE(tp = I) const std::optional<Tensor>& wrong) {
  Tensor y = x;
  if (extra.has_value())
    y = y + extra.value();
  if (extra)
    y = y * (*extra);
  std::optional<Tensor> local = y;
  auto z = local.value() + x;
  if (wrong.has_value())
    auto bad = z + wrong->relu(); // expected-error {{operator+: Invariant type on axis tp cannot mix}} strict-error {{operator+: Invariant}}
  return z;
}

// An optional argument of an annotated function is checked like a tensor.
void takes_optional(SPMD_TYPE(tp = R) c10::optional<Tensor> bias);
void passes_optional(SPMD_TYPE(tp = V) const Tensor& v,
                     SPMD_TYPE(tp = R) const Tensor& r) {
  takes_optional(r);
  takes_optional(c10::nullopt);
  takes_optional(v); // expected-error {{argument 'v' of 'takes_optional' has type V on axis 'tp', but parameter 'bias' is declared R there}} strict-error {{argument 'v'}}
}

// Strict mode: an unannotated optional is an unknown value when used.
SPMD_TYPE(tp = V)
Tensor unknown_optional(SPMD_TYPE(tp = V) const Tensor& x,
                        c10::optional<Tensor> maybe) {
  if (maybe.has_value())
    auto y = x + maybe.value(); // strict-warning {{unknown SPMD type}}
  return x;
}
