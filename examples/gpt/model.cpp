// model.cpp - the GPT's modules, its vocab-parallel loss and the optimizer
// step, annotated with SPMD types and compiled through the spmd-check plugin
// in strict global mode (0 diagnostics is part of the
// build). The "// BUG" lines are the mistakes of bugs.h; docs/walkthrough.md
// explains every annotation.
#include <ATen/ATen.h>
#include <spmd/checker.h>

#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>

#include "gpt.h"

namespace gpt {

// The runtime bug switch (bugs.h); read by GPT_BUG_ON in a build with
// GPT_BUGS_AT_RUNTIME. Set before the ranks start, read-only afterwards.
namespace {
int g_active_bug = GPT_BUG_none;
}
int active_bug() { return g_active_bug; }
void set_active_bug(int bug) {
#if !defined(GPT_BUGS_AT_RUNTIME)
  if (bug != GPT_BUG_none)
    throw std::invalid_argument(
        "this build of the GPT has its bugs compiled out; link the object "
        "built with -DGPT_BUGS_AT_RUNTIME (gpt_model_bugs)");
#endif
  g_active_bug = bug;
}
int bug_by_name(const char* name) {
  static const std::map<std::string, int> names = {
      {"none", GPT_BUG_none},
      {"missing_copy_to_tp", GPT_BUG_missing_copy_to_tp},
      {"double_reduce", GPT_BUG_double_reduce},
      {"bias_before_reduce", GPT_BUG_bias_before_reduce},
      {"unsynced_norm_grads", GPT_BUG_unsynced_norm_grads},
      {"ce_sharded_vocab", GPT_BUG_ce_sharded_vocab},
      {"gather_wrong_dim", GPT_BUG_gather_wrong_dim},
      {"missing_dp_reduce", GPT_BUG_missing_dp_reduce},
      {"grad_norm_tp_times", GPT_BUG_grad_norm_tp_times},
      {"embedding_not_reduced", GPT_BUG_embedding_not_reduced},
      {"embedding_not_masked", GPT_BUG_embedding_not_masked},
  };
  auto it = names.find(name);
  return it == names.end() ? -1 : it->second;
}

// ---- construction (untyped plumbing: the shards come from FullParams) ----

int64_t shard_dim(const std::string& name) {
  auto ends = [&](const char* s) {
    std::string t(s);
    return name.size() >= t.size() &&
           name.compare(name.size() - t.size(), t.size(), t) == 0;
  };
  if (name == "embed.weight" || name == "head") return 0;
  if (ends("qkv.weight") || ends("qkv.bias") || ends("fc1.weight") ||
      ends("fc1.bias"))
    return 0;
  if (ends("out.weight") || ends("fc2.weight")) return 1;
  return -1;
}

Tensor local_param(const FullParams& p, const std::string& name,
                   const Shard& s) {
  const Tensor& full = p.at(name);
  const int64_t dim = shard_dim(name);
  Tensor mine = dim < 0 ? full : full.chunk(s.tp_size, dim)[s.tp_rank];
  return mine.clone().contiguous();
}

LayerNormImpl::LayerNormImpl(const FullParams& p, const std::string& name,
                             bool with_bias) {
  Shard whole;
  weight =
      register_parameter("weight", local_param(p, name + ".weight", whole));
  if (with_bias)
    bias = register_parameter("bias", local_param(p, name + ".bias", whole));
}

ColumnParallelLinearImpl::ColumnParallelLinearImpl(const FullParams& p,
                                                   const std::string& name,
                                                   bool with_bias,
                                                   const Shard& s) {
  weight = register_parameter("weight", local_param(p, name + ".weight", s));
  if (with_bias)
    bias = register_parameter("bias", local_param(p, name + ".bias", s));
}

RowParallelLinearImpl::RowParallelLinearImpl(const FullParams& p,
                                             const std::string& name,
                                             bool with_bias, const Shard& s) {
  weight = register_parameter("weight", local_param(p, name + ".weight", s));
  if (with_bias)
    bias = register_parameter("bias", local_param(p, name + ".bias", s));
}

AttentionImpl::AttentionImpl(const FullParams& p, const std::string& prefix,
                             const Config& c, const Shard& s)
    : local_heads(c.heads / s.tp_size), head_dim(c.head_dim()) {
  norm = register_module("norm", LayerNorm(p, prefix + "norm", c.bias));
  qkv = register_module("qkv",
                        ColumnParallelLinear(p, prefix + "qkv", c.bias, s));
  out = register_module("out", RowParallelLinear(p, prefix + "out", c.bias, s));
}

MlpImpl::MlpImpl(const FullParams& p, const std::string& prefix,
                 const Config& c, const Shard& s) {
  norm = register_module("norm", LayerNorm(p, prefix + "norm", c.bias));
  fc1 = register_module("fc1",
                        ColumnParallelLinear(p, prefix + "fc1", c.bias, s));
#if GPT_BUG_IS(wrong_layer_kind)
  fc2 = register_module("fc2",
                        ColumnParallelLinear(p, prefix + "fc2", c.bias, s));
#else
  fc2 = register_module("fc2", RowParallelLinear(p, prefix + "fc2", c.bias, s));
#endif
}

EmbeddingImpl::EmbeddingImpl(const FullParams& p, const Config& c,
                             const Shard& s) {
  weight = register_parameter("weight", local_param(p, "embed.weight", s));
  position =
      register_parameter("position", local_param(p, "embed.position", {}));
  vocab_start = c.vocab / s.tp_size * s.tp_rank;
  vocab_end = vocab_start + c.vocab / s.tp_size;
  seq_local = c.seq / s.tp_size;
  seq_start = seq_local * s.tp_rank;
}

GPTImpl::GPTImpl(const FullParams& p, const Config& c, const Shard& s) {
  embed = register_module("embed", Embedding(p, c, s));
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string layer = "layer" + std::to_string(l);
    attention.push_back(register_module(
        layer + "_attention", Attention(p, layer + "_attention.", c, s)));
    mlp.push_back(
        register_module(layer + "_mlp", Mlp(p, layer + "_mlp.", c, s)));
  }
  final_norm =
      register_module("final_norm", LayerNorm(p, "final_norm", c.bias));
  head = register_parameter("head", local_param(p, "head", s));
  vocab_start = c.vocab / s.tp_size * s.tp_rank;
  vocab_end = vocab_start + c.vocab / s.tp_size;
}

