// Process-group objects bound to a mesh axis (SPMD_AXIS_GROUP, docs/plugin.md
// "Annotating an existing engine", docs/type-system.md §18.3): a variable,
// parameter or data member of any type declared once to be the group of an
// axis. Its size queries (`getSize()`, `size()`, `world_size()`, ... on the
// object, through `->`, `*`, `.get()`, a local alias, or a free function of
// the group) are that axis's size wherever it appears, so a size-1 guard on
// them bypasses on that axis only; its rank queries (`getRank()`, `rank()`)
// are that axis's rank (a branch on them is divergent on that axis only). A
// variable or data member of integer type may hold the size or the rank
// itself (SPMD_AXIS_SIZE / SPMD_AXIS_RANK on it).
#include "Inputs/prelude.h"

#include <memory>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

// An engine's own group class: one `world_size()` accessor for every group.
struct ProcessGroup {
  int64_t world_size() const;
  int64_t rank() const;
};
int64_t get_world_size(const ProcessGroup* group);

struct ParallelArgs {
  SPMD_AXIS_GROUP(tp) ProcessGroup* tp_group = nullptr;
  SPMD_AXIS_GROUP(dp) std::shared_ptr<ProcessGroup> dp_group;
  ProcessGroup* other_group = nullptr; // not bound: its size is no axis's
};

// --- where a size query is an axis's size (no diagnostic) --------------------

class RowParallel {
public:
  SPMD_TYPE(tp = R)
  Tensor reduce(SPMD_TYPE(tp = P) const Tensor& x) const {
    if (pg_->getSize() == 1) // c10d's accessor on a bound field
      return x;
    return spmd::all_reduce(x, tp, P, R);
  }
  SPMD_TYPE(tp = R)
  Tensor reduce_by_count(SPMD_TYPE(tp = P) const Tensor& x) const {
    if (world_size_ <= 1) // a data member holding the size
      return x;
    return spmd::all_reduce(x, tp, P, R);
  }

private:
  SPMD_AXIS_GROUP(tp) c10::intrusive_ptr<c10d::ProcessGroup> pg_;
  SPMD_AXIS_SIZE(tp) int64_t world_size_ = 1;
};

SPMD_TYPE(tp = R)
Tensor engine_wide_accessor(SPMD_TYPE(tp = P) const Tensor& x,
                            const ParallelArgs& args) {
  if (args.tp_group->world_size() == 1)
    return x;
  return spmd::all_reduce(x, tp, P, R);
}

SPMD_TYPE(dp = R)
Tensor through_a_smart_pointer(SPMD_TYPE(dp = P) const Tensor& x,
                               const ParallelArgs& args) {
  if ((*args.dp_group).world_size() > 1)
    return spmd::all_reduce(x, dp, P, R);
  return x;
}

SPMD_TYPE(tp = R)
Tensor bound_parameter(SPMD_TYPE(tp = P) const Tensor& x,
                       SPMD_AXIS_GROUP(tp) const ProcessGroup& group) {
  const int64_t n = group.world_size(); // a local initialised from it
  if (n == 1)
    return x;
  return spmd::all_reduce(x, tp, P, R);
}

SPMD_TYPE(tp = R)
Tensor local_alias(SPMD_TYPE(tp = P) const Tensor& x,
                   const ParallelArgs& args) {
  const ProcessGroup& g = *args.tp_group;
  if (get_world_size(&g) < 2) // a free function of the group
    return x;
  return spmd::all_reduce(x, tp, P, R);
}

SPMD_TYPE(tp = R)
Tensor size_in_a_local(SPMD_TYPE(tp = P) const Tensor& x, int64_t n_ranks) {
  SPMD_AXIS_SIZE(tp) const int64_t world_size = n_ranks;
  if (world_size == 1)
    return x;
  return spmd::all_reduce(x, tp, P, R);
}

// --- where it is not (diagnostics kept) --------------------------------------

