// raw_c10d.cpp - the GPT of examples/gpt written by hand on raw c10d process
// groups: the same parameters, data, layout (dp x tp with sequence
// parallelism) and collectives as the typed model, but with hand-written
// autograd functions and no spmd layer in the training path (no types, no
// collective dispatch, no runtime checks). The process groups come from
// spmd::DeviceMesh (set-up only), so both programs talk over the same Gloo
// groups. Prints tokens/s of the training steps and the last loss, which
// must equal the typed program's (scripts/bench.sh compares both).
//
//   run_ranks.sh --nproc 4 -- build/bin/gpt_raw_c10d --tp 2 --steps 20
#include <ATen/ATen.h>
#include <spmd/mesh.h>
#include <spmd/process_groups.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/nn/utils/clip_grad.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

#include "gpt.h"

namespace {

using at::Tensor;
using c10d::ProcessGroup;
using PG = c10::intrusive_ptr<ProcessGroup>;

void wait(const c10::intrusive_ptr<c10d::Work>& w) { w->wait(); }

Tensor all_reduce_sum(const Tensor& x, const PG& pg) {
  std::vector<Tensor> v{x.clone(at::MemoryFormat::Contiguous)};
  if (pg->getSize() > 1) wait(pg->allreduce(v));
  return v[0];
}

// Concatenation of every rank's x along dim 0.
Tensor gather_dim0(const Tensor& x, const PG& pg) {
  const int64_t n = pg->getSize();
  Tensor in = x.contiguous();
  std::vector<int64_t> shape = in.sizes().vec();
  shape.insert(shape.begin(), n);
  Tensor out = at::empty(shape, in.options());
  std::vector<std::vector<Tensor>> outs{out.unbind(0)};
  std::vector<Tensor> ins{in};
  if (n > 1)
    wait(pg->allgather(outs, ins));
  else
    out[0].copy_(in);
  return out.flatten(0, 1);
}

// This rank's dim-0 chunk of the sum over ranks (all_to_all + local sum,
// what Gloo offers for an uneven-capable reduce-scatter).
Tensor reduce_scatter_dim0(const Tensor& x, const PG& pg) {
  const int64_t n = pg->getSize();
  Tensor in = x.contiguous();
  if (n == 1) return in.clone();
  const int64_t piece = in.numel() / n;
  Tensor out = at::empty({n * piece}, in.options());
  std::vector<int64_t> splits(n, piece);
  Tensor flat = in.view({-1});
  wait(pg->alltoall_base(out, flat, splits, splits));
  std::vector<int64_t> shape = in.sizes().vec();
  shape[0] /= n;
  return out.view({n, piece}).sum(0).view(shape);
}

// The sequence-parallel pair: gather forward / reduce-scatter backward, and
// its dual.
struct GatherSeq : torch::autograd::Function<GatherSeq> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, Tensor x,
                        PG pg) {
    ctx->saved_data["pg"] = c10::IValue(pg);
    return gather_dim0(x, pg);
  }
  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx, torch::autograd::variable_list g) {
    auto pg = ctx->saved_data["pg"].toCustomClass<ProcessGroup>();
    return {reduce_scatter_dim0(g[0], pg), Tensor()};
  }
};
struct ScatterSeq : torch::autograd::Function<ScatterSeq> {
  static Tensor forward(torch::autograd::AutogradContext* ctx, Tensor x,
                        PG pg) {
    ctx->saved_data["pg"] = c10::IValue(pg);
    return reduce_scatter_dim0(x, pg);
  }
  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx, torch::autograd::variable_list g) {
    auto pg = ctx->saved_data["pg"].toCustomClass<ProcessGroup>();
    return {gather_dim0(g[0], pg), Tensor()};
  }
};
// Sum of partial results whose consumers are duplicated: backward identity.
struct ReduceFromTp : torch::autograd::Function<ReduceFromTp> {
  static Tensor forward(torch::autograd::AutogradContext*, Tensor x, PG pg) {
    return all_reduce_sum(x, pg);
  }
  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext*, torch::autograd::variable_list g) {
    return {g[0], Tensor()};
  }
};

