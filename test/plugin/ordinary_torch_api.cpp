// Ordinary torch API that must not break typing (the core's op table,
// docs/type-system.md §6.5): index_put_ of zeros under a mask is a zero fill
// as masked_fill is, index_put_ with slices writes its value into self,
// Tensor::to(other) takes dtype and device from `other` and not its type,
// torch::einsum with a literal equation is a contraction, a factory divided
// by a number stays R, and torch::nn::Dropout types its result from its
// input. Each case shows where the checker fires and where it must not.
// RUN-PLUGIN: -Xclang -verify=global -fplugin-arg-spmd-check-global
// RUN-PLUGIN: -Xclang -verify=local
#include "Inputs/prelude.h"

using torch::indexing::Slice;

SPMD_TYPE(tp = R)
Tensor reduce_region(SPMD_TYPE(tp = P) Tensor input); // global-note {{declared type is {tp: P}}} local-note 2 {{declared type is {tp: P}}}

// --- index_put_ of zeros under a mask: a zero fill, as masked_fill_ -------

// The vocab-parallel lookup zeroed through index_put_ is the pending sum.
SPMD_TYPE(tp = R)
Tensor lookup_index_put(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& weight, // local-note {{type V on axis 'tp' declared here}}
                        SPMD_TYPE(tp = R, spmd::rank(1)) const Tensor& ids,
                        SPMD_TYPE(tp = R, spmd::rank(1)) const Tensor& tokens) {
  auto outside = tokens.lt(0) | tokens.ge(8);
  auto rows = at::embedding(weight, ids);
  rows.index_put_({outside}, 0);
  return reduce_region(rows); // local-error {{argument 'rows' of 'reduce_region' has type V on axis 'tp', but parameter 'input' is declared P there}}
}

// A fill with a value other than zero does not zero the rows.
SPMD_TYPE(tp = R)
Tensor lookup_index_put_one(SPMD_TYPE(tp = S(0), spmd::rank(2)) const Tensor& weight, // local-note {{type V on axis 'tp' declared here}}
                            SPMD_TYPE(tp = R, spmd::rank(1)) const Tensor& ids,
                            SPMD_TYPE(tp = R, spmd::rank(1)) const Tensor& tokens) {
  auto outside = tokens.lt(0) | tokens.ge(8);
  auto rows = at::embedding(weight, ids); // global-note {{type V on axis 'tp' inferred from this operation}}
  rows.index_put_({outside}, 1);
  return reduce_region(rows); // global-error {{argument 'rows' of 'reduce_region' has type V on axis 'tp', but parameter 'input' is declared P there}} local-error {{argument 'rows' of 'reduce_region' has type V on axis 'tp', but parameter 'input' is declared P there}}
}

// --- index_put_ with slices: self takes the value's type ------------------

SPMD_TYPE(tp = R)
Tensor slice_put_replicated(SPMD_TYPE(tp = R) Tensor x,
                            SPMD_TYPE(tp = R) const Tensor& y) {
  x.index_put_({Slice(), Slice(0, 4)}, y);
  return x;
}

SPMD_TYPE(tp = R)
Tensor slice_put_varying(SPMD_TYPE(tp = R) Tensor x, // global-note {{declared type is {tp: R}}} local-note {{declared type is {tp: R}}}
                         SPMD_TYPE(tp = V) const Tensor& y) { // global-note {{type V on axis 'tp' declared here}} local-note {{type V on axis 'tp' declared here}}
  x.index_put_({Slice(), Slice(0, 4)}, y); // global-error {{result of the in-place operation has type V on axis 'tp', but 'x' is declared R there}} local-error {{result of the in-place operation has type V on axis 'tp', but 'x' is declared R there}}
  return x;
}

// --- Tensor::to(other): dtype and device only ------------------------------

SPMD_TYPE(tp = R)
Tensor to_other_keeps_type(SPMD_TYPE(tp = R) const Tensor& x,
                           SPMD_TYPE(tp = V) const Tensor& like) {
  return x.to(like);
}

SPMD_TYPE(tp = R) // global-note {{declared type is {tp: R}}} local-note {{declared type is {tp: R}}}
Tensor to_other_of_varying(SPMD_TYPE(tp = V) const Tensor& x, // global-note {{type V on axis 'tp' declared here}} local-note {{type V on axis 'tp' declared here}}
                           SPMD_TYPE(tp = R) const Tensor& like) {
  return x.to(like); // global-error {{returned value has type V on axis 'tp', but 'to_other_of_varying' is declared to return R there}} local-error {{returned value has type V on axis 'tp', but 'to_other_of_varying' is declared to return R there}}
}

// --- torch::einsum with a literal equation ---------------------------------

SPMD_TYPE(tp = R)
Tensor einsum_replicated(SPMD_TYPE(tp = R) const Tensor& a,
                         SPMD_TYPE(tp = R) const Tensor& b) {
  return torch::einsum("ij,jk->ik", {a, b});
}

SPMD_TYPE(tp = R) // global-note {{declared type is {tp: R}}} local-note {{declared type is {tp: R}}}
Tensor einsum_varying(SPMD_TYPE(tp = V) const Tensor& a, // global-note {{type V on axis 'tp' declared here}} local-note {{type V on axis 'tp' declared here}}
                      SPMD_TYPE(tp = R) const Tensor& b) {
  return torch::einsum("ij,jk->ik", {a, b}); // global-error {{returned value has type V on axis 'tp', but 'einsum_varying' is declared to return R there}} local-error {{returned value has type V on axis 'tp', but 'einsum_varying' is declared to return R there}}
}

// --- a factory divided by a number ----------------------------------------

SPMD_TYPE(tp = R)
Tensor scaled_factory(SPMD_TYPE(tp = R) const Tensor& x) {
  auto scale = torch::ones({4}) / 2.0;
  return x * scale;
}

// Without a mesh a factory has no axes (§6.10): adding it to P is no error.
SPMD_TYPE(tp = P)
Tensor scaled_factory_added_to_partial(SPMD_TYPE(tp = P) const Tensor& x) {
  auto bias = torch::ones({4}) / 4;
  return x + bias;
}

// --- torch::nn::Dropout -----------------------------------------------------

SPMD_TYPE(tp = V)
Tensor dropout_module(SPMD_TYPE(tp = V) const Tensor& x) {
  torch::nn::Dropout drop(0.1);
  return drop(x);
}

SPMD_TYPE(tp = R) // global-note {{declared type is {tp: R}}} local-note {{declared type is {tp: R}}}
Tensor dropout_module_varying(SPMD_TYPE(tp = V) const Tensor& x) { // global-note {{type V on axis 'tp' declared here}} local-note {{type V on axis 'tp' declared here}}
  torch::nn::Dropout drop(0.1);
  return drop(x); // global-error {{returned value has type V on axis 'tp', but 'dropout_module_varying' is declared to return R there}} local-error {{returned value has type V on axis 'tp', but 'dropout_module_varying' is declared to return R there}}
}
