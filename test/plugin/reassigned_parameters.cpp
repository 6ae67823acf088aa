// A parameter's annotation is the callers' contract at entry. In the body a
// by-value parameter is a variable: `x = e;` rebinds it to e's tensor, and
// its type and rank follow e from there, flow-sensitively, as for an
// unannotated local (the runtime types tensors, not variables). What the
// body does with the new value is checked where it is used. An in-place
// update of a parameter that still holds the caller's tensor reaches the
// caller: it is checked against the declared type. A reference parameter
// (`Tensor& out`) is the caller's variable: it keeps its declared type.
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
// RUN-PLUGIN: -Xclang -verify=strict -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-strict
// RUN-PLUGIN: -Xclang -verify=global -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-global -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

struct Args {
  [[spmd::axis_size(tp)]] int64_t world_size() const;
};

SPMD_TYPE(tp = S(-1))
Tensor scatter_region(SPMD_TYPE(tp = R) Tensor input, const Args& args);
SPMD_TYPE(tp = R)
Tensor reduce_region(SPMD_TYPE(tp = P) Tensor input, const Args& args);

// The row-parallel input split in place, as ScaleLLM writes it: in the
// layout whose input is whole, `input` is rebound to its scattered slice.
class RowParallelImpl : public torch::nn::Module {
public:
  RowParallelImpl(bool input_is_parallelized, const Args& args);

  SPMD_TYPE(tp = R, spmd::rank(2))
  Tensor forward(SPMD_TYPE(tp = S(-1), spmd::rank(2))
                     SPMD_UNLESS(input_is_parallelized_, tp = R) Tensor input) {
    if (!input_is_parallelized_) {
      input = scatter_region(input, args_);
    }
    auto output = torch::linear(input, weight_);
    if (args_.world_size() > 1) {
      output = spmd::all_reduce(output, tp, P, R);
    }
    return output;
  }

  // The test inverted: the split input split again. One diagnostic, at the
  // scatter; `input` goes on as the scatter's result. (Global mode also
  // reports the other layout's unsplit input at the linear.)
  SPMD_TYPE(tp = R, spmd::rank(2))
  Tensor inverted(SPMD_TYPE(tp = S(-1), spmd::rank(2))
                      SPMD_UNLESS(input_is_parallelized_, tp = R) Tensor input) {
    if (input_is_parallelized_) {
      input = scatter_region(input, args_); // expected-error {{argument 'input' of 'scatter_region' has type V on axis 'tp', but parameter 'input' is declared R there}} strict-error {{argument 'input' of 'scatter_region'}} global-error {{argument 'input' of 'scatter_region'}}
    }
    return spmd::all_reduce(torch::linear(input, weight_), tp, P, R); // global-error {{No valid sharding strategy for torch::linear on axis tp}}
  }

private:
  SPMD_TYPE(tp = S(1), spmd::rank(2)) Tensor weight_;
  bool input_is_parallelized_;
  Args args_;
};
TORCH_MODULE(RowParallel);

// Rebound with another rank: the broadcast against the heads is exact.
SPMD_TYPE(tp = S(1), spmd::rank(3))
Tensor rotary(SPMD_TYPE(tp = S(1), spmd::rank(3)) Tensor x,
              SPMD_TYPE(tp = R, spmd::rank(2)) Tensor cos,
              SPMD_TYPE(tp = R, spmd::rank(2)) Tensor sin) {
  cos = cos.unsqueeze(1);
  sin = sin.unsqueeze(1);
  auto halves = x.chunk(2, -1);
  return torch::cat({halves[0] * cos - halves[1] * sin,
                     halves[1] * cos + halves[0] * sin}, -1);
}

// A real bug: the rebound value is wrong where it is used (once).
SPMD_TYPE(tp = R)
Tensor rebound_then_returned(SPMD_TYPE(tp = P) Tensor x) {
  x = x * 2;
  return x; // expected-error {{returned value has type P on axis 'tp', but 'rebound_then_returned' is declared to return R there}} strict-error {{returned value has type P}} global-error {{returned value has type P}}
}

// Rebound on one path only: the paths disagree where they meet.
SPMD_TYPE(tp = R)
Tensor rebound_on_one_path(SPMD_TYPE(tp = P) Tensor x, bool c) {
  if (c)
    x = spmd::all_reduce(x, tp, P, R);
  return x; // expected-error {{'x' has type R on axis 'tp' on one path and P on another}} strict-error {{'x' has type R on axis 'tp' on one path and P on another}} global-error {{'x' has type R on axis 'tp' on one path and P on another}}
}

// An in-place update of the caller's tensor is checked against the contract;
// after a rebinding to another type it updates the new tensor only.
void sgd_step(SPMD_TYPE(tp = R) Tensor w, SPMD_TYPE(tp = V) Tensor g) {
  w.sub_(g); // expected-error {{result of the in-place operation has type V on axis 'tp', but 'w' is declared R there}} strict-error {{result of the in-place operation}} global-error {{result of the in-place operation}}
}
SPMD_TYPE(tp = V)
Tensor rebound_then_updated(SPMD_TYPE(tp = R) Tensor w, SPMD_TYPE(tp = V) Tensor g) {
  w = w * g;
  w.sub_(g);
  return w;
}

// A reference parameter is the caller's variable: it keeps its type.
void out_parameter(SPMD_TYPE(tp = R) Tensor& out, SPMD_TYPE(tp = P) const Tensor& p) {
  out = p; // expected-error {{value assigned to 'out' has type P on axis 'tp', but 'out' is declared R there}} strict-error {{value assigned to 'out'}} global-error {{value assigned to 'out'}}
  out = spmd::all_reduce(p, tp, P, R);
}

// Rebound to a value of unknown type: the declared type stays (strict mode
// says the value is unknown, as for a declared variable).
SPMD_TYPE(tp = R)
Tensor rebound_unknown(SPMD_TYPE(tp = R) Tensor x) {
  x = opaque(x); // strict-warning {{has an unknown SPMD type}} global-warning {{has an unknown SPMD type}}
  return x;
}
