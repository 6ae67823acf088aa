// experiment.cpp - everything around the typed model (gpt.h): the
// parameters from the seed, the byte-level corpus and its batches, and the
// one-device program the parallel runs are compared with. No SPMD types
// here: this is the plain single-device code.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <torch/nn/utils/clip_grad.h>

#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "gpt.h"

namespace gpt {

FullParams init_params(const Config& c) {
  at::Generator gen = at::detail::createCPUGenerator(c.seed);
  auto f64 = at::TensorOptions().dtype(at::kDouble);
  auto normal = [&](std::vector<int64_t> shape, double std) {
    return at::randn(shape, gen, f64) * std;
  };
  const int64_t d = c.hidden;
  const double std_in = 1.0 / std::sqrt(double(d));
  FullParams p;
  p["embed.weight"] = normal({c.vocab, d}, 0.5);
  p["embed.position"] = normal({c.seq, d}, 0.1);
  auto norm = [&](const std::string& name) {
    p[name + ".weight"] = 1.0 + normal({d}, 0.05);
    if (c.bias) p[name + ".bias"] = normal({d}, 0.05);
  };
  for (int64_t l = 0; l < c.layers; ++l) {
    const std::string att = "layer" + std::to_string(l) + "_attention.";
    const std::string mlp = "layer" + std::to_string(l) + "_mlp.";
    norm(att + "norm");
    norm(mlp + "norm");
    p[att + "qkv.weight"] = normal({3 * d, d}, std_in);
    p[att + "out.weight"] = normal({d, d}, std_in / std::sqrt(2.0 * c.layers));
    p[mlp + "fc1.weight"] = normal({c.ffn, d}, std_in);
    p[mlp + "fc2.weight"] =
        normal({d, c.ffn}, 1.0 / std::sqrt(double(c.ffn) * 2 * c.layers));
    if (c.bias) {
      p[att + "qkv.bias"] = normal({3 * d}, 0.02);
      p[att + "out.bias"] = normal({d}, 0.02);
      p[mlp + "fc1.bias"] = normal({c.ffn}, 0.02);
      p[mlp + "fc2.bias"] = normal({d}, 0.02);
    }
  }
  norm("final_norm");
  p["head"] = normal({c.vocab, d}, std_in);
  return p;
}

std::string default_corpus_path() { return "/usr/share/common-licenses/GPL-3"; }

Corpus load_corpus(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::invalid_argument(
        "cannot read the corpus '" + path +
        "'; pass --data FILE (any English text; the default is the GPL-3 "
        "text of Debian's base-files package)");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  if (text.size() < 4096)
    throw std::invalid_argument("the corpus '" + path + "' has " +
                                std::to_string(text.size()) +
                                " bytes; it needs at least 4096");
  std::vector<int64_t> ids(text.begin(), text.end());
  for (int64_t& id : ids) id &= 0xff;  // bytes, not chars
  Tensor all = at::tensor(ids, at::kLong);
  const int64_t n_val = all.numel() / 10;
  Corpus c;
  c.source = path;
  c.train = all.narrow(0, 0, all.numel() - n_val).clone();
  c.val = all.narrow(0, all.numel() - n_val, n_val).clone();
  return c;
}

// Windows of seq + 1 bytes starting at `starts`: [seq, batch] inputs and
// their next bytes.
static Batch windows(const Tensor& text, const Tensor& starts, int64_t seq) {
  Tensor offsets = at::arange(seq + 1, at::kLong);
  Tensor idx = starts.unsqueeze(0) + offsets.unsqueeze(1);  // [seq+1, batch]
  Tensor w = text.index_select(0, idx.reshape({-1})).reshape(idx.sizes());
  return Batch{w.narrow(0, 0, seq).contiguous(),
               w.narrow(0, 1, seq).contiguous()};
}

Batch train_batch(const Corpus& corpus, const Config& c, int step) {
  at::Generator gen =
      at::detail::createCPUGenerator(c.seed * 7919 + uint64_t(step));
  const int64_t limit = corpus.train.numel() - c.seq - 1;
  Tensor starts = at::randint(limit, {c.batch}, gen, at::kLong);
  return windows(corpus.train, starts, c.seq);
}

Batch val_batch(const Corpus& corpus, const Config& c, int64_t index) {
  const int64_t limit = corpus.val.numel() - c.seq - 1;
  const int64_t count = c.batch * c.val_batches;
  Tensor k = at::arange(index * c.batch, (index + 1) * c.batch, at::kLong);
  return windows(corpus.val, at::div(k * limit, count, "floor"), c.seq);
}

Batch local_batch(const Batch& b, const Shard& s) {
  return Batch{b.tokens.chunk(s.dp_size, 1)[s.dp_rank].contiguous(),
               b.targets.chunk(s.dp_size, 1)[s.dp_rank].contiguous()};
}

torch::optim::AdamWOptions adamw_options(const Config& c) {
  return torch::optim::AdamWOptions(c.lr).weight_decay(c.weight_decay);
}

// ---- the one-device program ------------------------------------------------

Reference::Reference(const FullParams& p, const Config& c) : c_(c) {
  std::vector<Tensor> leaves;
  for (const auto& [name, t] : p) {
    params[name] = t.clone().contiguous().requires_grad_(true);
    leaves.push_back(params[name]);
  }
  adamw_ = std::make_unique<torch::optim::AdamW>(leaves, adamw_options(c));
}

Tensor Reference::loss(const Batch& b) {
  const int64_t s = b.tokens.size(0), n = b.tokens.size(1), d = c_.hidden;
  const int64_t hd = c_.head_dim();
  auto opt = [&](const std::string& name) -> c10::optional<Tensor> {
    auto it = params.find(name);
    if (it == params.end()) return c10::nullopt;
    return it->second;
  };
  auto ln = [&](const Tensor& x, const std::string& name) {
    return at::layer_norm(x, {d}, params.at(name + ".weight"),
                          opt(name + ".bias"));
  };
  Tensor x = at::embedding(params.at("embed.weight"), b.tokens) +
             params.at("embed.position").narrow(0, 0, s).unsqueeze(1);
  for (int64_t l = 0; l < c_.layers; ++l) {
    const std::string att = "layer" + std::to_string(l) + "_attention.";
    const std::string mlp = "layer" + std::to_string(l) + "_mlp.";
    Tensor qkv = at::linear(ln(x, att + "norm"), params.at(att + "qkv.weight"),
                            opt(att + "qkv.bias"))
                     .view({s, n, c_.heads, 3 * hd});
    auto parts = qkv.chunk(3, -1);
    Tensor q = parts[0].permute({1, 2, 0, 3});
    Tensor k = parts[1].permute({1, 2, 0, 3});
    Tensor v = parts[2].permute({1, 2, 0, 3});
    Tensor scores = at::matmul(q, k.transpose(-2, -1)) / std::sqrt(double(hd));
    Tensor future = at::ones({s, s}, at::kBool).triu(1);
    scores = scores.masked_fill(future, -INFINITY);
    Tensor o = at::matmul(at::softmax(scores, -1), v)
                   .permute({2, 0, 1, 3})
                   .reshape({s, n, d});
    x = x + at::linear(o, params.at(att + "out.weight"), opt(att + "out.bias"));
    Tensor a =
        at::gelu(at::linear(ln(x, mlp + "norm"), params.at(mlp + "fc1.weight"),
                            opt(mlp + "fc1.bias")));
    x = x + at::linear(a, params.at(mlp + "fc2.weight"), opt(mlp + "fc2.bias"));
  }
  Tensor logits = at::linear(ln(x, "final_norm"), params.at("head"));
  return at::cross_entropy_loss(logits.reshape({-1, c_.vocab}),
                                b.targets.reshape({-1}));
}

double Reference::train_step(const Batch& b) {
  adamw_->zero_grad();
  Tensor l = loss(b);
  l.backward();
  std::vector<Tensor> leaves;
  for (auto& [name, t] : params) leaves.push_back(t);
  last_grad_norm = torch::nn::utils::clip_grad_norm_(leaves, c_.max_norm);
  adamw_->step();
  return l.item<double>();
}

double Reference::eval_loss(const Batch& b) {
  at::NoGradGuard no_grad;
  return loss(b).item<double>();
}

// ---- one rank of the parallel program ------------------------------------

Trainer::Trainer(const FullParams& p, const Config& c, const Shard& s)
    : config(c), shard(s), model(p, c, s) {
  adamw = std::make_unique<torch::optim::AdamW>(model->parameters(),
                                                adamw_options(c));
}

Tensor Trainer::train_step(const Batch& local, Tensor* grad_norm) {
  adamw->zero_grad();
  const double tokens = double(config.seq * config.batch);
  Tensor loss = model->forward(local.tokens, local.targets, tokens);
  loss.backward();
  Tensor norm = optimizer_step(model, *adamw, config.max_norm);
  if (grad_norm) *grad_norm = norm;
  return loss.detach();
}

Tensor Trainer::eval_loss(const Batch& local) {
  at::NoGradGuard no_grad;
  const double tokens = double(config.seq * config.batch);
  return model->forward(local.tokens, local.targets, tokens);
}

void Trainer::assert_types(const Batch& local) {
  using namespace spmd::types;
  spmd::assert_type(local.tokens, {dp = V, tp = R});
  spmd::assert_type(local.targets, {dp = V, tp = R});
  for (const auto& item : model->named_parameters()) {
    const int64_t dim = shard_dim(item.key());
    spmd::assert_type(item.value(), {dp = R, tp = dim < 0 ? R : V});
  }
}

}  // namespace gpt
