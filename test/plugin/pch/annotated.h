// A header with annotations, compiled into a precompiled header by the tests
// of pch_*.cpp (see ../CMakeLists.txt).
#pragma once
#include "../Inputs/prelude.h"

SPMD_TYPE(tp = V)
Tensor column_parallel(SPMD_TYPE(tp = R) const Tensor& x,
                       SPMD_TYPE(tp = V) const Tensor& w);

struct Layer {
  SPMD_TYPE(tp = V) Tensor weight;
  SPMD_TYPE(tp = R) Tensor forward(SPMD_TYPE(tp = P) const Tensor& x) const;
};

[[spmd::op(nonlinear)]] Tensor act(const Tensor& x);

// An inline body in the header: analysed with the PCH's annotations.
SPMD_TYPE(tp = R)
inline Tensor reduce(SPMD_TYPE(tp = P) const Tensor& p) {
  return spmd::all_reduce(p, tp, P, R);
}
