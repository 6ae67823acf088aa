// Custom autograd functions typed from the annotations on T::forward
// (spec 13.1), raw c10d collectives on typed tensors (spec 14) and the loss
// check of backward() (spec 6.15).
#include "Inputs/prelude.h"

#include <torch/csrc/autograd/custom_function.h>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

using torch::autograd::AutogradContext;

// The runtime's typed apply (spmd/autograd.h), declared as it is seen here.
namespace spmd::autograd {
template <class T, class... Args>
auto apply(Args &&...args)
    -> decltype(T::forward(nullptr, static_cast<Args &&>(args)...));
} // namespace spmd::autograd

// Megatron's copy-to-tensor-parallel region: I in, R out.
struct CopyToTP : torch::autograd::Function<CopyToTP> {
  SPMD_TYPE(tp = R)
  static Tensor forward(AutogradContext *ctx, SPMD_TYPE(tp = I) const Tensor &x);
};

// Reduce-from-tensor-parallel region: P in, I out.
struct ReduceFromTP : torch::autograd::Function<ReduceFromTP> {
  SPMD_TYPE(tp = I)
  static Tensor forward(AutogradContext *ctx, SPMD_TYPE(tp = P) const Tensor &x);
};

// Not annotated: apply's result is unknown, nothing is checked.
struct Opaque : torch::autograd::Function<Opaque> {
  static Tensor forward(AutogradContext *ctx, const Tensor &x);
};

SPMD_TYPE(tp = I)
Tensor tp_block(SPMD_TYPE(tp = I) const Tensor &x,
                SPMD_TYPE(tp = V) const Tensor &w1,
                SPMD_TYPE(tp = V) const Tensor &w2) {
  Tensor xr = CopyToTP::apply(x);              // I -> R: no diagnostic
  Tensor h = torch::matmul(xr, w1).relu();     // R . V -> V
  Tensor p = spmd::reinterpret(torch::matmul(h, w2), tp, V, P);
  Tensor y = ReduceFromTP::apply(p);           // P -> I: no diagnostic
  Tensor z = spmd::autograd::apply<ReduceFromTP>(p); // same through the helper
  Tensor bad = CopyToTP::apply(h); // expected-error {{argument 'h' of 'forward' has type V on axis 'tp', but parameter 'x' is declared I}}
  // expected-note@37 {{type V on axis 'tp' declared here}}
  // expected-note@21 {{declared type is {tp: I}}
  Tensor u = Opaque::apply(h); // unknown: no diagnostic
  return y + z;
}

SPMD_TYPE(tp = R)
Tensor wrong_result(SPMD_TYPE(tp = P) const Tensor &p) {
  return ReduceFromTP::apply(p); // expected-error {{returned value has type I on axis 'tp', but 'wrong_result' is declared to return R there}}
  // expected-note@-1 {{type I on axis 'tp' returned by this call (the callee's declared result type)}}
  // expected-note@-4 {{declared type is {tp: R}}
  // expected-note@-3 {{insert spmd::convert(..., tp, spmd::I, spmd::R) to make this value R on axis 'tp'}}
}

// Raw c10d calls on typed tensors are reported; on untyped ones they are not.
SPMD_TYPE(dp = R)
Tensor raw_trainer(c10d::ProcessGroup &pg, SPMD_TYPE(dp = P) Tensor g,
                   SPMD_TYPE(dp = V) Tensor in, Tensor untyped) {
  std::vector<Tensor> gs{g};
  pg.allreduce(gs)->wait(); // expected-error {{raw c10d call ProcessGroup::allreduce on a tensor with an SPMD type}}
  // expected-note@-1 {{suggestion: call spmd::all_reduce(x, <axis>, src, dst)}}
  Tensor out = spmd::all_gather(in, dp, S(0), R);
  pg._allgather_base(out, in)->wait(); // expected-error {{raw c10d call ProcessGroup::_allgather_base}}
  // expected-note@-1 {{suggestion: call spmd::all_gather}}
  std::vector<Tensor> us{untyped};
  pg.broadcast(us)->wait(); // untyped: no diagnostic
  return spmd::all_reduce(g, dp, P, R);
}

// backward() on a loss: I and P pass, R and V are reported (spec 6.15).
void losses(SPMD_TYPE(tp = I) const Tensor &i, SPMD_TYPE(tp = P) const Tensor &p,
            SPMD_TYPE(tp = R) const Tensor &r, SPMD_TYPE(tp = V) const Tensor &v,
            const Tensor &grad) {
  i.sum().backward();
  p.sum().backward();
  r.sum().backward(); // expected-error {{backward() on a Replicate loss on axis tp}}
  // expected-note@-1 {{suggestion: Reduce with dst=I upstream}}
  v.sum().backward(); // expected-error {{backward() on a Varying loss on axis tp}}
  // expected-note@-1 {{suggestion: Declare the pending sum: spmd::reinterpret(loss, tp, V, P)}}
  v.sum().backward(grad); // an explicit gradient: no check
  Tensor loss = spmd::reinterpret(v.sum(), tp, V, P);
  loss.backward();
}
