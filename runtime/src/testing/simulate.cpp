// simulate.cpp - every rank of a mesh inside this process: threads over the
// local backend or Gloo on loopback (real values) or the fake backend rank
// after rank (shapes).
//
// Ranks reuse the runtime's own World / DeviceMesh creation, so what runs is
// what runs under torchrun, minus the processes. A rank that throws destroys
// its World on the way out, which leaves its groups (closes its Gloo
// connections), so peers blocked on it fail at once instead of waiting for the
// timeout.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <spmd/checker.h>
#include <spmd/errors.h>
#include <spmd/testing.h>

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "internal.h"

namespace spmd::testing {
namespace {

using Clock = std::chrono::steady_clock;

int64_t mesh_size(const std::vector<MeshDim>& shape) {
  int64_t n = 1;
  for (const MeshDim& d : shape) n *= d.size;
  return n;
}

std::string print_mesh(const std::vector<MeshDim>& shape) {
  std::ostringstream os;
  os << "DeviceMesh(";
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << (shape[i].axis.name ? shape[i].axis.name : "?")
       << "=" << shape[i].size;
  os << ")";
  return os.str();
}

// Row-major coordinates of `rank` (the last axis has stride 1).
std::vector<int64_t> coordinates_of(const std::vector<MeshDim>& shape,
                                    int64_t rank) {
  std::vector<int64_t> c(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    c[i] = rank % shape[i].size;
    rank /= shape[i].size;
  }
  return c;
}

std::string print_coordinates(const std::vector<MeshDim>& shape, int rank) {
  auto c = coordinates_of(shape, rank);
  std::ostringstream os;
  for (size_t i = 0; i < shape.size(); ++i)
    os << (i ? ", " : "") << shape[i].axis.name << "=" << c[i];
  return os.str();
}

void validate(const std::vector<MeshDim>& shape, const SimulateOptions& o) {
  if (shape.empty())
    throw std::invalid_argument(
        "simulate: the mesh shape is empty; give at least one axis, e.g. "
        "{{tp, 2}}");
  for (const MeshDim& d : shape) {
    if (d.axis.name == nullptr || *d.axis.name == '\0')
      throw std::invalid_argument("simulate: a mesh axis has no name");
    if (d.size < 1)
      throw std::invalid_argument(
          std::string("simulate: axis '") + d.axis.name + "' has size " +
          std::to_string(d.size) + "; sizes must be >= 1");
  }
  if (o.timeout.count() <= 0 || o.deadline.count() <= 0)
    throw std::invalid_argument(
        "simulate: timeout and deadline must be positive");
  if (o.mode == Mode::Values && o.backend != Backend::Local &&
      o.backend != Backend::Gloo)
    throw std::invalid_argument(
        std::string("simulate: backend '") + to_string(o.backend) +
        "' cannot run Mode::Values; use Backend::Local (default) or "
        "Backend::Gloo");
  if (o.steps < 0) throw std::invalid_argument("simulate: steps must be >= 0");
  if (o.intra_op_threads < 1)
    throw std::invalid_argument("simulate: intra_op_threads must be >= 1");
  if (mesh_size(shape) > (int64_t{1} << 24))
    throw std::invalid_argument("simulate: " + print_mesh(shape) +
                                " has too many ranks");
  if (o.mode == Mode::Values && mesh_size(shape) > 1024)
    throw std::invalid_argument(
        "simulate: " + print_mesh(shape) + " has " +
        std::to_string(mesh_size(shape)) +
        " ranks, too many for one thread and Gloo group per rank; use "
        "Mode::Fake with meta tensors to check types and shapes at this "
        "scale");
  for (int r : o.fake_ranks) {
    if (r < 0 || r >= mesh_size(shape))
      throw std::invalid_argument("simulate: fake_ranks has rank " +
                                  std::to_string(r) + ", not in " +
                                  print_mesh(shape));
  }
}

// The state one rank's thread shares with simulate. Heap-allocated and
// shared, so that a hung thread that is left behind never touches freed
// memory of simulate's frame.
struct RankSlot {
  bool done = false;
  bool failed = false;
  Clock::time_point finished;
  std::string message;
  std::exception_ptr error;
  RankRecords records;
};

struct Shared {
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;      // ranks whose program returned or threw
  bool release = false;  // successful ranks may close their Worlds
  std::vector<RankSlot> slots;
};

// Runs one rank: its mesh, guard and the program. On success `finished` runs
// while the World is still alive (a rank must not close its connections
// while a peer may still be connecting to it or reading from it); on an
// exception the World dies during unwinding, which closes its connections
// so that peers blocked on this rank fail at once.
void run_rank(std::shared_ptr<World> world, const std::vector<MeshDim>& shape,
              const RankProgram& program, const SimulateOptions& options,
              RankRecords& out, const std::function<void()>& finished) {
  {
    DeviceMesh mesh(world, shape);
    MeshGuard guard(mesh);
    Rank rank(mesh, options.mode, options.steps);
    program(rank);
    out.records = rank.records();
  }
  if (finished) finished();
}

void record_failure(RankSlot& slot, std::exception_ptr e) {
  slot.failed = true;
  slot.error = e;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& x) {
    slot.message = x.what();
  } catch (...) {
    slot.message = "an exception that is not a std::exception";
  }
}

bool is_communication_failure(const std::exception_ptr& e) {
  if (!e) return false;
  try {
    std::rethrow_exception(e);
  } catch (const CollectiveError&) {
    return true;
  } catch (...) {
    return false;
  }
}

[[noreturn]] void throw_failures(const std::vector<MeshDim>& shape,
                                 std::vector<RankFailure> failures,
                                 const std::string& context) {
  // Root causes first: a rank's own error, then peers that gave up on it,
  // then ranks that never finished.
  auto key = [](const RankFailure& f) {
    return std::make_pair(f.hung ? 2 : int(is_communication_failure(f.error)),
                          f.rank);
  };
  std::sort(failures.begin(), failures.end(),
            [&](const RankFailure& a, const RankFailure& b) {
              return key(a) < key(b);
            });
  std::ostringstream os;
  os << "simulate(" << print_mesh(shape) << "): " << failures.size()
     << (failures.size() == 1 ? " rank" : " ranks") << " failed" << context
     << "; first rank " << failures.front().rank << " ("
     << failures.front().coordinates << ")";
  const size_t shown = std::min<size_t>(failures.size(), 8);
  for (size_t i = 0; i < shown; ++i) {
    const RankFailure& f = failures[i];
    os << "\n  rank " << f.rank << " (" << f.coordinates << ") "
       << (f.hung ? "hung: " : "threw: ") << f.message;
  }
  if (shown < failures.size())
    os << "\n  ... and " << failures.size() - shown << " more";
  throw SimulationError(os.str(), std::move(failures));
}

// One thread per rank, each with its own World (local backend or Gloo) on a
// shared HashStore; a rank publishes its slot when it finishes (or fails) and
// then waits for the release.
std::vector<std::thread> start_ranks(const std::shared_ptr<Shared>& shared,
                                     const std::vector<MeshDim>& shape,
                                     const RankProgram& program,
                                     const SimulateOptions& options, int size) {
  // One store for every rank's rendezvous; HashStore waits honour the
  // store timeout, which bounds a rendezvous with a rank that never comes.
  c10::intrusive_ptr<c10d::Store> store =
      c10::make_intrusive<c10d::HashStore>();
  store->setTimeout(options.timeout);
  std::vector<std::thread> threads;
  threads.reserve(size);
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([shared, store, shape, program, options, size, r] {
      at::set_num_threads(options.intra_op_threads);
      RankSlot local;
      local.records.rank = r;
      local.records.coordinates = coordinates_of(shape, r);
      auto publish = [&] {
        std::lock_guard<std::mutex> lock(shared->mu);
        local.done = true;
        local.finished = Clock::now();
        shared->slots[r] = std::move(local);
        ++shared->finished;
        shared->cv.notify_all();
      };
      try {
        WorldOptions wo;
        wo.timeout = options.timeout;
        wo.gloo_hostname = "127.0.0.1";
        run_rank(World::create(options.backend, r, size, store, wo), shape,
                 program, options, local.records, [&] {
                   publish();
                   std::unique_lock<std::mutex> lock(shared->mu);
                   shared->cv.wait(lock, [&] { return shared->release; });
                 });
      } catch (...) {
        record_failure(local, std::current_exception());
        publish();
      }
    });
  }
  return threads;
}

