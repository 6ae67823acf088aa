// Layer plumbing: calls through torch::nn::ModuleHolder (operator() and
// ->forward) and through user functions that only forward their arguments
// reach the annotated forward; an override inherits the annotations of the
// method it overrides.
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
// RUN-PLUGIN: -Xclang -verify=strict -Xclang -verify-ignore-unexpected=note -fplugin-arg-spmd-check-strict
#include "Inputs/prelude.h"

#include <memory>
#include <vector>

class RowParallelImpl : public torch::nn::Module {
public:
  SPMD_TYPE(tp = I)
  Tensor forward(SPMD_TYPE(tp = V) const Tensor& x);
};
TORCH_MODULE(RowParallel);

class ColumnParallelImpl : public torch::nn::Module {
public:
  SPMD_TYPE(tp = V)
  Tensor forward(SPMD_TYPE(tp = I) const Tensor& x);
};
TORCH_MODULE(ColumnParallel);

SPMD_TYPE(tp = I)
Tensor mlp(RowParallel& down, ColumnParallel& up,
           SPMD_TYPE(tp = I) const Tensor& x) {
  auto h = up(x);         // V, through ModuleHolder::operator()
  auto y = down->forward(h);
  auto z = down(x);       // expected-error {{argument 'x' of 'forward' has type I on axis 'tp', but parameter 'x' is declared V there}} strict-error {{argument 'x'}}
  return y + down(torch::gelu(h));
}

SPMD_TYPE(tp = I)
Tensor layers(std::vector<ColumnParallel>& cols, RowParallel& row,
              SPMD_TYPE(tp = I) const Tensor& x) {
  SPMD_TYPE(tp = I) Tensor h = x;
  for (auto& col : cols)
    h = row(col(h));
  auto bad = h + cols[0](h); // expected-error {{operator+: Invariant type on axis tp cannot mix}} strict-error {{Invariant}}
  return h;
}

// The engine's own holder, forwarding to the implementation.
class Model {
public:
  Tensor forward(const Tensor& x) { return impl_->forward(x); }
  Tensor operator()(const Tensor& x) { return forward(x); }

private:
  std::shared_ptr<ColumnParallelImpl> impl_;
};

SPMD_TYPE(tp = I)
Tensor through_user_holder(Model& m, SPMD_TYPE(tp = I) const Tensor& x) {
  return m(x); // expected-error {{returned value has type V on axis 'tp', but 'through_user_holder' is declared to return I there}} strict-error {{returned value}}
}

// Overrides inherit the base declaration's annotations.
class CausalLM {
public:
  virtual ~CausalLM() = default;
  SPMD_TYPE(tp = V)
  virtual Tensor forward(SPMD_TYPE(tp = I) const Tensor& x) = 0;
};

class Llama : public CausalLM {
public:
  Tensor forward(const Tensor& x) override {
    return torch::gelu(x); // expected-error {{returned value has type I on axis 'tp', but 'forward' is declared to return V there}} strict-error {{returned value}}
  }
};


SPMD_TYPE(tp = V)
Tensor call_override(Llama& l, SPMD_TYPE(tp = I) const Tensor& x) {
  return l.forward(x);
}

// Parameters created for an annotated field (register_parameter, a factory,
// or a helper returning one) take the field's declared type; anything else
// unknown assigned to it is reported in strict mode.
class Embedding : public torch::nn::Module {
public:
  explicit Embedding(int64_t rows) {
    weight_ = register_parameter("weight", torch::zeros({rows, 8}));
    bias_ = make(*this);
    scale_ = torch::ones({8});
    other_ = opaque(weight_); // strict-warning {{unknown SPMD type}}
  }
  static Tensor &make(torch::nn::Module &m) {
    return m.register_parameter("bias", torch::zeros({8}));
  }

private:
  SPMD_TYPE(tp = V) Tensor weight_;
  SPMD_TYPE(tp = R) Tensor bias_;
  SPMD_TYPE(tp = R) Tensor scale_;
  SPMD_TYPE(tp = R) Tensor other_;
};
