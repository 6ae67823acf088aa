// process_groups.cpp - World creation for the gloo / nccl / fake backends,
// sub-groups, and the launcher environment (torchrun, mpirun, srun).
#include <spmd/core/mesh_region.h>
#include <spmd/errors.h>
#include <spmd/process_groups.h>

#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "error_text.h"
#include "torch_compat.h"
#ifdef SPMD_WITH_CUDA
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <mutex>
#include <sstream>
#include <thread>

namespace spmd {

const char* to_string(Backend backend) {
  switch (backend) {
    case Backend::Gloo:
      return "gloo";
    case Backend::Nccl:
      return "nccl";
    case Backend::Fake:
      return "fake";
    case Backend::Local:
      return "local";
  }
  return "?";
}

Backend parse_backend(std::string_view name) {
  if (name == "gloo") return Backend::Gloo;
  if (name == "fake") return Backend::Fake;
  if (name == "nccl") {
#ifdef SPMD_WITH_CUDA
    return Backend::Nccl;
#else
    throw InvalidArgument(
        "backend 'nccl' is not available: the spmd runtime was built without "
        "CUDA (configure with -DSPMD_WITH_CUDA=ON against a CUDA libtorch), "
        "use 'gloo' for CPU tensors");
#endif
  }
  throw InvalidArgument("unknown backend '" + std::string(name) +
                        "': expected 'gloo', 'nccl' or 'fake'");
}

namespace {

// Parses a non-negative decimal integer; nullopt if malformed.
std::optional<long> parse_int(const char* text) {
  if (text == nullptr || *text == '\0') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || v < 0) return std::nullopt;
  return v;
}

// Rethrows a c10d / gloo failure during group creation as CollectiveError.
[[noreturn]] void rethrow_rendezvous(const std::string& what, int rank,
                                     int size, std::chrono::milliseconds t,
                                     const std::exception& e) {
  std::ostringstream os;
  os << what << ": rendezvous of rank " << rank << " with " << size - 1
     << " peer(s) failed (timeout " << t.count()
     << " ms; are all ranks started, with the same MASTER_ADDR/MASTER_PORT "
        "and mesh shape?): "
     << detail::error_text(e);
  throw CollectiveError(os.str());
}

// Gloo writes to its peers' sockets without MSG_NOSIGNAL: a write to a peer
// that has exited raises SIGPIPE, whose default action ends this process
// with no message. Ignored (only while it has the default action, so that a
// handler the program installed stays), the write fails with EPIPE and the
// collective reports the dead peer as a CollectiveError.
void ignore_sigpipe_if_default() {
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) != 0) return;
  if ((current.sa_flags & SA_SIGINFO) == 0 && current.sa_handler == SIG_DFL) {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, nullptr);
  }
}

c10::intrusive_ptr<c10d::ProcessGroup> make_group(
    Backend backend, int rank, int size,
    const c10::intrusive_ptr<c10d::Store>& store, const WorldOptions& opts,
    const std::string& what) {
  if (backend == Backend::Fake ||
      (size == 1 && (backend == Backend::Gloo || backend == Backend::Local))) {
    // A one-rank CPU group never communicates; the fake group is exact there.
    // NCCL keeps its own one-rank group: CUDA streams and the communicator
    // are part of what a one-GPU run checks.
    return make_fake_process_group(rank, size);
  }
  if (!store) throw InvalidArgument(what + ": a store is required");
  const std::chrono::milliseconds rendezvous =
      opts.rendezvous_timeout.count() > 0 ? opts.rendezvous_timeout
                                          : opts.timeout;
  try {
    if (backend == Backend::Local)
      return make_local_process_group(store, rank, size, rendezvous,
                                      opts.timeout);
    if (backend == Backend::Gloo) {
      ignore_sigpipe_if_default();
      auto options = c10d::ProcessGroupGloo::Options::create(rendezvous);
      if (!opts.gloo_hostname.empty()) {
        options->devices.push_back(
            c10d::ProcessGroupGloo::createDeviceForHostname(
                opts.gloo_hostname));
      } else if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) {
        options->devices.push_back(
            c10d::ProcessGroupGloo::createDeviceForInterface(ifname));
      } else {
        options->devices.push_back(
            c10d::ProcessGroupGloo::createDefaultDevice());
      }
      options->threads = 2;
      // The constructor connects (bounded by the rendezvous timeout);
      // collectives are bounded by the collective timeout from then on.
      auto gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size,
                                                              options);
      if (rendezvous != opts.timeout) gloo->setTimeout(opts.timeout);
      return compat::wrap_backend(gloo, store, rank, size, "gloo");
    }
