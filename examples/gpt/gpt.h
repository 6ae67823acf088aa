// gpt.h - a small decoder-only transformer (GPT) trained with data, tensor
// and sequence parallelism on a dp x tp mesh, written the way libtorch
// engines write it (torch::nn modules behind TORCH_MODULE holders, optional
// biases, a fused QKV projection split with `chunk`) and annotated with SPMD
// types that the spmd-check plugin proves in strict global mode
// (docs/walkthrough.md, "The GPT").
//
// Layout (Megatron with sequence parallelism): activations are
// [seq, batch, hidden]. Between the sub-layers the sequence is split on tp
// (S(0)) and the batch on dp (V); inside attention and the MLP each tp rank
// holds whole sequences and a slice of the heads / of the MLP width.
// Column-parallel weights are split by output rows (S(0)), row-parallel ones
// by input columns (S(1)); the vocabulary (embedding, LM head) is split on tp.
// Every parameter is replicated on dp (R): its gradient is a pending sum P.
//
// The classic mistakes of issue 16 are compiled in with -DGPT_BUG=<name>
// (one at a time, for the plugin) or selected at run time in a build with
// -DGPT_BUGS_AT_RUNTIME (no plugin), see bugs.h.
#ifndef SPMD_EXAMPLES_GPT_GPT_H
#define SPMD_EXAMPLES_GPT_GPT_H

#include <ATen/ATen.h>
#include <spmd/spmd.h>
#include <torch/nn/module.h>
#include <torch/nn/pimpl.h>
#include <torch/optim/adamw.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "bugs.h"

namespace gpt {

using at::Tensor;
using namespace spmd::types;

SPMD_AXIS(dp);  // data parallel: batch split, parameters replicated
SPMD_AXIS(tp);  // tensor parallel: heads / MLP width / vocab / sequence split

/// Model sizes and training settings.
struct Config {
  int64_t vocab = 256;  ///< byte-level tokens (divisible by tp)
  int64_t hidden = 32;  ///< model width
  int64_t heads = 4;    ///< attention heads (divisible by tp)
  int64_t ffn = 128;    ///< MLP width (divisible by tp)
  int64_t layers = 2;   ///< transformer blocks
  int64_t seq = 32;     ///< context length (divisible by tp)
  int64_t batch = 8;    ///< global batch (divisible by dp)
  bool bias = true;     ///< biases on the linear layers
  int64_t dp_size = 1;  ///< data-parallel degree
  int64_t tp_size = 1;  ///< tensor-parallel degree
  int steps = 40;       ///< AdamW steps
  double lr = 3e-3;     ///< AdamW learning rate
  double weight_decay = 0.01;
  double max_norm = 1.0;  ///< gradient clipping by the global norm
  uint64_t seed = 1234;
  int64_t val_batches = 2;  ///< held-out batches for the validation loss
  int64_t head_dim() const { return hidden / heads; }
};

/// This rank's coordinates and the mesh's sizes.
struct Shard {
  int64_t tp_rank = 0, tp_size = 1, dp_rank = 0, dp_size = 1;
};

/// The unsharded parameters by name (the same on every rank: same seed).
/// The fused QKV weight is stored head by head ([heads][q,k,v][head_dim]
/// rows), so that a contiguous split of its rows gives each tp rank whole
/// heads with their q, k and v.
using FullParams = std::map<std::string, Tensor>;

/// Parameters from c.seed, in double precision.
FullParams init_params(const Config& c);

// ---- modules (model.cpp) ---------------------------------------------------

/// LayerNorm under sequence parallelism: the weight and bias are whole on
/// every tp rank but applied to different tokens, so they are R on tp (their
/// gradients are partial sums over tp, reduced in the optimizer step).
class LayerNormImpl : public torch::nn::Module {
 public:
  LayerNormImpl(const FullParams& p, const std::string& name, bool bias);
  SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
  Tensor forward(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) const Tensor& x);

  SPMD_TYPE(dp = R, tp = R) Tensor weight;
  SPMD_TYPE(dp = R, tp = R) c10::optional<Tensor> bias;
};
TORCH_MODULE(LayerNorm);

