// collectives_check.cpp - before communicating: the cross-rank consistency
// check (call_check.h), what the backend can carry, and the collectives
// whose data travels with the check (collectives_internal.h).
#include <ATen/ATen.h>
#include <spmd/errors.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "call_check.h"
#include "collectives_internal.h"
#include "torch_compat.h"

namespace spmd::collective_impl {
namespace {

detail::CallSite site_of(const Plan& p) {
  return {p.what(), p.axis, *p.mesh, p.n, p.r};
}

// The all-gather of a small int64 row that the checks exchange.
//
// On Gloo it is an all-to-all of n copies of the row: Gloo's all-gather is
// a ring (n - 1 messages one after the other, each waiting for the one
// before), its all-to-all posts every send and receive at once, so the
// check costs one message latency instead of n - 1 (the same bytes). The
// latency is what the check adds to a collective of 1 MiB or more.
detail::Exchange exchange_of(const Tensor& x, const Plan& p) {
  return [&x, &p](const Tensor& row) {
    // NCCL groups carry CUDA tensors only.
    const bool nccl =
        p.pg->getBackendType() == c10d::ProcessGroup::BackendType::NCCL;
    Tensor in =
        nccl ? row.to(x.is_cuda() ? x.device() : at::Device(at::kCUDA)) : row;
    if (!nccl && in.dim() == 2) {  // row k to rank k
      Tensor recv = at::empty_like(in);
      std::vector<int64_t> equal;
      wait(p, "all_to_all_single (consistency check)", [&] {
        return compat::all_to_all_single(*p.pg, recv, in, equal, equal);
      });
      return recv;
    }
    if (!nccl) {
      const int64_t len = in.numel();
      Tensor send = at::empty({p.n, len}, in.options());
      const auto* words = in.const_data_ptr<int64_t>();
      auto* out_words = send.mutable_data_ptr<int64_t>();
      for (int64_t s = 0; s < p.n; ++s)
        std::memcpy(out_words + s * len, words, len * sizeof(int64_t));
      Tensor recv = at::empty({p.n, len}, in.options());
      std::vector<int64_t> equal;  // empty: n equal blocks
      wait(p, "all_to_all_single (consistency check)", [&] {
        return compat::all_to_all_single(*p.pg, recv, send, equal, equal);
      });
      return recv;
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

}  // namespace

// ---------------------------------------------------------------------------
// Before communicating: the cross-rank consistency check (call_check.h) and
// what the backend can carry, so that every rank gets a named error instead
// of a Gloo abort, a corrupted result or a misleading timeout.

bool communicates(Collective op) {
  return op == Collective::AllReduce || op == Collective::AllGather ||
         op == Collective::ReduceScatter || op == Collective::AllToAll;
}

// Runs the checks before a communicating primitive on n > 1 ranks. Returns
// every rank's extent along the uneven shard dim (uneven all_gather), or
// nothing. `wanted` (inline_candidate) is the bytes of x that could travel
// with the check, or -1; when they fit the group's room, they do, and
// `*gathered` receives every rank's x as rows (see
// detail::check_signatures); it is left undefined otherwise.
std::vector<int64_t> preflight(const Tensor& x, const Plan& p, int64_t wanted,
                               Tensor* gathered) {
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
    // all_to_all: block k of x goes to rank k (inline_candidate: dim 0).
    const bool per_destination = c.op == Collective::AllToAll;
    if (wanted >= 0 && wanted <= room && gathered)
      payload =
          per_destination ? x.contiguous().view({p.n, -1}) : x.contiguous();
    extents = detail::check_signatures(sig, site_of(p), exchange, room, payload,
                                       gathered, per_destination);
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
    case Collective::AllToAll: {
      // Even blocks of dim 0 exchanged in place: the kernel's exchange
      // with split and concat dim 0 (each destination's block counts).
      if (!c.input_split_sizes.empty() || !c.output_split_sizes.empty() ||
          x.dim() == 0 || c.split_dim || c.concat_dim)
        return -1;
      const core::AllToAllDims dims = core::all_to_all_dims(c);
      if (dims.split != 0 || dims.concat != 0) return -1;
      const bool stack = !c.src.is_shard() && !c.dst.is_shard();
      if (stack ? x.size(0) != p.n : x.size(0) % p.n != 0) return -1;
      return bytes / p.n;
    }
    default:
      return -1;
  }
}

// The result of a collective whose data travelled with the check: `rows`
// holds every rank's x ([n, x.numel()], row s from rank s). Every rank
// computes from the same rows what the communicating kernel gives.
Tensor from_rows(const Tensor& x, const Tensor& rows, const Plan& p) {
  // all_to_all: row s is the block rank s sent here, the exchange's result
  // (a fresh tensor, not a view of the message).
  if (p.call.op == Collective::AllToAll)
    return rows.contiguous().view(x.sizes());
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

}  // namespace spmd::collective_impl
