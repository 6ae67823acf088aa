// Declarations-only stand-in for c10d's ProcessGroup.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>

#include <memory>
#include <vector>

namespace c10d {
struct Work {
  bool wait();
};
class ProcessGroup {
public:
  std::shared_ptr<Work> allreduce(std::vector<at::Tensor> &tensors);
  std::shared_ptr<Work> _allgather_base(at::Tensor &out, at::Tensor &in);
  std::shared_ptr<Work> _reduce_scatter_base(at::Tensor &out, at::Tensor &in);
  std::shared_ptr<Work> broadcast(std::vector<at::Tensor> &tensors);
  int getSize() const;
  int getRank() const;
};
} // namespace c10d
