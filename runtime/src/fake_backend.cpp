// fake_backend.cpp - a c10d process group for single-process checking.
//
// Rank r of a world of N with no peers: every collective completes at once
// with correctly shaped outputs, so a program (or a test) can run a world of
// 8192 ranks' worth of collectives in one process. Values are those of a
// world in which every rank holds this rank's data, except for reductions,
// which leave the data as is (exact when N == 1).
#include <spmd/process_groups.h>

#include "torch_compat.h"

namespace spmd {
namespace {

c10::intrusive_ptr<c10d::Work> done() { return compat::completed_work(); }

// Copies src into dst when the shapes allow, zeros otherwise.
void fill_from(at::Tensor& dst, const at::Tensor& src) {
  if (dst.numel() == src.numel()) {
    dst.copy_(src.reshape(dst.sizes()));
  } else {
    dst.zero_();
  }
}

class FakeBackend : public compat::CollectiveBackend {
 public:
  FakeBackend(int rank, int size) : compat::CollectiveBackend(rank, size) {}

  const std::string getBackendName() const override { return "fake"; }

  c10::intrusive_ptr<c10d::Work> broadcast(
      std::vector<at::Tensor>&, const c10d::BroadcastOptions&) override {
    return done();
  }
  c10::intrusive_ptr<c10d::Work> allreduce(
      std::vector<at::Tensor>&, const c10d::AllreduceOptions&) override {
    return done();
  }
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>&,
      const c10d::AllreduceCoalescedOptions&) override {
    return done();
  }
  c10::intrusive_ptr<c10d::Work> reduce(std::vector<at::Tensor>&,
                                        const c10d::ReduceOptions&) override {
    return done();
  }
  c10::intrusive_ptr<c10d::Work> allgather(
      std::vector<std::vector<at::Tensor>>& outputs,
      std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions&) override {
    for (size_t i = 0; i < outputs.size() && i < inputs.size(); ++i)
      for (auto& out : outputs[i]) fill_from(out, inputs[i]);
    return done();
  }
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::AllgatherOptions&) override {
    auto pieces = output.view({getSize(), -1});
    for (int64_t i = 0; i < getSize(); ++i) {
      auto piece = pieces[i];
      fill_from(piece, input);
    }
    return done();
  }
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs,
      std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions&) override {
    for (size_t i = 0; i < outputs.size() && i < inputs.size(); ++i) {
      if (static_cast<int>(inputs[i].size()) > getRank())
        fill_from(outputs[i], inputs[i][getRank()]);
    }
    return done();
  }
  c10::intrusive_ptr<c10d::Work> alltoall_base(
      at::Tensor& output, at::Tensor& input, std::vector<int64_t>& out_splits,
      std::vector<int64_t>& in_splits, const c10d::AllToAllOptions&) override {
    // Slot s receives what this rank would send to s: equal shapes copy.
    if (out_splits.empty() && in_splits.empty()) {
      fill_from(output, input);
      return done();
    }
    const int64_t n = getSize();
    auto split = [&](const at::Tensor& t, const std::vector<int64_t>& sizes) {
      std::vector<at::Tensor> pieces;
      if (sizes.empty()) return t.chunk(n, 0);
      int64_t start = 0;
      for (int64_t s : sizes) {
        pieces.push_back(t.narrow(0, start, s));
        start += s;
      }
      return pieces;
    };
    auto outs = split(output, out_splits);
    auto ins = split(input, in_splits);
    for (size_t s = 0; s < outs.size(); ++s) {
      if (s < ins.size()) {
        fill_from(outs[s], ins[s]);
      } else {
        outs[s].zero_();
      }
    }
    return done();
  }
  c10::intrusive_ptr<c10d::Work> alltoall(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllToAllOptions&) override {
    for (size_t i = 0; i < outputs.size(); ++i) {
      if (i < inputs.size()) {
        fill_from(outputs[i], inputs[i]);
      } else {
        outputs[i].zero_();
      }
    }
    return done();
  }
  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override {
    return done();
  }
};

}  // namespace

c10::intrusive_ptr<c10d::ProcessGroup> make_fake_process_group(int rank,
                                                               int size) {
  return compat::wrap_backend(c10::make_intrusive<FakeBackend>(rank, size),
                              c10::intrusive_ptr<c10d::Store>(), rank, size,
                              "fake");
}

}  // namespace spmd
