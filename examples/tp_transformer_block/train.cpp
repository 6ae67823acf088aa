// train.cpp - trains the tensor-parallel block on a dp x tp mesh over real
// process groups and checks that it computes what the one-device program
// computes: the loss and every gradient at step 1, the loss curve and the
// parameters after the last step, within a stated tolerance.
//
// Launch (4 ranks on this machine; docs/launching.md for multi-host):
//   torchrun --no_python --nproc_per_node 4 --master_addr 127.0.0.1 \
//     --master_port 29500 --redirects 1 --tee 1 build/bin/tp_transformer_block
//
// Every rank builds the same full parameters and data from the seed, keeps its
// own shard, and also runs the unsharded reference; all communication goes
// through the spmd runtime's collectives. Exit status: 0 when the run matches
// the reference and the loss fell, 1 when it does not, 2 on a usage error.
#include <ATen/ATen.h>
#include <spmd/checker.h>
#include <spmd/errors.h>
#include <spmd/mesh.h>
#include <spmd/process_groups.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "experiment.h"
#include "model.h"

namespace tp_example {

using namespace spmd::types;

namespace {

// ------------------------------------------------------- plumbing (untyped)

struct Options {
  Config config;
  bool quiet = false;
  bool typecheck = false;  // run the training loop under the runtime checker
  std::string device = "cpu";  // where every tensor lives ("cuda": NCCL)
};

[[noreturn]] void usage_error(const std::string& message) {
  throw std::invalid_argument(message);
}

const char* kUsage =
    "usage: tp_transformer_block [--steps N] [--sp] [--seq N] [--batch N]\n"
    "         [--hidden N] [--ffn N] [--tp N] [--lr X] [--seed N] [--tol X]\n"
    "         [--quiet] [--typecheck] [--device cpu|cuda]\n"
    "Run one process per rank, e.g. torchrun --no_python --nproc_per_node 4\n"
    "--master_addr 127.0.0.1 --master_port 29500 --redirects 1 --tee 1 "
    "<this>.\n"
    "The mesh is dp x tp with tp from --tp (default 2) and dp = world / tp.\n"
    "--typecheck also runs the training loop under the runtime type checker.\n";

Options parse_args(int argc, char** argv) {
  Options o;
  Config& c = o.config;
  auto value = [&](int& i) -> std::string {
    if (i + 1 >= argc) usage_error(std::string(argv[i]) + " needs a value");
    return argv[++i];
  };
  auto integer = [&](int& i) -> int64_t {
    std::string flag = argv[i], v = value(i);
    char* end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (v.empty() || *end != '\0' || n <= 0)
      usage_error(flag + " expects a positive integer, got '" + v + "'");
    return n;
  };
  auto real = [&](int& i) -> double {
    std::string flag = argv[i], v = value(i);
    char* end = nullptr;
    double x = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(x > 0))
      usage_error(flag + " expects a positive number, got '" + v + "'");
    return x;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--steps")
      c.steps = static_cast<int>(integer(i));
    else if (a == "--sp")
      c.sequence_parallel = true;
    else if (a == "--seq")
      c.seq = integer(i);
    else if (a == "--batch")
      c.batch = integer(i);
    else if (a == "--hidden")
      c.hidden = integer(i);
    else if (a == "--ffn")
      c.ffn = integer(i);
    else if (a == "--tp")
      c.tp_size = integer(i);
    else if (a == "--lr")
      c.lr = real(i);
    else if (a == "--seed")
      c.seed = static_cast<uint64_t>(integer(i));
    else if (a == "--tol")
      c.tol = real(i);
    else if (a == "--quiet")
      o.quiet = true;
    else if (a == "--typecheck")
      o.typecheck = true;
    else if (a == "--device") {
      o.device = value(i);
      if (o.device != "cpu" && o.device != "cuda")
        usage_error("--device expects cpu or cuda, got '" + o.device + "'");
    } else if (a == "-h" || a == "--help") {
      std::cout << kUsage;
      std::exit(0);
    } else {
      usage_error("unknown argument '" + a + "'");
    }
  }
  return o;
}

void check_divisible(int64_t n, int64_t by, const char* what,
                     const char* axis) {
  if (n % by != 0) {
    std::ostringstream os;
    os << what << " = " << n << " is not divisible by " << axis << " = " << by
       << "; pick sizes that split evenly";
    usage_error(os.str());
  }
}

// The largest value of each entry of `v` (1-D, one entry per quantity) over
// every rank of the mesh, through the runtime's collectives (all_gather
// stacks one row per rank).
at::Tensor max_over_mesh(const at::Tensor& v) {
  at::Tensor over_tp = spmd::all_gather(v, tp, V, R).amax(0);
  return spmd::all_gather(over_tp.contiguous(), dp, V, R).amax(0);
}

std::string program_name(const char* argv0) {
  std::string s = argv0 ? argv0 : "tp_transformer_block";
  auto slash = s.find_last_of('/');
  return slash == std::string::npos ? s : s.substr(slash + 1);
}

std::string fmt(const char* format, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, x);
  return buf;
}

