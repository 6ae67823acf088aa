// Layout flags: a layer whose types depend on a bool member set at
// construction (gather_output_, input_is_parallel_, reduce_results_) declares
// each layout with [[spmd::when(flag, ...)]] / [[spmd::unless(flag, ...)]].
// Its body is checked once per layout, branches on the flag pruned to the
// layout's side; a call is typed with the layout its instance was
// constructed with (constructor argument, through TORCH_MODULE holders,
// register_module, make_shared, locals, `this`).
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
// RUN-PLUGIN: -Xclang -verify=strict -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

#include <memory>

struct Args {
  [[spmd::axis_size(tp)]] int64_t tp_size() const;
};

class ColumnParallelImpl : public torch::nn::Module {
public:
  ColumnParallelImpl(int64_t in, int64_t out, bool gather_output);
  [[spmd::type(tp = V)]] [[spmd::when(gather_output_, tp = I)]]
  Tensor forward([[spmd::type(tp = I)]] const Tensor& x);
  // Another method of the same instance: `this` has the caller's layout.
  [[spmd::type(tp = V)]] [[spmd::when(gather_output_, tp = I)]]
  Tensor twice([[spmd::type(tp = I)]] const Tensor& x) { return forward(x); }

private:
  [[spmd::type(tp = V)]] Tensor w_;
  bool gather_output_;
};
TORCH_MODULE(ColumnParallel);

// Correct in both layouts: each branch is checked against its own type.
Tensor ColumnParallelImpl::forward(const Tensor& x) {
  auto y = torch::matmul(spmd::convert(x, tp, I, R), w_);
  if (gather_output_)
    y = spmd::all_gather(y, tp, V, I);
  return y;
}

class RowParallelImpl : public torch::nn::Module {
public:
  RowParallelImpl(int64_t in, int64_t out, bool input_is_parallel,
                  bool reduce_results = true);
  [[spmd::type(tp = I)]] [[spmd::unless(reduce_results_, tp = P)]]
  Tensor forward([[spmd::type(tp = V)]] [[spmd::unless(input_is_parallel_, tp = I)]]
                 const Tensor& x);

private:
  [[spmd::type(tp = V)]] Tensor w_;
  bool input_is_parallel_;
  bool reduce_results_;
  Args args_;
};
TORCH_MODULE(RowParallel);

// Four layouts, all correct (the size-1 guard as well).
Tensor RowParallelImpl::forward(const Tensor& x) {
  Tensor x_parallel = x;
  if (!input_is_parallel_)
    x_parallel = spmd::convert(x, tp, I, V);
  auto partial = spmd::reinterpret(torch::matmul(x_parallel, w_), tp, V, P);
  if (reduce_results_ && args_.tp_size() > 1)
    return spmd::all_reduce(partial, tp, P, I);
  return partial;
}

// Wrong in one layout only: it forgets to gather.
class ForgetsGatherImpl : public torch::nn::Module {
public:
  explicit ForgetsGatherImpl(bool gather_output);
  [[spmd::type(tp = V)]] [[spmd::when(gather_output_, tp = I)]]
  Tensor forward([[spmd::type(tp = I)]] const Tensor& x);

private:
  [[spmd::type(tp = V)]] Tensor w_;
  bool gather_output_; // #gather
};

Tensor ForgetsGatherImpl::forward(const Tensor& x) {
  return torch::matmul(spmd::convert(x, tp, I, R), w_); // expected-error {{returned value has type V on axis 'tp', but 'forward' is declared to return I there}} strict-error {{returned value}}
  // expected-note@#gather {{in the layout where 'gather_output_' is true}}
}

// Use sites: the layout comes from the construction of the member.
class MLPImpl : public torch::nn::Module {
public:
  MLPImpl();
  [[spmd::type(tp = I)]] Tensor forward([[spmd::type(tp = I)]] const Tensor& x);

private:
  ColumnParallel up_{nullptr};
  RowParallel down_{nullptr};
};

