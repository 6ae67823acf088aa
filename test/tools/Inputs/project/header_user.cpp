#include "annotated.h"

Tensor caller(SPMD_TYPE(tp = R) const Tensor& x) {
  return reduce_partial(x);
}
