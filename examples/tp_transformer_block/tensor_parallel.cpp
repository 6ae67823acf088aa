// tensor_parallel.cpp - the tensor-parallel MLP block (no sequence
// parallelism), annotated with SPMD types for global mode (spec §12) and
// checked by the spmd-check plugin at compile time: its build passes
// -fplugin-arg-spmd-check-global and -fplugin-arg-spmd-check-strict.
// docs/walkthrough.md explains every annotation; tensor_parallel_local.cpp
// is the same block written for local mode (the default), where the pending
// sum of the row-parallel product must be declared by hand.
#include <ATen/ATen.h>

#include "bugs.h"
#include "model.h"

namespace tp_example {

using namespace spmd::types;

TpLayout tp_layout() {
  return TpLayout{/*w1_dim=*/0, /*w2_dim=*/1, /*global=*/true};
}

// x and out are duplicated on tp (I): every tp rank holds the whole
// activation and the block's result is one logical value. On dp they vary
// (each dp rank has its own part of the batch). Parameters are replicated on
// dp (R: their gradient is a pending sum over the batch split) and, on tp,
// either duplicated (I, LayerNorm) or split by rows (S(0)) or columns (S(1)).
// spmd::rank gives global mode the tensors' ranks (x: [seq, batch, hidden],
// w1: [ffn, hidden], w2: [hidden, ffn]), so that it follows each tp shard
// through transpose and matmul to the exact dim.
SPMD_TYPE(dp = V, tp = I)
at::Tensor mlp_block(SPMD_TYPE(dp = V, tp = I, spmd::rank(3))
                         const at::Tensor& x,
                     SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_w,
                     SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_b,
                     SPMD_TYPE(dp = R, tp = S(0), spmd::rank(2))
                         const at::Tensor& w1,
                     SPMD_TYPE(dp = R, tp = S(1), spmd::rank(2))
                         const at::Tensor& w2) {
  // LayerNorm on the duplicated activation: one computation done tp times.
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b);  // {dp: V, tp: I}

  // Copy to the tensor-parallel region (Megatron's f): each tp rank now uses
  // h differently (with its own W1 shard), so h must become R. Forward is the
  // identity; backward all-reduces the gradient of h over tp.
  auto h_r = spmd::convert(h, tp, I, R);  // {dp: V, tp: R}

  // Column-parallel linear: this rank's slice of the ffn activations
  // (w1.t() is S(1), so the product is sharded on its last dim).
  auto a = at::gelu(at::matmul(h_r, w1.t()));  // {dp: V, tp: S(2)}

  // Row-parallel linear: the contraction runs over the sharded ffn dim
  // (a: S(2), w2.t(): S(0)), so each rank's product is one term of the
  // output. Global mode infers the pending sum; nothing is declared by hand.
  auto y_partial = at::matmul(a, w2.t());  // {dp: V, tp: P}

#if TP_BLOCK_BUG_IS(missing_all_reduce)
  return x + y_partial;  // BUG(missing_all_reduce)
#endif
  // Reduce from the tensor-parallel region (Megatron's g): sum the terms. The
  // result feeds duplicated work (the residual, the loss), so dst is I:
  // backward passes the gradient through unchanged.
#if TP_BLOCK_BUG_IS(residual_before_reduce)
  auto z =
      spmd::all_reduce(y_partial + x, tp, P, I);  // BUG(residual_before_reduce)
#elif TP_BLOCK_BUG_IS(gelu_on_partial)
  auto z =
      spmd::all_reduce(at::gelu(y_partial), tp, P, I);  // BUG(gelu_on_partial)
#else
  auto z = spmd::all_reduce(y_partial, tp, P, I);  // {dp: V, tp: I}
#endif
  return x + z;
}

}  // namespace tp_example
