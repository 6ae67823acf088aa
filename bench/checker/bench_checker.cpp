// bench_checker.cpp - what the runtime checker adds per ATen op.
//
// Each case runs the same code with no guard ("off") and under a
// spmd::checker::TypecheckGuard with typed operands ("on"), in one process,
// and the summary prints both times, the time added per op and the ratio.
// Cases: one op on a 1x8 tensor (the checker's fixed cost dominates), one op
// on a 1024x1024 tensor (the kernel dominates), and a small training step
// (MLP forward, loss check, backward, SGD step). Ratios, not absolute times,
// are the result (machines differ); the goal is < 2 us added per op.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <spmd/checker.h>
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <cstdio>
#include <map>
#include <optional>
#include <string>

namespace {

SPMD_AXIS(dp);
SPMD_AXIS(tp);
using namespace spmd::types;

// Starts a guard (mesh dp x tp) in `g` when `on`.
void enable(std::optional<spmd::checker::TypecheckGuard>& g, bool on) {
  if (!on) return;
  spmd::checker::TypecheckOptions o;
  o.mesh = std::vector<spmd::checker::MeshAxisInfo>{{"dp", 2}, {"tp", 2}};
  g.emplace(o);
}

void op_add(benchmark::State& state, int64_t rows, int64_t cols, bool on) {
  at::Tensor x = at::randn({rows, cols});
  std::optional<spmd::checker::TypecheckGuard> guard;
  enable(guard, on);
  spmd::assert_type(x, {dp = V, tp = R});
  for (auto _ : state) benchmark::DoNotOptimize(x.add(x));
}

void op_matmul(benchmark::State& state, bool on) {
  at::Tensor x = at::randn({1, 8});
  at::Tensor w = at::randn({8, 8});
  std::optional<spmd::checker::TypecheckGuard> guard;
  enable(guard, on);
  spmd::assert_type(x, {dp = V, tp = R});
  spmd::assert_type(w, {dp = R, tp = V});
  for (auto _ : state) benchmark::DoNotOptimize(at::matmul(x, w));
}

void op_relu_inplace(benchmark::State& state, bool on) {
  at::Tensor x = at::randn({1, 8});
  std::optional<spmd::checker::TypecheckGuard> guard;
  enable(guard, on);
  spmd::assert_type(x, {dp = V, tp = R});
  for (auto _ : state) benchmark::DoNotOptimize(x.relu_());
}

void train_step(benchmark::State& state, bool on) {
  torch::nn::Sequential mlp(torch::nn::Linear(64, 64), torch::nn::ReLU(),
                            torch::nn::Linear(64, 1));
  torch::optim::SGD sgd(mlp->parameters(), torch::optim::SGDOptions(1e-3));
  at::Tensor x = at::randn({32, 64});
  std::optional<spmd::checker::TypecheckGuard> guard;
  enable(guard, on);
  for (const at::Tensor& p : mlp->parameters())
    spmd::assert_type(p, {dp = R, tp = R});
  spmd::assert_type(x, {dp = V, tp = R});
  for (auto _ : state) {
    at::Tensor loss = mlp->forward(x).pow(2).mean();  // {dp: V, tp: R}
    // Declare the per-rank losses a pending sum on dp and the tp copies one
    // logical loss (the data-parallel loss convention, spec §6.15).
    spmd::checker::mutate_type(loss, dp, V, P);
    spmd::checker::mutate_type(loss, tp, R, I);
    loss.backward();
    spmd::checker::NoTypecheckGuard untyped_update;  // gradients are untyped
    sgd.step();
    sgd.zero_grad();
  }
}

// Collects each run's mean real time (ns per iteration) by name.
class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs)
      if (r.run_type == Run::RT_Iteration)
        times[r.benchmark_name()] = r.GetAdjustedCPUTime();
    ConsoleReporter::ReportRuns(runs);
  }
  std::map<std::string, double> times;
};

struct Case {
  const char* name;
  int ops;  // ATen ops per iteration, for "added per op"
};

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);
  for (bool on : {false, true}) {
    const std::string mode = on ? "/on" : "/off";
    benchmark::RegisterBenchmark(("add_1x8" + mode).c_str(), op_add, 1, 8, on);
    benchmark::RegisterBenchmark(("matmul_1x8" + mode).c_str(), op_matmul, on);
    benchmark::RegisterBenchmark(("relu_inplace_1x8" + mode).c_str(),
                                 op_relu_inplace, on);
    benchmark::RegisterBenchmark(("add_1024x1024" + mode).c_str(), op_add, 1024,
                                 1024, on);
    benchmark::RegisterBenchmark(("train_step_mlp" + mode).c_str(), train_step,
                                 on)
        ->Unit(benchmark::kMicrosecond);
  }
  benchmark::Initialize(&argc, argv);
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);

  // Forward of the step: t, addmm, relu, t, addmm, pow, mean (7 typed ops);
  // the backward pass and the update run with the mode key excluded.
  const Case cases[] = {{"add_1x8", 1},
                        {"matmul_1x8", 1},
                        {"relu_inplace_1x8", 1},
                        {"add_1024x1024", 1},
                        {"train_step_mlp", 7}};
  std::printf("\nCPU time per iteration (the machine may be shared)\n");
  std::printf("%-18s %12s %12s %14s %8s\n", "case", "off (ns)", "on (ns)",
              "added/op (ns)", "on/off");
  for (const Case& c : cases) {
    auto off = collector.times.find(std::string(c.name) + "/off");
    auto on = collector.times.find(std::string(c.name) + "/on");
    if (off == collector.times.end() || on == collector.times.end()) continue;
    // train_step is reported in microseconds.
    const double scale = std::string(c.name) == "train_step_mlp" ? 1e3 : 1.0;
    const double t_off = off->second * scale, t_on = on->second * scale;
    std::printf("%-18s %12.0f %12.0f %14.0f %8.2f\n", c.name, t_off, t_on,
                (t_on - t_off) / c.ops, t_on / t_off);
  }
  return 0;
}