// A guard on one group's size says nothing about another axis.
SPMD_TYPE(dp = R, tp = R)
Tensor other_axis(SPMD_TYPE(dp = P, tp = R) const Tensor& x,
                  const ParallelArgs& args) {
  if (args.tp_group->world_size() == 1)
    return x; // expected-error {{returned value has type P on axis 'dp'}}
  // expected-note@-5 {{declared type is}}
  // expected-note@-2 {{insert spmd::all_reduce}}
  // expected-note@-6 {{type P on axis 'dp' declared here}}
  return spmd::all_reduce(x, dp, P, R);
}

// An unbound group's size is no axis's size.
SPMD_TYPE(tp = R)
Tensor unbound_group(SPMD_TYPE(tp = P) const Tensor& x,
                     const ParallelArgs& args) {
  if (args.other_group->world_size() == 1)
    return x; // expected-error {{returned value has type P on axis 'tp'}}
  // expected-note@-5 {{declared type is}}
  // expected-note@-2 {{insert spmd::all_reduce}}
  // expected-note@-6 {{type P on axis 'tp' declared here}}
  return spmd::all_reduce(x, tp, P, R);
}

// The rank of a bound group varies on its axis only.
SPMD_TYPE(dp = R, tp = R)
Tensor rank_of_a_group(SPMD_TYPE(dp = P, tp = P) const Tensor& x,
                       const ParallelArgs& args) {
  Tensor y = spmd::all_reduce(spmd::all_reduce(x, tp, P, R), dp, P, R);
  if (args.tp_group->rank() == 0) { // expected-note {{this condition reads 'args.tp_group->rank()', this rank's index on 'tp'}}
    y = spmd::all_reduce(spmd::all_reduce(x, dp, P, R), tp, P, R); // expected-error {{'all_reduce' over axis 'tp' may run on some ranks of 'tp' only}}
  }
  return y;
}

// --- the annotation ---------------------------------------------------------

SPMD_AXIS_GROUP(tp) ProcessGroup* tp_group_of(); // expected-error {{'spmd::axis_group' applies to variables, parameters and data members holding a process group, not to}}
struct Bad {
  SPMD_AXIS_SIZE(tp) double size_; // expected-error {{'spmd::axis_size' on a variable or data member needs an integer type (it holds the number), not 'double'; for the process-group object itself write [[spmd::axis_group(tp)]]}}
  SPMD_AXIS_GROUP(42) ProcessGroup* group_; // expected-error {{'spmd::axis_group' takes one spmd::Axis constant, the axis whose process group the object is, e.g. [[spmd::axis_group(tp)]]}}
};

// --- a path conflict that an undeclared size would explain -------------------

struct Unbound {
  int64_t world_size_ = 1; // not declared to be tp's size
  SPMD_TYPE(tp = R)
  Tensor reduce(SPMD_TYPE(tp = P) const Tensor& x) const {
    Tensor y = x;
    if (world_size_ > 1) // expected-note {{if 'world_size_' is the number of ranks of an axis, declare it: SPMD_AXIS_SIZE(axis) on the accessor, variable or data member it comes from, or SPMD_AXIS_GROUP(axis) on the process group it is read from; a branch taken only on one rank then conflicts with no other path}}
      y = spmd::all_reduce(x, tp, P, R); // expected-note {{type R on axis 'tp'}}
    return y.relu(); // expected-error {{'y' has type R on axis 'tp' on one path and P on another}}
    // expected-note@-5 {{type P on axis 'tp' declared here}}
  }
  // A conflict under another kind of branch gets no such note.
  SPMD_TYPE(tp = R)
  Tensor flag(SPMD_TYPE(tp = P) const Tensor& x, bool reduce) const {
    Tensor y = x;
    if (reduce)
      y = spmd::all_reduce(x, tp, P, R); // expected-note {{type R on axis 'tp'}}
    return y.relu(); // expected-error {{'y' has type R on axis 'tp' on one path and P on another}}
    // expected-note@-5 {{type P on axis 'tp' declared here}}
  }
};
