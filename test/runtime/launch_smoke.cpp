// launch_smoke.cpp - one rank of a real multi-process job: init_from_env()
// (torchrun, mpirun or srun environment), a 1-D mesh over the world, and an
// all_gather/all_reduce round trip checked against the expected values.
// Exit status 0 on success; run by test/runtime/launch_smoke.sh.
#include <ATen/ATen.h>
#include <spmd/spmd.h>

#include <cstdio>

SPMD_AXIS(tp);

int main() {
  using namespace spmd::types;
  try {
    auto world = spmd::init_from_env();
    spmd::DeviceMesh mesh(world, {{tp, world->size()}});
    spmd::MeshGuard guard(mesh);
    const int r = world->rank(), n = world->size();
    at::Tensor x = at::full({1}, float(r));
    at::Tensor all = spmd::all_gather(x, tp, S(0), R);         // [0..n-1]
    at::Tensor sum = spmd::all_reduce(all.sum().reshape({1}),  // R -> P
                                      tp, P, R);               // n * sum
    const float expected = float(n) * float(n * (n - 1) / 2);
    if (!at::equal(all, at::arange(n, at::kFloat)) ||
        sum.item<float>() != expected) {
      std::fprintf(stderr, "rank %d: wrong values\n", r);
      return 1;
    }
    std::printf("rank %d of %d: ok\n", r, n);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "launch_smoke: %s\n", e.what());
    return 2;
  }
}
