// The runtime's own axis-size queries are size-1 guards without any
// annotation: `mesh.axis("tp").size`, `mesh.find("tp")->size`,
// `spmd::resolve_axis("tp").size` (the name as a literal, `tp.name` or the
// axis itself), the axis group's `group->getSize()`, and a local initialised
// from one. A branch taken only on one rank of that axis reports nothing on it
// and does not conflict with the other paths (like [[spmd::axis_size]]).
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
#include "Inputs/prelude.h"

#include <spmd/mesh.h>

SPMD_TYPE(tp = I)
Tensor early_return(SPMD_TYPE(tp = P) const Tensor& x,
                    const spmd::DeviceMesh& mesh) {
  if (mesh.axis("tp").size == 1)
    return x;
  return spmd::all_reduce(x, tp, P, I);
}

SPMD_TYPE(tp = I)
Tensor guarded_collective(SPMD_TYPE(tp = P) const Tensor& x,
                          const spmd::DeviceMesh& mesh) {
  Tensor y = x;
  if (mesh.axis(tp.name).size > 1)
    y = spmd::all_reduce(x, tp, P, I);
  return y;
}

SPMD_TYPE(tp = I)
Tensor through_a_local(SPMD_TYPE(tp = P) const Tensor& x) {
  const int64_t world_size = spmd::resolve_axis("tp").size;
  if (world_size < 2)
    return x;
  return spmd::all_reduce(x, tp, P, I);
}

SPMD_TYPE(tp = I)
Tensor through_find(SPMD_TYPE(tp = P) const Tensor& x,
                    const spmd::DeviceMesh& mesh) {
  if (mesh.find("tp")->size == 1)
    return x;
  return spmd::all_reduce(x, tp, P, I);
}

SPMD_TYPE(tp = I)
Tensor process_group_size(SPMD_TYPE(tp = P) const Tensor& x,
                          const spmd::DeviceMesh& mesh) {
  if (static_cast<int64_t>(mesh.axis("tp").group->getSize()) == 1)
    return x;
  return spmd::all_reduce(x, tp, P, I);
}

// spmd::testing::Rank::axis_size(tp) (<spmd/testing.h> needs more of libtorch
// than the stand-in headers have: its declaration, as written there).
namespace spmd::testing {
class Rank {
public:
  int64_t axis_size(const Axis &axis) const;
  int64_t coordinate(const Axis &axis) const;
};
} // namespace spmd::testing

SPMD_TYPE(tp = I)
Tensor simulated_rank(SPMD_TYPE(tp = P) const Tensor& x,
                      const spmd::testing::Rank& rank) {
  if (rank.axis_size(tp) == 1)
    return x;
  if (rank.coordinate(tp) == 0)
    return x; // expected-error {{returned value has type P on axis 'tp'}}
  return spmd::all_reduce(x, tp, P, I); // expected-error {{'all_reduce' over axis 'tp' may run on some ranks of 'tp' only}}
}

// Not a guard: another axis, another number, another field.
SPMD_TYPE(tp = I)
Tensor other_axis(SPMD_TYPE(tp = P) const Tensor& x,
                  const spmd::DeviceMesh& mesh) {
  if (mesh.axis("dp").size == 1)
    return x; // expected-error {{returned value has type P on axis 'tp', but 'other_axis' is declared to return I there}}
  if (mesh.axis("tp").size == 2)
    return x; // expected-error {{returned value has type P on axis 'tp', but 'other_axis' is declared to return I there}}
  if (mesh.axis("tp").local_rank == 1)
    return x; // expected-error {{returned value has type P on axis 'tp', but 'other_axis' is declared to return I there}}
  if (mesh.size() == 1)
    return x; // expected-error {{returned value has type P on axis 'tp', but 'other_axis' is declared to return I there}}
  return spmd::all_reduce(x, tp, P, I); // expected-error {{'all_reduce' over axis 'tp' may run on some ranks of 'tp' only}}
}

// A guard on tp says nothing about dp.
SPMD_TYPE(dp = I, tp = I)
Tensor guard_on_one_axis(SPMD_TYPE(dp = P, tp = P) const Tensor& x,
                         const spmd::DeviceMesh& mesh) {
  if (mesh.axis("tp").size == 1)
    return x; // expected-error {{returned value has type P on axis 'dp'}}
  return spmd::all_reduce(spmd::all_reduce(x, tp, P, I), dp, P, I);
}
