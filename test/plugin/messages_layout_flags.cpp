// A layout flag that is not a compile-time constant at the construction
// (docs/plugin.md "Layout flags", "Diagnostics"): strict mode says, once at
// the call, which flag, why, what the result is in each layout and how to
// fix it; a stated type (assert_type, a typed variable) is no news, and a
// constant flag (literal, constexpr, template parameter) types the call.
// Outside strict mode an unknown layout is not reported.
// RUN-PLUGIN: -Xclang -verify=strict -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify
// expected-no-diagnostics
#include "Inputs/prelude.h"

class ColumnParallelImpl : public torch::nn::Module {
public:
  ColumnParallelImpl(int64_t in, int64_t out, bool gather_output);
  [[spmd::type(dp = V, tp = V)]] [[spmd::when(gather_output_, tp = I)]]
  Tensor forward([[spmd::type(dp = V, tp = I)]] const Tensor& x);

private:
  bool gather_output_;
};

struct Config {
  bool gather_output;
};

// The flag read from a runtime config: one warning, at the call, also when
// the result is then used (no follow-on "unknown" at the return).
[[spmd::type(dp = V, tp = I)]]
Tensor from_config([[spmd::type(dp = V, tp = I)]] const Tensor& x, const Config& cfg) {
  ColumnParallelImpl layer(4, 16, cfg.gather_output); // strict-note {{'gather_output_' is set from this argument, which is not a compile-time constant}}
  auto y = layer.forward(x); // strict-warning {{the result of 'forward' has an unknown SPMD type on axis 'tp': it depends on the layout flag 'gather_output_' of 'layer', which is not a compile-time constant here (tp = V if false, I if true); construct 'layer' with a constant (a literal, a constexpr variable or a template parameter), or state the result's type with spmd::assert_type or [[spmd::type(...)]] on the variable that holds it}}
  auto z = y * 2;
  return z;
}

// Where it must not fire: the result's type stated, a constexpr flag, a
// template parameter.
[[spmd::type(dp = V, tp = I)]]
Tensor asserted([[spmd::type(dp = V, tp = I)]] const Tensor& x, const Config& cfg) {
  ColumnParallelImpl layer(4, 16, cfg.gather_output);
  return spmd::assert_type(layer.forward(x), {tp = I});
}

[[spmd::type(dp = V, tp = I)]]
Tensor typed_variable([[spmd::type(dp = V, tp = I)]] const Tensor& x, const Config& cfg) {
  ColumnParallelImpl layer(4, 16, cfg.gather_output);
  [[spmd::type(dp = V, tp = I)]] Tensor y = layer.forward(x);
  return y;
}

constexpr bool kGather = true;
[[spmd::type(dp = V, tp = I)]]
Tensor constexpr_flag([[spmd::type(dp = V, tp = I)]] const Tensor& x) {
  ColumnParallelImpl layer(4, 16, kGather);
  return layer.forward(x);
}

template <bool Gather>
[[spmd::type(dp = V, tp = I)]]
Tensor template_flag([[spmd::type(dp = V, tp = I)]] const Tensor& x) {
  ColumnParallelImpl layer(4, 16, Gather);
  return layer.forward(x);
}
template Tensor template_flag<true>(const Tensor& x);
