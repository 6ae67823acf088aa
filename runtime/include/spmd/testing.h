// spmd/testing.h - check a whole SPMD program on one machine, in one process:
// every rank of a mesh as a thread with real values (the in-process local
// backend or Gloo), or every rank of a large mesh with the fake backend and
// meta tensors (types and shapes, no values), and equivalence with the
// single-device program.
//
//   auto sim = spmd::testing::simulate({{dp, 2}, {tp, 4}}, [&](Rank& rank) {
//     at::Tensor w = rank.local(full_w, {dp = R, tp = S(0)});
//     ...
//     rank.record("out", out, {dp = S(0), tp = I});
//   });
//   at::Tensor whole = sim.global("out");  // un-sharded by its SPMD type
//
// Library target spmd::testing; docs/testing.md. The GoogleTest helper
// (EXPECT_SPMD_EQUIVALENT) is in <spmd/testing_gtest.h>, so this header does
// not need GoogleTest.
#ifndef SPMD_TESTING_H
#define SPMD_TESTING_H

#include <ATen/core/Tensor.h>
#include <spmd/annotations.h>
#include <spmd/mesh.h>

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spmd::testing {

/// How simulate runs the ranks.
enum class Mode {
  /// One thread per rank, each with its own World over a shared in-process
  /// store: real collectives, real values. The backend is
  /// SimulateOptions::backend (the in-process local backend by default).
  Values,
  /// The fake backend (spmd::World::fake): ranks run one after another with
  /// no peers, every collective completes at once with the right shapes.
  /// Meant for meta tensors (Rank::options()): types and shapes at any scale,
  /// no values.
  Fake,
};

/// Options of simulate and expect_equivalent.
struct SimulateOptions {
  Mode mode = Mode::Values;
  /// Mode::Values only: Backend::Local (default: collectives meet in shared
  /// memory and move tensors by reference between the rank threads) or
  /// Backend::Gloo (real Gloo groups on 127.0.0.1, for tests of the Gloo
  /// path itself). Errors: std::invalid_argument for any other backend.
  Backend backend = Backend::Local;
  /// Bound on every collective and on the rendezvous (WorldOptions::timeout).
  /// Once one rank has finished (or failed), the others are waited for
  /// twice this long; a rank still running then is reported as hung.
  std::chrono::milliseconds timeout{60000};
  /// Bound on the whole run: ranks still running then are reported as hung.
  std::chrono::milliseconds deadline{600000};
  /// ATen intra-op threads of each rank (the ranks are the parallelism).
  int intra_op_threads = 1;
  /// Number of steps that Rank::steps() iterates over.
  int steps = 1;
  /// Mode::Fake only: the ranks to run (empty: every rank of the mesh).
  std::vector<int> fake_ranks;
};

/// The SPMD type of a recorded quantity on each mesh axis, e.g.
/// {dp = P, tp = S(0)}. Axes of size 1 need no entry.
using TypeSpec = std::vector<std::pair<std::string, PerAxisType>>;

/// "{dp: P, tp: S(0)}".
std::string to_string(const TypeSpec& type);

/// One recorded tensor of one rank (or of the single-device program).
struct Recorded {
  std::string name;
  int step = 0;      ///< 1..steps inside Rank::steps(), 0 before it
  at::Tensor value;  ///< a detached copy taken when recorded
  TypeSpec type;     ///< empty for the single-device program
};

/// The per-step loop of a program: `for (int step : rank.steps())` runs
/// SimulateOptions::steps iterations and makes `step` (1-based) the step
/// under which record() files its tensors.
class StepRange {
 public:
  class iterator {
   public:
    iterator(int* current, int value) : current_(current), value_(value) {}
    int operator*() const { return *current_ = value_; }
    iterator& operator++() {
      ++value_;
      return *this;
    }
    bool operator!=(const iterator& o) const { return value_ != o.value_; }

   private:
    int* current_;
    int value_;
  };
  StepRange(int* current, int steps) : current_(current), steps_(steps) {}
  iterator begin() const { return {current_, 1}; }
  iterator end() const { return {current_, steps_ + 1}; }

 private:
  int* current_;
  int steps_;
};

/// What a program records: named tensors per step. Base of Rank (the
/// parallel program, typed records) and Single (the single-device program).
class Recorder {
 public:
  explicit Recorder(int steps) : steps_(steps) {}
  virtual ~Recorder() = default;

  /// The step loop (see StepRange): `for (int step : rank.steps())`.
  StepRange steps() { return StepRange(&step_, steps_); }
  /// The same loop without a variable: `while (rank.next_step())` advances
  /// to the next step and returns false after the last one.
  bool next_step() {
    if (step_ >= steps_) return false;
    ++step_;
    return true;
  }
  /// The current step: 0 before steps(), then 1..steps (the last one after
  /// the loop, so final parameters recorded after the loop belong to it).
  int step() const { return step_; }
  int num_steps() const { return steps_; }
  /// Everything recorded so far, in order.
  const std::vector<Recorded>& records() const { return records_; }

 protected:
  /// Files a detached copy of `value` (copying with checking paused, so a
  /// live TypecheckGuard does not see it). Throws std::invalid_argument when
  /// `name` was already recorded at this step.
  void add(std::string name, const at::Tensor& value, TypeSpec type);

 private:
  int steps_;
  int step_ = 0;
  std::vector<Recorded> records_;
};

/// The single-device program's recorder: whole tensors, no types.
class Single : public Recorder {
 public:
  using Recorder::Recorder;
  /// Records the whole (unsharded) value of quantity `name` at this step.
  void record(std::string name, const at::Tensor& value) {
    add(std::move(name), value, {});
  }
};

/// One rank of a simulation, handed to the program. Its mesh is current
/// (MeshGuard) while the program runs, so collectives resolve their axes.
class Rank : public Recorder {
 public:
  Rank(const DeviceMesh& mesh, Mode mode, int steps);

  int rank() const { return mesh_.rank(); }
  int size() const { return static_cast<int>(mesh_.size()); }
  const DeviceMesh& mesh() const { return mesh_; }
  Mode mode() const { return mode_; }
  bool fake() const { return mode_ == Mode::Fake; }
  /// This rank's index along `axis`. Throws MeshResolutionError for an axis
  /// that is not in the mesh.
  int64_t coordinate(const Axis& axis) const;
  /// The size of `axis`.
  int64_t axis_size(const Axis& axis) const;
  /// Tensor options for this mode: CPU in Mode::Values, the meta device in
  /// Mode::Fake.
  at::TensorOptions options(at::ScalarType dtype = at::kFloat) const;

  /// This rank's part of the whole tensor `global` for the SPMD type `type`
  /// (the inverse of Simulation::global): S(i) takes chunk coordinate(axis)
  /// of dim i; V selects index coordinate(axis) of a new leading dim (one row
  /// per rank, V axes in mesh order); R and I keep it whole; P keeps it on
  /// coordinate 0 and zeros elsewhere. A contiguous copy. Throws
  /// std::invalid_argument for an axis that is not in the mesh, an
  /// indivisible S(i) or a V row count that is not the axis size.
  at::Tensor local(const at::Tensor& global,
                   std::initializer_list<AxisType> type) const;
  at::Tensor local(const at::Tensor& global, const TypeSpec& type) const;

  /// Records this rank's value of quantity `name` at this step with its
  /// SPMD type, which says how Simulation::global un-shards it. Every
  /// non-singleton mesh axis needs an entry (checked when un-sharding).
  void record(std::string name, const at::Tensor& value,
              std::initializer_list<AxisType> type);
  void record(std::string name, const at::Tensor& value, TypeSpec type) {
    add(std::move(name), value, std::move(type));
  }

 private:
  const DeviceMesh& mesh_;
  Mode mode_;
};

/// What one rank recorded.
struct RankRecords {
  int rank = 0;
  std::vector<int64_t> coordinates;  ///< per mesh axis, in mesh order
  std::vector<Recorded> records;
};

/// A whole tensor rebuilt from the ranks' pieces, and how far the ranks that
/// must agree (R and I axes) disagreed.
struct Unsharded {
  at::Tensor value;
  /// Largest |difference| between ranks of an R or I axis and the rank
  /// taken (coordinate 0), 0 if they agree or there is no such axis.
  double disagreement = 0;
  std::string disagreement_axis;  ///< the axis of the largest disagreement
};

/// The outcome of simulate: every rank's records.
class Simulation {
 public:
  Simulation(std::vector<MeshDim> shape, Mode mode,
             std::vector<RankRecords> ranks, double seconds);

  /// "DeviceMesh(dp=2, tp=4)".
  std::string mesh() const;
  const std::vector<MeshDim>& shape() const { return shape_; }
  Mode mode() const { return mode_; }
  /// The ranks that ran, in rank order (all of them except with
  /// SimulateOptions::fake_ranks).
  const std::vector<RankRecords>& ranks() const { return ranks_; }
  /// Wall time of the whole simulation (world creation included).
  double seconds() const { return seconds_; }

  /// Rank `rank`'s value of `name` at `step` (default: the last step at
  /// which it was recorded). Throws std::out_of_range naming what is missing.
  const at::Tensor& value(int rank, std::string_view name, int step = -1) const;
  /// The names recorded by rank 0 (or the first rank that ran), in order.
  std::vector<std::string> names() const;
  /// The steps at which `name` was recorded, ascending.
  std::vector<int> steps_of(std::string_view name) const;
  /// The recorded type of `name` (rank 0's).
  TypeSpec type_of(std::string_view name) const;

  /// Un-shards `name` at `step` (default: last) by its recorded type, axis
  /// by axis: R and I take coordinate 0 (and measure the disagreement of the
  /// others), S(i) concatenates along dim i, P sums, V stacks the ranks'
  /// values along a new leading dim (V axes in mesh order, outermost
  /// first). Needs every rank. Throws std::invalid_argument for a missing
  /// rank, a missing type entry, ranks that recorded different types or
  /// shapes.
  Unsharded unshard(std::string_view name, int step = -1) const;
  /// unshard(name, step).value.
  at::Tensor global(std::string_view name, int step = -1) const {
    return unshard(name, step).value;
  }

 private:
  const Recorded& find(int rank, std::string_view name, int step) const;

  std::vector<MeshDim> shape_;
  Mode mode_;
  std::vector<RankRecords> ranks_;
  double seconds_;
};

/// One failed rank of a simulation.
struct RankFailure {
  int rank = 0;
  std::string coordinates;   ///< "dp=1, tp=0"
  bool hung = false;         ///< did not finish in time (else: threw)
  std::string message;       ///< what() of the exception, or the hang
  std::exception_ptr error;  ///< the exception itself (null when hung)
};

/// A simulation in which some rank threw or hung. what() names the mesh and
/// the ranks, root causes first: errors other than communication failures
/// (which are usually peers giving up on the failed rank), then the
/// communication failures, then the hung ranks.
class SimulationError : public std::runtime_error {
 public:
  SimulationError(const std::string& message, std::vector<RankFailure> failures)
      : std::runtime_error(message), failures_(std::move(failures)) {}
  /// Root cause first (as in what()).
  const std::vector<RankFailure>& failures() const { return failures_; }

 private:
  std::vector<RankFailure> failures_;
};

/// The program run on every rank.
using RankProgram = std::function<void(Rank&)>;
/// The single-device program.
using SingleProgram = std::function<void(Single&)>;

/// Runs `program` once per rank of a mesh of `shape` inside this process and
/// returns every rank's records. Each rank gets its own World and
/// DeviceMesh (current while `program` runs). Mode::Values: threads on
/// SimulateOptions::backend; Mode::Fake: one rank after another on the fake
/// backend. Throws SimulationError when a rank throws or hangs (never blocks
/// longer than `options.deadline`, plus `options.timeout`);
/// std::invalid_argument for a bad shape or options. A hung rank's thread
/// cannot be stopped: it is left detached.
Simulation simulate(const std::vector<MeshDim>& shape,
                    const RankProgram& program,
                    const SimulateOptions& options = {});

/// Per-quantity tolerance: |parallel - single| <= atol + rtol * |single|
/// elementwise (allclose).
struct Tolerance {
  double atol = 1e-5;
  double rtol = 1e-5;
};

/// Options of expect_equivalent.
struct EquivalenceOptions {
  /// The mesh of the parallel program (required).
  std::vector<MeshDim> mesh;
  /// Steps of both programs (their steps() loops).
  int steps = 1;
  Tolerance tolerance;
  /// Tolerances of particular quantities, by name.
  std::map<std::string, Tolerance> tolerances;
  /// How the parallel program runs (`steps` is taken from above). With
  /// Mode::Fake only the shapes are compared (the records are meta tensors).
  SimulateOptions simulate;
};

/// The comparison of one quantity at one step.
struct QuantityDiff {
  std::string name;
  int step = 0;
  std::string type;          ///< the parallel program's type, printed
  double max_abs_diff = 0;   ///< max |parallel - single| (inf: not compared)
  double reference_max = 0;  ///< max |single|
  /// Largest disagreement between ranks that must agree (R, I axes), and
  /// the axis, when it exceeds the tolerance (else empty).
  double disagreement = 0;
  std::string disagreement_axis;
  bool ok = false;
  /// Why it is not ok beyond the values: "missing in the parallel program",
  /// "shape [2, 8] != [4, 8]", "ranks disagree on axis tp (R/I) by 1.2e-02".
  std::string problem;
};

/// The outcome of expect_equivalent.
class EquivalenceReport {
 public:
  EquivalenceReport() = default;
  EquivalenceReport(std::string mesh, int steps, std::vector<QuantityDiff> rows)
      : mesh_(std::move(mesh)), steps_(steps), rows_(std::move(rows)) {}

  /// True when every quantity agrees at every step.
  bool ok() const;
  /// Whether `name` agrees at `step`. Throws std::out_of_range if it was not
  /// compared there.
  bool ok(std::string_view name, int step) const;
  /// The comparison of `name` at `step`, or nullptr.
  const QuantityDiff* find(std::string_view name, int step) const;
  /// Every (quantity, step) compared, in recording order.
  const std::vector<QuantityDiff>& rows() const { return rows_; }
  /// The quantities that disagree at some step.
  std::vector<std::string> mismatches() const;
  /// A readable table, one row per quantity: its type, the largest
  /// difference over all steps and where, ok / MISMATCH, the first step that
  /// disagrees, and the size of the single-device value.
  std::string table() const;

 private:
  std::string mesh_;
  int steps_ = 0;
  std::vector<QuantityDiff> rows_;
};

/// Runs `parallel` on every rank of `options.mesh` (simulate) and `single`
/// on this thread, both for `options.steps` steps, un-shards
/// every quantity the parallel program recorded by its type and compares it
/// with the single program's value of the same name and step. Quantities
/// recorded by only one side are mismatches. Returns the report (it does not
/// throw on a mismatch); throws SimulationError when a rank fails and
/// std::invalid_argument for bad options.
EquivalenceReport expect_equivalent(const RankProgram& parallel,
                                    const SingleProgram& single,
                                    const EquivalenceOptions& options);

}  // namespace spmd::testing

#endif  // SPMD_TESTING_H
