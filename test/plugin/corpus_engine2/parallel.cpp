// Communication regions of the tensor-parallel group. Each one is a no-op
// when the group has one rank, as engines write them.
#include "engine2.h"

namespace llm {

torch::Tensor gather_from_tp_region(torch::Tensor input,
                                    const ParallelArgs& args) {
  const auto world_size = args.world_size();
  if (world_size == 1) {
    // bypass if only one gpu
    return input;
  }
  return spmd::all_gather(input, tp, S(-1), R);
}

torch::Tensor reduce_from_tp_region(torch::Tensor input,
                                    const ParallelArgs& args) {
  const auto world_size = args.world_size();
  if (world_size == 1) {
    return input;
  }
  return spmd::all_reduce(input, tp, P, R);
}

torch::Tensor scatter_to_tp_region(torch::Tensor input,
                                   const ParallelArgs& args) {
  const auto world_size = args.world_size();
  if (world_size == 1) {
    return input;
  }
  return spmd::convert(input, tp, R, S(-1));
}

}  // namespace llm