int run(int argc, char** argv) {
  Options opt = parse_args(argc, argv);
  Config& c = opt.config;

  std::shared_ptr<spmd::World> world = spmd::init_from_env();
  if (world->size() % c.tp_size != 0) {
    std::ostringstream os;
    os << "world size " << world->size()
       << " is not divisible by tp = " << c.tp_size
       << "; launch dp * tp ranks (e.g. --nproc_per_node " << 2 * c.tp_size
       << ") or change --tp";
    usage_error(os.str());
  }
  c.dp_size = world->size() / c.tp_size;
  check_divisible(c.batch, c.dp_size, "--batch", "dp");
  check_divisible(c.ffn, c.tp_size, "--ffn", "tp");
  if (c.sequence_parallel) check_divisible(c.seq, c.tp_size, "--seq", "tp");

  spmd::DeviceMesh mesh(world, {{dp, c.dp_size}, {tp, c.tp_size}});
  spmd::MeshGuard mesh_guard(mesh);
  const int64_t dp_rank = mesh.axis("dp").local_rank;
  const int64_t tp_rank = mesh.axis("tp").local_rank;
  const bool leader = world->rank() == 0;
  const TpLayout layout = c.sequence_parallel ? sp_layout() : tp_layout();

  // Whole parameters and data (drawn on the CPU, so every device starts from
  // the same numbers), then this rank's pieces.
  const at::Device device =
      opt.device == "cuda" ? at::Device(at::kCUDA, 0) : at::Device(at::kCPU);
  FullParams full = init_params(c);
  for (at::Tensor* t : {&full.ln_w, &full.ln_b, &full.w1, &full.w2})
    *t = t->to(device);
  Data data = make_data(c);
  data.x = data.x.to(device);
  data.target = data.target.to(device);
  LocalParams p;
  p.ln_w = leaf(full.ln_w);
  p.ln_b = leaf(full.ln_b);
  p.w1 = leaf(piece(full.w1, layout.w1_dim, c.tp_size, tp_rank));
  p.w2 = leaf(piece(full.w2, layout.w2_dim, c.tp_size, tp_rank));
  const int64_t seq_dim = c.sequence_parallel ? 0 : -1;
  auto local_data = [&](const at::Tensor& t) {
    at::Tensor mine = piece(t, /*dim=*/1, c.dp_size, dp_rank);  // batch on dp
    return piece(mine, seq_dim, c.tp_size, tp_rank).contiguous();
  };
  const at::Tensor x = local_data(data.x);
  const at::Tensor target = local_data(data.target);
  const double count = static_cast<double>(data.x.numel());

  Reference ref;
  ref.p = FullParams{leaf(full.ln_w), leaf(full.ln_b), leaf(full.w1),
                     leaf(full.w2)};

  if (leader) {
    std::cout << program_name(argv[0])
              << ": Megatron-style tensor-parallel MLP block\n"
              << "  mesh dp=" << c.dp_size << " x tp=" << c.tp_size << " ("
              << world->size() << " ranks, "
              << spmd::to_string(world->backend()) << "), sequence parallel: "
              << (c.sequence_parallel ? "on" : "off")
              << (!opt.typecheck ? ""
                  : checker_options(c).local.value_or(true)
                      ? ", runtime type checker: on (local mode)"
                      : ", runtime type checker: on (global mode on tp)")
              << "\n"
              << "  seq=" << c.seq << " batch=" << c.batch
              << " hidden=" << c.hidden << " ffn=" << c.ffn
              << ", SGD lr=" << c.lr << ", " << c.steps << " steps, seed "
              << c.seed << "\n\n";
    if (!opt.quiet)
      std::cout << "  step   loss (" << world->size()
                << " ranks)   loss (1 device)\n";
  }

  // |this rank's piece - the same piece of the one-device tensor|, max.
  auto gap = [&](const at::Tensor& mine, const at::Tensor& whole, int64_t dim) {
    return (mine.detach() - piece(whole, dim, c.tp_size, tp_rank))
        .abs()
        .max()
        .item<double>();
  };
  auto magnitude = [](const at::Tensor& t) {
    return t.detach().abs().max().item<double>();
  };

  // --typecheck: every ATen op and collective of the sharded training loop
  // is typed at run time (strict mode, the mesh of the MeshGuard; global
  // mode on tp for the blocks of tensor_parallel.cpp and
  // sequence_parallel.cpp, checker_options); the one-device reference and
  // the comparisons run with checking paused.
  std::optional<spmd::checker::TypecheckGuard> typecheck;
  if (opt.typecheck) {
    typecheck.emplace(checker_options(c));
    if (c.sequence_parallel)
      assert_types_sp(p, x, target);
    else
      assert_types_tp(p, x, target);
  }

  std::vector<double> losses, ref_losses;
  // Per quantity of `names` below: |difference| on this rank, and the size of
  // the one-device value (to read the differences against).
  std::vector<double> diffs, scales;
  for (int step = 1; step <= c.steps; ++step) {
    for (at::Tensor* t : {&p.ln_w, &p.ln_b, &p.w1, &p.w2})
      t->mutable_grad() = at::Tensor();
    at::Tensor out = c.sequence_parallel
                         ? mlp_block_sp(x, p.ln_w, p.ln_b, p.w1, p.w2)
                         : mlp_block(x, p.ln_w, p.ln_b, p.w1, p.w2);
    at::Tensor loss = c.sequence_parallel ? loss_sp(out, target, count)
                                          : loss_tp(out, target, count);
    loss.backward();
    // The whole-batch loss, for printing: sum the dp shares.
    double loss_value =
        spmd::all_reduce(loss.detach(), dp, P, I).item<double>();
    AppliedGrads g =
        c.sequence_parallel ? sgd_step_sp(p, c.lr) : sgd_step(p, c.lr);
    std::optional<spmd::checker::NoTypecheckGuard> untyped;
    if (opt.typecheck) untyped.emplace();
    ref.step(data, c.lr);
    losses.push_back(loss_value);
    ref_losses.push_back(ref.loss);
    if (leader && !opt.quiet)
      std::printf("  %4d   %-15.6f  %.6f\n", step, loss_value, ref.loss);

    if (step == 1) {
      diffs = {std::abs(loss_value - ref.loss), gap(g.ln_w, ref.grads.ln_w, -1),
               gap(g.ln_b, ref.grads.ln_b, -1),
               gap(g.w1, ref.grads.w1, layout.w1_dim),
               gap(g.w2, ref.grads.w2, layout.w2_dim)};
      scales = {std::abs(ref.loss), magnitude(ref.grads.ln_w),
                magnitude(ref.grads.ln_b), magnitude(ref.grads.w1),
                magnitude(ref.grads.w2)};
    }
  }
  typecheck.reset();
  // The loss curve, and the parameters after the last step.
  double curve = 0;
  for (size_t i = 0; i < losses.size(); ++i)
    curve = std::max(curve, std::abs(losses[i] - ref_losses[i]));
  diffs.push_back(curve);
  scales.push_back(*std::max_element(ref_losses.begin(), ref_losses.end()));
  diffs.push_back(
      std::max({gap(p.ln_w, ref.p.ln_w, -1), gap(p.ln_b, ref.p.ln_b, -1),
                gap(p.w1, ref.p.w1, layout.w1_dim),
                gap(p.w2, ref.p.w2, layout.w2_dim)}));
  scales.push_back(std::max({magnitude(ref.p.ln_w), magnitude(ref.p.ln_b),
                             magnitude(ref.p.w1), magnitude(ref.p.w2)}));
  at::Tensor worst_t =
      max_over_mesh(
          at::tensor(diffs, at::TensorOptions().dtype(at::kDouble)).to(device))
          .cpu();
  std::vector<double> worst(worst_t.data_ptr<double>(),
                            worst_t.data_ptr<double>() + worst_t.numel());

  const std::vector<std::string> names = {"loss, step 1",
                                          "grad ln_w, step 1",
                                          "grad ln_b, step 1",
                                          "grad w1, step 1",
                                          "grad w2, step 1",
                                          "loss curve, all steps",
                                          "parameters after last step"};
  bool equal = true;
  std::string failed;
  for (size_t i = 0; i < names.size(); ++i) {
    if (!(worst[i] <= c.tol)) {
      equal = false;
      failed += (failed.empty() ? "" : ", ") + names[i];
    }
  }
  const bool fell = losses.size() >= 2 && losses.back() < losses.front();
  if (leader) {
    std::cout << "\n  equivalence with the one-device program (max abs diff "
                 "over all ranks, tolerance "
              << fmt("%.0e", c.tol) << ")\n";
    std::printf("  %-28s  %-12s  %-9s %s\n", "quantity", "max abs diff", "",
                "(one-device max |value|)");
    for (size_t i = 0; i < names.size(); ++i) {
      std::printf("  %-28s  %-12.3e  %-9s (%.3e)\n", names[i].c_str(), worst[i],
                  worst[i] <= c.tol ? "ok" : "MISMATCH", scales[i]);
    }
    double overall = *std::max_element(worst.begin(), worst.end());
    std::cout << "\n";
    if (equal && fell) {
      std::cout << "verdict: PASS - " << world->size()
                << "-rank dp=" << c.dp_size << " x tp=" << c.tp_size
                << " training equals the one-device program (max abs diff "
                << fmt("%.1e", overall) << " <= " << fmt("%.0e", c.tol)
                << "), loss fell " << fmt("%.4f", losses.front()) << " -> "
                << fmt("%.4f", losses.back()) << "\n";
    } else if (!equal) {
      std::cout << "verdict: FAIL - differs from the one-device program in: "
                << failed << " (max abs diff " << fmt("%.3g", overall) << " > "
                << fmt("%.0e", c.tol) << ")\n";
    } else {
      std::cout << "verdict: FAIL - the loss did not fall ("
                << fmt("%.4f", losses.front()) << " -> "
                << fmt("%.4f", losses.back()) << ")\n";
    }
    std::cout.flush();
  }
  return equal && fell ? 0 : 1;
}

}  // namespace
}  // namespace tp_example

int main(int argc, char** argv) {
  try {
    return tp_example::run(argc, argv);
  } catch (const std::invalid_argument& e) {
    std::cerr << "error: " << e.what() << "\n" << tp_example::kUsage;
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 2;
  }
}
