// Shared prologue of the plugin tests: the mini libtorch, the runtime's API
// headers (the real ones) and two mesh axes.
#pragma once

#include <spmd/collectives.h>
#include <spmd/type_annotations.h>
#include <torch/torch.h>

using namespace spmd::types;
using torch::Tensor;

SPMD_AXIS(dp);
SPMD_AXIS(tp);

/// A function the checker cannot see into: its result type is unknown.
Tensor opaque(const Tensor& x);
