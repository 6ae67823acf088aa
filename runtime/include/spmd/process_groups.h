// spmd/process_groups.h - the world process group, its backends and the
// launcher environment (torchrun, OpenMPI's mpirun, Slurm's srun).
//
// A World is one rank's handle on the job: its c10d world process group plus
// what is needed to create sub-groups later (the store, the backend, the
// timeout). spmd::DeviceMesh is built on a World.
#ifndef SPMD_PROCESS_GROUPS_H
#define SPMD_PROCESS_GROUPS_H

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <vector>

namespace spmd::core {
class AxisTable;
class MeshAxis;
}  // namespace spmd::core

namespace spmd {

/// The communication backends.
enum class Backend {
  Gloo,   ///< CPU tensors over TCP (c10d::ProcessGroupGloo).
  Nccl,   ///< CUDA tensors; only in builds with SPMD_WITH_CUDA.
  Fake,   ///< Single-process checking: rank r of a world of N, every
          ///< collective completes at once with correctly shaped outputs.
  Local,  ///< Ranks that are threads of one process sharing one store
          ///< (spmd::testing::simulate): collectives meet in shared memory
          ///< and move tensors by reference; real values, no sockets.
          ///< The runtime treats its groups as Gloo groups (same checks,
          ///< same dtypes). Not selectable by name (one process only).
};

/// "gloo", "nccl", "fake", "local".
const char* to_string(Backend backend);
/// Parses "gloo" / "nccl" / "fake". Errors: spmd::InvalidArgument naming
/// the value and the accepted ones (and, for "nccl" in a CPU-only build,
/// saying that the runtime was built without SPMD_WITH_CUDA).
Backend parse_backend(std::string_view name);

/// Default bound on every collective and rendezvous: 300 s, overridden by the
/// environment variable SPMD_TIMEOUT_MS when set.
std::chrono::milliseconds default_timeout();

/// Whether collectives run the cross-rank consistency check by default: on,
/// unless the environment variable SPMD_CHECK_COLLECTIVES is "0", "off" or
/// "false".
bool default_check_collectives();

/// Options of a World (spec-independent, c10d-style: a struct with defaults).
struct WorldOptions {
  /// Bound on every collective and on rendezvous. A peer that does not arrive
  /// in time gives spmd::CollectiveError naming the collective and the axis.
  std::chrono::milliseconds timeout = default_timeout();
  /// Bound on the rendezvous of the world group and of every sub-group
  /// (DeviceMesh construction) alone; zero: `timeout`. A rank that does not
  /// join in time gives spmd::CollectiveError naming the group. Tests give
  /// rendezvous a generous bound and collectives a short one, so that a slow
  /// start under load is not mistaken for a peer that never arrives.
  std::chrono::milliseconds rendezvous_timeout{0};
  /// Gloo: the address this rank listens on. Empty: GLOO_SOCKET_IFNAME if
  /// set, else the host's default interface.
  std::string gloo_hostname;
  /// Before a collective communicates, every rank of the axis all-gathers a
  /// small description of its call (op, src/dst, dtype, device, shape, dims,
  /// split sizes) and compares them: ranks that disagree all get the same
  /// spmd::CollectiveError naming the collective, the axis and each rank's
  /// call, where Gloo would abort the process or return corrupted data. One
  /// extra small all-gather per collective (docs/runtime.md gives its cost).
  /// All ranks must use the same setting.
  bool check_collectives = default_check_collectives();
};

/// One rank's handle on the job: the world process group, its store and
/// backend. Thread-compatible: one World per rank (ranks may be threads of
/// one process, each with its own World). All ranks must create sub-groups
/// (DeviceMesh) in the same order: group ids are counted per World.
class World {
 public:
  /// Creates the world group of `size` ranks, this one being `rank`,
  /// rendezvousing through `store` (not needed for Backend::Fake).
  /// Errors: spmd::InvalidArgument for a bad rank/size, an unavailable
  /// backend; spmd::CollectiveError when the rendezvous times out.
  /// Gloo (this World and its sub-groups): sets SIGPIPE to SIG_IGN for the
  /// whole process when its action is still the default (a handler the
  /// program installed is left alone), so that a write to a peer that has
  /// exited fails with EPIPE and the collective raises a CollectiveError
  /// instead of the signal killing this rank silently.
  static std::shared_ptr<World> create(Backend backend, int rank, int size,
                                       c10::intrusive_ptr<c10d::Store> store,
                                       WorldOptions options = {});
  /// A fake world (Backend::Fake): no peers, no store.
  static std::shared_ptr<World> fake(int rank, int size,
                                     WorldOptions options = {});

  int rank() const { return rank_; }
  int size() const { return size_; }
  Backend backend() const { return backend_; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }
  /// WorldOptions::check_collectives.
  bool check_collectives() const { return options_.check_collectives; }
  const c10::intrusive_ptr<c10d::ProcessGroup>& process_group() const {
    return world_;
  }
  const c10::intrusive_ptr<c10d::Store>& store() const { return store_; }