// ---- layers -----------------------------------------------------------------

// Pre-norm on this rank's tokens. The result keeps x's layout: each tp rank
// normalises its own slice of the sequence.
SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
Tensor LayerNormImpl::forward(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
                                  const Tensor& x) {
  return at::layer_norm(x, {x.size(-1)}, weight, bias);
}

// x is the whole sequence, R on tp: every tp rank multiplies it with its own
// rows of the weight, so its gradient is a partial sum (the all_gather that
// made it R reduce-scatters that sum in backward).
SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(3))
Tensor ColumnParallelLinearImpl::forward(SPMD_TYPE(dp = V, tp = R,
                                                   spmd::rank(3))
                                             const Tensor& x) {
  return at::linear(x, weight, bias);
}

// linear(S(-1), S(1)) contracts the sharded dim: in global mode the checker
// knows the product is a pending sum P without a hand-written reinterpret.
SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
Tensor RowParallelLinearImpl::forward(SPMD_TYPE(dp = V, tp = S(-1),
                                                spmd::rank(3))
                                          const Tensor& x) {
  if (GPT_BUG_ON(bias_before_reduce)) {
    auto y = at::linear(x, weight, bias);  // BUG(bias_before_reduce)
    return spmd::reduce_scatter(y, tp, P, S(0));
  }
  auto y = at::linear(x, weight);  // {dp: V, tp: P}
  // Sum the tp ranks' terms and keep this rank's tokens (Megatron's
  // reduce-scatter to the sequence-parallel region); backward all-gathers.
  Tensor z;
  if (GPT_BUG_ON(double_reduce)) {
    auto summed = spmd::all_reduce(y, tp, P, I);
    z = spmd::reduce_scatter(summed, tp, P, S(0));  // BUG(double_reduce)
  } else {
    z = spmd::reduce_scatter(y, tp, P, S(0));  // {dp: V, tp: S(0)}
  }
  // The bias is added once, after the reduction: R on tp, like the norms.
  if (bias) return z + *bias;
  return z;
}

