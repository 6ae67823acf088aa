// A user header with SPMD annotations, as a real project has them: the
// editor must see them while reusing the preamble that holds libtorch.
#pragma once
#include <spmd/spmd.h>
#include <torch/torch.h>

using namespace spmd::types;
SPMD_AXIS(tp);

/// Row-parallel output projection: sums the partial products over tp.
SPMD_TYPE(tp = R)
torch::Tensor row_parallel_out(SPMD_TYPE(tp = P) const torch::Tensor& y);

struct ColumnParallel : torch::nn::Module {
  SPMD_TYPE(tp = V) torch::Tensor weight;
};
