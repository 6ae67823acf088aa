// A correctly typed tensor-parallel MLP block: the check reports nothing.
#include <spmd/collectives.h>
#include <spmd/type_annotations.h>
#include <torch/torch.h>

using namespace spmd::types;
using torch::Tensor;
SPMD_AXIS(tp);

SPMD_TYPE(tp = R)
Tensor mlp(SPMD_TYPE(tp = R) const Tensor& x,
           SPMD_TYPE(tp = V) const Tensor& w1,
           SPMD_TYPE(tp = V) const Tensor& w2) {
  auto h = torch::relu(torch::matmul(x, w1));
  auto partial = spmd::reinterpret(torch::matmul(h, w2), tp, V, P);
  return spmd::all_reduce(partial, tp, P, R);
}