SPMD_MESH(dp, tp)
SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
Tensor AttentionImpl::forward(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
                                  const Tensor& x) {
  auto h = norm(x);  // {dp: V, tp: S(0)}
  // Gather the sequence from the sequence-parallel region: every tp rank
  // needs every token for its heads, and uses them differently (dst R);
  // backward reduce-scatters the gradient onto the sequence shards.
  Tensor h_full;
  if (GPT_BUG_ON(missing_copy_to_tp))
    h_full = spmd::all_gather(h, tp, S(0), I);  // BUG(missing_copy_to_tp)
  else if (GPT_BUG_ON(gather_wrong_dim))
    h_full = spmd::all_gather(h, tp, S(1), R);  // BUG(gather_wrong_dim)
  else
    h_full = spmd::all_gather(h, tp, S(0), R);  // {dp: V, tp: R}
  const int64_t s = h_full.size(0), b = h_full.size(1);

  // The fused projection gives this rank's heads, each [q | k | v]. A view
  // loses the shard dim (ranks are tracked, sizes are not): the heads, split
  // out of the features, are this rank's slice, S(2). The chunk is on dim 3,
  // which tp does not shard; permute moves the shard (S(1) of q, k, v).
  auto qkv_local = spmd::assert_type(
      qkv(h_full).view({s, b, local_heads, 3 * head_dim}), {dp = V, tp = S(2)});
  auto parts = qkv_local.chunk(3, -1);      // each [s, b, heads/tp, head_dim]
  auto q = parts[0].permute({1, 2, 0, 3});  // [b, heads/tp, s, head_dim]
  auto k = parts[1].permute({1, 2, 0, 3});
  auto v = parts[2].permute({1, 2, 0, 3});

  // Causal softmax over whole sequences: the heads are split, the keys are
  // not, so softmax needs no communication. The mask's declaration gives
  // its types (a factory outside an [[spmd::mesh]] function is unknown);
  // triu keeps the rank of its [s, s] shape (core's triangle rule).
  auto scores =
      at::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(head_dim));
  SPMD_TYPE(dp = R, tp = R, spmd::rank(2))
  Tensor future = at::ones({s, s}, h_full.options().dtype(at::kBool)).triu(1);
  scores = scores.masked_fill(future, -std::numeric_limits<double>::infinity());
  auto mixed = at::matmul(at::softmax(scores, -1), v);  // [b, heads/tp, s, hd]

  // Back to [s, b, heads/tp * head_dim]: this rank's slice of the features
  // (the reshape loses the dim again; assert_type restates it).
  auto o = mixed.permute({2, 0, 1, 3}).reshape({s, b, local_heads * head_dim});
  auto o_typed = spmd::assert_type(o, {dp = V, tp = S(-1)});
  return x + out(o_typed);  // residual on the sequence shard
}

SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
Tensor MlpImpl::forward(SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
                            const Tensor& x) {
  auto h = spmd::all_gather(norm(x), tp, S(0), R);  // {dp: V, tp: R}
  auto a = at::gelu(fc1(h));                        // this rank's ffn slice
  auto a_typed = spmd::assert_type(a, {dp = V, tp = S(-1)});
  return x + fc2(a_typed);  // where BUG(wrong_layer_kind) of gpt.h is caught
}

