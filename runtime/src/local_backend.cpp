// local_backend.cpp - a c10d backend for ranks that are threads of one
// process (Backend::Local, used by spmd::testing::simulate).
//
// The ranks of a group share one Hub. A collective is one round: every rank
// deposits pointers to its own tensors and waits; the last rank to arrive
// computes every rank's outputs (in rank order, so sums are deterministic)
// and releases the others. Tensors move by reference, never through a
// socket. A rank that does not arrive within the timeout, or a rank whose
// backend is destroyed (its program threw and its World unwound), makes the
// waiting ranks raise at once with a message naming the missing ranks.
#include <ATen/ATen.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <spmd/process_groups.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "torch_compat.h"

namespace spmd {
namespace {

using Clock = std::chrono::steady_clock;

/// One rank's side of a collective: pointers to the caller's arguments
/// (valid while the rank waits in Hub::run).
struct Part {
  std::vector<at::Tensor>* tensors = nullptr;  // allreduce, broadcast, ins
  std::vector<std::vector<at::Tensor>>* lists = nullptr;  // outs / ins
  at::Tensor* in = nullptr;                               // *_base
  at::Tensor* out = nullptr;
  std::vector<int64_t>* in_splits = nullptr;
  std::vector<int64_t>* out_splits = nullptr;
  int64_t root = 0;
};

using Combine = std::function<void(const std::vector<Part*>&)>;

/// The rendezvous of one group's ranks. Thread-safe.
class Hub {
 public:
  Hub(int size, std::chrono::milliseconds timeout)
      : size_(size), timeout_(timeout), parts_(size), ops_(size) {}

  /// Runs one collective for `rank`: deposits `part`; the last rank to
  /// arrive runs `combine` over every rank's part. Errors: std::runtime_error
  /// when the ranks called different collectives, a peer left, `combine`
  /// threw (every rank gets that message), or the timeout passed.
  void run(int rank, const char* op, Part& part, const Combine& combine) {
    std::unique_lock<std::mutex> lock(mu_);
    if (left_ >= 0) throw std::runtime_error(left_message(op));
    const uint64_t round = generation_;
    parts_[rank] = &part;
    ops_[rank] = op;
    if (++arrived_ == size_) {
      error_.clear();
      for (int r = 0; r < size_ && error_.empty(); ++r) {
        if (std::string(ops_[r]) != op)
          error_ = std::string(
                       "the ranks called different collectives: "
                       "rank ") +
                   std::to_string(r) + " " + ops_[r] + ", rank " +
                   std::to_string(rank) + " " + op;
      }
      if (error_.empty()) {
        try {
          // Plain tensor copies: no autograd, no runtime checker.
          at::NoGradGuard no_grad;
          c10::impl::ExcludeDispatchKeyGuard untyped(compat::kCheckerModeKey);
          combine(parts_);
        } catch (const std::exception& e) {
          error_ = e.what();
        }
      }
      finish_round();
      if (!error_.empty()) throw std::runtime_error(error_);
      return;
    }
    const auto deadline = Clock::now() + timeout_;
    const bool released = cv_.wait_until(
        lock, deadline, [&] { return generation_ != round || left_ >= 0; });
    if (generation_ != round) {
      if (!error_.empty()) throw std::runtime_error(error_);
      return;
    }
    // Withdraw this rank's part: the round will not complete.
    std::string missing;
    for (int r = 0; r < size_; ++r)
      if (parts_[r] == nullptr)
        missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    parts_[rank] = nullptr;
    --arrived_;
    if (!released)
      throw std::runtime_error(
          std::string("local backend: ") + op + " timed out after " +
          std::to_string(timeout_.count()) + " ms waiting for rank(s) " +
          missing + " of the group");
    throw std::runtime_error(left_message(op));
  }

  /// Rank `rank` has destroyed its backend: peers waiting now or later fail.
  void leave(int rank) {
    std::lock_guard<std::mutex> lock(mu_);
    if (left_ < 0) left_ = rank;
    cv_.notify_all();
  }

 private:
  void finish_round() {
    std::fill(parts_.begin(), parts_.end(), nullptr);
    arrived_ = 0;
    ++generation_;
    cv_.notify_all();
  }
  std::string left_message(const char* op) const {
    return std::string("local backend: ") + op + ": rank " +
           std::to_string(left_) +
           " of the group has left it (its program returned or threw)";
  }

