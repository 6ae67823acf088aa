// Divergent collectives (docs/type-system.md, "Communication safety"): a
// collective over an axis must run on every rank of that axis. It is an
// error under a branch, a loop or after an early exit whose condition may
// differ across those ranks: one that reads this rank's index on the axis
// ([[spmd::axis_rank]]), the global rank, or the values of a tensor that is
// V or P there. Conditions that are the same on every rank (R or I data,
// sizes, flags, constants) are fine, and so is a branch whose every way runs
// the same collectives.
#include "Inputs/prelude.h"

#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>

SPMD_AXIS_RANK(tp) int64_t tp_rank();
SPMD_AXIS_RANK(dp) int64_t dp_rank();
SPMD_AXIS_SIZE(tp) int64_t tp_size();

// --- where it fires ---------------------------------------------------------

SPMD_TYPE(tp = R)
Tensor reduce_on_rank_zero(SPMD_TYPE(tp = P) const Tensor& x) {
  Tensor y = spmd::all_reduce(x, tp, P, R); // not under the branch: fine
  if (tp_rank() == 0) // expected-note {{this condition reads 'tp_rank()', this rank's index on 'tp'}}
    y = spmd::all_reduce(x, tp, P, R); // expected-error {{'all_reduce' over axis 'tp' may run on some ranks of 'tp' only: a branch on the way to it depends on a value that differs across 'tp'}}
  return y;
}

SPMD_TYPE(tp = R)
Tensor early_return(SPMD_TYPE(tp = P) const Tensor& x,
                    SPMD_TYPE(tp = R) const Tensor& fallback) {
  if (tp_rank() != 0) // expected-note {{this condition reads 'tp_rank()'}}
    return fallback;
  return spmd::all_reduce(x, tp, P, R); // expected-error {{'all_reduce' over axis 'tp' may run on some ranks of 'tp' only}}
}

SPMD_TYPE(tp = R)
Tensor rank_dependent_trip_count(SPMD_TYPE(tp = R) Tensor x) {
  for (int64_t i = 0; i < tp_rank(); ++i) // expected-note {{this condition reads 'tp_rank()'}}
    x = spmd::all_reduce(spmd::convert(x, tp, R, P), tp, P, R); // expected-error {{'all_reduce' over axis 'tp' may run on some ranks of 'tp' only: the trip count of a loop around it depends on a value that differs across 'tp'}}
  return x;
}

SPMD_TYPE(tp = R)
Tensor data_dependent(SPMD_TYPE(tp = P) const Tensor& x,
                      SPMD_TYPE(tp = V) const Tensor& tokens,
                      SPMD_TYPE(tp = R) const Tensor& fallback) {
  if (tokens.item<float>() > 0) // expected-note {{this condition reads the values of a tensor that is V on axis 'tp' ('tokens.item<float>()')}}
    return spmd::all_reduce(x, tp, P, R); // expected-error {{'all_reduce' over axis 'tp' may run on some ranks of 'tp' only}}
  return fallback;
}

SPMD_TYPE(tp = R)
Tensor through_variables(SPMD_TYPE(tp = P) const Tensor& x,
                         SPMD_TYPE(tp = V) const Tensor& shard) {
  int64_t r = tp_rank();
  bool leader = r == 0;
  Tensor y = spmd::all_reduce(x, tp, P, R);
  if (leader) // expected-note {{this condition reads 'tp_rank()'}}
    y = spmd::all_gather(shard, tp, V, R); // expected-error {{'all_gather' over axis 'tp' may run}}
  return y;
}

SPMD_TYPE(tp = R)
Tensor global_rank(SPMD_TYPE(tp = P) const Tensor& x,
                   const c10d::ProcessGroup& world) {
  Tensor y = spmd::all_reduce(x, tp, P, R);
  if (world.getRank() % 2 == 0) // expected-note {{this condition reads 'world.getRank()', the global rank (it differs on every axis)}}
    y = spmd::all_reduce(x, tp, P, R); // expected-error {{'all_reduce' over axis 'tp' may run on some ranks of 'tp' only}}
  return y;
}

