// Input of plugin.sarif: one return-type error, reported in SARIF.
#include "../Inputs/prelude.h"

SPMD_TYPE(tp = R)
Tensor f(SPMD_TYPE(tp = V) const Tensor& x) { return x; }
