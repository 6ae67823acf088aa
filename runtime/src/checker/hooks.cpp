// hooks.cpp - where the runtime checker hooks into the rest of the runtime
// and into autograd: the collective hook (spec §7.2: validate src, stamp
// dst) and the loss check of Tensor::backward (spec §6.15). Tensor::backward
// reaches autograd through hooks whose shape changes between libtorch
// releases: the adapter is compat::intercept_backward (../torch_compat.cpp).
#include <spmd/core/annotation_rules.h>
#include <spmd/core/collectives.h>
#include <spmd/core/propagation.h>

#include "internal.h"

namespace spmd::checker::internal {
namespace {

class CheckerCollectiveHook final : public spmd::detail::CollectiveHook {
 public:
  void on_collective(const core::CollectiveCall& call, std::string_view axis,
                     bool axis_is_singleton, const at::Tensor& input,
                     const at::Tensor& output) override {
    ThreadState* st = active_state();
    if (st == nullptr) return;
    if (collective_global(current_ctx(*st), call, axis, axis_is_singleton,
                          input, output))
      return;
    TypeRef in = type_of(input);
    core::Result<TensorType> r =
        core::transfer(call, in ? std::optional<TensorType>(*in) : std::nullopt,
                       axis, st->strict, axis_is_singleton);
    if (!r.ok()) {
      const Ctx& ctx = current_ctx(*st);
      std::string context =
          "  In " + call.to_string() + "(\n    x: " + describe_tensor(input) +
          ",\n    axis: " + std::string(axis) + ",\n  )" + mesh_suffix(ctx);
      throw_with_context(r.error(), context);
    }
    // Permissive on an untyped input: the output stays untyped (§7.2 item 4).
    if (in == nullptr && r.value().empty()) return;
    stamp(output, intern(r.value()));
  }
};

}  // namespace

spmd::detail::CollectiveHook& collective_hook() {
  static CheckerCollectiveHook hook;
  return hook;
}

namespace {

// Stands in for Tensor::backward (installed through compat).
void intercept_backward(const at::Tensor& loss,
                        const std::optional<at::Tensor>& gradient,
                        const std::function<void()>& run_pass) {
  ThreadState* st = active_state();
  if (st == nullptr) return run_pass();
  // An explicit gradient carries its own meaning: no check (§6.15).
  if (!gradient.has_value() || !gradient->defined()) check_loss_impl(loss, *st);
  NoTypecheckGuard untyped_backward;  // the seed and the pass (§6.14)
  run_pass();
}

}  // namespace

void install_backward_check() {
  compat::intercept_backward(&intercept_backward);
}

void check_loss_impl(const at::Tensor& loss, const ThreadState& st) {
  TypeRef ty = type_of(loss);
  core::Status s = core::check_loss(
      ty ? std::optional<TensorType>(*ty) : std::nullopt, st.strict);
  if (!s.ok())
    throw_with_context(s.error(), "  In backward(\n    loss: " +
                                      describe_tensor(loss) + ",\n  )");
}

}  // namespace spmd::checker::internal