void sync_gradients(Tensor& g) {
  g = spmd::all_reduce(g, tp, P, R); // expected-note {{the collective is here}}
}

void checkpoint_on_leader(Tensor& g) {
  if (tp_rank() == 0) // expected-note {{this condition reads 'tp_rank()'}}
    sync_gradients(g); // expected-error {{this call of 'sync_gradients' runs all_reduce over axis 'tp' may run on some ranks of 'tp' only}}
}

// --- where it must not fire -------------------------------------------------

struct Block {
  bool reduce_output_ = true;
  SPMD_TYPE(tp = R)
  Tensor forward(SPMD_TYPE(tp = P) const Tensor& x,
                 SPMD_TYPE(tp = R) const Tensor& bias, int64_t layers) const {
    Tensor y = spmd::all_reduce(x, tp, P, R);
    if (reduce_output_) // a field: the same on every rank
      y = spmd::all_reduce(x, tp, P, R);
    if (bias.defined()) // structure, not data
      y = y + bias;
    if (tp_size() > 1) // a size
      y = spmd::all_reduce(spmd::convert(y, tp, R, P), tp, P, R);
    for (int64_t i = 0; i < layers; ++i) // a parameter's value
      y = spmd::all_reduce(spmd::convert(y, tp, R, P), tp, P, R);
    return y;
  }
};

SPMD_TYPE(tp = R)
Tensor replicated_data(SPMD_TYPE(tp = P) const Tensor& x,
                       SPMD_TYPE(tp = R) const Tensor& loss,
                       SPMD_TYPE(tp = R) const Tensor& fallback) {
  if (loss.item<float>() > 0) // R: every rank of tp reads the same value
    return spmd::all_reduce(x, tp, P, R);
  return fallback;
}

SPMD_TYPE(tp = R)
Tensor other_axis(SPMD_TYPE(tp = P) const Tensor& x) {
  Tensor y = spmd::all_reduce(x, tp, P, R);
  if (dp_rank() == 0) // differs across dp, not across tp
    y = spmd::all_reduce(x, tp, P, R);
  return y;
}

SPMD_TYPE(tp = R)
Tensor both_ways_reduce(SPMD_TYPE(tp = P) const Tensor& a,
                        SPMD_TYPE(tp = P) const Tensor& b) {
  Tensor y;
  if (tp_rank() == 0) // every way runs one all_reduce(P, R) over tp
    y = spmd::all_reduce(a, tp, P, R);
  else
    y = spmd::all_reduce(b, tp, P, R);
  return y;
}

SPMD_TYPE(tp = R)
Tensor agreed_flag(SPMD_TYPE(tp = P) const Tensor& x,
                   SPMD_TYPE(tp = P) const Tensor& votes,
                   SPMD_TYPE(tp = R) const Tensor& fallback) {
  Tensor total = spmd::all_reduce(votes, tp, P, R);
  if (total.item<float>() > 0) // reduced first: R
    return spmd::all_reduce(x, tp, P, R);
  return fallback;
}

SPMD_TYPE(tp = R)
Tensor rank_branch_without_collective(SPMD_TYPE(tp = P) const Tensor& x,
                                      SPMD_TYPE(tp = R) Tensor scale) {
  if (tp_rank() == 0)
    scale = scale * 2; // local work only
  return spmd::all_reduce(x, tp, P, R) * 0 + scale * 0;
}

// --- the annotation -----------------------------------------------------------

[[spmd::axis_rank(42)]] int64_t not_an_axis(); // expected-error {{'spmd::axis_rank' takes one spmd::Axis constant, the axis along which the function returns this rank's index, e.g. [[spmd::axis_rank(tp)]]}}
[[spmd::axis_rank(tp)]] double on_a_variable = 0; // expected-error {{'spmd::axis_rank' on a variable or data member needs an integer type}}
