// Links the installed spmd::runtime (and libtorch through it): a checked
// program on a fake 2-rank world, then a type error the checker must throw.
#include <spmd/checker.h>
#include <spmd/spmd.h>
#include <torch/torch.h>

#include <cstdio>

using namespace spmd::types;
SPMD_AXIS(tp);

SPMD_TYPE(tp = R)
torch::Tensor reduce(SPMD_TYPE(tp = V) const torch::Tensor& x) {
  return spmd::all_reduce(x, tp, V, R);
}

// Unannotated: the plugin cannot know its operands' types; the runtime does.
torch::Tensor add_unannotated(const torch::Tensor& a, const torch::Tensor& b) {
  return a + b;
}

int main() {
  auto world = spmd::World::fake(0, 2);
  spmd::DeviceMesh mesh(world, {{tp, 2}});
  spmd::MeshGuard on_mesh(mesh);
  torch::Tensor x = torch::ones({2, 2});
  torch::Tensor w = torch::ones({2, 2});
  spmd::checker::TypecheckGuard checking;
  spmd::assert_type(x, {tp = V});
  spmd::assert_type(w, {tp = R});
  torch::Tensor y = reduce(torch::matmul(x, w));
  if (spmd::get_type(y).to_string() != "{tp: R}") {
    std::printf("use_runtime: all_reduce gave %s\n",
                spmd::get_type(y).to_string().c_str());
    return 1;
  }
  try {
    auto p = spmd::reinterpret(x, tp, V, P);
    (void)add_unannotated(p, w);  // P + R: affine in the partial operand
  } catch (const spmd::SpmdTypeError& e) {
    std::printf("use_runtime: ok, rejected P + R at run time\n");
    return 0;
  }
  std::puts("use_runtime: P + R was not rejected");
  return 1;
}