/// y = x A^T + b with A split by output rows (S(0)): this rank's slice of
/// the output features.
class ColumnParallelLinearImpl : public torch::nn::Module {
 public:
  ColumnParallelLinearImpl(const FullParams& p, const std::string& name,
                           bool bias, const Shard& s);
  SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(3))
  Tensor forward(SPMD_TYPE(dp = V, tp = R, spmd::rank(3)) const Tensor& x);

  SPMD_TYPE(dp = R, tp = S(0)) Tensor weight;
  SPMD_TYPE(dp = R, tp = S(0)) c10::optional<Tensor> bias;
};
TORCH_MODULE(ColumnParallelLinear);

/// y = x A^T + b with A split by input columns (S(1)); the partial products
/// are reduce-scattered onto the sequence shards, then the bias is added
/// (once, after the reduction).
class RowParallelLinearImpl : public torch::nn::Module {
 public:
  RowParallelLinearImpl(const FullParams& p, const std::string& name, bool bias,
                        const Shard& s);
  SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
  Tensor forward(SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(3)) const Tensor& x);

  SPMD_TYPE(dp = R, tp = S(1)) Tensor weight;
  SPMD_TYPE(dp = R, tp = R, spmd::rank(1)) c10::optional<Tensor> bias;
};
TORCH_MODULE(RowParallelLinear);

/// Causal self-attention; each tp rank computes heads/tp heads.
class AttentionImpl : public torch::nn::Module {
 public:
  AttentionImpl(const FullParams& p, const std::string& prefix, const Config& c,
                const Shard& s);
  SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
  Tensor forward(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) const Tensor& x);

  LayerNorm norm{nullptr};
  ColumnParallelLinear qkv{nullptr};  ///< fused q, k, v of this rank's heads
  RowParallelLinear out{nullptr};
  int64_t local_heads, head_dim;
};
TORCH_MODULE(Attention);

/// The MLP: column-parallel, GeLU, row-parallel.
class MlpImpl : public torch::nn::Module {
 public:
  MlpImpl(const FullParams& p, const std::string& prefix, const Config& c,
          const Shard& s);
  SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
  Tensor forward(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) const Tensor& x);

  LayerNorm norm{nullptr};
  ColumnParallelLinear fc1{nullptr};
#if GPT_BUG_IS(wrong_layer_kind)
  ColumnParallelLinear fc2{nullptr};  // BUG(wrong_layer_kind)
#else
  RowParallelLinear fc2{nullptr};
#endif
};
TORCH_MODULE(Mlp);

/// Token embedding split by vocabulary rows (S(0)) plus learned positions.
class EmbeddingImpl : public torch::nn::Module {
 public:
  EmbeddingImpl(const FullParams& p, const Config& c, const Shard& s);
  SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
  Tensor forward(SPMD_TYPE(dp = V, tp = R, spmd::rank(2)) const Tensor& tokens);

  SPMD_TYPE(dp = R, tp = S(0)) Tensor weight;  ///< [vocab/tp, hidden]
  SPMD_TYPE(dp = R, tp = R, spmd::rank(2)) Tensor position;  ///< [seq, hidden]
  int64_t vocab_start, vocab_end, seq_start, seq_local;
};
TORCH_MODULE(Embedding);

/// The whole model: embedding, blocks, final norm, vocab-parallel LM head
/// and cross-entropy.
class GPTImpl : public torch::nn::Module {
 public:
  GPTImpl(const FullParams& p, const Config& c, const Shard& s);

  /// Mean next-token cross-entropy over the global batch: each dp rank's
  /// share of the sum (P on dp), one value on every tp rank (I).
  /// tokens, targets: [seq, batch/dp] byte ids.
  SPMD_TYPE(dp = P, tp = I)
  Tensor forward(SPMD_TYPE(dp = V, tp = R, spmd::rank(2)) const Tensor& tokens,
                 SPMD_TYPE(dp = V, tp = R, spmd::rank(2)) const Tensor& targets,
                 double global_tokens);

  /// The parameters whose every element lives on every tp rank (norms,
  /// positions, the row-parallel biases): R on dp and on tp.
  SPMD_TYPE(dp = R, tp = R) std::vector<Tensor> replicated_parameters();
  /// The parameters split over tp (any shard dim): R on dp, V on tp.
  SPMD_TYPE(dp = R, tp = V) std::vector<Tensor> sharded_parameters();