// Vocab-parallel lookup: this rank holds rows [vocab_start, vocab_end).
// Other tokens look up row 0 and are zeroed, so that the sum over tp picks
// the owner's row; the sum is reduce-scattered onto the sequence shards.
SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3))
Tensor EmbeddingImpl::forward(SPMD_TYPE(dp = V, tp = R, spmd::rank(2))
                                  const Tensor& tokens) {
  auto outside = tokens.lt(vocab_start) | tokens.ge(vocab_end);
  auto local_ids = (tokens - vocab_start).masked_fill(outside, 0);
  auto rows = at::embedding(weight, local_ids);
  if (!GPT_BUG_ON(embedding_not_masked))  // BUG(embedding_not_masked): no mask
    rows = rows.masked_fill(outside.unsqueeze(-1), 0.0);
  // One owner per token: the zeroed rows are a pending sum, P (global mode
  // types them so: no reinterpret). Without the fill the plugin knows the
  // rows are unmasked and rejects their reduce_scatter.
  auto partial = rows;
  SPMD_TYPE(dp = V, tp = S(0), spmd::rank(3)) Tensor x;
  if (GPT_BUG_ON(embedding_not_reduced))
    x = partial.narrow(0, seq_start, seq_local);  // BUG(embedding_not_reduced)
  else
    x = spmd::reduce_scatter(partial, tp, P,  // BUG(embedding_not_masked)
                             S(0));           // [seq/tp, b, hidden]
  // Positions of this rank's tokens: this rank's chunk of the R table
  // (convert R -> S(0) slices, no communication; its backward zero-pads, so
  // the gradient of `position` is a partial sum over tp, summed in the
  // optimizer step).
  return x + spmd::convert(position, tp, R, S(0)).unsqueeze(1);
}

// Each rank's max over its own slice of the vocabulary (keepdim): one entry
// of the vocab dim per rank, to be gathered. A per-rank reduction over the
// shard itself is a local operation, so a local region: in global mode
// max(-1) of the S(-1) logits is a max over the whole sharded dim, which the
// per-rank results cannot give (docs/plugin.md, "Annotating an existing
// engine").
SPMD_LOCAL
SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(3))
static Tensor local_vocab_max(SPMD_TYPE(dp = V, tp = S(-1))
                                  const Tensor& logits) {
  return std::get<0>(logits.max(-1, /*keepdim=*/true)).detach();
}

// The logit of each token's target in this rank's slice of the vocabulary
// (local_ids: the target's index in the slice, 0 where another rank holds
// it). Indices into the local slice are a per-rank operation: a local
// region, whose result differs per rank (V, no shard dim).
SPMD_LOCAL
SPMD_TYPE(dp = V, tp = V, spmd::rank(2))
static Tensor local_target_logit(SPMD_TYPE(dp = V, tp = S(-1))
                                     const Tensor& logits,
                                 SPMD_TYPE(dp = V, tp = R)
                                     const Tensor& local_ids) {
  return logits.gather(-1, local_ids.unsqueeze(-1)).squeeze(-1);
}

SPMD_TYPE(dp = V, tp = I, spmd::rank(2))
Tensor vocab_parallel_cross_entropy(SPMD_TYPE(dp = V, tp = S(-1), spmd::rank(3))
                                        const Tensor& logits,
                                    SPMD_TYPE(dp = V, tp = R, spmd::rank(2))
                                        const Tensor& targets,
                                    int64_t vocab_start, int64_t vocab_end) {
  auto not_here = targets.lt(vocab_start) | targets.ge(vocab_end);
  auto local_targets = (targets - vocab_start).masked_fill(not_here, 0);
  if (GPT_BUG_ON(ce_sharded_vocab)) {
    // log_softmax over this rank's slice of the vocabulary only.
    auto logp = at::log_softmax(logits, -1);  // BUG(ce_sharded_vocab)
    auto target_ids = local_targets.unsqueeze(-1);
    return -logp.gather(-1, target_ids).squeeze(-1);  // BUG(ce_sharded_vocab)
  }
  // Subtract the global max for stability (a constant: no gradient).
  // Each rank's max over its slice: one entry of the vocab dim per rank.
  auto local_max = local_vocab_max(logits);
  auto all_max = spmd::all_gather(local_max, tp, S(-1), R);
  auto global_max = std::get<0>(all_max.max(-1, /*keepdim=*/true));
  auto shifted = logits - global_max;  // the max (keepdim) broadcasts: S(-1)
  // The denominator: exponentials summed over every rank's slice. A sum over
  // the sharded dim is a pending sum P in global mode (no reinterpret).
  auto sum_exp = spmd::all_reduce(shifted.exp().sum(-1), tp, P, I);
  // The target's logit, found on exactly one rank.
  auto picked = local_target_logit(shifted, local_targets);
  picked = picked.masked_fill(not_here, 0.0);
  auto target_logit =
      spmd::all_reduce(spmd::reinterpret(picked, tp, V, P), tp, P, I);
  return sum_exp.log() - target_logit;
}

