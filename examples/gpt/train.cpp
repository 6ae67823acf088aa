// train.cpp - trains the GPT (gpt.h) on a dp x tp mesh over real process
// groups, on byte-level English text, and checks at every step that it
// computes what the one-device program computes (loss, gradient norm, and
// every parameter after the last step), within a stated tolerance.
//
//   torchrun --no_python --nproc_per_node 4 --master_addr 127.0.0.1 \
//     --master_port 29500 --redirects 1 --tee 1 build/bin/gpt_train --tp 2
//
// Exit status: 0 when the run matches the reference and the loss fell, 1
// when not, 2 on a usage error. --no-reference skips the one-device program
// (for timing: `make bench` compares tokens/s with bench/gpt/raw_c10d.cpp).
#include <ATen/ATen.h>
#include <spmd/checker.h>
#include <spmd/mesh.h>
#include <spmd/process_groups.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpt.h"

namespace gpt {
namespace {

struct Options {
  Config config;
  std::string data = default_corpus_path();
  int eval_every = 10;
  double tol = 1e-9;
  bool quiet = false;
  bool typecheck = false;
  bool reference = true;
};

const char* kUsage =
    "usage: gpt_train [--tp N] [--steps N] [--layers N] [--hidden N]\n"
    "         [--heads N] [--ffn N] [--seq N] [--batch N] [--lr X]\n"
    "         [--seed N] [--data FILE] [--eval-every N] [--tol X] [--quiet]\n"
    "         [--typecheck] [--no-reference]\n"
    "Run one process per rank (torchrun --no_python --nproc_per_node 4 ...);\n"
    "the mesh is dp x tp with dp = world / tp.\n";

Options parse_args(int argc, char** argv) {
  Options o;
  Config& c = o.config;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc)
      throw std::invalid_argument(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  auto integer = [&](int& i) -> int64_t {
    std::string flag = argv[i], v = value(i);
    char* end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n <= 0)
      throw std::invalid_argument(flag + " expects a positive integer, got '" +
                                  v + "'");
    return n;
  };
  auto real = [&](int& i) -> double {
    std::string flag = argv[i], v = value(i);
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(x > 0))
      throw std::invalid_argument(flag + " expects a positive number, got '" +
                                  v + "'");
    return x;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--tp")
      c.tp_size = integer(i);
    else if (a == "--steps")
      c.steps = int(integer(i));
    else if (a == "--layers")
      c.layers = integer(i);
    else if (a == "--hidden")
      c.hidden = integer(i);
    else if (a == "--heads")
      c.heads = integer(i);
    else if (a == "--ffn")
      c.ffn = integer(i);
    else if (a == "--seq")
      c.seq = integer(i);
    else if (a == "--batch")
      c.batch = integer(i);
    else if (a == "--lr")
      c.lr = real(i);
    else if (a == "--seed")
      c.seed = uint64_t(integer(i));
    else if (a == "--data")
      o.data = value(i);
    else if (a == "--eval-every")
      o.eval_every = int(integer(i));
    else if (a == "--tol")
      o.tol = real(i);
    else if (a == "--quiet")
      o.quiet = true;
    else if (a == "--typecheck")
      o.typecheck = true;
    else if (a == "--no-reference")
      o.reference = false;
    else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else {
      throw std::invalid_argument("unknown argument '" + a + "'");
    }
  }
  return o;
}

void check_divisible(int64_t n, int64_t by, const std::string& what,
                     const char* axis) {
  if (n % by != 0)
    throw std::invalid_argument(
        what + " = " + std::to_string(n) + " is not divisible by " + axis +
        " = " + std::to_string(by) + "; pick sizes that split evenly");
}