struct Model {
  gpt::Config c;
  gpt::Shard s;
  PG tp_pg, dp_pg;
  std::map<std::string, Tensor> p;  // this rank's pieces, leaves
  std::unique_ptr<torch::optim::AdamW> adamw;

  c10::optional<Tensor> opt(const std::string& name) {
    auto it = p.find(name);
    if (it == p.end()) return c10::nullopt;
    return it->second;
  }
  Tensor ln(const Tensor& x, const std::string& name) {
    return at::layer_norm(x, {c.hidden}, p.at(name + ".weight"),
                          opt(name + ".bias"));
  }
  // Row-parallel: partial product, reduce-scatter, then the bias.
  Tensor row(const Tensor& x, const std::string& name) {
    Tensor z = ScatterSeq::apply(at::linear(x, p.at(name + ".weight")), tp_pg);
    auto b = opt(name + ".bias");
    return b ? z + *b : z;
  }

  Tensor loss(const gpt::Batch& b) {
    const int64_t vocab_local = c.vocab / s.tp_size;
    const int64_t v0 = vocab_local * s.tp_rank, v1 = v0 + vocab_local;
    const int64_t seq_local = c.seq / s.tp_size;
    const int64_t hd = c.head_dim(), heads = c.heads / s.tp_size;
    // Vocab-parallel embedding, masked and reduce-scattered onto the sequence.
    Tensor outside = b.tokens.lt(v0) | b.tokens.ge(v1);
    Tensor rows = at::embedding(p.at("embed.weight"),
                                (b.tokens - v0).masked_fill(outside, 0))
                      .masked_fill(outside.unsqueeze(-1), 0.0);
    Tensor x = ScatterSeq::apply(rows, tp_pg) +
               p.at("embed.position")
                   .narrow(0, seq_local * s.tp_rank, seq_local)
                   .unsqueeze(1);
    for (int64_t l = 0; l < c.layers; ++l) {
      const std::string att = "layer" + std::to_string(l) + "_attention.";
      const std::string mlp = "layer" + std::to_string(l) + "_mlp.";
      Tensor h = GatherSeq::apply(ln(x, att + "norm"), tp_pg);
      const int64_t sq = h.size(0), n = h.size(1);
      auto parts =
          at::linear(h, p.at(att + "qkv.weight"), opt(att + "qkv.bias"))
              .view({sq, n, heads, 3 * hd})
              .chunk(3, -1);
      Tensor q = parts[0].permute({1, 2, 0, 3});
      Tensor k = parts[1].permute({1, 2, 0, 3});
      Tensor v = parts[2].permute({1, 2, 0, 3});
      Tensor scores =
          at::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(hd));
      scores = scores.masked_fill(
          at::ones({sq, sq}, h.options().dtype(at::kBool)).triu(1), -INFINITY);
      Tensor o = at::matmul(at::softmax(scores, -1), v)
                     .permute({2, 0, 1, 3})
                     .reshape({sq, n, heads * hd});
      x = x + row(o, att + "out");
      Tensor a =
          at::gelu(at::linear(GatherSeq::apply(ln(x, mlp + "norm"), tp_pg),
                              p.at(mlp + "fc1.weight"), opt(mlp + "fc1.bias")));
      x = x + row(a, mlp + "fc2");
    }
    Tensor h = GatherSeq::apply(ln(x, "final_norm"), tp_pg);
    Tensor logits = at::linear(h, p.at("head"));
    // Vocab-parallel cross-entropy.
    Tensor local_max = std::get<0>(logits.max(-1, true)).detach();
    Tensor global_max =
        std::get<0>(gather_dim0(local_max.unsqueeze(0), tp_pg).max(0));
    Tensor shifted = logits - global_max;
    Tensor sum_exp = ReduceFromTp::apply(shifted.exp().sum(-1), tp_pg);
    Tensor not_here = b.targets.lt(v0) | b.targets.ge(v1);
    Tensor picked =
        shifted
            .gather(-1, (b.targets - v0).masked_fill(not_here, 0).unsqueeze(-1))
            .squeeze(-1)
            .masked_fill(not_here, 0.0);
    Tensor target_logit = ReduceFromTp::apply(picked, tp_pg);
    return (sum_exp.log() - target_logit).sum() / double(c.seq * c.batch);
  }

  // Not inlined, so that a profile can single it out (callgrind
  // --toggle-collect, as gpt::Trainer::train_step on the typed side). Returns
  // this rank's loss term; the caller sums it over dp, as gpt_train does
  // outside train_step.
  __attribute__((noinline)) Tensor step(const gpt::Batch& b) {
    adamw->zero_grad();
    Tensor l = loss(b);
    l.backward();
    at::NoGradGuard no_grad;
    Tensor sq_rep = at::zeros({}, at::kDouble),
           sq_shd = at::zeros({}, at::kDouble);
    for (auto& [name, t] : p) {
      Tensor g = t.grad().defined() ? t.grad() : at::zeros_like(t);
      const bool sharded = gpt::shard_dim(name) >= 0;
      if (!sharded) g = all_reduce_sum(g, tp_pg);
      g = all_reduce_sum(g, dp_pg);
      t.mutable_grad() = g;
      (sharded ? sq_shd : sq_rep) += g.pow(2).sum();
    }
    Tensor norm = (all_reduce_sum(sq_shd, tp_pg) + sq_rep).sqrt();
    Tensor scale = (c.max_norm / (norm + 1e-6)).clamp_max(1.0);
    for (auto& [name, t] : p) t.mutable_grad().mul_(scale);
    adamw->step();
    return l.detach();
  }
};