SPMD_TYPE(dp = P, tp = I)
Tensor GPTImpl::forward(SPMD_TYPE(dp = V, tp = R, spmd::rank(2))
                            const Tensor& tokens,
                        SPMD_TYPE(dp = V, tp = R, spmd::rank(2))
                            const Tensor& targets,
                        double global_tokens) {
  auto x = embed(tokens);  // {dp: V, tp: S(0)}
  for (size_t l = 0; l < attention.size(); ++l) {
    x = attention[l](x);
    x = mlp[l](x);
  }
  auto h = spmd::all_gather(final_norm(x), tp, S(0), R);  // whole sequence
  auto logits = at::linear(h, head);  // [seq, b, vocab/tp]: S(-1)
  auto per_token =
      vocab_parallel_cross_entropy(logits, targets, vocab_start, vocab_end);
  // Divided by the global token count, the dp ranks' sums add up to the mean.
  // A sum over every dim of the dp-sharded losses is a pending sum over dp:
  // P in global mode by inference (the full-reduction rule, whichever dim dp
  // shards), and the assert_type says so; the runtime checker types the GPT
  // in local mode, where the sum is V and assert_type's V -> P (spec §8.1)
  // declares the pending sum, as a reinterpret would.
  return spmd::assert_type(per_token.sum() / global_tokens, {dp = P});
}

// The two parameter groups, as the annotations of the layers declare them.
// Only lists: the bodies are not analysed (their elements' types differ in
// the shard dim, which a container does not keep); the grouping itself is
// tested (every parameter in exactly one group, test/examples).
SPMD_UNCHECKED
std::vector<Tensor> GPTImpl::replicated_parameters() {
  std::vector<Tensor> out{embed->position, final_norm->weight};
  if (final_norm->bias) out.push_back(*final_norm->bias);
  for (size_t l = 0; l < attention.size(); ++l) {
    for (const LayerNorm& n : {attention[l]->norm, mlp[l]->norm}) {
      out.push_back(n->weight);
      if (n->bias) out.push_back(*n->bias);
    }
    if (attention[l]->out->bias) out.push_back(*attention[l]->out->bias);
#if !GPT_BUG_IS(wrong_layer_kind)
    if (mlp[l]->fc2->bias) out.push_back(*mlp[l]->fc2->bias);
#endif
  }
  return out;
}

SPMD_UNCHECKED
std::vector<Tensor> GPTImpl::sharded_parameters() {
  std::vector<Tensor> out{embed->weight, head};
  for (size_t l = 0; l < attention.size(); ++l) {
    out.push_back(attention[l]->qkv->weight);
    if (attention[l]->qkv->bias) out.push_back(*attention[l]->qkv->bias);
    out.push_back(attention[l]->out->weight);
    out.push_back(mlp[l]->fc1->weight);
    if (mlp[l]->fc1->bias) out.push_back(*mlp[l]->fc1->bias);
    out.push_back(mlp[l]->fc2->weight);
#if GPT_BUG_IS(wrong_layer_kind)
    if (mlp[l]->fc2->bias) out.push_back(*mlp[l]->fc2->bias);
#endif
  }
  return out;
}

