// Shared declarations of the public-code corpus (corpus_public): the
// parallel_state accessors of NVIDIA/apex's apex.transformer, declared the
// way a libtorch port exposes them, and the mesh axes.
//
// Provenance: interface of apex/transformer/parallel_state.py and
// apex/transformer/tensor_parallel/utils.py, NVIDIA/apex (BSD-3-Clause),
// commit 0a7e2536ef3fd9e3b42341ac852111ed293fe196; ported to C++ by hand
// (the project is Python only). See PROVENANCE.md.
#pragma once

#include <spmd/collectives.h>
#include <spmd/type_annotations.h>
#include <torch/torch.h>

#include <cstdint>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

// The test stand-in for libtorch (Inputs/mini-torch) has no c10 macros.
#ifndef TORCH_CHECK
#define TORCH_CHECK(cond, ...) ((void)(cond))
#endif

namespace apex {

using namespace spmd::types;
using at::Tensor;

SPMD_AXIS(dp);
SPMD_AXIS(tp);

namespace parallel_state {
/// Number of ranks of the tensor-model-parallel group (tp).
SPMD_AXIS_SIZE(tp) int64_t get_tensor_model_parallel_world_size();
/// This rank's index in the tensor-model-parallel group (tp).
SPMD_AXIS_RANK(tp) int64_t get_tensor_model_parallel_rank();
/// Number of ranks of the data-parallel group (dp).
SPMD_AXIS_SIZE(dp) int64_t get_data_parallel_world_size();
}  // namespace parallel_state

/// utils.divide: numerator / denominator, checking that it divides.
int64_t divide(int64_t numerator, int64_t denominator);

/// VocabUtility.vocab_range_from_global_vocab_size: [first, last) of this
/// rank's vocabulary slice.
std::pair<int64_t, int64_t> vocab_range_from_global_vocab_size(
    int64_t global_vocab_size, int64_t rank, int64_t world_size);

// ---- mappings.cpp (tensor_parallel/mappings.py) ----
// Activations are [s, b, h] (sequence, batch, hidden), rank 3.

/// copy_to_tensor_model_parallel_region (f): identity forward, all-reduce
/// of the gradient.
SPMD_TYPE(tp = R, spmd::rank(3))
Tensor copy_to_tensor_model_parallel_region(
    SPMD_TYPE(tp = I, spmd::rank(3)) const Tensor& input_);
/// reduce_from_tensor_model_parallel_region (g): all-reduce forward.
SPMD_TYPE(tp = I, spmd::rank(3))
Tensor reduce_from_tensor_model_parallel_region(
    SPMD_TYPE(tp = P, spmd::rank(3)) const Tensor& input_);
/// scatter_to_tensor_model_parallel_region: this rank's last-dim slice.
SPMD_TYPE(tp = S(-1), spmd::rank(3))
Tensor scatter_to_tensor_model_parallel_region(
    SPMD_TYPE(tp = I, spmd::rank(3)) const Tensor& input_);
/// gather_from_tensor_model_parallel_region: all-gather of the last dim.
SPMD_TYPE(tp = I, spmd::rank(3))
Tensor gather_from_tensor_model_parallel_region(
    SPMD_TYPE(tp = S(-1), spmd::rank(3)) const Tensor& input_);
/// scatter_to_sequence_parallel_region: this rank's sequence slice.
SPMD_TYPE(tp = S(0), spmd::rank(3))
Tensor scatter_to_sequence_parallel_region(
    SPMD_TYPE(tp = I, spmd::rank(3)) const Tensor& input_);
/// gather_from_sequence_parallel_region: all-gather of the sequence.
SPMD_TYPE(tp = R, spmd::rank(3))
Tensor gather_from_sequence_parallel_region(
    SPMD_TYPE(tp = S(0), spmd::rank(3)) const Tensor& input_);
/// reduce_scatter_to_sequence_parallel_region: reduce-scatter onto the
/// sequence.
SPMD_TYPE(tp = S(0), spmd::rank(3))
Tensor reduce_scatter_to_sequence_parallel_region(
    SPMD_TYPE(tp = P, spmd::rank(3)) const Tensor& input_);

}  // namespace apex