  const int size_;
  const std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  uint64_t generation_ = 0;
  int arrived_ = 0;
  int left_ = -1;
  std::string error_;  // of the round that finished last
  std::vector<Part*> parts_;
  std::vector<const char*> ops_;
};

/// Hubs by id, so that a group's ranks find rank 0's hub through the store.
/// An entry holds its hub until every other rank has joined: rank 0 may
/// destroy its group (a mesh it no longer uses) before a slow peer joins,
/// and that peer must still find the hub (and then learn that rank 0 left).
class Registry {
 public:
  static Registry& get() {
    static Registry r;
    return r;
  }
  uint64_t add(std::shared_ptr<Hub> hub, int joiners) {
    std::lock_guard<std::mutex> lock(mu_);
    hubs_[++next_] = {std::move(hub), joiners};
    return next_;
  }
  std::shared_ptr<Hub> join(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = hubs_.find(id);
    if (it == hubs_.end()) return nullptr;
    std::shared_ptr<Hub> hub = it->second.hub;
    if (--it->second.joiners <= 0) hubs_.erase(it);
    return hub;
  }

 private:
  struct Entry {
    std::shared_ptr<Hub> hub;
    int joiners;  // ranks still to join
  };
  std::mutex mu_;
  uint64_t next_ = 0;
  std::unordered_map<uint64_t, Entry> hubs_;
};

at::Tensor fold(const std::vector<at::Tensor>& xs, c10d::ReduceOp op) {
  at::Tensor acc = xs[0].clone();
  for (size_t i = 1; i < xs.size(); ++i) {
    switch (op.op_) {
      case c10d::ReduceOp::SUM:
        acc.add_(xs[i]);
        break;
      case c10d::ReduceOp::PRODUCT:
        acc.mul_(xs[i]);
        break;
      case c10d::ReduceOp::MIN:
        acc = at::minimum(acc, xs[i]);
        break;
      case c10d::ReduceOp::MAX:
        acc = at::maximum(acc, xs[i]);
        break;
      default:
        throw std::runtime_error(
            "local backend: only SUM, PRODUCT, MIN and MAX reductions are "
            "supported");
    }
  }
  return acc;
}

std::vector<at::Tensor> pieces_of(const at::Tensor& t,
                                  const std::vector<int64_t>& sizes,
                                  int64_t n) {
  if (sizes.empty()) return t.chunk(n, 0);
  std::vector<at::Tensor> pieces;
  int64_t start = 0;
  for (int64_t s : sizes) {
    pieces.push_back(t.narrow(0, start, s));
    start += s;
  }
  return pieces;
}

c10::intrusive_ptr<c10d::Work> done() { return compat::completed_work(); }

class LocalBackend : public compat::CollectiveBackend {
 public:
  LocalBackend(int rank, int size, std::shared_ptr<Hub> hub)
      : compat::CollectiveBackend(rank, size), hub_(std::move(hub)) {}
  ~LocalBackend() override { hub_->leave(getRank()); }

  const std::string getBackendName() const override { return "local"; }

  c10::intrusive_ptr<c10d::Work> allreduce(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& o) override {
    Part part;
    part.tensors = &tensors;
    const c10d::ReduceOp op = o.reduceOp;
    hub_->run(getRank(), "allreduce", part, [op](const std::vector<Part*>& ps) {
      for (size_t t = 0; t < ps[0]->tensors->size(); ++t) {
        std::vector<at::Tensor> xs;
        for (Part* p : ps) xs.push_back(p->tensors->at(t));
        at::Tensor sum = fold(xs, op);
        for (Part* p : ps) p->tensors->at(t).copy_(sum);
      }
    });
    return done();
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& o) override {
    c10d::AllreduceOptions a;
    a.reduceOp = o.reduceOp;
    return allreduce(tensors, a);
  }

  c10::intrusive_ptr<c10d::Work> broadcast(
      std::vector<at::Tensor>& tensors,
      const c10d::BroadcastOptions& o) override {
    Part part;
    part.tensors = &tensors;
    part.root = o.rootRank;
    hub_->run(getRank(), "broadcast", part, [](const std::vector<Part*>& ps) {
      const Part* root = ps.at(ps[0]->root);
      for (Part* p : ps)
        if (p != root)
          for (size_t t = 0; t < p->tensors->size(); ++t)
            p->tensors->at(t).copy_(root->tensors->at(t));
    });
    return done();
  }

