// Size-1 bypass guards: on an axis of one rank R, I, V and P coincide, so a
// branch taken only when the axis has one rank may skip a collective. The
// checker knows an expression is the size of an axis when it calls a
// function marked [[spmd::axis_size(axis)]] (or reads a local initialised
// from one); it recognises `== 1`, `<= 1`, `< 2` (and their negations
// `!= 1`, `> 1`, `>= 2` on the other edge). On such a path nothing is
// reported on that axis, and its types do not conflict with other paths.
// RUN-PLUGIN: -Xclang -verify -Xclang -verify-ignore-unexpected=note
#include "Inputs/prelude.h"

struct ParallelArgs {
  [[spmd::axis_size(tp)]] int64_t tp_size() const;
  [[spmd::axis_size(dp)]] int64_t dp_size() const;
  int64_t layers() const;
};

[[spmd::axis_size(tp)]] int64_t tp_world_size();

SPMD_TYPE(tp = I)
Tensor early_return(SPMD_TYPE(tp = P) const Tensor& x, const ParallelArgs& a) {
  if (a.tp_size() == 1)
    return x;
  return spmd::all_reduce(x, tp, P, I);
}

SPMD_TYPE(tp = I)
Tensor guarded_collective(SPMD_TYPE(tp = P) const Tensor& x,
                          const ParallelArgs& a) {
  Tensor y = x;
  if (a.tp_size() > 1)
    y = spmd::all_reduce(x, tp, P, I);
  return y;
}

SPMD_TYPE(tp = I)
Tensor through_a_local(SPMD_TYPE(tp = P) const Tensor& x) {
  const int64_t world_size = tp_world_size();
  Tensor y;
  if (world_size != 1) {
    y = spmd::all_reduce(x, tp, P, I);
  } else {
    y = x;
  }
  return y.relu();
}

SPMD_TYPE(tp = I)
Tensor reversed_operands(SPMD_TYPE(tp = P) const Tensor& x,
                         const ParallelArgs& a) {
  if (2 > a.tp_size())
    return x;
  return spmd::all_reduce(x, tp, P, I);
}

// Not a guard: another function, another constant.
SPMD_TYPE(tp = I)
Tensor not_a_size(SPMD_TYPE(tp = P) const Tensor& x, const ParallelArgs& a) {
  if (a.layers() == 1)
    return x; // expected-error {{returned value has type P on axis 'tp', but 'not_a_size' is declared to return I there}}
  if (a.tp_size() == 2)
    return x; // expected-error {{returned value has type P on axis 'tp'}}
  return spmd::all_reduce(x, tp, P, I);
}

// A guard on tp says nothing about dp.
SPMD_TYPE(dp = I, tp = I)
Tensor other_axis(SPMD_TYPE(dp = P, tp = P) const Tensor& x,
                  const ParallelArgs& a) {
  if (a.tp_size() == 1)
    return x; // expected-error {{returned value has type P on axis 'dp'}}
  return spmd::all_reduce(spmd::all_reduce(x, tp, P, I), dp, P, I);
}

// The other edge of `flag && size > 1` is also taken on many ranks.
SPMD_TYPE(tp = I)
Tensor flag_and_guard(SPMD_TYPE(tp = P) const Tensor& x, bool flag,
                      const ParallelArgs& a) {
  Tensor y = x;
  if (flag && a.tp_size() > 1)
    y = spmd::all_reduce(x, tp, P, I);
  return y; // expected-error {{'y' has type I on axis 'tp' on one path and P on another}}
}

// The attribute itself.
[[spmd::axis_size]] int64_t no_axis(); // expected-error {{'spmd::axis_size' takes one spmd::Axis constant}}
[[spmd::axis_size(tp, dp)]] int64_t two_axes(); // expected-error {{'spmd::axis_size' takes one spmd::Axis constant}}
// On a variable or data member it holds the size (process_groups.cpp); a
// bool holds no size.
[[spmd::axis_size(tp)]] bool not_a_count = false; // expected-error {{'spmd::axis_size' on a variable or data member needs an integer type (it holds the number), not 'bool'}}