static Tensor grad_of(const Tensor& param) {
  const Tensor& g = param.grad();
  return g.defined() ? g : at::zeros_like(param);
}

// ---- the optimizer step -----------------------------------------------------

SPMD_MESH(dp, tp)
SPMD_TYPE(dp = R, tp = R)
Tensor optimizer_step(GPT& model, torch::optim::AdamW& adamw, double max_norm) {
  at::NoGradGuard no_grad;
  SPMD_TYPE(dp = R, tp = R)
  std::vector<Tensor> replicated = model->replicated_parameters();
  SPMD_TYPE(dp = R, tp = V)
  std::vector<Tensor> sharded = model->sharded_parameters();
  // Squared gradient norms, per group.
  auto sq_replicated = at::zeros({}, at::kDouble);  // {dp: R, tp: R}
  // The shards' squares are summed over tp (each element lives on one rank):
  // a pending sum, from zero (convert keeps the value).
  auto sq_sharded =
      spmd::convert(at::zeros({}, at::kDouble), tp, R, P);  // {dp: R, tp: P}

  // A parameter replicated on tp under sequence parallelism was applied to
  // this rank's tokens only: its gradient is a partial sum on tp as on dp
  // (spec §2.1: the backward type of R is P). Both sums are needed.
  for (Tensor& p : replicated) {
    auto g = spmd::assert_type(grad_of(p), {dp = P, tp = P});
    SPMD_TYPE(dp = R, tp = R) Tensor d;
    if (GPT_BUG_ON(unsynced_norm_grads))
      d = spmd::all_reduce(g, dp, P, R);  // BUG(unsynced_norm_grads)
    else
      d = spmd::all_reduce(spmd::all_reduce(g, tp, P, R), dp, P, R);
    p.mutable_grad() = d;
    sq_replicated += d.pow(2).sum();
  }
  // A tp-sharded parameter's gradient is this rank's own slice (V on tp),
  // still a partial sum over dp.
  for (Tensor& p : sharded) {
    auto g = spmd::assert_type(grad_of(p), {dp = P, tp = V});
    SPMD_TYPE(dp = R, tp = V) Tensor d;
    if (GPT_BUG_ON(missing_dp_reduce))
      d = g;  // BUG(missing_dp_reduce)
    else
      d = spmd::all_reduce(g, dp, P, R);
    p.mutable_grad() = d;
    // The sum over every dim of a tp shard: P on tp in global mode (the
    // full-reduction rule; the shard dim differs per parameter and is not
    // known here); in local mode (the runtime checker) V, which assert_type
    // declares P.
    sq_sharded += spmd::assert_type(d.pow(2).sum(), {tp = P});
  }

  // The global norm: the shards' squares summed over tp, the replicated ones
  // counted once.
  Tensor total;
  if (GPT_BUG_ON(grad_norm_tp_times)) {
    auto all_terms = sq_sharded + sq_replicated;  // BUG(grad_norm_tp_times)
    total = spmd::all_reduce(all_terms, tp, P, R);
  } else {
    total = spmd::all_reduce(sq_sharded, tp, P, R) + sq_replicated;
  }
  auto norm = total.sqrt();  // {dp: R, tp: R}
  // torch.nn.utils.clip_grad_norm_: scale by max_norm / (norm + 1e-6), at
  // most 1.
  auto scale = (max_norm / (norm + 1e-6)).clamp_max(1.0);
  for (Tensor& p : replicated) {
    auto d = spmd::assert_type(p.grad(), {dp = R, tp = R});
    d.mul_(scale);
  }
  for (Tensor& p : sharded) {
    auto d = spmd::assert_type(p.grad(), {dp = R, tp = V});
    d.mul_(scale);
  }
  // AdamW is elementwise on the reduced, clipped gradients: every replica
  // takes the same step. Its moment buffers are not typed, so the runtime
  // checker (if on) is paused for it.
  {
    spmd::checker::NoTypecheckGuard untyped;
    adamw.step();
  }
  return norm;
}

}  // namespace gpt
