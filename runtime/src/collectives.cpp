// collectives.cpp - the differentiable SPMD collectives of spec §7.
//
// Every public collective follows the same path:
//   1. build a core::CollectiveCall, resolve negative shard dims, check the
//      arguments with the core rules (legality, expert gate, dims);
//   2. resolve the axis through the current mesh to a process group;
//   3. lower aliases and redistribute (routing table, §7.12) to a primitive
//      (core::lower_to_primitive);
//   4. run the primitive as one autograd node (CollectiveFunction) whose
//      backward runs core::backward_of(primitive) - the dual - through the
//      same path, so double backward works too;
//   5. hand input and output to the runtime checker's hook (§5.2 step 8).
//
// Data movement (n ranks on the axis, this rank r): V stacks / unbinds on a
// dim (default 0), S(i) concatenates / splits on dim i, uneven S(i) via split
// sizes. Every rank must call the same collectives in the same order on a
// group (c10d's invariant); a peer that does not arrive within the World's
// timeout gives spmd::CollectiveError naming the collective and the axis.
#include <ATen/ATen.h>
#include <spmd/collectives.h>
#include <spmd/core/collectives.h>
#include <spmd/detail/collective_hook.h>
#include <spmd/errors.h>
#include <spmd/mesh.h>
#include <torch/csrc/autograd/custom_function.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <numeric>
#include <sstream>

#include "call_check.h"
#include "error_text.h"
#include "torch_compat.h"

namespace spmd {
namespace {

using at::Tensor;
using core::Collective;
using core::CollectiveCall;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Everything a primitive needs in forward and in backward. Copies the group
// handle so that backward works after the mesh guard is gone.
struct Plan : torch::CustomClassHolder {
  CollectiveCall call;  // a primitive: resolved, aliases and routing lowered
  Collective user_op = Collective::AllReduce;  // what the user called
  // The call whose backward this is (null in forward): messages name both.
  // A pointer instead of a prebuilt string: the name is only spelled out
  // for an error or a checked call, never on the fast path.
  c10::intrusive_ptr<Plan> backward_of;
  std::string axis;
  // The mesh's printed name (messages only), shared between calls.
  std::shared_ptr<const std::string> mesh;
  int64_t n = 1;
  int64_t r = 0;
  c10::intrusive_ptr<c10d::ProcessGroup> pg;
  std::chrono::milliseconds timeout{0};
  std::optional<c10::ScalarType> op_dtype;
  std::optional<c10::ScalarType> out_dtype;
  BackwardOptions backward;
  bool check = true;                      // WorldOptions::check_collectives
  c10::ScalarType in_dtype = at::kFloat;  // set by forward, for backward

