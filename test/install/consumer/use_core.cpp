// Links the installed spmd::core: add(P, R) is rejected, add(P, P) is P.
#include <spmd/core/propagation.h>

#include <cstdio>

int main() {
  using namespace spmd;
  using core::Operand;
  using core::TensorType;
  auto typed = [](PerAxisType t) {
    TensorType m;
    m.set("tp", t);
    return Operand::tensor(m);
  };
  auto bad = core::infer("add", {typed(P), typed(R)});
  auto good = core::infer("add", {typed(P), typed(P)});
  if (bad.ok() || !good.ok()) {
    std::puts("use_core: unexpected verdicts");
    return 1;
  }
  std::printf("use_core: add(P, R) rejected, add(P, P) = %s\n",
              good.value().to_string().c_str());
  return 0;
}
