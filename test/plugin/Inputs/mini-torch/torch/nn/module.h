// Test stand-in for libtorch's torch::nn::Module, torch::nn::ModuleHolder and
// TORCH_MODULE (torch/nn/module.h, torch/nn/pimpl.h; see
// c10/core/ScalarType.h). The holder's call operator forwards to the
// contained module's forward, as in libtorch.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace torch {
namespace nn {

template <typename Contained>
class ModuleHolder;

/// libtorch: torch::nn::Module (parameters, buffers, submodules by name).
class Module {
 public:
  Module();
  explicit Module(std::string name);
  virtual ~Module();

  at::Tensor& register_parameter(std::string name, at::Tensor tensor,
                                 bool requires_grad = true);
  at::Tensor& register_buffer(std::string name, at::Tensor tensor);
  template <typename ModuleType>
  std::shared_ptr<ModuleType> register_module(
      std::string name, std::shared_ptr<ModuleType> module);
  template <typename ModuleType>
  std::shared_ptr<ModuleType> register_module(
      std::string name, ModuleHolder<ModuleType> module_holder);

  std::vector<at::Tensor> parameters(bool recurse = true) const;
  bool is_training() const noexcept;
  virtual void train(bool on = true);
  void eval();
};

/// libtorch: torch::nn::ModuleHolder, the shared_ptr wrapper that
/// TORCH_MODULE(Name) defines as `Name` around `NameImpl`.
template <typename Contained>
class ModuleHolder {
 protected:
  std::shared_ptr<Contained> impl_;

 public:
  ModuleHolder(std::nullptr_t) : impl_(nullptr) {}
  ModuleHolder(std::shared_ptr<Contained> module) : impl_(std::move(module)) {}
  template <typename Head, typename... Tail,
            typename = std::enable_if_t<
                !(std::is_base_of_v<ModuleHolder, std::decay_t<Head>> &&
                  sizeof...(Tail) == 0)>>
  explicit ModuleHolder(Head&& head, Tail&&... tail)
      : impl_(new Contained(std::forward<Head>(head),
                            std::forward<Tail>(tail)...)) {}

  Contained* operator->() { return impl_.get(); }
  const Contained* operator->() const { return impl_.get(); }
  Contained& operator*() { return *impl_; }
  const Contained& operator*() const { return *impl_; }
  Contained* get() { return impl_.get(); }
  const Contained* get() const { return impl_.get(); }
  const std::shared_ptr<Contained>& ptr() const { return impl_; }
  bool is_empty() const noexcept { return impl_ == nullptr; }

  /// Calls the contained module's forward with the arguments, forwarded.
  template <typename... Args>
  auto operator()(Args&&... args)
      -> decltype(std::declval<Contained&>().forward(
          std::forward<Args>(args)...)) {
    return impl_->forward(std::forward<Args>(args)...);
  }
};

}  // namespace nn
}  // namespace torch

/// libtorch: TORCH_MODULE(Name) defines the holder `Name` of `NameImpl`.
#define TORCH_MODULE(Name)                                   \
  class Name : public torch::nn::ModuleHolder<Name##Impl> {  \
   public:                                                   \
    using torch::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }

namespace torch {
namespace nn {
/// libtorch: torch::nn::Dropout (torch/nn/modules/dropout.h).
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5);
  at::Tensor forward(at::Tensor input);
};
TORCH_MODULE(Dropout);
}  // namespace nn
}  // namespace torch
