// Test stand-in for libtorch's <torch/torch.h> (see c10/core/ScalarType.h).
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

namespace torch {
using namespace at;  // as torch/types.h does
using at::Tensor;

// Factories live in torch:: itself (torch/csrc/autograd/generated/variable_factories.h).
at::Tensor zeros(at::IntArrayRef size);
at::Tensor ones(at::IntArrayRef size);
at::Tensor randn(at::IntArrayRef size);

namespace nn {
namespace functional {
at::Tensor linear(const at::Tensor& x, const at::Tensor& w,
                  const at::Tensor& b = {});
at::Tensor gelu(const at::Tensor& x);
at::Tensor relu(const at::Tensor& x);
at::Tensor dropout(const at::Tensor& x, double p = 0.5, bool train = true);
at::Tensor silu(const at::Tensor& x);
/// libtorch: an inline wrapper, ids first, that calls torch::embedding.
inline at::Tensor embedding(const at::Tensor& input, const at::Tensor& weight) {
  return at::embedding(weight, input);
}
}  // namespace functional
}  // namespace nn
}  // namespace torch
