// Declarations-only stand-in for libtorch's custom autograd functions.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace torch::autograd {
using Variable = at::Tensor;
using variable_list = std::vector<Variable>;
struct AutogradContext {};
/// T::apply(args...) runs T::forward(ctx, args...) and records the node.
template <class T> struct Function {
  template <typename X = T, typename... Args>
  static auto apply(Args &&...args)
      -> decltype(X::forward(nullptr, static_cast<Args &&>(args)...));
};
} // namespace torch::autograd
