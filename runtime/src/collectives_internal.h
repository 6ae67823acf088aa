// collectives_internal.h - what the files of the differentiable collectives
// (collectives*.cpp) share: the plan of one primitive call, the error and
// wait helpers, the cross-rank check before communicating, and the forward
// kernel of each primitive family. Not installed.
//
//   collectives.cpp            public entry points, dtypes, autograd node
//   collectives_common.cpp     messages, c10d wait, dim helpers
//   collectives_check.cpp      cross-rank consistency check (call_check.h),
//                              backend support, data travelling with it
//   collectives_reduce.cpp     all_reduce, reduce_scatter
//   collectives_gather.cpp     all_gather
//   collectives_all_to_all.cpp all_to_all
//   collectives_convert.cpp    convert, local split (redistribute's lowering)
#ifndef SPMD_RUNTIME_COLLECTIVES_INTERNAL_H
#define SPMD_RUNTIME_COLLECTIVES_INTERNAL_H

#include <ATen/ATen.h>
#include <spmd/collectives.h>
#include <spmd/core/collectives.h>
#include <spmd/mesh.h>
#include <torch/csrc/autograd/custom_function.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace spmd::collective_impl {

using at::Tensor;
using core::Collective;
using core::CollectiveCall;

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

/// Throws spmd::ShapeError: "<what> on axis '<axis>' (group of n): detail".
[[noreturn]] void shape_error(const Plan& p, const std::string& detail);

/// "<what> on axis '<axis>'", the prefix of the collectives' messages.
std::string where(const Plan& p);

/// Starts a c10d work item with `start` and waits for it. Throws
/// spmd::CollectiveError naming the collective, the axis and the rank when
/// c10d rejects the call or the communication fails (timeout, a peer that
/// exited, a broken connection); spmd errors from `start` pass through.
void wait(const Plan& p, const char* primitive,
          const std::function<c10::intrusive_ptr<c10d::Work>()>& start);

/// `dim` in [-ndim, ndim) wrapped to [0, ndim); spmd::InvalidArgument
/// naming `name` otherwise.
int64_t wrap_dim(int64_t dim, int64_t ndim, const Plan& p, const char* name);

/// The shard dim of an S(i) type.
int shard_dim(core::PerAxisType t);

/// Split sizes as int64 (CollectiveCall holds them as long).
std::vector<int64_t> to_i64(const std::vector<long>& v);

/// Whether the primitive communicates (all_reduce, all_gather,
/// reduce_scatter, all_to_all).
bool communicates(Collective op);

/// The checks before a communicating primitive on n > 1 ranks (spec §7,
/// WorldOptions::check_collectives): the cross-rank consistency check,
/// then what the backend can carry. Returns every rank's extent along the
/// uneven shard dim (uneven all_gather), or nothing. `wanted`
/// (inline_candidate) is the bytes of x that could travel with the check,
/// or -1; when they fit the group's room they do, and `*gathered` receives
/// every rank's x as rows [n, x.numel()]; it is left undefined otherwise.
/// Throws spmd::CollectiveError on every rank when the ranks disagree,
/// spmd::InvalidArgument when the backend cannot carry x.
std::vector<int64_t> preflight(const Tensor& x, const Plan& p,
                               int64_t wanted = -1, Tensor* gathered = nullptr);

/// The bytes of x that can travel inside the consistency check's message,
/// or -1 (see the definition for the cases).
int64_t inline_candidate(const Tensor& x, const Plan& p);

/// The result of a collective whose data travelled with the check, from
/// `rows` ([n, x.numel()], row s from rank s).
Tensor from_rows(const Tensor& x, const Tensor& rows, const Plan& p);

/// spmd::ShapeError when a split size is negative.
void check_split_sizes(const Plan& p);

/// Forward kernels of the primitives (spec §7.3-§7.8), in the op dtype.
/// Each throws spmd::ShapeError / spmd::InvalidArgument for a shape or dim
/// it cannot take, spmd::CollectiveError when communication fails.
/// all_reduce: the sum over the axis; `owned`: x may be reused as output.
Tensor all_reduce_kernel(const Tensor& x, bool owned, const Plan& p);
/// all_gather: V stacks on gather_dim, S(i) concatenates on i; `extents`
/// from preflight (uneven S(i)); `stacked`, when defined, is the gathered
/// [n, *x.shape] that travelled with the check.
Tensor all_gather_kernel(const Tensor& x, const Plan& p,
                         const std::vector<int64_t>& extents,
                         const Tensor& stacked = Tensor());
/// reduce_scatter: the sum over the axis of this rank's piece.
Tensor reduce_scatter_kernel(const Tensor& x, const Plan& p);
/// all_to_all: split on split_dim, exchange, concatenate on concat_dim.
Tensor all_to_all_kernel(const Tensor& x, const Plan& p);
/// convert between R/I and V, S(i), P (local, no communication).
Tensor convert_kernel(const Tensor& x, const Plan& p);
/// The local split of uneven S(i) shards (split_sizes).
Tensor local_split_kernel(const Tensor& x, const Plan& p);

}  // namespace spmd::collective_impl

#endif  // SPMD_RUNTIME_COLLECTIVES_INTERNAL_H