#ifdef SPMD_WITH_CUDA
    if (backend == Backend::Nccl) {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = opts.timeout;
      return compat::wrap_backend(c10::make_intrusive<c10d::ProcessGroupNCCL>(
                                      store, rank, size, options),
                                  store, rank, size, "nccl");
    }
#endif
  } catch (const SpmdError&) {
    throw;
  } catch (const std::exception& e) {
    rethrow_rendezvous(what, rank, size, rendezvous, e);
  }
  throw InvalidArgument(std::string("backend '") + to_string(backend) +
                        "' is not available in this build");
}

}  // namespace

std::chrono::milliseconds default_timeout() {
  if (auto v = parse_int(std::getenv("SPMD_TIMEOUT_MS")); v && *v > 0)
    return std::chrono::milliseconds(*v);
  return std::chrono::milliseconds(300 * 1000);
}

bool default_check_collectives() {
  const char* v = std::getenv("SPMD_CHECK_COLLECTIVES");
  if (v == nullptr) return true;
  const std::string s(v);
  return !(s == "0" || s == "off" || s == "false" || s == "OFF" ||
           s == "FALSE");
}

World::World(Backend backend, int rank, int size,
             c10::intrusive_ptr<c10d::Store> store, WorldOptions options)
    : backend_(backend),
      rank_(rank),
      size_(size),
      store_(std::move(store)),
      options_(std::move(options)) {}

std::shared_ptr<World> World::create(Backend backend, int rank, int size,
                                     c10::intrusive_ptr<c10d::Store> store,
                                     WorldOptions options) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw InvalidArgument("World: rank " + std::to_string(rank) +
                          " is not in a world of size " + std::to_string(size));
  }
  if (options.timeout.count() <= 0)
    throw InvalidArgument("World: the timeout must be positive");
  if (options.rendezvous_timeout.count() < 0)
    throw InvalidArgument(
        "World: the rendezvous timeout must be positive (or zero: the "
        "collective timeout)");
  std::shared_ptr<World> w(
      new World(backend, rank, size, std::move(store), std::move(options)));
  c10::intrusive_ptr<c10d::Store> world_store;
  if (w->store_) {
    world_store =
        c10::make_intrusive<c10d::PrefixStore>("spmd/world", w->store_);
  }
  w->world_ = make_group(
      backend, rank, size, world_store, w->options_,
      std::string("world process group (") + to_string(backend) + ")");
  return w;
}

std::shared_ptr<World> World::fake(int rank, int size, WorldOptions options) {
  return create(Backend::Fake, rank, size, c10::intrusive_ptr<c10d::Store>(),
                std::move(options));
}

c10::intrusive_ptr<c10d::ProcessGroup> World::new_group(
    const std::vector<int>& ranks, const std::string& tag) {
  int local = -1;
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= size_ ||
        (i > 0 && ranks[i] <= ranks[i - 1]))
      throw InvalidArgument("new_group '" + tag +
                            "': ranks must be sorted, unique and < " +
                            std::to_string(size_));
    if (ranks[i] == rank_) local = static_cast<int>(i);
  }
  if (local < 0)
    throw InvalidArgument("new_group '" + tag + "': rank " +
                          std::to_string(rank_) + " is not a member");
  if (static_cast<int>(ranks.size()) == size_ && world_) return world_;
  c10::intrusive_ptr<c10d::Store> store;
  if (store_) store = c10::make_intrusive<c10d::PrefixStore>(tag, store_);
  return make_group(backend_, local, static_cast<int>(ranks.size()), store,
                    options_, "process group '" + tag + "'");
}

void World::register_axis(const std::string& name,
                          const core::MeshAxis& layout) {
  if (axis_table_) {
    const core::MeshAxis* known = axis_table_->find(name);
    if (known != nullptr && *known == layout) return;  // no copy needed
  }
  auto next = axis_table_ ? std::make_shared<core::AxisTable>(*axis_table_)
                          : std::make_shared<core::AxisTable>();
  core::Status s = next->add(name, layout);
  if (!s.ok())
    throw InvalidArgument(s.error().message +
                          "; axes are identified by their layout across "
                          "the meshes of one World (spec §10.1)");
  axis_table_ = std::move(next);
}

