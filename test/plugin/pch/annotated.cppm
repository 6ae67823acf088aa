// A C++20 module interface with annotations, precompiled by the test fixture
// plugin.module.build (see ../CMakeLists.txt) and imported by module_use.cpp.
module;
#include "../Inputs/prelude.h"
export module annotated;

export SPMD_TYPE(tp = V)
Tensor column_parallel(SPMD_TYPE(tp = R) const Tensor& x,
                       SPMD_TYPE(tp = V) const Tensor& w);

export struct Layer {
  SPMD_TYPE(tp = V) Tensor weight;
  SPMD_TYPE(tp = R) Tensor forward(SPMD_TYPE(tp = P) const Tensor& x) const;
};