  /// Creates the process group of the given global ranks (sorted, unique,
  /// containing this rank); only those ranks take part, and they must pass
  /// the same `tag`. A one-rank group never communicates.
  c10::intrusive_ptr<c10d::ProcessGroup> new_group(
      const std::vector<int>& ranks, const std::string& tag);

  /// The next group id of this World (same sequence on every rank as long
  /// as all ranks build their meshes in the same order).
  int next_group_id() { return next_group_id_++; }

  /// Names and layouts of the axes of every mesh built on this World
  /// (spec §10): the runtime checker lifts operands typed on one mesh onto
  /// another through it (spec §6.2). Replaced (not mutated) by
  /// register_axis, so a held pointer stays valid and unchanged.
  const std::shared_ptr<const core::AxisTable>& axis_table() const {
    return axis_table_;
  }
  /// Registers `name` for `layout` (DeviceMesh does this for its axes).
  /// Errors: spmd::InvalidArgument when the name already names another
  /// layout on this World.
  void register_axis(const std::string& name, const core::MeshAxis& layout);

 private:
  World(Backend backend, int rank, int size,
        c10::intrusive_ptr<c10d::Store> store, WorldOptions options);

  Backend backend_;
  int rank_;
  int size_;
  c10::intrusive_ptr<c10d::Store> store_;
  WorldOptions options_;
  c10::intrusive_ptr<c10d::ProcessGroup> world_;
  std::atomic<int> next_group_id_{0};
  std::shared_ptr<const core::AxisTable> axis_table_;
};

/// A c10d process group of the fake backend: rank `rank` of `size`.
/// allreduce / broadcast leave the data as is, allgather fills every slot
/// with this rank's input, alltoall and reduce_scatter keep this rank's own
/// piece where shapes allow (zeros otherwise); every Work is complete at
/// once. Values are therefore those of a world in which every rank holds the
/// same data (exact for size 1); shapes and dtypes are always right.
c10::intrusive_ptr<c10d::ProcessGroup> make_fake_process_group(int rank,
                                                               int size);

/// A c10d process group of the local backend (Backend::Local): rank `rank`
/// of `size` threads of this process that create their groups on the same
/// `store`. Rank 0 publishes the group's rendezvous in the store, the others
/// wait for it up to `rendezvous_timeout`. Every collective waits up to
/// `timeout` for the other ranks; a rank that destroys its group makes the
/// ranks waiting on it fail at once. Errors (as std::runtime_error, which the
/// collectives turn into spmd::CollectiveError naming the collective and the
/// axis): a timeout naming the ranks that did not arrive, a peer that left,
/// ranks calling different collectives, a reduction other than SUM, PRODUCT,
/// MIN or MAX.
c10::intrusive_ptr<c10d::ProcessGroup> make_local_process_group(
    const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
    std::chrono::milliseconds rendezvous_timeout,
    std::chrono::milliseconds timeout);

/// Where this process sits in the job, as read from a launcher's environment.
struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string master_addr;
  int master_port = 0;
  std::string launcher;  ///< "torchrun", "mpirun" or "srun"
};

/// Reads the launcher environment through `getenv` (std::getenv by default).
/// torchrun: RANK, WORLD_SIZE, LOCAL_RANK; OpenMPI: OMPI_COMM_WORLD_RANK,
/// OMPI_COMM_WORLD_SIZE, OMPI_COMM_WORLD_LOCAL_RANK; Slurm: SLURM_PROCID,
/// SLURM_NTASKS, SLURM_LOCALID. MASTER_ADDR and MASTER_PORT are needed for
/// every launcher (the TCPStore rendezvous). Errors: spmd::InvalidArgument
/// naming the missing, malformed or contradictory variable (e.g. RANK=1
/// with OMPI_COMM_WORLD_RANK=2), or saying that no launcher was detected.
LaunchEnv parse_launch_env(
    const std::function<const char*(const char*)>& getenv = nullptr);

/// Options of init_from_env / init.
struct InitOptions {
  /// Empty: the environment variable SPMD_BACKEND, else "gloo".
  std::string backend;
  WorldOptions world;
};

/// Creates the World of this process from the launcher environment
/// (parse_launch_env) with a c10d::TCPStore on MASTER_ADDR:MASTER_PORT
/// (rank 0 hosts it). The fake backend needs no MASTER_*.
std::shared_ptr<World> init_from_env(const InitOptions& options = {});

/// Explicit init: rank `rank` of `size`, TCPStore on `master_addr:port`
/// (rank 0 hosts it).
std::shared_ptr<World> init(Backend backend, int rank, int size,
                            const std::string& master_addr, int master_port,
                            WorldOptions options = {});

}  // namespace spmd

#endif  // SPMD_PROCESS_GROUPS_H