namespace {

using EnvLookup = std::function<const char*(const char*)>;

/// The variables a launcher sets for each process.
struct Launcher {
  const char* name;
  const char* rank;
  const char* size;
  const char* local_rank;
};
const Launcher kLaunchers[] = {
    {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
    {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
     "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
};

int require_int(const EnvLookup& get, const char* var, const char* launcher) {
  const char* text = get(var);
  if (text == nullptr)
    throw InvalidArgument(std::string("environment variable ") + var +
                          " is not set (needed with " + launcher + ")");
  auto v = parse_int(text);
  if (!v || *v > 1 << 30)
    throw InvalidArgument(std::string("environment variable ") + var + "='" +
                          text + "' is not a non-negative integer");
  return static_cast<int>(*v);
}

/// Rank, world size and local rank from the first launcher whose variables
/// are set; launchers nest (torchrun under srun), and then they must agree.
LaunchEnv launcher_env(const EnvLookup& get) {
  std::optional<LaunchEnv> found;
  for (const Launcher& l : kLaunchers) {
    if (get(l.rank) == nullptr) continue;
    LaunchEnv env;
    env.launcher = l.name;
    env.rank = require_int(get, l.rank, l.name);
    env.world_size = require_int(get, l.size, l.name);
    env.local_rank =
        get(l.local_rank) ? require_int(get, l.local_rank, l.name) : 0;
    if (env.world_size < 1)
      throw InvalidArgument(std::string(l.size) + "=0: the world is empty");
    if (env.rank >= env.world_size)
      throw InvalidArgument(std::string(l.rank) + "=" +
                            std::to_string(env.rank) + " is not below " +
                            l.size + "=" + std::to_string(env.world_size));
    if (!found) {
      found = env;
      continue;
    }
    auto contradict = [&](const char* var, int a, const char* other, int b) {
      if (a != b)
        throw InvalidArgument(
            std::string("contradictory launcher environment: ") + var + "=" +
            std::to_string(a) + " but " + other + "=" + std::to_string(b));
    };
    const Launcher& f = *std::find_if(
        std::begin(kLaunchers), std::end(kLaunchers),
        [&](const Launcher& x) { return found->launcher == x.name; });
    contradict(f.rank, found->rank, l.rank, env.rank);
    contradict(f.size, found->world_size, l.size, env.world_size);
  }
  if (!found)
    throw InvalidArgument(
        "no launcher environment found: set RANK and WORLD_SIZE (torchrun), "
        "or run under mpirun (OMPI_COMM_WORLD_RANK) or srun (SLURM_PROCID)");
  return *found;
}

/// MASTER_ADDR and MASTER_PORT: where rank 0's TCPStore listens.
void read_rendezvous(const EnvLookup& get, LaunchEnv& env) {
  const char* addr = get("MASTER_ADDR");
  if (addr == nullptr || *addr == '\0')
    throw InvalidArgument(
        "environment variable MASTER_ADDR is not set (the host of rank 0, "
        "where the TCPStore rendezvous listens; e.g. export "
        "MASTER_ADDR=127.0.0.1 for one host)");
  env.master_addr = addr;
  const char* port = get("MASTER_PORT");
  if (port == nullptr)
    throw InvalidArgument(
        "environment variable MASTER_PORT is not set (a free TCP port on "
        "MASTER_ADDR, e.g. export MASTER_PORT=29500)");
  auto p = parse_int(port);
  if (!p || *p < 1 || *p > 65535)
    throw InvalidArgument(std::string("environment variable MASTER_PORT='") +
                          port + "' is not a TCP port (1-65535)");
  env.master_port = static_cast<int>(*p);
}

}  // namespace

LaunchEnv parse_launch_env(
    const std::function<const char*(const char*)>& getenv_fn) {
  EnvLookup get = [&](const char* name) -> const char* {
    return getenv_fn ? getenv_fn(name) : std::getenv(name);
  };
  LaunchEnv env = launcher_env(get);
  read_rendezvous(get, env);
  return env;
}

namespace {

// Whether something accepts TCP connections on addr:port before `deadline`
// (polled every 50 ms). c10d's TCPStore client gives every connection try
// the whole timeout and then backs off, so a store that never comes up was
// reported after about twice the timeout; polling first keeps it to one.
bool wait_for_listener(const std::string& addr, int port,
                       std::chrono::steady_clock::time_point deadline) {
  using namespace std::chrono;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  for (;;) {
    addrinfo* list = nullptr;
    if (::getaddrinfo(addr.c_str(), std::to_string(port).c_str(), &hints,
                      &list) == 0) {
      for (addrinfo* a = list; a != nullptr; a = a->ai_next) {
        const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK,
                                a->ai_protocol);
        if (fd < 0) continue;
        bool ok = ::connect(fd, a->ai_addr, a->ai_addrlen) == 0;
        if (!ok && errno == EINPROGRESS) {
          const auto left =
              duration_cast<milliseconds>(deadline - steady_clock::now());
          pollfd pfd{fd, POLLOUT, 0};
          int err = 0;
          socklen_t len = sizeof err;
          ok = ::poll(&pfd, 1,
                      static_cast<int>(
                          std::clamp<int64_t>(left.count(), 0, 500))) == 1 &&
               ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 &&
               err == 0;
        }
        ::close(fd);
        if (ok) {
          ::freeaddrinfo(list);
          return true;
        }
      }
      ::freeaddrinfo(list);
    }
    if (steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(50));
  }
}

c10::intrusive_ptr<c10d::Store> connect_store(const std::string& addr, int port,
                                              int rank, int size,
                                              bool is_server,
                                              const WorldOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  auto fail = [&](const std::string& cause) -> CollectiveError {
    return CollectiveError("init: TCPStore rendezvous at " + addr + ":" +
                           std::to_string(port) + " failed for rank " +
                           std::to_string(rank) + " of " +
                           std::to_string(size) +
                           " (is rank 0 / the launcher up, and MASTER_ADDR/"
                           "MASTER_PORT the same on every rank?): " +
                           cause);
  };
  c10d::TCPStoreOptions store_options;
  store_options.port = static_cast<std::uint16_t>(port);
  store_options.isServer = is_server;
  store_options.numWorkers = static_cast<std::size_t>(size);
  // The server does not wait for the clients to register: the process
  // group's rendezvous that follows waits for every peer, bounded by the
  // same timeout (c10d's wait for workers rounds it up to whole seconds).
  store_options.waitWorkers = false;
  store_options.timeout = options.timeout;
  if (!is_server && !wait_for_listener(addr, port, start + options.timeout)) {
    throw fail("nothing listened there within the timeout of " +
               std::to_string(options.timeout.count()) + " ms");
  }
  try {
    auto store = c10::make_intrusive<c10d::TCPStore>(addr, store_options);
    return store;
  } catch (const std::exception& e) {
    throw fail(detail::error_text(e));
  }
}

// A single-host job (MASTER_ADDR on loopback) keeps Gloo on loopback too.
void loopback_if_local(const std::string& addr, WorldOptions& options) {
  if (options.gloo_hostname.empty() &&
      (addr == "127.0.0.1" || addr == "localhost") &&
      std::getenv("GLOO_SOCKET_IFNAME") == nullptr) {
    options.gloo_hostname = "127.0.0.1";
  }
}

}  // namespace

std::shared_ptr<World> init(Backend backend, int rank, int size,
                            const std::string& master_addr, int master_port,
                            WorldOptions options) {
  if (backend == Backend::Fake) return World::fake(rank, size, options);
  if (size < 1 || rank < 0 || rank >= size)
    throw InvalidArgument("init: rank " + std::to_string(rank) +
                          " is not in a world of size " + std::to_string(size));
  auto store = connect_store(master_addr, master_port, rank, size,
                             /*is_server=*/rank == 0, options);
  loopback_if_local(master_addr, options);
  return World::create(backend, rank, size, store, options);
}

std::shared_ptr<World> init_from_env(const InitOptions& options) {
  std::string backend_name = options.backend;
  if (backend_name.empty()) {
    const char* b = std::getenv("SPMD_BACKEND");
    backend_name = b && *b ? b : "gloo";
  }
  Backend backend = parse_backend(backend_name);
  if (backend == Backend::Fake) {
    // The fake backend still honours a launcher's rank and size if present.
    auto rank = parse_int(std::getenv("RANK"));
    auto size = parse_int(std::getenv("WORLD_SIZE"));
    return World::fake(rank ? static_cast<int>(*rank) : 0,
                       size ? static_cast<int>(*size) : 1, options.world);
  }
  LaunchEnv env = parse_launch_env();
  const char* agent_store = std::getenv("TORCHELASTIC_USE_AGENT_STORE");
  if (agent_store != nullptr && std::string(agent_store) == "True") {
    // torchrun's agent already hosts the TCPStore on MASTER_PORT: every rank
    // is a client, under the agent's per-attempt prefix (as in PyTorch's
    // torch/distributed/rendezvous.py).
    const char* attempt = std::getenv("TORCHELASTIC_RESTART_COUNT");
    c10::intrusive_ptr<c10d::Store> store =
        connect_store(env.master_addr, env.master_port, env.rank,
                      env.world_size, /*is_server=*/false, options.world);
    store = c10::make_intrusive<c10d::PrefixStore>(
        std::string("/worker/attempt_") + (attempt ? attempt : "0"), store);
    WorldOptions world = options.world;
    loopback_if_local(env.master_addr, world);
    return World::create(backend, env.rank, env.world_size, store, world);
  }
  return init(backend, env.rank, env.world_size, env.master_addr,
              env.master_port, options.world);
}

}  // namespace spmd
