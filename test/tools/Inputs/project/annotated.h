// A function whose SPMD signature only this header gives: a checker that
// lost the header's annotations would not see the bad call in its user.
#pragma once
#include "prelude.h"

Tensor reduce_partial(SPMD_TYPE(tp = P) const Tensor& y);