// Waits for every rank; once the first has finished (or failed) the others
// get `grace` more (a collective still waiting then has timed out), and the
// whole run is bounded by the deadline. Releases the ranks; whether all
// finished.
bool wait_for_ranks(Shared& shared, int size, Clock::time_point start,
                    const SimulateOptions& options,
                    std::chrono::milliseconds grace) {
  std::unique_lock<std::mutex> lock(shared.mu);
  const auto deadline = start + options.deadline;
  while (shared.finished < size) {
    auto until = deadline;
    for (const RankSlot& s : shared.slots)
      if (s.done) until = std::min(until, s.finished + grace);
    if (shared.cv.wait_until(lock, until) == std::cv_status::timeout &&
        Clock::now() >= until && shared.finished < size)
      break;
  }
  const bool all_done = shared.finished == size;
  shared.release = true;
  shared.cv.notify_all();
  return all_done;
}

// The ranks that failed or did not finish, after `seconds` of the run.
std::vector<RankFailure> failures_of(Shared& shared,
                                     const std::vector<MeshDim>& shape,
                                     const SimulateOptions& options,
                                     std::chrono::milliseconds grace,
                                     double seconds) {
  std::vector<RankFailure> failures;
  std::lock_guard<std::mutex> lock(shared.mu);
  for (int r = 0; r < static_cast<int>(shared.slots.size()); ++r) {
    RankSlot& s = shared.slots[r];
    if (!s.done) {
      const bool past_deadline = seconds * 1000 >= options.deadline.count();
      std::ostringstream os;
      os << "did not finish within "
         << (past_deadline ? "the deadline of " +
                                 std::to_string(options.deadline.count()) +
                                 " ms of the whole run"
                           : std::to_string(grace.count()) +
                                 " ms (twice the timeout) after the first rank "
                                 "finished")
         << " (an endless loop, a wait on something that never happens, "
            "or a collective the other ranks never call); its thread is "
            "left running";
      failures.push_back(
          {r, print_coordinates(shape, r), true, os.str(), nullptr});
    } else if (s.failed) {
      failures.push_back(
          {r, print_coordinates(shape, r), false, s.message, s.error});
    }
  }
  return failures;
}