  Embedding embed{nullptr};
  std::vector<Attention> attention;
  std::vector<Mlp> mlp;
  LayerNorm final_norm{nullptr};
  SPMD_TYPE(dp = R, tp = S(0)) Tensor head;  ///< LM head [vocab/tp, hidden]
  int64_t vocab_start, vocab_end;
};
TORCH_MODULE(GPT);

/// Per-token loss of logits split over the vocabulary (S(-1)), without ever
/// gathering them: max, sum of exponentials and the target's logit are
/// reduced over tp. Returns [seq, batch/dp], one value on every tp rank.
SPMD_TYPE(dp = V, tp = I, spmd::rank(2))
Tensor vocab_parallel_cross_entropy(SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(3))
                                        const Tensor& logits,
                                    SPMD_TYPE(dp = V, tp = R, spmd::rank(2))
                                        const Tensor& targets,
                                    int64_t vocab_start, int64_t vocab_end);

/// One optimizer step after backward: reduces the gradients (tp for the
/// replicated parameters, dp for all), clips them by the global norm and
/// applies AdamW. Returns the global gradient norm before clipping.
SPMD_TYPE(dp = R, tp = R)
Tensor optimizer_step(GPT& model, torch::optim::AdamW& adamw, double max_norm);

// ---- data and the one-device program (data.cpp) ---------------------------

/// Byte-level text, split into a training and a held-out validation part.
struct Corpus {
  std::string source;  ///< the file it came from
  Tensor train, val;   ///< int64 byte ids
};

/// Reads `path` (default: the GPL-3 text of Debian's base-files package).
/// The last tenth is the validation part.
Corpus load_corpus(const std::string& path);

/// The default corpus path.
std::string default_corpus_path();

/// A batch of the whole mesh: [seq, batch] inputs and next-byte targets.
struct Batch {
  Tensor tokens, targets;
};

/// Training batch of `step` (random windows from the seed), or validation
/// batch `index` (fixed evenly spaced windows).
Batch train_batch(const Corpus& corpus, const Config& c, int step);
Batch val_batch(const Corpus& corpus, const Config& c, int64_t index);

/// This dp rank's part of a batch (a slice of the batch dim).
Batch local_batch(const Batch& b, const Shard& s);

/// AdamW options of the experiment.
torch::optim::AdamWOptions adamw_options(const Config& c);

/// The one-device program: the same model on whole tensors.
class Reference {
 public:
  Reference(const FullParams& p, const Config& c);
  /// Forward, backward, clipping, AdamW; returns the loss.
  double train_step(const Batch& b);
  /// Loss without gradients.
  double eval_loss(const Batch& b);
  double last_grad_norm = 0;
  FullParams params;

 private:
  Tensor loss(const Batch& b);
  Config c_;
  std::unique_ptr<torch::optim::AdamW> adamw_;
};

/// The tp shard dim of parameter `name` (-1: whole on every rank).
int64_t shard_dim(const std::string& name);

/// This rank's piece of a full parameter.
Tensor local_param(const FullParams& p, const std::string& name,
                   const Shard& s);

/// One rank's model and optimizer, and one training step on it.
class Trainer {
 public:
  Trainer(const FullParams& p, const Config& c, const Shard& s);
  /// Forward, backward and optimizer step on this rank's part of a batch.
  /// Returns the loss (P on dp: this dp rank's share; I on tp); the global
  /// gradient norm before clipping goes to `grad_norm` (R on dp and tp).
  Tensor train_step(const Batch& local, Tensor* grad_norm);
  /// The loss without gradients (same types as train_step's).
  Tensor eval_loss(const Batch& local);
  /// Under the runtime checker: states the types of the parameters (as the
  /// layers declare them) and of a batch (V on dp, R on tp).
  void assert_types(const Batch& local);

  Config config;
  Shard shard;
  GPT model{nullptr};
  std::unique_ptr<torch::optim::AdamW> adamw;
};

}  // namespace gpt

#endif  // SPMD_EXAMPLES_GPT_GPT_H
