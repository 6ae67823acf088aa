// gpu_collectives_check.cpp - the NCCL backend at world size 1 with CUDA
// tensors (the only NCCL configuration one GPU allows: two NCCL ranks cannot
// share a device). Raw c10d ops on the NCCL group check the communicator;
// every collective case at n = 1 runs forward and backward on CUDA and is
// compared with the same call on the CPU (the fake one-rank group, exact at
// n = 1); the runtime checker types CUDA tensors.
//
// A plain program (no GoogleTest: the GPU machine has none): one line per
// check, "ok" or "FAIL: ...", then "N passed, N failed"; exit status 0 only
// if every check passed, 77 when no CUDA device is visible.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <spmd/checker.h>
#include <spmd/spmd.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <iostream>
#include <numeric>
#include <sstream>
#include <string>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <vector>

namespace spmd {
namespace {

using namespace spmd::types;
SPMD_AXIS(tp);

int passed = 0, failed = 0;

// Runs one named check; `fn` returns "" on success or what went wrong.
void check(const std::string& name, const std::function<std::string()>& fn) {
  std::string problem;
  try {
    problem = fn();
  } catch (const std::exception& e) {
    problem = std::string("threw: ") + e.what();
  }
  if (problem.empty()) {
    ++passed;
    std::printf("  %-44s ok\n", name.c_str());
  } else {
    ++failed;
    std::printf("  %-44s FAIL: %s\n", name.c_str(), problem.c_str());
  }
  std::fflush(stdout);
}

std::string differ(const char* what, const at::Tensor& a, const at::Tensor& b) {
  if (a.sizes() == b.sizes() && a.scalar_type() == b.scalar_type() &&
      at::equal(a, b))
    return "";
  std::ostringstream os;
  os << what << " differs: cuda " << a.scalar_type() << a.sizes() << " "
     << a.flatten() << " vs cpu " << b.scalar_type() << b.sizes() << " "
     << b.flatten();
  return os.str();
}

std::shared_ptr<World> nccl_world() {
  WorldOptions options;
  options.timeout = std::chrono::milliseconds(60000);
  return World::create(Backend::Nccl, 0, 1,
                       c10::make_intrusive<c10d::HashStore>(), options);
}

void raw_collectives() {
  auto world = nccl_world();
  auto pg = world->process_group();
  auto opts = at::TensorOptions().device(at::kCUDA).dtype(at::kFloat);
  const at::Tensor x = at::arange(6, opts).reshape({2, 3});
  check("c10d backend name", [&] {
    return pg->getBackendName() == "nccl" ? "" : "got " + pg->getBackendName();
  });
  check("c10d allreduce (NCCL, 1 rank)", [&] {
    std::vector<at::Tensor> v{x.clone()};
    pg->allreduce(v)->wait();
    return differ("allreduce", v[0].cpu(), x.cpu());
  });
  check("c10d allgather", [&] {
    std::vector<std::vector<at::Tensor>> out{{at::empty_like(x)}};
    std::vector<at::Tensor> in{x};
    pg->allgather(out, in)->wait();
    return differ("allgather", out[0][0].cpu(), x.cpu());
  });
  check("c10d reduce_scatter", [&] {
    std::vector<at::Tensor> out{at::empty_like(x)};
    std::vector<std::vector<at::Tensor>> in{{x}};
    pg->reduce_scatter(out, in)->wait();
    return differ("reduce_scatter", out[0].cpu(), x.cpu());
  });
  check("c10d alltoall_base", [&] {
    at::Tensor out = at::empty_like(x);
    at::Tensor in = x;
    std::vector<int64_t> none;
    pg->alltoall_base(out, in, none, none)->wait();
    return differ("alltoall_base", out.cpu(), x.cpu());
  });
  check("c10d barrier", [&] {
    pg->barrier()->wait();
    return std::string();
  });
}

// One collective call, run the same way on both devices.
struct Case {
  std::string name;
  std::vector<int64_t> shape;
  std::function<at::Tensor(const at::Tensor&)> call;
};

CollectiveOptions expert() {
  CollectiveOptions o;
  o.expert_mode = true;
  return o;
}

std::vector<Case> cases() {
  auto c = [](std::string name, std::vector<int64_t> shape,
              std::function<at::Tensor(const at::Tensor&)> f) {
    return Case{std::move(name), std::move(shape), std::move(f)};
  };
  return {
      c("all_reduce(P->R)", {2, 3},
        [](const at::Tensor& x) { return all_reduce(x, tp, P, R); }),
      c("all_reduce(P->I)", {2, 3},
        [](const at::Tensor& x) { return all_reduce(x, tp, P, I); }),
      c("all_gather(V->R)", {2, 3},
        [](const at::Tensor& x) { return all_gather(x, tp, V, R); }),
      c("all_gather(S(1)->R)", {2, 3},
        [](const at::Tensor& x) { return all_gather(x, tp, S(1), R); }),
      c("all_gather(V->I)", {2, 3},
        [](const at::Tensor& x) { return all_gather(x, tp, V, I); }),
      c("reduce_scatter(P->V)", {1, 3},
        [](const at::Tensor& x) { return reduce_scatter(x, tp, P, V); }),
      c("reduce_scatter(P->S(0))", {4, 3},
        [](const at::Tensor& x) { return reduce_scatter(x, tp, P, S(0)); }),
      c("all_to_all(S(0)->S(1))", {2, 3},
        [](const at::Tensor& x) { return all_to_all(x, tp, S(0), S(1)); }),
      c("all_to_all(V->V)", {1, 3},
        [](const at::Tensor& x) { return all_to_all(x, tp, V, V); }),
      c("convert(R->S(0))", {4, 3},
        [](const at::Tensor& x) { return convert(x, tp, R, S(0)); }),
      c("convert(I->V)", {1, 3},
        [](const at::Tensor& x) { return convert(x, tp, I, V); }),
      c("convert(R->P)", {2, 3},
        [](const at::Tensor& x) { return convert(x, tp, R, P); }),
      c("convert(V->P) expert", {2, 3},
        [](const at::Tensor& x) { return convert(x, tp, V, P, expert()); }),
      c("reinterpret(V->P)", {2, 3},
        [](const at::Tensor& x) { return reinterpret(x, tp, V, P); }),
      c("redistribute(S(0)->R)", {2, 3},
        [](const at::Tensor& x) { return redistribute(x, tp, S(0), R); }),
      c("all_reduce(P->R) bf16 -> f32", {2, 3},
        [](const at::Tensor& x) {
          CollectiveOptions o;
          o.out_dtype = at::kFloat;
          o.backward.op_dtype = at::kFloat;
          return all_reduce(x.to(at::kBFloat16), tp, P, R, o);
        }),
  };
}

// Forward value and gradient (of sum(y * w)) of `c` on one device.
std::pair<at::Tensor, at::Tensor> run(const Case& c, at::Device device) {
  const int64_t n = std::accumulate(c.shape.begin(), c.shape.end(), int64_t{1},
                                    std::multiplies<>());
  at::Tensor x = (at::arange(n, at::kDouble) / 4)
                     .reshape(c.shape)
                     .to(device)
                     .requires_grad_();
  at::Tensor y = c.call(x);
  at::Tensor w =
      at::arange(y.numel(), at::kDouble).reshape(y.sizes()).to(device);
  (y.to(at::kDouble) * w).sum().backward();
  return {y.detach().cpu(), x.grad().cpu()};
}

void collectives_match_cpu() {
  auto cpu_world = World::fake(0, 1);
  auto gpu_world = nccl_world();
  DeviceMesh cpu_mesh(cpu_world, {{tp, 1}});
  DeviceMesh gpu_mesh(gpu_world, {{tp, 1}});
  for (const Case& c : cases()) {
    check(c.name + " cuda == cpu", [&] {
      std::pair<at::Tensor, at::Tensor> cpu, gpu;
      {
        MeshGuard guard(cpu_mesh);
        cpu = run(c, at::kCPU);
      }
      {
        MeshGuard guard(gpu_mesh);
        gpu = run(c, at::Device(at::kCUDA, 0));
      }
      std::string d = differ("forward", gpu.first, cpu.first);
      return d.empty() ? differ("gradient", gpu.second, cpu.second) : d;
    });
  }
}

void checker_on_cuda() {
  check("runtime checker on CUDA tensors", [] {
    auto world = nccl_world();
    DeviceMesh mesh(world, {{tp, 1}});
    MeshGuard guard(mesh);
    // A one-rank axis is singleton (its types are dropped, spec §3.1): what
    // this checks is the checker's fallback dispatching CUDA ops.
    checker::TypecheckGuard typecheck;
    at::Tensor x = at::ones({2, 2}, at::TensorOptions().device(at::kCUDA));
    assert_type(x, {tp = V});
    at::Tensor y = all_reduce(at::matmul(x, x), tp, P, R);
    return differ("all_reduce(matmul)", y.cpu(), at::full({2, 2}, 2.0));
  });
}

}  // namespace
}  // namespace spmd

int main() {
  if (c10::cuda::device_count() == 0) {
    std::printf("gpu check: no CUDA device visible; nothing run\n");
    return 77;
  }
  std::printf("NCCL at world size 1, CUDA tensors vs CPU:\n");
  spmd::raw_collectives();
  spmd::collectives_match_cpu();
  spmd::checker_on_cuda();
  std::printf("%d passed, %d failed\n", spmd::passed, spmd::failed);
  return spmd::failed == 0 ? 0 : 1;
}
