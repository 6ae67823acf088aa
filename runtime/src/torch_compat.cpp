// torch_compat.cpp - the adapters of torch_compat.h for libtorch 2.x.
#include "torch_compat.h"

#include <ATen/core/VariableHooksInterface.h>
#include <torch/csrc/autograd/graph_task.h>

#include <mutex>
#include <type_traits>

namespace spmd::compat {

c10::intrusive_ptr<c10d::ProcessGroup> wrap_backend(
    c10::intrusive_ptr<c10d::Backend> backend,
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    const std::string& name) {
  auto pg = c10::make_intrusive<c10d::ProcessGroup>(store, rank, size);
  // "fake" is no c10d backend type: it is registered as CUSTOM.
  const auto type = c10d::ProcessGroup::strToBackendType(name);
  pg->setDefaultBackend(type);
  // c10d's ops pick the backend by the tensors' device: Gloo and the fake
  // backend take CPU and CUDA tensors, NCCL CUDA tensors only.
  if (type != c10d::ProcessGroup::BackendType::NCCL)
    pg->setBackend(c10::DeviceType::CPU, type, backend);
  pg->setBackend(c10::DeviceType::CUDA, type, backend);
  return pg;
}

namespace {

template <class PG, class = void>
struct HasAllToAllSingle : std::false_type {};
template <class PG>
struct HasAllToAllSingle<
    PG, std::void_t<decltype(std::declval<PG&>().all_to_all_single(
            std::declval<at::Tensor&>(), std::declval<at::Tensor&>(),
            std::declval<std::vector<int64_t>&>(),
            std::declval<std::vector<int64_t>&>()))>> : std::true_type {};

template <class PG>
c10::intrusive_ptr<c10d::Work> all_to_all_single_impl(
    PG& pg, at::Tensor& output, at::Tensor& input,
    std::vector<int64_t>& output_splits, std::vector<int64_t>& input_splits) {
  if constexpr (HasAllToAllSingle<PG>::value) {
    return pg.all_to_all_single(output, input, output_splits, input_splits);
  } else {
    return pg.alltoall_base(output, input, output_splits, input_splits);
  }
}

}  // namespace

c10::intrusive_ptr<c10d::Work> all_to_all_single(
    c10d::ProcessGroup& pg, at::Tensor& output, at::Tensor& input,
    std::vector<int64_t>& output_splits, std::vector<int64_t>& input_splits) {
  return all_to_all_single_impl(pg, output, input, output_splits, input_splits);
}

bool has_native_reduce_scatter(const c10d::ProcessGroup& pg) {
  // NCCL and the fake backend have a reduce_scatter kernel. Gloo has one
  // since torch 2.x, but it exchanges many more messages than one
  // all_to_all (measured on the GPT of examples/gpt, dp=2 x tp=2, torch
  // 2.13: 10 reduce-scatters per step of [16, 4, 32] doubles sent 23 more
  // socket writes each on rank 0, and the steps were slower), so Gloo
  // takes the all_to_all + local sum path (the bytes of a ring
  // reduce-scatter).
  return pg.getBackendType() != c10d::ProcessGroup::BackendType::GLOO;
}

namespace {

// Whether hooks class H has grad_dtype / set_grad_dtype (added in a 2.x minor).
template <class H, class = void>
struct HasGradDtype : std::false_type {};
template <class H>
struct HasGradDtype<H, std::void_t<decltype(std::declval<const H&>().grad_dtype(
                           std::declval<const at::TensorBase&>()))>>
    : std::true_type {};

template <class H>
std::optional<c10::ScalarType> forward_grad_dtype(const H* h,
                                                  const at::TensorBase& t) {
  if constexpr (HasGradDtype<H>::value) {
    return h->grad_dtype(t);
  } else {
    return std::nullopt;
  }
}

template <class H>
void forward_set_grad_dtype(const H* h, const at::TensorBase& t,
                            const std::optional<c10::ScalarType>& dtype) {
  if constexpr (HasGradDtype<H>::value) h->set_grad_dtype(t, dtype);
}

class CompletedWork final : public c10d::Work {
 public:
  CompletedWork() { finish(); }
  bool isCompleted() override { return true; }
  bool isSuccess() const override { return true; }
  bool wait(std::chrono::milliseconds) override { return true; }
};

// Forwards every hook to the hooks libtorch installed, except _backward.
// The methods carry no `override`: the set of pure virtuals grows across 2.x
// minors (grad_dtype, set_grad_dtype), and a method the base lacks is then
// simply unused instead of a compile error (its forwarding is detected at
// compile time); one the base adds and this class lacks still fails to
// compile (abstract class).
class InterceptingVariableHooks final
    : public at::impl::VariableHooksInterface {
 public:
  InterceptingVariableHooks(at::impl::VariableHooksInterface* inner,
                            BackwardInterceptor interceptor)
      : inner_(inner), interceptor_(interceptor) {}

  at::TensorBase tensor_data(const at::TensorBase& t) const {
    return inner_->tensor_data(t);
  }
  at::TensorBase variable_data(const at::TensorBase& t) const {
    return inner_->variable_data(t);
  }
  const c10::intrusive_ptr<torch::autograd::Node>& grad_fn(
      const at::TensorBase& t) const {
    return inner_->grad_fn(t);
  }
  unsigned _register_hook(
      const at::TensorBase& t,
      std::function<at::TensorBase(const at::TensorBase&)> hook) const {
    return inner_->_register_hook(t, std::move(hook));
  }
  void remove_hook(const at::TensorBase& t, unsigned pos) const {
    inner_->remove_hook(t, pos);
  }
  bool is_view(const at::TensorBase& t) const { return inner_->is_view(t); }
  const at::TensorBase& base(const at::TensorBase& t) const {
    return inner_->base(t);
  }
  const std::string& name(const at::TensorBase& t) const {
    return inner_->name(t);
  }
  bool is_leaf(const at::TensorBase& t) const { return inner_->is_leaf(t); }
  int64_t output_nr(const at::TensorBase& t) const {
    return inner_->output_nr(t);
  }
  void set_data(const at::TensorBase& t, const at::TensorBase& d) const {
    inner_->set_data(t, d);
  }
  at::TensorBase data(const at::TensorBase& t) const { return inner_->data(t); }
  int64_t _version(const at::TensorBase& t) const {
    return inner_->_version(t);
  }
  void retain_grad(const at::TensorBase& t) const { inner_->retain_grad(t); }
  bool retains_grad(const at::TensorBase& t) const {
    return inner_->retains_grad(t);
  }
  void _backward(const at::Tensor& self, at::TensorList inputs,
                 const std::optional<at::Tensor>& gradient,
                 std::optional<bool> keep_graph, bool create_graph) const {
    interceptor_(self, gradient, [&] {
      inner_->_backward(self, inputs, gradient, keep_graph, create_graph);
    });
  }
  void requires_grad_(const at::TensorBase& t, bool value) const {
    inner_->requires_grad_(t, value);
  }
  void basic_autograd_not_implemented_fallback(const c10::OperatorHandle& op,
                                               c10::DispatchKeySet keys,
                                               torch::jit::Stack* stack) const {
    inner_->basic_autograd_not_implemented_fallback(op, keys, stack);
  }
  std::optional<c10::ScalarType> grad_dtype(const at::TensorBase& t) const {
    return forward_grad_dtype(inner_, t);
  }
  void set_grad_dtype(const at::TensorBase& t,
                      const std::optional<c10::ScalarType>& dtype) const {
    forward_set_grad_dtype(inner_, t, dtype);
  }

 private:
  at::impl::VariableHooksInterface* inner_;
  BackwardInterceptor interceptor_;
};

}  // namespace

c10::intrusive_ptr<c10d::Work> completed_work() {
  return c10::make_intrusive<CompletedWork>();
}

void intercept_backward(BackwardInterceptor interceptor) {
  static std::once_flag once;
  std::call_once(once, [&] {
    // Never deleted: libtorch keeps the pointer for the process's lifetime.
    at::impl::SetVariableHooks(new InterceptingVariableHooks(
        at::impl::GetVariableHooks(), interceptor));
  });
}

bool in_backward_pass() {
  return torch::autograd::get_current_graph_task_nodes_in_graph() != nullptr;
}

}  // namespace spmd::compat
