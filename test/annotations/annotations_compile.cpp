// Annotated code must compile warning-free without the plugin: the SPMD_*
// macros expand to nothing and the vocabulary is plain constexpr C++.
#include <spmd/annotations.h>

#include <type_traits>

using namespace spmd::types;

SPMD_AXIS(dp);
SPMD_AXIS(tp);

static_assert((dp = R).type == spmd::R);
static_assert((tp = S(-1)).type.dim == -1);
static_assert(S(0) != S(1) && S(0) == S(0) && S(0) != V);
static_assert(S(2).local() == V);
static_assert(spmd::P == P);

// `axis = type` takes the type by const reference: Clang parses every
// [[spmd::type(dp = R)]] argument as this call, and a by-value parameter
// costs a copy-constructor call per entry (docs/plugin.md, Performance).
// Compiles only while that overload exists.
using AxisAssign =
    spmd::AxisType (spmd::Axis::*)(const spmd::PerAxisType&) const;
static_assert(std::is_member_function_pointer_v<
              decltype(static_cast<AxisAssign>(&spmd::Axis::operator=))>);

struct Block {
  SPMD_TYPE(dp = R, tp = V) float weight = 0;
};

SPMD_TYPE(dp = V, tp = R)
SPMD_MESH(dp, tp)
float forward(SPMD_TYPE(dp = V, tp = V) float x, const Block& b) {
  SPMD_TYPE(dp = V, tp = V) float y = x * b.weight;
  return y;
}

SPMD_UNCHECKED float opaque(float x) { return x; }

int main() {
  Block b;
  return static_cast<int>(forward(1.0f, b) + opaque(0.0f));
}