int run(int argc, char** argv) {
  gpt::Config c;
  c.tp_size = 2;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    int64_t v = std::atoll(argv[i + 1]);
    if (a == "--tp")
      c.tp_size = v;
    else if (a == "--steps")
      c.steps = int(v);
    else if (a == "--layers")
      c.layers = v;
    else if (a == "--hidden")
      c.hidden = v;
    else if (a == "--ffn")
      c.ffn = v;
    else if (a == "--seq")
      c.seq = v;
    else if (a == "--batch")
      c.batch = v;
    else {
      std::cerr << "usage: gpt_raw_c10d [--tp N] [--steps N] [--layers N] "
                   "[--hidden N] [--ffn N] [--seq N] [--batch N]\n";
      return 2;
    }
  }
  auto world = spmd::init_from_env();
  c.dp_size = world->size() / c.tp_size;
  spmd::DeviceMesh mesh(world, {{gpt::dp, c.dp_size}, {gpt::tp, c.tp_size}});
  Model m;
  m.c = c;
  m.s = gpt::Shard{mesh.axis("tp").local_rank, c.tp_size,
                   mesh.axis("dp").local_rank, c.dp_size};
  m.tp_pg = mesh.axis("tp").group;
  m.dp_pg = mesh.axis("dp").group;
  const gpt::FullParams full = gpt::init_params(c);
  std::vector<Tensor> leaves;
  for (const auto& [name, t] : full) {
    m.p[name] = gpt::local_param(full, name, m.s).requires_grad_(true);
    leaves.push_back(m.p[name]);
  }
  m.adamw =
      std::make_unique<torch::optim::AdamW>(leaves, gpt::adamw_options(c));
  const gpt::Corpus corpus = gpt::load_corpus(gpt::default_corpus_path());
  double seconds = 0, loss = 0;
  for (int step = 1; step <= c.steps; ++step) {
    gpt::Batch mine = gpt::local_batch(gpt::train_batch(corpus, c, step), m.s);
    auto t0 = std::chrono::steady_clock::now();
    loss = all_reduce_sum(m.step(mine), m.dp_pg).item<double>();
    // As gpt_train: the first step is not timed unless it is the only one.
    if (step > 1 || c.steps == 1)
      seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
  }
  if (world->rank() == 0)
    std::printf(
        "gpt_raw_c10d: dp=%lld x tp=%lld, %d steps, last loss %.6f\n"
        "  throughput: %.0f tokens/s (%d ranks, training steps after the "
        "first)\n",
        (long long)c.dp_size, (long long)c.tp_size, c.steps, loss,
        double(c.seq * c.batch) * (c.steps > 1 ? c.steps - 1 : 1) / seconds,
        int(world->size()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
