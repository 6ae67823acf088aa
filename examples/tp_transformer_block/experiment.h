// experiment.h - the experiment around the block: parameters and data from
// the seed, the loss, the one-device reference step and the types the
// runtime checker starts from. Shared by the multi-process program
// (train.cpp) and the in-process tests (test/examples, through
// spmd::testing), so that both train exactly the same thing.
#ifndef SPMD_EXAMPLES_TP_TRANSFORMER_BLOCK_EXPERIMENT_H
#define SPMD_EXAMPLES_TP_TRANSFORMER_BLOCK_EXPERIMENT_H

#include <ATen/core/Tensor.h>
#include <spmd/checker.h>

#include <cstdint>

#include "model.h"

namespace tp_example {

using namespace spmd::types;

/// Mean squared error over the global batch, without sequence parallelism:
/// P on dp (each dp rank's share of the sum), I on tp. `global_count` is the
/// number of elements of the whole batch.
SPMD_TYPE(dp = P, tp = I)
at::Tensor loss_tp(SPMD_TYPE(dp = V, tp = I) const at::Tensor& out,
                   SPMD_TYPE(dp = V, tp = I) const at::Tensor& target,
                   double global_count);

/// The same loss with sequence parallelism (out and target split along the
/// sequence on tp).
SPMD_TYPE(dp = P, tp = I)
at::Tensor loss_sp(SPMD_TYPE(dp = V, tp = S(0)) const at::Tensor& out,
                   SPMD_TYPE(dp = V, tp = S(0)) const at::Tensor& target,
                   double global_count);

/// The unsharded parameters, identical on every rank (same seed).
struct FullParams {
  at::Tensor ln_w, ln_b, w1, w2;
};

/// Parameters from c.seed.
FullParams init_params(const Config& c);

/// Synthetic regression: the target is the input plus a fixed smooth
/// function of it, which the block can learn; the loss falls from the start.
struct Data {
  at::Tensor x, target;  ///< [seq, batch, hidden]
};

/// Data from c.seed + 1.
Data make_data(const Config& c);

/// This rank's piece of a whole tensor: chunk `index` of `parts` along
/// `dim`, or the whole tensor when dim < 0.
at::Tensor piece(const at::Tensor& t, int64_t dim, int64_t parts,
                 int64_t index);

/// A contiguous copy of `t` that requires grad (a parameter).
at::Tensor leaf(const at::Tensor& t);

/// The one-device program: the same block, whole tensors, one process.
struct Reference {
  FullParams p;  ///< leaves that require grad
  double loss = 0;
  FullParams grads;

  /// One forward, backward and SGD step; keeps the loss and gradients.
  void step(const Data& d, double lr);
};

/// The runtime checker's options for the training loop (--typecheck): the
/// mode the block is written for. A tp block written for global mode
/// (tp_layout().global, tensor_parallel.cpp) is typed in global mode with dp
/// kept local (spec §12.5: the batch split is V, as the annotations say; the
/// loss's hand-written dp reinterpret stays legal), so the runtime follows
/// the tp shards and infers the row-parallel pending sum as the plugin does.
/// Local mode for the local block (tensor_parallel_local.cpp), the bug
/// variants of examples/bugs and sequence parallelism.
spmd::checker::TypecheckOptions checker_options(const Config& c);

/// The types of this rank's tensors for the runtime checker (--typecheck):
/// what the blocks' annotations state, set once before training. The
/// weights' shard dims are tp_layout()'s (a bug variant may change them);
/// local mode reads them as V.
void assert_types_tp(const LocalParams& p, const at::Tensor& x,
                     const at::Tensor& target);
/// The same for the sequence-parallel layout.
void assert_types_sp(const LocalParams& p, const at::Tensor& x,
                     const at::Tensor& target);

}  // namespace tp_example

#endif  // SPMD_EXAMPLES_TP_TRANSFORMER_BLOCK_EXPERIMENT_H