  // User-facing name for messages: "all_gather", or "reduce_scatter
  // (backward of all_gather)".
  std::string what() const {
    std::string s = core::to_string(backward_of ? call.op : user_op);
    if (backward_of) s += " (backward of " + backward_of->what() + ")";
    return s;
  }
};

[[noreturn]] void shape_error(const Plan& p, const std::string& detail) {
  throw ShapeError(p.what() + " on axis '" + p.axis + "' (group of " +
                   std::to_string(p.n) + "): " + detail);
}

std::string where(const Plan& p) {
  std::ostringstream os;
  os << p.what() << " on axis '" << p.axis << "'";
  return os.str();
}

// Starts and waits for a c10d work item. c10d and Gloo errors never escape
// as themselves: a call c10d rejects before communicating and a
// communication failure (timeout, a peer that exited, a broken connection)
// both become CollectiveError naming the collective, the axis and the rank.
void wait(const Plan& p, const char* primitive,
          const std::function<c10::intrusive_ptr<c10d::Work>()>& start) {
  c10::intrusive_ptr<c10d::Work> work;
  try {
    work = start();
  } catch (const SpmdError&) {
    throw;
  } catch (const std::exception& e) {
    std::ostringstream os;
    os << where(p) << ": c10d " << primitive
       << " rejected the call before communicating (rank " << p.r << " of "
       << p.n << " on the axis, " << *p.mesh
       << "). c10d said: " << detail::error_text(e);
    throw CollectiveError(os.str());
  }
  try {
    work->wait();
  } catch (const std::exception& e) {
    std::ostringstream os;
    os << where(p) << " failed in c10d " << primitive << " (rank " << p.r
       << " of " << p.n << " on the axis, " << *p.mesh
       << "): a peer did not arrive within the timeout of " << p.timeout.count()
       << " ms, exited, or the connection broke; every rank of the axis must "
          "call the same collectives in the same order. c10d said: "
       << detail::error_text(e);
    throw CollectiveError(os.str());
  }
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const Plan& p, const char* name) {
  if (dim < -ndim || dim >= ndim)
    throw InvalidArgument(p.what() + ": " + name + "=" + std::to_string(dim) +
                          " is out of range for a result with " +
                          std::to_string(ndim) + " dims");
  return dim < 0 ? dim + ndim : dim;
}

int shard_dim(core::PerAxisType t) { return t.dim; }

std::vector<int64_t> to_i64(const std::vector<long>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

// ---------------------------------------------------------------------------
// Raw communication on the axis group.

// [n, *x.shape]: slot s holds rank s's x (all ranks must pass equal shapes).
Tensor gather_stacked(const Tensor& x, const Plan& p) {
  Tensor in = x.contiguous();
  std::vector<int64_t> shape{p.n};
  shape.insert(shape.end(), in.sizes().begin(), in.sizes().end());
  Tensor out = at::empty(shape, in.options());
  if (p.n == 1) return out.copy_(in.unsqueeze(0));
  std::vector<std::vector<Tensor>> outs{out.unbind(0)};
  std::vector<Tensor> ins{in};
  wait(p, "allgather", [&] { return p.pg->allgather(outs, ins); });
  return out;
}

// Sum over ranks of piece r: rank s contributes pieces[k] to rank k.
// Uneven pieces, or a backend without a good reduce_scatter (Gloo:
// compat::has_native_reduce_scatter), take one all-to-all of the pieces
// followed by a local sum (the same bytes as a ring reduce-scatter).
// `whole`, when defined, is a contiguous tensor whose flat storage holds the
// pieces back to back (dim-0 splits): it is sent as is, without a copy.
Tensor reduce_scatter_pieces(std::vector<Tensor> pieces, const Plan& p,
                             const Tensor& whole = Tensor()) {
  const Tensor& mine = pieces[p.r];
  if (p.n == 1) return mine.clone(at::MemoryFormat::Contiguous);
  bool even = true;
  for (const auto& t : pieces) even = even && t.sizes() == mine.sizes();
  if (even && compat::has_native_reduce_scatter(*p.pg)) {
    Tensor out = at::empty(mine.sizes(), mine.options());
    std::vector<Tensor> outs{out};
    std::vector<std::vector<Tensor>> ins{{}};
    for (auto& t : pieces) ins[0].push_back(t.contiguous());
    wait(p, "reduce_scatter", [&] { return p.pg->reduce_scatter(outs, ins); });
    return out;
  }
  std::vector<int64_t> in_splits;
  std::vector<Tensor> flat;
  for (auto& t : pieces) {
    in_splits.push_back(t.numel());
    flat.push_back(t.reshape({-1}));
  }
  Tensor input = whole.defined() ? whole.view({-1}) : at::cat(flat, 0);
  Tensor output = at::empty({p.n * mine.numel()}, mine.options());
  std::vector<int64_t> out_splits(p.n, mine.numel());
  wait(p, "all_to_all_single", [&] {
    return compat::all_to_all_single(*p.pg, output, input, out_splits,
                                     in_splits);
  });
  return output.view({p.n, mine.numel()}).sum(0).view(mine.sizes());
}

// reduce_scatter_pieces of the n even dim-0 pieces of a contiguous `whole`,
// each of shape `piece_shape`, without building the pieces as tensors (the
// common case: a sequence-parallel reduce-scatter of a contiguous product).
// Only on n > 1 ranks of a group without a native reduce_scatter.
Tensor reduce_scatter_whole(const Tensor& whole, at::IntArrayRef piece_shape,
                            const Plan& p) {
  const int64_t piece = whole.numel() / p.n;
  Tensor input = whole.view({-1});
  Tensor output = at::empty({p.n * piece}, whole.options());
  std::vector<int64_t> splits(p.n, piece);
  wait(p, "all_to_all_single", [&] {
    return compat::all_to_all_single(*p.pg, output, input, splits, splits);
  });
  return output.view({p.n, piece}).sum(0).view(piece_shape);
}

// The input split into n contiguous blocks along dim 0 is exchanged: block k
// goes to rank k; the result holds the received blocks in rank order.
Tensor exchange(const Tensor& x, std::vector<int64_t> out_rows,
                std::vector<int64_t> in_rows, const Plan& p) {
  Tensor in = x.contiguous();
  int64_t rows = out_rows.empty() ? in.size(0)
                                  : std::accumulate(out_rows.begin(),
                                                    out_rows.end(), int64_t{0});
  std::vector<int64_t> shape = in.sizes().vec();
  shape[0] = rows;
  Tensor out = at::empty(shape, in.options());
  if (p.n == 1) return out.copy_(in);
  wait(p, "all_to_all_single", [&] {
    return compat::all_to_all_single(*p.pg, out, in, out_rows, in_rows);
  });
  return out;
}

// ---------------------------------------------------------------------------
// Before communicating: the cross-rank consistency check (call_check.h) and
// what the backend can carry, so that every rank gets a named error instead
// of a Gloo abort, a corrupted result or a misleading timeout.

bool communicates(Collective op) {
  return op == Collective::AllReduce || op == Collective::AllGather ||
         op == Collective::ReduceScatter || op == Collective::AllToAll;
}

detail::CallSite site_of(const Plan& p) {
  return {p.what(), p.axis, *p.mesh, p.n, p.r};
}

// The all-gather of a small int64 row that the checks exchange.
detail::Exchange exchange_of(const Tensor& x, const Plan& p) {
  return [&x, &p](const Tensor& row) {
    // NCCL groups carry CUDA tensors only.
    const bool nccl =
        p.pg->getBackendType() == c10d::ProcessGroup::BackendType::NCCL;
    Tensor in =
        nccl ? row.to(x.is_cuda() ? x.device() : at::Device(at::kCUDA)) : row;
    if (!nccl) {
      // Into one flat buffer: no per-rank views of it to build.
      Tensor flat = at::empty({p.n * in.numel()}, in.options());
      wait(p, "allgather (consistency check)",
           [&] { return p.pg->_allgather_base(flat, in); });
      return flat.view({p.n, in.numel()});
    }
    Tensor out = at::empty({p.n, in.numel()}, in.options());
    std::vector<std::vector<Tensor>> outs{out.unbind(0)};
    std::vector<Tensor> ins{in};
    wait(p, "allgather (consistency check)",
         [&] { return p.pg->allgather(outs, ins); });
    return out.cpu();
  };
}

int64_t opt_dim(const std::optional<long>& d) { return d ? *d : INT64_MIN; }

// The dtypes Gloo's kernels are instantiated for (ProcessGroupGloo's
// GENERATE_ALL_TYPES); all_reduce also takes complex (viewed as real).
bool gloo_supports(c10::ScalarType t, Collective op) {
  switch (t) {
    case at::kFloat:
    case at::kDouble:
    case at::kHalf:
    case at::kBFloat16:
    case at::kChar:
    case at::kByte:
    case at::kBool:
    case at::kInt:
    case at::kLong:
      return true;
    case at::kComplexFloat:
    case at::kComplexDouble:
      return op == Collective::AllReduce;
    default:
      return false;
  }
}

// Whether the group's backend can carry x at all (same verdict on every
// rank once the consistency check has passed).
void check_backend_support(const Tensor& x, const Plan& p) {
  const auto type = p.pg->getBackendType();
  const std::string device =
      c10::DeviceTypeName(x.device().type(), /*lower_case=*/true);
  if (type == c10d::ProcessGroup::BackendType::NCCL && !x.is_cuda())
    throw InvalidArgument(where(p) +
                          ": the nccl backend communicates cuda "
                          "tensors only, but this rank passed a " +
                          device + " tensor; move it with x.cuda() first");
  if (type != c10d::ProcessGroup::BackendType::GLOO) return;
  if (!x.is_cpu() && !x.is_cuda())
    throw InvalidArgument(where(p) + ": the gloo backend communicates cpu " +
                          "and cuda tensors, not a " + device +
                          " tensor; move it with x.cpu() first");
  if (!gloo_supports(x.scalar_type(), p.call.op)) {
    throw InvalidArgument(
        where(p) + ": unsupported dtype " + c10::toString(x.scalar_type()) +
        " for the gloo backend (it communicates Float, Double, Half, "
        "BFloat16, Char, Byte, Bool, Int and Long" +
        (p.call.op == Collective::AllReduce
             ? std::string(", and ComplexFloat/ComplexDouble in all_reduce")
             : std::string()) +
        "); cast the input first or pass options.op_dtype, e.g. "
        "options.op_dtype = at::kFloat");
  }
}

// The room for data in the check's messages on each process group
// (detail::grown_room). All ranks of a group hold the same value: it starts
// at detail::kInlineBytes and changes only after a check that every rank
// passed, from values of that check. A group is held weakly: its address
// is not reused while its entry exists, and an entry of a destroyed group
// is dropped.
class InlineRoom {
 public:
  static int64_t get(const c10::intrusive_ptr<c10d::ProcessGroup>& pg) {
    std::lock_guard<std::mutex> lock(mu());
    for (const Entry& e : entries())
      if (e.group._unsafe_get_target() == pg.get()) return e.room;
    return detail::kInlineBytes;
  }
  static void set(const c10::intrusive_ptr<c10d::ProcessGroup>& pg,
                  int64_t room) {
    std::lock_guard<std::mutex> lock(mu());
    auto& all = entries();
    all.erase(std::remove_if(all.begin(), all.end(),
                             [](const Entry& e) { return e.group.expired(); }),
              all.end());
    for (Entry& e : all) {
      if (e.group._unsafe_get_target() == pg.get()) {
        e.room = room;
        return;
      }
    }
    all.push_back({c10::weak_intrusive_ptr<c10d::ProcessGroup>(pg), room});
  }

 private:
  struct Entry {
    c10::weak_intrusive_ptr<c10d::ProcessGroup> group;
    int64_t room;
  };
  static std::mutex& mu() {
    static std::mutex m;
    return m;
  }
  static std::vector<Entry>& entries() {
    static std::vector<Entry> e;
    return e;
  }
};

// Runs the checks before a communicating primitive on n > 1 ranks. Returns
// every rank's extent along the uneven shard dim (uneven all_gather), or
// nothing. `wanted` (inline_candidate) is the bytes of x that could travel
// with the check, or -1; when they fit the group's room, they do, and
// `*gathered` receives every rank's x as rows (see
// detail::check_signatures); it is left undefined otherwise.
std::vector<int64_t> preflight(const Tensor& x, const Plan& p,
                               int64_t wanted = -1,
                               Tensor* gathered = nullptr) {
  std::vector<int64_t> extents;
  // The fake backend has no peers to disagree with.
  const auto type = p.pg->getBackendType();
  const bool real = type == c10d::ProcessGroup::BackendType::GLOO ||
                    type == c10d::ProcessGroup::BackendType::NCCL;
  if (p.check && real) {
    const CollectiveCall& c = p.call;
    detail::CallSignature sig;
    sig.op = c.op;
    sig.user_op = p.user_op;
    sig.src = c.src;
    sig.dst = c.dst;
    sig.dtype = x.scalar_type();
    sig.device = x.device().type();
    sig.shape = x.sizes().vec();
    sig.dims = {opt_dim(c.gather_dim), opt_dim(c.scatter_dim),
                opt_dim(c.split_dim), opt_dim(c.concat_dim)};
    sig.split_sizes = to_i64(c.split_sizes);
    const bool uneven_a2a =
        !c.input_split_sizes.empty() || !c.output_split_sizes.empty();
    if (c.op == Collective::AllGather && c.src.is_shard() &&
        !c.split_sizes.empty())
      sig.free_dim = shard_dim(c.src);
    if (c.op == Collective::AllToAll && uneven_a2a && x.dim() > 0)
      sig.free_dim = 0;
    auto exchange = exchange_of(x, p);
    const int64_t room = InlineRoom::get(p.pg);
    Tensor payload;
    if (wanted >= 0 && wanted <= room && gathered) payload = x.contiguous();
    extents = detail::check_signatures(sig, site_of(p), exchange, room, payload,
                                       gathered);
    // Every rank passed the same check: the next message's room follows.
    const int64_t next = detail::grown_room(room, wanted, p.n);
    if (next != room) InlineRoom::set(p.pg, next);
    if (c.op == Collective::AllToAll && uneven_a2a && x.dim() > 0) {
      auto even = std::vector<int64_t>(p.n, x.size(0) / p.n);
      detail::check_all_to_all_rows(
          c.input_split_sizes.empty() ? even : to_i64(c.input_split_sizes),
          c.output_split_sizes.empty() ? even : to_i64(c.output_split_sizes),
          site_of(p), exchange);
    }
  }
  check_backend_support(x, p);
  return extents;
}

// ---------------------------------------------------------------------------
// Forward kernels of the primitives (spec §7.3-§7.8), in the op dtype.

Tensor all_reduce_kernel(const Tensor& x, bool owned, const Plan& p) {
  if (p.call.inplace) {
    Tensor buf = x.is_contiguous() ? x : x.contiguous();
    if (p.n > 1) {
      std::vector<Tensor> v{buf};
      wait(p, "allreduce", [&] { return p.pg->allreduce(v); });
    }
    if (!buf.is_same(x)) x.copy_(buf);
    return x;
  }
  Tensor y =
      owned && x.is_contiguous() ? x : x.clone(at::MemoryFormat::Contiguous);
  if (p.n > 1) {
    std::vector<Tensor> v{y};
    wait(p, "allreduce", [&] { return p.pg->allreduce(v); });
  }
  return y;
}

// `stacked`, when defined, is what gather_stacked would return (the data
// travelled with the consistency check).
Tensor all_gather_kernel(const Tensor& x, const Plan& p,
                         const std::vector<int64_t>& extents,
                         const Tensor& stacked = Tensor()) {
  const CollectiveCall& c = p.call;
  if (!c.src.is_shard()) {  // V: stack on gather_dim
    int64_t g =
        wrap_dim(c.gather_dim.value_or(0), x.dim() + 1, p, "gather_dim");
    Tensor out = stacked.defined() ? stacked : gather_stacked(x, p);
    return g == 0 ? out : out.movedim(0, g).contiguous();
  }
  const int64_t i = shard_dim(c.src);
  if (c.split_sizes.empty()) {  // S(i): concatenate on i
    Tensor out = stacked.defined() ? stacked : gather_stacked(x, p);
    if (i == 0) return out.flatten(0, 1);
    return out.movedim(0, i).flatten(i, i + 1);
  }
  // Uneven S(i): pad every shard to the largest, gather, trim, concatenate.
  auto sizes = to_i64(c.split_sizes);
  if (static_cast<int64_t>(sizes.size()) != p.n)
    shape_error(p, "split_sizes has " + std::to_string(sizes.size()) +
                       " entries but the axis has " + std::to_string(p.n) +
                       " ranks");
  // With the consistency check every rank knows every extent: all of them
  // report the rank whose shard does not match, not only that rank.
  for (int64_t s = 0; s < static_cast<int64_t>(extents.size()); ++s)
    if (s != p.r && extents[s] != sizes[s])
      shape_error(p, "rank " + std::to_string(s) + "'s extent along dim " +
                         std::to_string(i) + " is " +
                         std::to_string(extents[s]) + " but split_sizes[" +
                         std::to_string(s) + "] is " +
                         std::to_string(sizes[s]));
  if (x.size(i) != sizes[p.r])
    shape_error(p, "this rank's extent along dim " + std::to_string(i) +
                       " is " + std::to_string(x.size(i)) +
                       " but split_sizes[" + std::to_string(p.r) + "] is " +
                       std::to_string(sizes[p.r]));
  const int64_t max = *std::max_element(sizes.begin(), sizes.end());
  Tensor moved = x.movedim(i, 0);
  std::vector<int64_t> padded_shape = moved.sizes().vec();
  padded_shape[0] = max;
  Tensor padded = at::zeros(padded_shape, x.options());
  padded.narrow(0, 0, moved.size(0)).copy_(moved);
  Tensor out = gather_stacked(padded, p);
  std::vector<Tensor> pieces;
  for (int64_t s = 0; s < p.n; ++s)
    pieces.push_back(out[s].narrow(0, 0, sizes[s]));
  Tensor cat = at::cat(pieces, 0);
  return i == 0 ? cat : cat.movedim(0, i).contiguous();
}

Tensor reduce_scatter_kernel(const Tensor& x, const Plan& p) {
  const CollectiveCall& c = p.call;
  const bool whole_path = p.n > 1 && !compat::has_native_reduce_scatter(*p.pg);
  if (!c.dst.is_shard()) {  // V: unbind scatter_dim
    if (x.dim() == 0) shape_error(p, "a 0-d input cannot be scattered");
    int64_t d = wrap_dim(c.scatter_dim.value_or(0), x.dim(), p, "scatter_dim");
    if (x.size(d) != p.n)
      shape_error(p, "input dimension " + std::to_string(d) + " has size " +
                         std::to_string(x.size(d)) +
                         " but must equal the group size " +
                         std::to_string(p.n) + " (V unbinds it)");
    if (d == 0 && x.is_contiguous() && whole_path)
      return reduce_scatter_whole(x, x.sizes().slice(1), p);
    return reduce_scatter_pieces(x.unbind(d), p,
                                 d == 0 && x.is_contiguous() ? x : Tensor());
  }
  const int64_t i = shard_dim(c.dst);
  if (c.split_sizes.empty()) {
    if (x.size(i) % p.n != 0)
      shape_error(p, "input dimension " + std::to_string(i) + " (" +
                         std::to_string(x.size(i)) +
                         " must be a multiple of group_size " +
                         std::to_string(p.n) +
                         "); pass split_sizes for uneven shards");
    if (i == 0 && x.is_contiguous() && whole_path) {
      std::vector<int64_t> piece = x.sizes().vec();
      piece[0] /= p.n;
      return reduce_scatter_whole(x, piece, p);
    }
    return reduce_scatter_pieces(x.chunk(p.n, i), p,
                                 i == 0 && x.is_contiguous() ? x : Tensor());
  }
  auto sizes = to_i64(c.split_sizes);
  if (static_cast<int64_t>(sizes.size()) != p.n)
    shape_error(p, "split_sizes has " + std::to_string(sizes.size()) +
                       " entries but the axis has " + std::to_string(p.n) +
                       " ranks");
  if (std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != x.size(i))
    shape_error(p, "split_sizes sum to " +
                       std::to_string(std::accumulate(
                           sizes.begin(), sizes.end(), int64_t{0})) +
                       " but input dimension " + std::to_string(i) + " is " +
                       std::to_string(x.size(i)));
  return reduce_scatter_pieces(x.split_with_sizes(sizes, i), p,
                               i == 0 && x.is_contiguous() ? x : Tensor());
}

Tensor all_to_all_kernel(const Tensor& x, const Plan& p) {
  const CollectiveCall& c = p.call;
  const bool src_shard = c.src.is_shard(), dst_shard = c.dst.is_shard();
  if (x.dim() == 0) shape_error(p, "a 0-d input cannot be split");
  if (!c.input_split_sizes.empty() || !c.output_split_sizes.empty()) {
    // Uneven: dims are 0 (checked by the core); default splits are even.
    auto even = std::vector<int64_t>(p.n, x.size(0) / p.n);
    auto in_rows =
        c.input_split_sizes.empty() ? even : to_i64(c.input_split_sizes);
    auto out_rows =
        c.output_split_sizes.empty() ? even : to_i64(c.output_split_sizes);
    if (static_cast<int64_t>(in_rows.size()) != p.n ||
        static_cast<int64_t>(out_rows.size()) != p.n)
      shape_error(p,
                  "input_split_sizes and output_split_sizes need one entry "
                  "per rank (" +
                      std::to_string(p.n) + ")");
    if (std::accumulate(in_rows.begin(), in_rows.end(), int64_t{0}) !=
        x.size(0))
      shape_error(p, "input_split_sizes do not sum to the input's dim 0 (" +
                         std::to_string(x.size(0)) + ")");
    return exchange(x, out_rows, in_rows, p);
  }
  // Dimension choice of spec §7.6 (shard dims already resolved).
  // A given dim must be in range even where the shards decide.
  if (c.split_dim) wrap_dim(*c.split_dim, x.dim(), p, "split_dim");
  if (c.concat_dim) wrap_dim(*c.concat_dim, x.dim(), p, "concat_dim");
  const core::AllToAllDims dims = core::all_to_all_dims(c);
  const int64_t split_dim = wrap_dim(dims.split, x.dim(), p, "split_dim");
  const int64_t concat = wrap_dim(dims.concat, x.dim(), p, "concat_dim");
  if (!src_shard && !dst_shard) {  // stack kernel
    if (x.size(split_dim) != p.n)
      shape_error(p, "input dimension " + std::to_string(split_dim) +
                         " has size " + std::to_string(x.size(split_dim)) +
                         " but must equal the group size " +
                         std::to_string(p.n));
    Tensor out = exchange(x.movedim(split_dim, 0), {}, {}, p);  // [n, rest]
    return concat == 0 ? out : out.movedim(0, concat).contiguous();
  }
  // Shard kernel: split on split_dim, concatenate on concat.
  if (x.size(split_dim) % p.n != 0)
    throw InvalidArgument(
        p.what() + " on axis '" + p.axis + "': input dimension " +
        std::to_string(split_dim) + " (" + std::to_string(x.size(split_dim)) +
        ") is not evenly divisible by world_size " + std::to_string(p.n));
  Tensor out = exchange(x.movedim(split_dim, 0), {}, {}, p);
  if (split_dim == 0 && concat == 0) return out;
  std::vector<Tensor> pieces;
  for (Tensor& piece : out.chunk(p.n, 0))
    pieces.push_back(piece.movedim(0, split_dim));
  return at::cat(pieces, concat);
}

// Keeps piece `index` of `len`-long chunks along dim (torch.chunk semantics:
// pieces of ceil(L/n), the last ones may be short or empty).
Tensor chunk_piece(const Tensor& x, int64_t dim, const Plan& p) {
  const int64_t L = x.size(dim);
  const int64_t piece = (L + p.n - 1) / p.n;
  const int64_t start = std::min(p.r * piece, L);
  const int64_t len = std::max<int64_t>(0, std::min(piece, L - start));
  return x.narrow(dim, start, len).clone(at::MemoryFormat::Contiguous);
}

Tensor convert_kernel(const Tensor& x, const Plan& p) {
  using spmd::TypeKind;
  const auto src = p.call.src.kind, dst = p.call.dst.kind;
  const bool src_ri = src == TypeKind::Replicate || src == TypeKind::Invariant;
  if (src_ri && dst == TypeKind::Varying) {
    // Dim 0 by the spec; the dual of all_gather(V->I, gather_dim=g) unbinds
    // dim g (the core passes it as scatter_dim).
    if (x.dim() == 0)
      shape_error(p, "convert to V unbinds a dim, but the input is 0-d");
    const int64_t d =
        wrap_dim(p.call.scatter_dim.value_or(0), x.dim(), p, "scatter_dim");
    if (x.size(d) != p.n)
      shape_error(p, "convert to V unbinds dim " + std::to_string(d) +
                         ", which must have the group size " +
                         std::to_string(p.n) + "; got shape " +
                         c10::str(x.sizes()) + " (use S(i) to chunk instead)");
    return x.select(d, p.r).clone(at::MemoryFormat::Contiguous);
  }
  if (src_ri && dst == TypeKind::Shard)
    return chunk_piece(x, p.call.dst.dim, p);
  if (src_ri && dst == TypeKind::Partial)
    return p.r == 0 ? x.clone() : at::zeros_like(x);
  if (src == TypeKind::Varying && dst == TypeKind::Partial) {
    std::vector<int64_t> shape{p.n};
    shape.insert(shape.end(), x.sizes().begin(), x.sizes().end());
    Tensor y = at::zeros(shape, x.options());
    y[p.r].copy_(x);
    return y;
  }
  if (src == TypeKind::Shard && dst == TypeKind::Partial) {
    const int64_t i = p.call.src.dim;
    std::vector<int64_t> shape = x.sizes().vec();
    const int64_t L = shape[i];
    shape[i] = p.n * L;
    Tensor y = at::zeros(shape, x.options());
    y.narrow(i, p.r * L, L).copy_(x);
    return y;
  }
  return x;  // R->I, I->R: identity on data
}

Tensor local_split_kernel(const Tensor& x, const Plan& p) {
  const auto& c = p.call;
  const int64_t i = c.dst.is_shard() ? c.dst.dim : c.src.dim;
  auto sizes = to_i64(c.split_sizes);
  if (static_cast<int64_t>(sizes.size()) != p.n)
    shape_error(p, "split_sizes need one entry per rank");
  int64_t start = 0;
  for (int64_t s = 0; s < p.r; ++s) start += sizes[s];
  return x.narrow(i, start, sizes[p.r]).clone(at::MemoryFormat::Contiguous);
}

// The bytes of x that can travel inside the consistency check's message
// (detail::check_signatures), or -1: on a Gloo group with the check on, a
// CPU tensor for
//   * all_reduce, of a dtype whose sum in rank order is what Gloo computes
//     up to rounding;
//   * all_gather of V or of even S(i) shards;
//   * reduce_scatter to V or to even S(i) shards (Gloo's takes one
//     all_to_all and a local sum: the same sum in the same order).
// The decision depends only on what every rank checks (op, src, dst, dims,
// split sizes, dtype, device, shape) and on settings every rank shares, so
// all ranks take the same path. A shape the kernel rejects gives -1: the
// kernel reports it.
int64_t inline_candidate(const Tensor& x, const Plan& p) {
  const CollectiveCall& c = p.call;
  if (!p.check || !x.is_cpu() ||
      p.pg->getBackendType() != c10d::ProcessGroup::BackendType::GLOO)
    return -1;
  const int64_t bytes = static_cast<int64_t>(x.nbytes());
  switch (c.op) {
    case Collective::AllReduce: {
      const auto t = x.scalar_type();
      return t == at::kFloat || t == at::kDouble || t == at::kInt ||
                     t == at::kLong
                 ? bytes
                 : -1;
    }
    case Collective::AllGather:
      return c.split_sizes.empty() ? bytes : -1;
    case Collective::ReduceScatter: {
      if (!c.split_sizes.empty() || compat::has_native_reduce_scatter(*p.pg) ||
          x.dim() == 0)
        return -1;
      if (c.dst.is_shard()) {
        const int64_t i = shard_dim(c.dst);
        return i >= 0 && i < x.dim() && x.size(i) % p.n == 0 ? bytes : -1;
      }
      const int64_t d = c.scatter_dim.value_or(0);
      if (d < -x.dim() || d >= x.dim()) return -1;
      return x.size(d < 0 ? d + x.dim() : d) == p.n ? bytes : -1;
    }
    default:
      return -1;
  }
}

// The result of a collective whose data travelled with the check: `rows`
// holds every rank's x ([n, x.numel()], row s from rank s). Every rank
// computes from the same rows what the communicating kernel gives.
Tensor from_rows(const Tensor& x, const Tensor& rows, const Plan& p) {
  std::vector<int64_t> shape{p.n};
  shape.insert(shape.end(), x.sizes().begin(), x.sizes().end());
  Tensor stacked = rows.view(shape);  // [n, *x.shape], as gather_stacked
  const CollectiveCall& c = p.call;
  switch (c.op) {
    case Collective::AllReduce: {
      // Summed in rank order into a fresh tensor, not a view (gradients
      // assigned from it must be detachable in place).
      Tensor sum = stacked.sum(0, /*keepdim=*/false, x.scalar_type());
      if (!c.inplace) return sum;
      x.copy_(sum);
      return x;
    }
    case Collective::AllGather:
      return all_gather_kernel(x, p, {}, stacked.contiguous());
    case Collective::ReduceScatter: {
      // Every rank's piece r, laid out as the all_to_all delivers them
      // ([n, piece], contiguous), summed over dim 0 (reduce_scatter_pieces).
      Tensor pieces;
      if (c.dst.is_shard()) {
        const int64_t i = shard_dim(c.dst), len = x.size(i) / p.n;
        pieces = stacked.narrow(i + 1, p.r * len, len);
      } else {
        const int64_t d = c.scatter_dim.value_or(0);
        pieces = stacked.select(d < 0 ? d + x.dim() + 1 : d + 1, p.r);
      }
      Tensor flat = pieces.contiguous().view({p.n, -1});
      return flat.sum(0).view(pieces.sizes().slice(1));
    }
    default:
      throw UsageError(std::string("internal: ") + core::to_string(c.op) +
                       " does not travel with the check");
  }
}

// Split sizes are row counts: a negative one would reach libtorch's split
// and give its raw error. Checked after the consistency check, so that
// ranks passing different split sizes all get its CollectiveError, and
// ranks passing the same negative ones all get this error.
void check_split_sizes(const Plan& p) {
  const CollectiveCall& c = p.call;
  for (const auto* sizes :
       {&c.split_sizes, &c.input_split_sizes, &c.output_split_sizes}) {
    for (size_t i = 0; i < sizes->size(); ++i) {
      if ((*sizes)[i] >= 0) continue;
      const char* name = sizes == &c.split_sizes         ? "split_sizes"
                         : sizes == &c.input_split_sizes ? "input_split_sizes"
                                                         : "output_split_sizes";
      shape_error(p, std::string(name) + "[" + std::to_string(i) + "] is " +
                         std::to_string((*sizes)[i]) +
                         "; split sizes count rows and must be >= 0: pass "
                         "each rank's extent along the split dim, one entry "
                         "per rank of the axis");
    }
  }
}

Tensor run_kernel(const Tensor& x_op, bool owned, const Plan& p) {
  std::vector<int64_t> extents;
  if (p.n > 1 && communicates(p.call.op)) {
    const int64_t wanted = inline_candidate(x_op, p);
    if (wanted >= 0) {
      // One round trip when x fits the room: the check's message carries
      // every rank's data. Otherwise (or on the fake backend, which runs no
      // check) the kernel communicates as usual.
      Tensor rows;
      extents = preflight(x_op, p, wanted, &rows);
      if (rows.defined()) return from_rows(x_op, rows, p);
    } else {
      extents = preflight(x_op, p);
    }
  }
  check_split_sizes(p);
  switch (p.call.op) {
    case Collective::AllReduce:
      return all_reduce_kernel(x_op, owned, p);
    case Collective::AllGather:
      return all_gather_kernel(x_op, p, extents);
    case Collective::ReduceScatter:
      return reduce_scatter_kernel(x_op, p);
    case Collective::AllToAll:
      return all_to_all_kernel(x_op, p);
    case Collective::Convert:
      return convert_kernel(x_op, p);
    case Collective::Reinterpret:
      return x_op;
    case Collective::LocalSplit:
      return local_split_kernel(x_op, p);
    default:
      throw UsageError(std::string("internal: ") + core::to_string(p.call.op) +
                       " is not a primitive");
  }
}

int bits(c10::ScalarType t) {
  return static_cast<int>(c10::elementSize(t)) * 8;
}

// Forward dtypes of spec §7.10: {op dtype, out dtype}.
std::pair<c10::ScalarType, c10::ScalarType> resolve_dtypes(
    const CollectiveCall& call, c10::ScalarType in,
    std::optional<c10::ScalarType> op, std::optional<c10::ScalarType> out) {
  if (!op && !out) return {in, in};  // core::plan_dtypes: Input, Input
  CollectiveCall c = call;
  c.has_op_dtype = op.has_value();
  c.has_out_dtype = out.has_value();
  core::DtypePlan plan =
      core::plan_dtypes(c, bits(in), out ? bits(*out) : bits(in));
  auto pick = [&](core::DtypeChoice choice) {
    switch (choice) {
      case core::DtypeChoice::Input:
        return in;
      case core::DtypeChoice::Op:
        return op.value_or(in);
      case core::DtypeChoice::Out:
        return out.value_or(in);
    }
    return in;
  };
  return {pick(plan.op), pick(plan.out)};
}

// The forward of a primitive on data: the op dtype, the kernel, the out
// dtype. Runs inside CollectiveFunction::forward, or directly when no graph
// is recorded (see apply_plan).
Tensor forward_data(const Tensor& x, Plan& plan) {
  // The ATen ops a collective runs internally (clone, stack, zeros, ...)
  // are not user ops: keep them away from the runtime checker's fallback.
  c10::impl::ExcludeDispatchKeyGuard no_typing(compat::kCheckerModeKey);
  plan.in_dtype = x.scalar_type();
  auto [op, out] =
      resolve_dtypes(plan.call, x.scalar_type(), plan.op_dtype, plan.out_dtype);
  Tensor x_op = x.scalar_type() == op ? x : x.to(op);
  Tensor y = run_kernel(x_op, !x_op.is_same(x), plan);
  if (y.scalar_type() != out) y = y.to(out);
  // Identity on data (reinterpret, convert(I, R), ...): return an alias
  // that is not the input itself (the checker's hook types the result
  // without retyping the input) and not a view, so the result can later be
  // modified in place (autograd forbids in-place ops on views created in a
  // custom Function).
  if (y.is_same(x) && !plan.call.inplace) y = x.detach();
  return y;
}

Tensor apply_primitive(const Tensor& x, c10::intrusive_ptr<Plan> plan);

// Primitives whose kernel returns its input (run_kernel): reinterpret, and
// convert between R and I.
bool identity_on_data(const CollectiveCall& c) {
  auto ri = [](PerAxisType t) {
    return t.kind == TypeKind::Replicate || t.kind == TypeKind::Invariant;
  };
  return c.op == Collective::Reinterpret ||
         (c.op == Collective::Convert && ri(c.src) && ri(c.dst));
}

// One autograd node per primitive call; backward is the dual (spec §7.13).
class CollectiveFunction
    : public torch::autograd::Function<CollectiveFunction> {
 public:
  static Tensor forward(AutogradContext* ctx, Tensor x,
                        c10::intrusive_ptr<Plan> plan) {
    Tensor y = forward_data(x, *plan);
    if (plan->call.inplace) ctx->mark_dirty({x});
    ctx->saved_data["plan"] = at::IValue::make_capsule(std::move(plan));
    return y;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    c10::impl::ExcludeDispatchKeyGuard no_typing(compat::kCheckerModeKey);
    auto plan = c10::static_intrusive_pointer_cast<Plan>(
        ctx->saved_data["plan"].toCapsule());
    const auto in_dtype = plan->in_dtype;
    Tensor g = grads[0];
    if (!g.defined()) return {Tensor(), Tensor()};
    std::vector<CollectiveCall> steps = core::backward_of(plan->call);
    for (size_t k = 0; k < steps.size(); ++k) {
      // A dual that is the identity on data (the dual of all_reduce(P, I)
      // is convert(I, R); of reinterpret(V, P), reinterpret(R, V)) in the
      // gradient's dtype, where no graph is recorded: forward_data would
      // return an alias of g. g itself serves, without building a plan.
      const bool last = k + 1 == steps.size();
      if (identity_on_data(steps[k]) && !at::GradMode::is_enabled() &&
          !plan->backward.op_dtype &&
          (!last ||
           plan->backward.out_dtype.value_or(in_dtype) == g.scalar_type()))
        continue;
      auto dual = c10::make_intrusive<Plan>(*plan);
      dual->call = std::move(steps[k]);
      dual->user_op = dual->call.op;
      dual->backward_of = plan;
      dual->op_dtype = plan->backward.op_dtype;
      // The gradient comes back in the input's dtype unless told otherwise.
      dual->out_dtype =
          last ? std::optional(plan->backward.out_dtype.value_or(in_dtype))
               : std::nullopt;
      dual->backward = plan->backward.backward_options
                           ? *plan->backward.backward_options
                           : BackwardOptions{};
      g = apply_primitive(g, std::move(dual));
    }
    return {g, Tensor()};
  }
};

// Runs a primitive: as one autograd node when a graph is recorded (grad
// mode on and x requires grad), else directly on the data. Without a graph
// the node would record nothing: the optimizer step's all-reduces under
// NoGradGuard and the duals that backward runs (grad mode is off in a
// backward without create_graph) skip building and destroying it, as a
// hand-written c10d program does.
Tensor apply_plan(const Tensor& x, c10::intrusive_ptr<Plan> plan) {
  if (at::GradMode::is_enabled() && x.requires_grad())
    return CollectiveFunction::apply(x, std::move(plan));
  // As inside a custom Function's forward: no graph for the internal ops.
  at::AutoGradMode no_grad(false);
  return forward_data(x, *plan);
}

Tensor apply_primitive(const Tensor& x, c10::intrusive_ptr<Plan> plan) {
  if (core::is_noop(plan->call) && !plan->out_dtype && !plan->op_dtype)
    return x;
  if (core::is_noop(plan->call))
    return x.to(plan->out_dtype.value_or(x.scalar_type()));
  return apply_plan(x, std::move(plan));
}

CollectiveCall make_call(Collective op, PerAxisType src, PerAxisType dst,
                         const CollectiveOptions& o) {
  CollectiveCall c;
  c.op = op;
  c.src = src;
  c.dst = dst;
  c.expert_mode = o.expert_mode;
  c.inplace = o.inplace;
  c.has_op_dtype = o.op_dtype.has_value();
  c.has_out_dtype = o.out_dtype.has_value();
  if (o.gather_dim) c.gather_dim = static_cast<long>(*o.gather_dim);
  if (o.scatter_dim) c.scatter_dim = static_cast<long>(*o.scatter_dim);
  if (o.split_dim) c.split_dim = static_cast<long>(*o.split_dim);
  if (o.concat_dim) c.concat_dim = static_cast<long>(*o.concat_dim);
  c.split_sizes.assign(o.split_sizes.begin(), o.split_sizes.end());
  c.input_split_sizes.assign(o.input_split_sizes.begin(),
                             o.input_split_sizes.end());
  c.output_split_sizes.assign(o.output_split_sizes.begin(),
                              o.output_split_sizes.end());
  return c;
}

// `name` as a shared string: the one of this thread's last call when equal
// (one mesh at a time, usually), so that a call copies no string.
std::shared_ptr<const std::string> shared_name(const std::string& name) {
  thread_local std::shared_ptr<const std::string> last;
  if (!last || *last != name) last = std::make_shared<const std::string>(name);
  return last;
}

bool is_composed_reinterpret(const CollectiveCall& c) {
  return c.op == Collective::Reinterpret && c.src == types::I &&
         (c.dst == types::V || c.dst == types::P);
}

Tensor run(Collective op, const Tensor& x, const Axis& axis, PerAxisType src,
           PerAxisType dst, const CollectiveOptions& options) {
  if (!x.defined())
    throw UsageError(std::string(core::to_string(op)) +
                     ": the input tensor is undefined");
  CollectiveCall call = make_call(op, src, dst, options);
  // reinterpret rejects S(i) before anything else (§7.7); the other ops
  // resolve negative shard dims against x.ndim first.
  // (Nothing to resolve without a shard dim.)
  if (op != Collective::Reinterpret && (src.is_shard() || dst.is_shard()))
    call = value_or_throw(core::resolve(call, x.dim()));
  value_or_throw(core::check_arguments(call));
  if (is_composed_reinterpret(call) && options.backward.backward_options)
    throw NotImplementedError(
        std::string("reinterpret(") + core::to_string(call.src) + ", " +
        core::to_string(call.dst) +
        ") is a composition of two operations and does not support nested "
        "backward_options (double-backward options)");

  if (axis.name == nullptr || *axis.name == '\0')
    throw UsageError(std::string(core::to_string(op)) +
                     ": the axis has no name (spmd::Axis{nullptr} or an "
                     "empty name); declare mesh axes with SPMD_AXIS(tp) and "
                     "pass one, e.g. spmd::all_reduce(x, tp, P, R)");
  const MeshAxisGroup& group = resolve_axis(axis.name);
  if (x.layout() != at::kStrided) {
    std::ostringstream layout;
    layout << x.layout();
    throw InvalidArgument(
        std::string(core::to_string(op)) + " on axis '" + group.name +
        "': the input is a " + layout.str() +
        " tensor, but collectives communicate dense (strided) tensors; "
        "convert it first, e.g. x.to_dense()");
  }
  Tensor y;
  if (auto prim = core::lower_to_primitive(call)) {
    auto plan = c10::make_intrusive<Plan>();
    plan->call = std::move(*prim);
    plan->user_op = op;
    plan->check = group.check_collectives;
    plan->axis = group.name;
    plan->mesh = shared_name(group.mesh);
    plan->n = group.size;
    plan->r = group.local_rank;
    plan->pg = group.group;
    plan->timeout = group.timeout;
    plan->op_dtype = options.op_dtype;
    plan->out_dtype = options.out_dtype;
    plan->backward = options.backward;

    // Reduced-precision guard (§7.10): a backward that reduces in less than
    // 32 bits must be asked for explicitly.
    if (x.requires_grad() && at::GradMode::is_enabled() &&
        core::backward_reduces(plan->call) && !options.backward.op_dtype) {
      auto [op_t, out_t] = resolve_dtypes(plan->call, x.scalar_type(),
                                          options.op_dtype, options.out_dtype);
      const int narrowest =
          std::min({bits(op_t), bits(out_t), bits(x.scalar_type())});
      if (narrowest < 32) {
        throw InvalidArgument(
            call.to_string() + " on axis '" + group.name +
            "': its backward reduces, and this call runs in " +
            std::to_string(narrowest) +
            "-bit precision; pass the backward reduction dtype explicitly, "
            "e.g. options.backward.op_dtype = at::kFloat (or the same "
            "reduced dtype to accept the precision loss)");
      }
    }
    const bool inplace = plan->call.inplace;
    y = apply_plan(x, std::move(plan));
    // In place: the result is x itself (autograd may hand back an alias).
    if (inplace) y = x;
  } else {
    c10::impl::ExcludeDispatchKeyGuard no_typing(compat::kCheckerModeKey);
    y = options.out_dtype ? x.to(*options.out_dtype) : x;
  }
  if (auto* hook = detail::current_collective_hook())
    hook->on_collective(call, group.name, group.size == 1, x, y);
  return y;
}

}  // namespace

at::Tensor all_reduce(const at::Tensor& x, const Axis& axis, PerAxisType src,
                      PerAxisType dst, const CollectiveOptions& options,
                      SourceLocation loc) {
  detail::CallSiteScope site("all_reduce", loc);
  return run(Collective::AllReduce, x, axis, src, dst, options);
}
at::Tensor all_gather(const at::Tensor& x, const Axis& axis, PerAxisType src,
                      PerAxisType dst, const CollectiveOptions& options,
                      SourceLocation loc) {
  detail::CallSiteScope site("all_gather", loc);
  return run(Collective::AllGather, x, axis, src, dst, options);
}
at::Tensor reduce_scatter(const at::Tensor& x, const Axis& axis,
                          PerAxisType src, PerAxisType dst,
                          const CollectiveOptions& options,
                          SourceLocation loc) {
  detail::CallSiteScope site("reduce_scatter", loc);
  return run(Collective::ReduceScatter, x, axis, src, dst, options);
}
at::Tensor all_to_all(const at::Tensor& x, const Axis& axis, PerAxisType src,
                      PerAxisType dst, const CollectiveOptions& options,
                      SourceLocation loc) {
  detail::CallSiteScope site("all_to_all", loc);
  return run(Collective::AllToAll, x, axis, src, dst, options);
}
at::Tensor convert(const at::Tensor& x, const Axis& axis, PerAxisType src,
                   PerAxisType dst, const CollectiveOptions& options,
                   SourceLocation loc) {
  detail::CallSiteScope site("convert", loc);
  return run(Collective::Convert, x, axis, src, dst, options);
}
at::Tensor reinterpret(const at::Tensor& x, const Axis& axis, PerAxisType src,
                       PerAxisType dst, const CollectiveOptions& options,
                       SourceLocation loc) {
  detail::CallSiteScope site("reinterpret", loc);
  return run(Collective::Reinterpret, x, axis, src, dst, options);
}
at::Tensor redistribute(const at::Tensor& x, const Axis& axis, PerAxisType src,
                        PerAxisType dst, const CollectiveOptions& options,
                        SourceLocation loc) {
  detail::CallSiteScope site("redistribute", loc);
  return run(Collective::Redistribute, x, axis, src, dst, options);
}
at::Tensor shard(const at::Tensor& x, const Axis& axis, PerAxisType src,
                 PerAxisType dst, const CollectiveOptions& options,
                 SourceLocation loc) {
  detail::CallSiteScope site("shard", loc);
  return run(Collective::Shard, x, axis, src, dst, options);
}
at::Tensor unshard(const at::Tensor& x, const Axis& axis, PerAxisType src,
                   PerAxisType dst, const CollectiveOptions& options,
                   SourceLocation loc) {
  detail::CallSiteScope site("unshard", loc);
  return run(Collective::Unshard, x, axis, src, dst, options);
}
at::Tensor invariant_to_replicate(const at::Tensor& x, const Axis& axis,
                                  const CollectiveOptions& options,
                                  SourceLocation loc) {
  detail::CallSiteScope site("invariant_to_replicate", loc);
  const auto [src, dst] =
      *core::implied_types(Collective::InvariantToReplicate);
  return run(Collective::InvariantToReplicate, x, axis, src, dst, options);
}

}  // namespace spmd