Simulation simulate_values(const std::vector<MeshDim>& shape,
                           const RankProgram& program,
                           const SimulateOptions& options) {
  const int size = static_cast<int>(mesh_size(shape));
  const auto start = Clock::now();
  auto shared = std::make_shared<Shared>();
  shared->slots.resize(size);
  std::vector<std::thread> threads =
      start_ranks(shared, shape, program, options, size);
  const auto grace = 2 * options.timeout;
  const bool all_done = wait_for_ranks(*shared, size, start, options, grace);
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  std::vector<RankFailure> failures =
      failures_of(*shared, shape, options, grace, seconds);
  for (int r = 0; r < size; ++r) {
    if (all_done || shared->slots[r].done) {
      threads[r].join();
    } else {
      threads[r].detach();
    }
  }
  if (!failures.empty()) throw_failures(shape, std::move(failures), "");

  std::vector<RankRecords> ranks;
  ranks.reserve(size);
  for (RankSlot& s : shared->slots) ranks.push_back(std::move(s.records));
  return Simulation(shape, Mode::Values, std::move(ranks), seconds);
}

Simulation simulate_fake(const std::vector<MeshDim>& shape,
                         const RankProgram& program,
                         const SimulateOptions& options) {
  const int size = static_cast<int>(mesh_size(shape));
  std::vector<int> which = options.fake_ranks;
  if (which.empty()) {
    which.resize(size);
    for (int r = 0; r < size; ++r) which[r] = r;
  }
  const auto start = Clock::now();
  // One worker runs the ranks one after another (the fake backend never
  // blocks), stopping at the first failure; the deadline still applies.
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::vector<RankRecords> ranks;
    std::optional<RankFailure> failure;
    int running = -1;
  };
  auto state = std::make_shared<State>();
  std::thread worker([state, shape, program, options, which, size] {
    at::set_num_threads(options.intra_op_threads);
    for (int r : which) {
      {
        std::lock_guard<std::mutex> lock(state->mu);
        state->running = r;
      }
      RankSlot slot;
      slot.records.rank = r;
      slot.records.coordinates = coordinates_of(shape, r);
      try {
        WorldOptions wo;
        wo.timeout = options.timeout;
        run_rank(World::fake(r, size, wo), shape, program, options,
                 slot.records, nullptr);
      } catch (...) {
        record_failure(slot, std::current_exception());
      }
      std::lock_guard<std::mutex> lock(state->mu);
      if (slot.failed) {
        state->failure = RankFailure{r, print_coordinates(shape, r), false,
                                     slot.message, slot.error};
        break;
      }
      state->ranks.push_back(std::move(slot.records));
    }
    std::lock_guard<std::mutex> lock(state->mu);
    state->done = true;
    state->cv.notify_all();
  });
  bool done = false;
  {
    std::unique_lock<std::mutex> lock(state->mu);
    done = state->cv.wait_until(lock, start + options.deadline,
                                [&] { return state->done; });
  }
  const double seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  if (!done) {
    worker.detach();
    std::lock_guard<std::mutex> lock(state->mu);
    int r = state->running;
    throw_failures(shape,
                   {{r, print_coordinates(shape, r), true,
                     "did not finish within the deadline of " +
                         std::to_string(options.deadline.count()) +
                         " ms (fake mode; its thread is left running)",
                     nullptr}},
                   " in fake mode");
  }
  worker.join();
  if (state->failure)
    throw_failures(shape, {*state->failure},
                   " in fake mode (the ranks after it were not run)");
  return Simulation(shape, Mode::Fake, std::move(state->ranks), seconds);
}

}  // namespace

