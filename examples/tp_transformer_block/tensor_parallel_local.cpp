// tensor_parallel_local.cpp - the block of tensor_parallel.cpp written for
// local mode (the plugin's and the runtime checker's default), where a
// sharded tensor is just V: nothing tracks which dim each rank holds, so the
// row-parallel product cannot be known to be a pending sum and is declared
// one by hand (reinterpret V -> P). The comments of tensor_parallel.cpp
// apply; only the differences are explained here. Linked in place of
// tensor_parallel.cpp by the local-mode tests (test/examples); the whole-file
// bug variants of examples/bugs are variants of this file.
#include <ATen/ATen.h>

#include "bugs.h"
#include "model.h"

namespace tp_example {

using namespace spmd::types;

TpLayout tp_layout() {
  return TpLayout{/*w1_dim=*/0, /*w2_dim=*/1, /*global=*/false};
}

// Local mode reads S(0) and S(1) as V and needs no ranks.
SPMD_TYPE(dp = V, tp = I)
at::Tensor mlp_block(SPMD_TYPE(dp = V, tp = I) const at::Tensor& x,
                     SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_w,
                     SPMD_TYPE(dp = R, tp = I) const at::Tensor& ln_b,
                     SPMD_TYPE(dp = R, tp = S(0)) const at::Tensor& w1,
                     SPMD_TYPE(dp = R, tp = S(1)) const at::Tensor& w2) {
  auto h = at::layer_norm(x, {x.size(-1)}, ln_w, ln_b);  // {dp: V, tp: I}
  auto h_r = spmd::convert(h, tp, I, R);                 // {dp: V, tp: R}
  auto a = at::gelu(at::matmul(h_r, w1.t()));            // {dp: V, tp: V}

  // Row-parallel linear: local mode sees only a V product. The reinterpret
  // states what the programmer knows, that each rank holds one term of the
  // output (it is trusted, not checked); from here on the checker treats it
  // as a pending sum, so a nonlinear op or the residual before the reduce is
  // an error. Without it, all_reduce would still accept the V (spec §7.2) but
  // gelu_on_partial would pass unnoticed.
  auto y = at::matmul(a, w2.t());                   // {dp: V, tp: V}
  auto y_partial = spmd::reinterpret(y, tp, V, P);  // {dp: V, tp: P}

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
