// A correctly typed tensor-parallel MLP block: spmd-check reports nothing.
#include "prelude.h"

SPMD_TYPE(tp = R)
Tensor mlp(SPMD_TYPE(tp = R) const Tensor& x,
           SPMD_TYPE(tp = V) const Tensor& w1,
           SPMD_TYPE(tp = V) const Tensor& w2) {
  auto h = torch::relu(torch::matmul(x, w1));
  auto o = torch::matmul(h, w2);
  auto p = spmd::reinterpret(o, tp, V, P);
  return spmd::all_reduce(p, tp, P, R);
}