// Every parameter of this rank after the last step against the same piece
// of the one-device parameter: the largest |difference|. (Plain comparison
// code, no SPMD types.)
double parameter_gap(Trainer& trainer, const Reference& ref, const Shard& s) {
  double gap = 0;
  for (const auto& item : trainer.model->named_parameters()) {
    const std::string& name = item.key();
    Tensor piece = local_param({{name, ref.params.at(name).detach()}}, name, s);
    gap = std::max(gap,
                   (item.value().detach() - piece).abs().max().item<double>());
  }
  return gap;
}

// The largest value of each entry of `v` (different on every rank: V) over
// every rank of the mesh.
Tensor max_over_mesh(SPMD_TYPE(dp = V, tp = V) const Tensor& v) {
  Tensor over_tp = spmd::all_gather(v, tp, V, R).amax(0);
  return spmd::all_gather(over_tp.contiguous(), dp, V, R).amax(0);
}

int run(int argc, char** argv) {
  Options opt = parse_args(argc, argv);
  Config& c = opt.config;
  const Corpus corpus = load_corpus(opt.data);  // bad input first
  std::shared_ptr<spmd::World> world = spmd::init_from_env();
  if (world->size() % c.tp_size != 0)
    throw std::invalid_argument(
        "world size " + std::to_string(world->size()) +
        " is not divisible by tp = " + std::to_string(c.tp_size) +
        "; launch dp * tp ranks or change --tp");
  c.dp_size = world->size() / c.tp_size;
  check_divisible(c.batch, c.dp_size, "--batch", "dp");
  check_divisible(c.heads, c.tp_size, "--heads", "tp");
  check_divisible(c.ffn, c.tp_size, "--ffn", "tp");
  check_divisible(c.seq, c.tp_size, "--seq", "tp");
  check_divisible(c.vocab, c.tp_size, "the vocabulary", "tp");
  check_divisible(c.hidden, c.heads, "--hidden", "--heads");

  spmd::DeviceMesh mesh(world, {{dp, c.dp_size}, {tp, c.tp_size}});
  spmd::MeshGuard mesh_guard(mesh);
  Shard s{mesh.axis("tp").local_rank, c.tp_size, mesh.axis("dp").local_rank,
          c.dp_size};
  const bool leader = world->rank() == 0;
  const FullParams full = init_params(c);
  Trainer trainer(full, c, s);
  std::optional<Reference> ref;
  if (opt.reference) ref.emplace(full, c);

  if (leader) {
    int64_t n = 0;
    for (const auto& [name, t] : full) n += t.numel();
    std::cout << "gpt_train: decoder-only transformer, " << c.layers
              << " blocks, hidden " << c.hidden << ", " << c.heads
              << " heads, ffn " << c.ffn << ", " << n << " parameters\n"
              << "  mesh dp=" << c.dp_size << " x tp=" << c.tp_size << " ("
              << world->size() << " ranks, "
              << spmd::to_string(world->backend()) << "), sequence parallel"
              << (opt.typecheck ? ", runtime type checker: on" : "") << "\n"
              << "  data: " << corpus.source << " (" << corpus.train.numel()
              << " training bytes, " << corpus.val.numel() << " held out), seq "
              << c.seq << " x batch " << c.batch << ", AdamW lr " << c.lr
              << ", clip " << c.max_norm << "\n\n";
    if (!opt.quiet)
      std::printf("  %4s  %10s  %8s  |  %-20s  %8s\n", "step", "train loss",
                  "val loss", "1 device: train loss", "val loss");
  }

  // The whole-batch loss: the dp ranks' shares summed (one value on tp).
  auto global = [](const Tensor& loss) {
    return spmd::all_reduce(loss, dp, P, I).item<double>();
  };
  auto val_loss = [&]() {
    double sum = 0;
    for (int64_t i = 0; i < c.val_batches; ++i)
      sum += global(trainer.eval_loss(local_batch(val_batch(corpus, c, i), s)));
    return sum / double(c.val_batches);
  };
  auto ref_val_loss = [&]() {
    double sum = 0;
    for (int64_t i = 0; i < c.val_batches; ++i)
      sum += ref->eval_loss(val_batch(corpus, c, i));
    return sum / double(c.val_batches);
  };

  std::optional<spmd::checker::TypecheckGuard> typecheck;
  double curve = 0, norms = 0, seconds = 0;
  std::vector<double> losses;
  for (int step = 1; step <= c.steps; ++step) {
    const Batch batch = train_batch(corpus, c, step);
    const Batch mine = local_batch(batch, s);
    if (opt.typecheck) {
      typecheck.emplace();
      trainer.assert_types(mine);
    }
    auto t0 = std::chrono::steady_clock::now();
    Tensor norm;
    double loss = global(trainer.train_step(mine, &norm));
    // The first step (allocations, Gloo's first use of each buffer size) is
    // not timed unless it is the only one.
    if (step > 1 || c.steps == 1)
      seconds +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
    typecheck.reset();
    losses.push_back(loss);
    const bool eval = step % opt.eval_every == 0 || step == c.steps;
    double val = eval ? val_loss() : NAN;
    double ref_loss = NAN, ref_val = NAN;
    if (ref) {
      ref_loss = ref->train_step(batch);
      curve = std::max(curve, std::abs(loss - ref_loss));
      norms =
          std::max(norms, std::abs(norm.item<double>() - ref->last_grad_norm));
      if (eval) {
        ref_val = ref_val_loss();
        curve = std::max(curve, std::abs(val - ref_val));
      }
    }
    if (leader && !opt.quiet && (eval || step <= 3)) {
      char val_s[32] = "", ref_val_s[32] = "";
      if (eval) {
        std::snprintf(val_s, sizeof val_s, "%8.4f", val);
        std::snprintf(ref_val_s, sizeof ref_val_s, "%8.4f", ref_val);
      }
      std::printf("  %4d  %10.4f  %8s  |  %20.4f  %8s\n", step, loss, val_s,
                  ref_loss, ref_val_s);
    }
  }
  const int timed_steps = c.steps > 1 ? c.steps - 1 : 1;
  const double tokens_per_s =
      double(c.seq * c.batch) * timed_steps / std::max(seconds, 1e-9);
  if (leader)
    std::printf(
        "\n  throughput: %.0f tokens/s (%d ranks, training steps "
        "after the first), last loss %.6f\n",
        tokens_per_s, int(world->size()), losses.back());
  if (!ref) return 0;

  const double params = parameter_gap(trainer, *ref, s);
  // This rank's differences: V on both axes.
  Tensor mine = spmd::assert_type(
      at::tensor({curve, norms, params}, at::kDouble), {dp = V, tp = V});
  Tensor worst_t = max_over_mesh(mine);
  std::vector<double> worst(worst_t.data_ptr<double>(),
                            worst_t.data_ptr<double>() + 3);
  const char* names[] = {"loss curve (train + val)", "gradient norm, all steps",
                         "parameters after last step"};
  bool equal = true;
  for (double w : worst) equal = equal && w <= opt.tol;
  const bool fell = losses.back() < losses.front();
  if (leader) {
    std::printf(
        "\n  equivalence with the one-device program (max abs diff over "
        "all ranks, tolerance %.0e)\n",
        opt.tol);
    for (int i = 0; i < 3; ++i)
      std::printf("  %-28s  %-12.3e  %s\n", names[i], worst[i],
                  worst[i] <= opt.tol ? "ok" : "MISMATCH");
    std::printf(
        "\nverdict: %s - dp=%lld x tp=%lld GPT training %s the "
        "one-device program; loss %.4f -> %.4f\n",
        equal && fell ? "PASS" : "FAIL", (long long)c.dp_size,
        (long long)c.tp_size, equal ? "equals" : "DIFFERS FROM", losses.front(),
        losses.back());
    std::cout.flush();
  }
  return equal && fell ? 0 : 1;
}

}  // namespace
}  // namespace gpt

int main(int argc, char** argv) {
  try {
    return gpt::run(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: " << e.what() << "\n" << gpt::kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