std::string to_string(const TypeSpec& type) {
  std::string s = "{";
  for (size_t i = 0; i < type.size(); ++i)
    s += (i ? ", " : "") + type[i].first + ": " +
         core::to_string(type[i].second);
  return s + "}";
}

void Recorder::add(std::string name, const at::Tensor& value, TypeSpec type) {
  if (name.empty())
    throw std::invalid_argument("record: the quantity needs a name");
  if (!value.defined())
    throw std::invalid_argument("record('" + name +
                                "'): the tensor is "
                                "undefined (e.g. the .grad() of a parameter "
                                "that received no gradient)");
  for (const Recorded& r : records_) {
    if (r.name == name && r.step == step_)
      throw std::invalid_argument("record('" + name +
                                  "'): recorded twice at "
                                  "step " +
                                  std::to_string(step_) +
                                  "; give each quantity one name per step");
  }
  at::Tensor copy;
  {
    checker::NoTypecheckGuard untyped;
    at::NoGradGuard no_grad;
    copy = value.detach().clone();
  }
  records_.push_back(
      {std::move(name), step_, std::move(copy), std::move(type)});
}

Rank::Rank(const DeviceMesh& mesh, Mode mode, int steps)
    : Recorder(steps), mesh_(mesh), mode_(mode) {}

