// Port of apex/transformer/tensor_parallel/mappings.py (NVIDIA/apex,
// BSD-3-Clause, commit 0a7e2536ef3fd9e3b42341ac852111ed293fe196) to
// libtorch C++, line by line; the project is Python only. Each
// torch.autograd.Function pair (forward, backward) is one spmd collective,
// whose backward is the Function's backward (docs/walkthrough.md, "Megatron
// correspondences"). See PROVENANCE.md.
#include "apex.h"

namespace apex {

using parallel_state::get_tensor_model_parallel_rank;
using parallel_state::get_tensor_model_parallel_world_size;

namespace {

/// All-reduce the input tensor across model parallel group.
SPMD_TYPE(tp = I, spmd::rank(3))
Tensor _reduce(SPMD_TYPE(tp = P, spmd::rank(3)) const Tensor& input_) {
  // Bypass the function if we are using only 1 GPU.
  if (get_tensor_model_parallel_world_size() == 1) {
    return input_;
  }
  // All-reduce.
  return spmd::all_reduce(input_, tp, P, I);
}

/// Split the tensor along its last dimension and keep the corresponding
/// slice.
SPMD_TYPE(tp = S(-1), spmd::rank(3))
Tensor _split_along_last_dim(
    SPMD_TYPE(tp = I, spmd::rank(3)) const Tensor& input_) {
  int64_t world_size = get_tensor_model_parallel_world_size();
  // Bypass the function if we are using only 1 GPU.
  if (world_size == 1) {
    return input_;
  }
  // Split along last dimension; this rank keeps its slice.
  Tensor output = spmd::convert(input_, tp, I, S(-1));
  return output.contiguous();
}

/// Split the tensor along its first dimension and keep the corresponding
/// slice.
SPMD_TYPE(tp = S(0), spmd::rank(3))
Tensor _split_along_first_dim(
    SPMD_TYPE(tp = I, spmd::rank(3)) const Tensor& input_) {
  int64_t world_size = get_tensor_model_parallel_world_size();
  // Bypass the function if we are using only 1 GPU for tensor model parallel.
  if (world_size == 1) {
    return input_;
  }
  // Split along first dimension.
  int64_t dim_size = input_.size(0);
  TORCH_CHECK(dim_size % world_size == 0);
  Tensor output = spmd::convert(input_, tp, I, S(0));
  return output.contiguous();
}

/// Gather tensors and concatenate along the last dimension.
SPMD_TYPE(tp = I, spmd::rank(3))
Tensor _gather_along_last_dim(
    SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& input_) {
  int64_t world_size = get_tensor_model_parallel_world_size();
  // Bypass the function if we are using only 1 GPU.
  if (world_size == 1) {
    return input_;
  }
  // Note: the gather already creates a contiguous tensor.
  Tensor output = spmd::all_gather(input_, tp, S(-1), I);
  return output;
}

/// Gather tensors and concatenate along the first dimension.
SPMD_TYPE(tp = R, spmd::rank(3))
Tensor _gather_along_first_dim(
    SPMD_TYPE(tp = S(0), spmd::rank(3)) const Tensor& input_) {
  int64_t world_size = get_tensor_model_parallel_world_size();
  // Bypass the function if we are using only 1 GPU.
  if (world_size == 1) {
    return input_;
  }
  Tensor output = spmd::all_gather(input_.contiguous(), tp, S(0), R);
  return output;
}

/// Reduce-scatter the input tensor across model parallel group.
SPMD_TYPE(tp = S(0), spmd::rank(3))
Tensor _reduce_scatter_along_first_dim(
    SPMD_TYPE(tp = P, spmd::rank(3)) const Tensor& input_) {
  int64_t world_size = get_tensor_model_parallel_world_size();
  // Bypass the function if we are using only 1 GPU.
  if (world_size == 1) {
    return input_;
  }
  TORCH_CHECK(input_.size(0) % world_size == 0);
  Tensor output = spmd::reduce_scatter(input_.contiguous(), tp, P, S(0));
  return output;
}

}  // namespace

// -----------------
// Helper functions.
// -----------------

Tensor copy_to_tensor_model_parallel_region(const Tensor& input_) {
  // _CopyToModelParallelRegion: identity forward, _reduce backward.
  return spmd::convert(input_, tp, I, R);
}

Tensor reduce_from_tensor_model_parallel_region(const Tensor& input_) {
  // _ReduceFromModelParallelRegion: _reduce forward, identity backward.
  return _reduce(input_);
}

Tensor scatter_to_tensor_model_parallel_region(const Tensor& input_) {
  // _ScatterToModelParallelRegion: split forward, gather backward.
  return _split_along_last_dim(input_);
}

Tensor gather_from_tensor_model_parallel_region(const Tensor& input_) {
  // _GatherFromModelParallelRegion: gather forward, split backward.
  return _gather_along_last_dim(input_);
}

Tensor scatter_to_sequence_parallel_region(const Tensor& input_) {
  // _ScatterToSequenceParallelRegion: split forward, gather backward.
  return _split_along_first_dim(input_);
}

Tensor gather_from_sequence_parallel_region(const Tensor& input_) {
  // _GatherFromSequenceParallelRegion (to_model_parallel = true): gather
  // forward, reduce-scatter backward.
  return _gather_along_first_dim(input_);
}

Tensor reduce_scatter_to_sequence_parallel_region(const Tensor& input_) {
  // _ReduceScatterToSequenceParallelRegion: reduce-scatter forward, gather
  // backward.
  return _reduce_scatter_along_first_dim(input_);
}

}  // namespace apex