  c10::intrusive_ptr<c10d::Work> allgather(
      std::vector<std::vector<at::Tensor>>& outputs,
      std::vector<at::Tensor>& inputs, const c10d::AllgatherOptions&) override {
    Part part;
    part.lists = &outputs;
    part.tensors = &inputs;
    hub_->run(getRank(), "allgather", part, [](const std::vector<Part*>& ps) {
      for (Part* p : ps)
        for (size_t t = 0; t < p->lists->size(); ++t)
          for (size_t r = 0; r < ps.size(); ++r)
            p->lists->at(t).at(r).copy_(ps[r]->tensors->at(t));
    });
    return done();
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::AllgatherOptions&) override {
    Part part;
    part.out = &output;
    part.in = &input;
    hub_->run(getRank(), "_allgather_base", part,
              [](const std::vector<Part*>& ps) {
                const int64_t n = static_cast<int64_t>(ps.size());
                for (Part* p : ps) {
                  auto pieces = p->out->view({n, -1});
                  for (int64_t r = 0; r < n; ++r)
                    pieces[r].copy_(ps[r]->in->reshape({-1}));
                }
              });
    return done();
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs,
      std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& o) override {
    Part part;
    part.tensors = &outputs;
    part.lists = &inputs;
    const c10d::ReduceOp op = o.reduceOp;
    hub_->run(getRank(), "reduce_scatter", part,
              [op](const std::vector<Part*>& ps) {
                for (size_t d = 0; d < ps.size(); ++d)
                  for (size_t t = 0; t < ps[d]->tensors->size(); ++t) {
                    std::vector<at::Tensor> xs;
                    for (Part* p : ps) xs.push_back(p->lists->at(t).at(d));
                    ps[d]->tensors->at(t).copy_(fold(xs, op));
                  }
              });
    return done();
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(
      at::Tensor& output, at::Tensor& input, std::vector<int64_t>& out_splits,
      std::vector<int64_t>& in_splits, const c10d::AllToAllOptions&) override {
    Part part;
    part.out = &output;
    part.in = &input;
    part.out_splits = &out_splits;
    part.in_splits = &in_splits;
    hub_->run(
        getRank(), "alltoall_base", part, [](const std::vector<Part*>& ps) {
          const int64_t n = static_cast<int64_t>(ps.size());
          std::vector<std::vector<at::Tensor>> ins;
          // Clone the inputs first: an output may alias an input.
          for (Part* p : ps) {
            std::vector<at::Tensor> pieces;
            for (const at::Tensor& x : pieces_of(*p->in, *p->in_splits, n))
              pieces.push_back(x.clone());
            ins.push_back(std::move(pieces));
          }
          for (int64_t d = 0; d < n; ++d) {
            auto outs = pieces_of(*ps[d]->out, *ps[d]->out_splits, n);
            for (int64_t s = 0; s < n; ++s) outs.at(s).copy_(ins[s].at(d));
          }
        });
    return done();
  }

  c10::intrusive_ptr<c10d::Work> alltoall(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllToAllOptions&) override {
    Part part;
    part.tensors = &outputs;
    part.in_splits = nullptr;
    std::vector<std::vector<at::Tensor>> in_list{inputs};
    part.lists = &in_list;
    hub_->run(getRank(), "alltoall", part, [](const std::vector<Part*>& ps) {
      std::vector<std::vector<at::Tensor>> ins;
      for (Part* p : ps) {
        std::vector<at::Tensor> copies;
        for (const at::Tensor& x : p->lists->at(0)) copies.push_back(x.clone());
        ins.push_back(std::move(copies));
      }
      for (size_t d = 0; d < ps.size(); ++d)
        for (size_t s = 0; s < ps.size(); ++s)
          ps[d]->tensors->at(s).copy_(ins[s].at(d));
    });
    return done();
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions&) override {
    Part part;
    hub_->run(getRank(), "barrier", part, [](const std::vector<Part*>&) {});
    return done();
  }

 private:
  std::shared_ptr<Hub> hub_;
};

}  // namespace

c10::intrusive_ptr<c10d::ProcessGroup> make_local_process_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds rendezvous_timeout,
    std::chrono::milliseconds timeout) {
  static const std::string kKey = "spmd/local_hub";
  std::shared_ptr<Hub> hub;
  if (rank == 0) {
    hub = std::make_shared<Hub>(size, timeout);
    store->set(kKey, c10::str(Registry::get().add(hub, size - 1)));
  } else {
    store->wait({kKey}, rendezvous_timeout);
    const std::vector<uint8_t> v = store->get(kKey);
    hub = Registry::get().join(std::stoull(std::string(v.begin(), v.end())));
    if (!hub)
      throw std::runtime_error(
          "local backend: the store names no live group "
          "(rank " +
          std::to_string(rank) +
          " joined a group twice, or two groups share "
          "one store prefix)");
  }
  // Registered as "gloo": the runtime then takes exactly the Gloo path
  // (its consistency check, dtype support, the all_to_all reduce-scatter),
  // so a simulation checks what a Gloo run checks.
  return compat::wrap_backend(
      c10::make_intrusive<LocalBackend>(rank, size, std::move(hub)), store,
      rank, size, "gloo");
}

}  // namespace spmd
