// model.h - a Megatron-style tensor-parallel transformer MLP block on a 2-D
// mesh dp x tp, with SPMD type annotations checked by the spmd-check plugin.
//
// The block (one device):   out = x + W2 · gelu(W1 · LayerNorm(x))
// with x, out of shape [seq, batch, hidden] (sequence first, as Megatron),
// W1 [ffn, hidden], W2 [hidden, ffn] and LayerNorm weight/bias [hidden].
//
// Tensor parallel (tp): W1 is split by rows (column-parallel linear, S(0)),
// W2 by columns (row-parallel linear, S(1)); each rank computes a slice of the
// ffn activations and a partial sum of the output. Data parallel (dp): the
// batch is split, parameters are replicated and their gradients summed.
// Sequence parallelism (option): between blocks, activations are split along
// the sequence on tp (S(0)) instead of being duplicated (I).
//
// The code is cut so that each classic mistake in examples/bugs/ replaces one
// translation unit: tensor_parallel.cpp (the tp block), optimizer.cpp (the
// data-parallel gradient reduction and SGD step); sequence_parallel.cpp holds
// the SP block and its step; experiment.cpp the loss, the data and the
// one-device reference (experiment.h); train.cpp the multi-process training
// loop and its equivalence table (test/examples checks the same in one
// process with spmd::testing).
#ifndef SPMD_EXAMPLES_TP_TRANSFORMER_BLOCK_MODEL_H
#define SPMD_EXAMPLES_TP_TRANSFORMER_BLOCK_MODEL_H

#include <ATen/core/Tensor.h>
#include <spmd/spmd.h>

#include <cstdint>
#include <string>

namespace tp_example {

SPMD_AXIS(dp);  // data parallel: batch split, parameters replicated
SPMD_AXIS(tp);  // tensor parallel: weights split, activations per layout

/// The experiment's sizes and settings (command-line flags of train.cpp).
struct Config {
  int64_t seq = 8;      ///< sequence length (divisible by tp when SP is on)
  int64_t batch = 4;    ///< global batch (divisible by dp)
  int64_t hidden = 16;  ///< model width
  int64_t ffn = 64;     ///< MLP width (divisible by tp)
  int64_t dp_size = 2;  ///< data-parallel degree
  int64_t tp_size = 2;  ///< tensor-parallel degree
  bool sequence_parallel = false;
  int steps = 20;        ///< SGD steps
  double lr = 0.2;       ///< SGD learning rate
  uint64_t seed = 1234;  ///< parameters and data
  double tol = 1e-5;     ///< max abs difference accepted vs one device
};

/// This rank's parameters: leaf tensors that require grad. Their SPMD types
/// are stated where they are used (tensor_parallel.cpp, optimizer.cpp,
/// sequence_parallel.cpp), not here, because they depend on the layout.
struct LocalParams {
  at::Tensor ln_w;  ///< LayerNorm weight [hidden], whole on every rank
  at::Tensor ln_b;  ///< LayerNorm bias [hidden], whole on every rank
  at::Tensor w1;    ///< first linear, [ffn, hidden] split on tp per layout
  at::Tensor w2;    ///< second linear, [hidden, ffn] split on tp per layout
};

/// The gradients an optimizer step applied (after every reduction), as the
/// local shards of LocalParams. The equivalence check compares them with the
/// one-device gradients.
struct AppliedGrads {
  at::Tensor ln_w, ln_b, w1, w2;
};

/// How the tp block splits W1 and W2 over tp: the tensor dim that is sharded
/// (S(dim)), or -1 when every rank holds the whole tensor; and the mode its
/// annotations are written for.
struct TpLayout {
  int64_t w1_dim = 0;  ///< column-parallel: S(0)
  int64_t w2_dim = 1;  ///< row-parallel: S(1)
  /// Written for global mode (spec §12: shard dims tracked, the row-parallel
  /// pending sum inferred), so the runtime checker types it in global mode
  /// (checker_options); false: local mode, with the pending sum declared by a
  /// hand-written reinterpret (tensor_parallel_local.cpp, examples/bugs).
  bool global = false;
};

// ---- tensor_parallel.cpp (replaced by tensor_parallel_local.cpp or a bug
// variant of the block) ----

/// The layout that mlp_block expects its weights in.
TpLayout tp_layout();

/// The block without sequence parallelism. x: [seq, batch/dp, hidden],
/// duplicated on tp (I). Returns out, same shape and type. ln_w, ln_b:
/// [hidden]; w1, w2: the local shards per tp_layout().
at::Tensor mlp_block(const at::Tensor& x, const at::Tensor& ln_w,
                     const at::Tensor& ln_b, const at::Tensor& w1,
                     const at::Tensor& w2);

// ---- sequence_parallel.cpp ----

/// The block with sequence parallelism: x and out are [seq/tp, batch/dp,
/// hidden], split along the sequence on tp (S(0)). Weights as mlp_block.
at::Tensor mlp_block_sp(const at::Tensor& x, const at::Tensor& ln_w,
                        const at::Tensor& ln_b, const at::Tensor& w1,
                        const at::Tensor& w2);

/// Gradient reductions (dp, and tp for the LayerNorm parameters) and one SGD
/// step for the sequence-parallel layout. Must run after backward.
AppliedGrads sgd_step_sp(const LocalParams& params, double lr);

// ---- optimizer.cpp (replaced by the forgotten-all-reduce bug) ----

/// dp gradient reduction and one SGD step for the non-SP layout.
AppliedGrads sgd_step(const LocalParams& params, double lr);

// ---- experiment.cpp ----

/// The gradient autograd accumulated on a parameter (an undefined tensor
/// becomes zeros). Out of line on purpose: the static checker does not see
/// autograd, so the type of a gradient is stated by the caller's annotation.
at::Tensor grad_of(const at::Tensor& param);

}  // namespace tp_example

#endif  // SPMD_EXAMPLES_TP_TRANSFORMER_BLOCK_MODEL_H