MLPImpl::MLPImpl() {
  up_ = register_module("up", ColumnParallel(4, 16, /*gather_output=*/false));
  down_ = register_module("down", RowParallel(16, 4, /*input_is_parallel=*/true));
}

Tensor MLPImpl::forward(const Tensor& x) {
  return down_(torch::gelu(up_(x))); // V into V, I out: no error
}

// The same layers built with the wrong flags.
class GatheredMLPImpl : public torch::nn::Module {
public:
  GatheredMLPImpl()
      : up_(4, 16, /*gather_output=*/true), // #upflag
        down_(16, 4, /*input_is_parallel=*/true, /*reduce_results=*/false) {} // #downflag
  [[spmd::type(tp = I)]] Tensor forward([[spmd::type(tp = I)]] const Tensor& x);
  [[spmd::type(tp = I)]] Tensor reduce([[spmd::type(tp = V)]] const Tensor& h);

private:
  ColumnParallel up_; // #up
  RowParallel down_; // #down
};

Tensor GatheredMLPImpl::forward(const Tensor& x) {
  auto h = up_->forward(x); // I: gathered
  return spmd::all_reduce(down_(h), tp, P, I); // expected-error {{argument 'h' of 'forward' has type I on axis 'tp', but parameter 'x' is declared V there}} strict-error {{argument 'h'}}
  // The type of 'h' was chosen by the layout of 'up_': notes at the member
  // and at the constructor argument, not at the use.
  // expected-note@#up {{'up_' is declared here; its layout ('gather_output_' = true) chooses the declared result type of this call}}
  // expected-note@#upflag {{the layout of 'up_' ('gather_output_' = true) is chosen by this constructor argument}}
}

Tensor GatheredMLPImpl::reduce(const Tensor& h) {
  return down_(h); // expected-error {{returned value has type P on axis 'tp', but 'reduce' is declared to return I there}} strict-error {{returned value}}
  // expected-note@#down {{'down_' is declared here; its layout ('reduce_results_' = false) chooses the declared result type of this call}}
  // expected-note@#downflag {{the layout of 'down_' ('reduce_results_' = false) is chosen by this constructor argument}}
}

class SplitAgainImpl : public torch::nn::Module {
public:
  SplitAgainImpl() {
    down_ = register_module(
        "down", RowParallel(16, 4, /*input_is_parallel=*/false)); // #ctorarg
  }
  [[spmd::type(tp = I)]] Tensor forward([[spmd::type(tp = V)]] const Tensor& h) {
    return down_->forward(h); // expected-error {{argument 'h' of 'forward' has type V on axis 'tp', but parameter 'x' is declared I there}} strict-error {{argument 'h'}}
    // expected-note@#ctorarg {{the layout of 'down_' ('input_is_parallel_' = false) is chosen by this constructor argument}}
    // expected-note@#splitdown {{'down_' is declared here; its layout ('input_is_parallel_' = false) chooses the declared type of the parameter}}
  }

private:
  RowParallel down_{nullptr}; // #splitdown
};

// Locals and shared pointers.
[[spmd::type(tp = I)]]
Tensor local_gathered([[spmd::type(tp = I)]] const Tensor& x) {
  ColumnParallelImpl gathered(4, 16, true);
  return gathered.twice(x);
}

[[spmd::type(tp = I)]]
Tensor shared_split([[spmd::type(tp = I)]] const Tensor& x) {
  auto split = std::make_shared<ColumnParallelImpl>(4, 16, false);
  return split->forward(x); // expected-error {{returned value has type V on axis 'tp', but 'shared_split' is declared to return I there}} strict-error {{returned value}}
}

// A flag that is not a constant at the construction: the axes on which the
// layouts differ are unknown (strict mode says so); nothing is guessed.
[[spmd::type(tp = I)]]
Tensor runtime_flag([[spmd::type(tp = I)]] const Tensor& x, bool gather) {
  ColumnParallelImpl layer(4, 16, gather);
  return layer.forward(x); // strict-warning {{unknown SPMD type}}
}
