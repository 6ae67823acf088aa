// call_check.h - the cross-rank consistency check that runs before a
// collective communicates (WorldOptions::check_collectives).
//
// c10d cannot tell that ranks disagree about a call: Gloo aborts the process
// (gloo::EnforceNotMet thrown on its I/O thread) when the byte counts
// differ, and returns a silently corrupted tensor when only the shapes do.
// So every rank first all-gathers a small fixed-size description of its call
// (op, src/dst, dtype, device, shape, dims and split sizes) and every rank
// compares them; a mismatch becomes the same CollectiveError on every rank.
// The message has room for data after the signature (at least kInlineBytes,
// more on a group whose earlier calls wanted more, up to kMaxInlineBytes):
// an all_reduce, all_gather or reduce_scatter whose input fits travels in
// it, so that it costs one round trip with the check, as without.
#ifndef SPMD_RUNTIME_CALL_CHECK_H
#define SPMD_RUNTIME_CALL_CHECK_H

#include <ATen/core/Tensor.h>
#include <c10/core/DeviceType.h>
#include <c10/core/ScalarType.h>
#include <spmd/annotations.h>
#include <spmd/core/collectives.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace spmd::detail {

/// One rank's description of the call it is about to communicate.
struct CallSignature {
  core::Collective op = core::Collective::AllReduce;       ///< the primitive
  core::Collective user_op = core::Collective::AllReduce;  ///< printed only
  PerAxisType src{};
  PerAxisType dst{};
  c10::ScalarType dtype = c10::ScalarType::Float;  ///< communicated dtype
  c10::DeviceType device = c10::DeviceType::CPU;
  std::vector<int64_t> shape;
  /// A dim whose extent may differ between ranks (uneven shards), or -1.
  int64_t free_dim = -1;
  std::vector<int64_t> dims;         ///< gather/scatter/split/concat dims
  std::vector<int64_t> split_sizes;  ///< must be equal on every rank
};

/// Where the call runs, for messages.
struct CallSite {
  std::string what;  ///< "all_gather", "reduce_scatter (backward of ...)"
  std::string axis;
  std::string mesh;
  int64_t n = 1;  ///< ranks on the axis
  int64_t r = 0;  ///< this rank's index on it
};

/// All-gathers a 1-d int64 tensor of equal length from every rank of the
/// axis: returns [n, len], row s from rank s. Given a 2-d [n, len] tensor
/// (only on a group that carries data with the check, i.e. Gloo), row k
/// goes to rank k alone: the result's row s is what rank s sent here.
using Exchange = std::function<at::Tensor(const at::Tensor&)>;

/// Bytes of data that the check's message carries after the signature at
/// least (every message has the room of its group, used or not, so that all
/// ranks send the same size). A collective whose input fits travels in it
/// and needs no second round trip (collectives.cpp).
constexpr int64_t kInlineBytes = 1024;

/// The most room a message of a group of n ranks gets: kMaxInlineBytes / n
/// rounded down to a power of two, at least kInlineBytes. Every rank
/// receives n times the room.
constexpr int64_t kMaxInlineBytes = 128 * 1024;

/// The room of the next check on a group whose current room is `room` and
/// whose last check (passed by every rank) described a collective that
/// wanted to carry `wanted` bytes (-1: none): the smallest power of two that
/// holds it, within the limits above, never less than `room`. A function of
/// values every rank of the group agreed on, so the next message has the
/// same size on all of them.
int64_t grown_room(int64_t room, int64_t wanted, int64_t n);

/// Exchanges the signatures; throws spmd::CollectiveError on every rank when
/// any two differ (the message lists each distinct call with its ranks).
/// Returns every rank's extent along free_dim (empty when free_dim < 0).
/// `room` (a multiple of 8, the same on every rank of the group) is the
/// message's room for data. `payload`, when defined, is a contiguous CPU
/// tensor of at most `room` bytes sent along with the signature; then
/// `*gathered` receives every rank's payload once the signatures agree: [n,
/// payload.numel()] of payload's dtype, row s from rank s (a view of the
/// received message, each row contiguous, the rows not adjacent).
/// `per_destination`: payload is [n, m] and row k goes to rank k only (an
/// all-to-all's blocks; each row at most `room` bytes); `*gathered` is then
/// [n, m], row s the block rank s sent to this rank. Every message has the
/// same size either way, so ranks that disagree still exchange safely.
std::vector<int64_t> check_signatures(
    const CallSignature& mine, const CallSite& site, const Exchange& exchange,
    int64_t room = kInlineBytes, const at::Tensor& payload = at::Tensor(),
    at::Tensor* gathered = nullptr, bool per_destination = false);

/// Uneven all_to_all: rank s's in_rows[k] must equal rank k's out_rows[s].
/// One more exchange of 2n integers; spmd::CollectiveError on every rank
/// otherwise.
void check_all_to_all_rows(const std::vector<int64_t>& in_rows,
                           const std::vector<int64_t>& out_rows,
                           const CallSite& site, const Exchange& exchange);

/// "Float[4, 2] on cpu".
std::string describe_tensor(c10::ScalarType dtype, c10::DeviceType device,
                            const std::vector<int64_t>& shape);

}  // namespace spmd::detail

#endif  // SPMD_RUNTIME_CALL_CHECK_H