int64_t Rank::coordinate(const Axis& axis) const {
  return mesh_.axis(axis.name).local_rank;
}

int64_t Rank::axis_size(const Axis& axis) const {
  return mesh_.axis(axis.name).size;
}

at::TensorOptions Rank::options(at::ScalarType dtype) const {
  auto o = at::TensorOptions().dtype(dtype);
  return fake() ? o.device(at::kMeta) : o.device(at::kCPU);
}

namespace {
TypeSpec to_spec(std::initializer_list<AxisType> type) {
  TypeSpec spec;
  for (const AxisType& e : type)
    spec.emplace_back(e.axis ? e.axis : "", e.type);
  return spec;
}
}  // namespace

at::Tensor Rank::local(const at::Tensor& global,
                       std::initializer_list<AxisType> type) const {
  return local(global, to_spec(type));
}

at::Tensor Rank::local(const at::Tensor& global, const TypeSpec& type) const {
  checker::NoTypecheckGuard untyped;
  at::NoGradGuard no_grad;
  at::Tensor t = global;
  auto entry = [&](const MeshAxisGroup& a) -> std::optional<PerAxisType> {
    for (const auto& [axis, ty] : type)
      if (a.name == axis) return ty;
    return std::nullopt;
  };
  for (const auto& e : type) {
    if (mesh_.find(e.first) == nullptr)
      throw std::invalid_argument("Rank::local: axis '" + e.first +
                                  "' is not in " + mesh_.to_string());
  }
  // V axes, in mesh order, each consume the leading dim.
  for (const MeshAxisGroup& a : mesh_.axes()) {
    auto ty = entry(a);
    if (!ty || ty->kind != TypeKind::Varying) continue;
    if (t.dim() == 0 || t.size(0) != a.size)
      throw std::invalid_argument(
          "Rank::local: V on axis '" + a.name + "' needs a leading dim of " +
          std::to_string(a.size) + " (one row per rank), the tensor has " +
          (t.dim() == 0 ? std::string("no dims")
                        : "size " + std::to_string(t.size(0))));
    t = t.select(0, a.local_rank);
  }
  // Then S(i) in mesh order (outer axes take the coarser split), P, R, I.
  for (const MeshAxisGroup& a : mesh_.axes()) {
    auto ty = entry(a);
    if (!ty) continue;
    if (ty->kind == TypeKind::Shard) {
      int64_t d = ty->dim < 0 ? ty->dim + t.dim() : ty->dim;
      if (d < 0 || d >= t.dim())
        throw std::invalid_argument("Rank::local: S(" +
                                    std::to_string(ty->dim) + ") on axis '" +
                                    a.name +
                                    "' is out of "
                                    "bounds for a tensor of " +
                                    std::to_string(t.dim()) + " dims");
      if (t.size(d) % a.size != 0)
        throw std::invalid_argument(
            "Rank::local: dim " + std::to_string(d) + " of size " +
            std::to_string(t.size(d)) + " does not split evenly over axis '" +
            a.name + "' of size " + std::to_string(a.size));
      t = t.chunk(a.size, d)[a.local_rank];
    } else if (ty->kind == TypeKind::Partial && a.local_rank != 0) {
      t = at::zeros_like(t);
    }
  }
  return t.clone().contiguous();
}

void Rank::record(std::string name, const at::Tensor& value,
                  std::initializer_list<AxisType> type) {
  add(std::move(name), value, to_spec(type));
}

Simulation simulate(const std::vector<MeshDim>& shape,
                    const RankProgram& program,
                    const SimulateOptions& options) {
  validate(shape, options);
  if (!program) throw std::invalid_argument("simulate: the program is empty");
  if (options.mode == Mode::Fake) {
    detail::register_meta_collectives();
    return simulate_fake(shape, program, options);
  }
  return simulate_values(shape, program, options);
}

}  // namespace spmd::testing
