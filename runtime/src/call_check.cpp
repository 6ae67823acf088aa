// call_check.cpp - the cross-rank consistency check of call_check.h.
//
// Each rank encodes its call as kSlots int64 values; the rows of all ranks
// are all-gathered in one small message and compared by every rank, so all
// of them reach the same verdict and raise the same error.
#include "call_check.h"

#include <ATen/ATen.h>
#include <spmd/core/per_axis_type.h>
#include <spmd/errors.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <sstream>
#include <stdexcept>

namespace spmd::detail {
namespace {

enum Slot : int64_t {
  kMagic,
  kOp,
  kUserOp,
  kSrcKind,
  kSrcDim,
  kDstKind,
  kDstDim,
  kDtype,
  kDevice,
  kDimsHash,
  kSplitsHash,
  kNdim,
  kFreeDim,
  kFreeExtent,  // not compared: the extent that may differ
  kShape,       // the first kInlineDims extents
  kInlineDims = 8,
  kMoreDimsHash = kShape + kInlineDims,  // extents beyond the first 8
  kSlots,
};

// "SPMD" and a layout version: a peer that sends something else (an older
// runtime, or one with the check off) is named as such.
// Version 2: the message carries the group's room for data after the slots.
constexpr int64_t kMagicValue = (int64_t{0x53504D44} << 8) | 2;

uint64_t fnv1a(const std::vector<int64_t>& values,
               uint64_t h = 1469598103934665603ull) {
  for (int64_t v : values) {
    for (int b = 0; b < 8; ++b) {
      h ^= static_cast<uint64_t>(v >> (8 * b)) & 0xff;
      h *= 1099511628211ull;
    }
  }
  return h;
}

std::vector<int64_t> encode(const CallSignature& s) {
  std::vector<int64_t> row(kSlots, 0);
  row[kMagic] = kMagicValue;
  row[kOp] = static_cast<int64_t>(s.op);
  row[kUserOp] = static_cast<int64_t>(s.user_op);
  row[kSrcKind] = static_cast<int64_t>(s.src.kind);
  row[kSrcDim] = s.src.is_shard() ? s.src.dim : 0;
  row[kDstKind] = static_cast<int64_t>(s.dst.kind);
  row[kDstDim] = s.dst.is_shard() ? s.dst.dim : 0;
  row[kDtype] = static_cast<int64_t>(s.dtype);
  row[kDevice] = static_cast<int64_t>(s.device);
  row[kDimsHash] = static_cast<int64_t>(fnv1a(s.dims));
  row[kSplitsHash] = static_cast<int64_t>(fnv1a(s.split_sizes));
  const int64_t ndim = static_cast<int64_t>(s.shape.size());
  row[kNdim] = ndim;
  row[kFreeDim] = s.free_dim;
  row[kFreeExtent] =
      s.free_dim >= 0 && s.free_dim < ndim ? s.shape[s.free_dim] : 0;
  std::vector<int64_t> more;
  for (int64_t d = 0; d < ndim; ++d) {
    const int64_t extent = d == s.free_dim ? -1 : s.shape[d];
    if (d < kInlineDims)
      row[kShape + d] = s.shape[d];
    else
      more.push_back(extent);
  }
  row[kMoreDimsHash] = static_cast<int64_t>(fnv1a(more));
  return row;
}

// Rows a and b describe the same call (the free dim's extent may differ).
bool same_call(const int64_t* a, const int64_t* b) {
  for (int64_t k = 0; k < kSlots; ++k) {
    if (k == kUserOp || k == kFreeExtent) continue;
    if (k >= kShape && k < kShape + kInlineDims && k - kShape == a[kFreeDim] &&
        a[kFreeDim] == b[kFreeDim])
      continue;
    if (a[k] != b[k]) return false;
  }
  return true;
}

bool valid_enum(int64_t v, int64_t count) { return v >= 0 && v < count; }

// "all_gather(S(0), R) of Float[2, 4] on cpu", from a row.
std::string describe_row(const int64_t* row) {
  if (row[kMagic] != kMagicValue)
    return "not a checked spmd collective (its runtime has the consistency "
           "check off, or it is calling another c10d operation)";
  std::ostringstream os;
  const auto op = static_cast<core::Collective>(row[kUserOp]);
  const auto prim = static_cast<core::Collective>(row[kOp]);
  os << (valid_enum(row[kUserOp], 11) ? core::to_string(op) : "?");
  if (valid_enum(row[kSrcKind], 5) && valid_enum(row[kDstKind], 5)) {
    PerAxisType src{static_cast<TypeKind>(row[kSrcKind]),
                    static_cast<int>(row[kSrcDim])};
    PerAxisType dst{static_cast<TypeKind>(row[kDstKind]),
                    static_cast<int>(row[kDstDim])};
    os << "(" << core::to_string(src) << ", " << core::to_string(dst) << ")";
  }
  if (row[kUserOp] != row[kOp] && valid_enum(row[kOp], 11))
    os << " [runs " << core::to_string(prim) << "]";
  std::vector<int64_t> shape;
  for (int64_t d = 0; d < std::min<int64_t>(row[kNdim], kInlineDims); ++d)
    shape.push_back(row[kShape + d]);
  std::string tensor =
      describe_tensor(static_cast<c10::ScalarType>(row[kDtype]),
                      static_cast<c10::DeviceType>(row[kDevice]), shape);
  if (row[kNdim] > kInlineDims) tensor.insert(tensor.find(']'), ", ...");
  os << " of " << tensor;
  return os.str();
}

// The fields that differ between two rows whose descriptions are equal.
std::string hidden_difference(const int64_t* a, const int64_t* b) {
  std::vector<std::string> parts;
  if (a[kDimsHash] != b[kDimsHash])
    parts.push_back("gather_dim/scatter_dim/split_dim/concat_dim");
  if (a[kSplitsHash] != b[kSplitsHash]) parts.push_back("split_sizes");
  if (a[kFreeDim] != b[kFreeDim]) parts.push_back("the uneven shard dim");
  if (a[kMoreDimsHash] != b[kMoreDimsHash])
    parts.push_back("the extents of dims beyond the 8th");
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i) s += (i ? ", " : "") + parts[i];
  return s.empty() ? "the call options" : s;
}

std::string where(const CallSite& site) {
  std::ostringstream os;
  os << site.what << " on axis '" << site.axis << "' (rank " << site.r << " of "
     << site.n << " on the axis, " << site.mesh << ")";
  return os.str();
}

std::string rank_list(const std::vector<int64_t>& ranks) {
  std::ostringstream os;
  os << (ranks.size() == 1 ? "rank " : "ranks ");
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (i == 6 && ranks.size() > 8) {
      os << ", ... (" << ranks.size() << " ranks)";
      break;
    }
    os << (i ? ", " : "") << ranks[i];
  }
  return os.str();
}

}  // namespace

std::string describe_tensor(c10::ScalarType dtype, c10::DeviceType device,
                            const std::vector<int64_t>& shape) {
  std::ostringstream os;
  const auto d = static_cast<int64_t>(dtype);
  os << (d >= 0 && d < static_cast<int64_t>(c10::ScalarType::NumOptions)
             ? c10::toString(dtype)
             : "?")
     << "[";
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << "] on "
     << (static_cast<int>(device) >= 0 &&
                 static_cast<int>(device) <
                     static_cast<int>(
                         c10::DeviceType::COMPILE_TIME_MAX_DEVICE_TYPES)
             ? c10::DeviceTypeName(device, /*lower_case=*/true)
             : "?");
  return os.str();
}

int64_t grown_room(int64_t room, int64_t wanted, int64_t n) {
  int64_t most = kInlineBytes;
  while (most * 2 * std::max<int64_t>(n, 1) <= kMaxInlineBytes) most *= 2;
  if (wanted <= room || room >= most) return room;
  int64_t grown = kInlineBytes;
  while (grown < wanted && grown < most) grown *= 2;
  return grown < wanted ? room : std::max(room, grown);
}

namespace {

// The error for ranks that did not make the same call: the ranks grouped by
// what they called, in rank order, and what differs where two groups print
// alike. `row_of(s)` is rank s's row of the exchanged signatures.
template <typename RowOf>
[[noreturn]] void throw_disagreement(const CallSite& site, RowOf row_of) {
  std::vector<std::pair<int64_t, std::vector<int64_t>>> groups;
  for (int64_t s = 0; s < site.n; ++s) {
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return same_call(row_of(g.first), row_of(s));
    });
    if (it == groups.end())
      groups.push_back({s, {s}});
    else
      it->second.push_back(s);
  }
  std::ostringstream os;
  os << where(site)
     << ": the ranks of the axis did not make the same call (spmd "
        "consistency check): ";
  std::map<std::string, int> seen;
  for (size_t g = 0; g < groups.size(); ++g) {
    const std::string text = describe_row(row_of(groups[g].first));
    os << (g ? "; " : "") << rank_list(groups[g].second) << ": " << text;
    if (seen.count(text))
      os << " (differs from " << rank_list(groups[seen[text]].second) << " in "
         << hidden_difference(row_of(groups[seen[text]].first),
                              row_of(groups[g].first))
         << ")";
    else
      seen[text] = static_cast<int>(g);
  }
  os << ". Every rank of the axis must call the same collective, in the "
        "same order, with tensors of the same dtype, device and shape "
        "(uneven S(i) shards: pass the same split_sizes on every rank)";
  throw CollectiveError(os.str());
}

// Every rank's payload ([n, numel], the dtype and shape of `payload`, which
// the signatures showed to be the same on every rank) out of the exchanged
// frames `all` ([n, frame] int64 words, the payload after kSlots words).
at::Tensor payload_rows(const at::Tensor& all, int64_t frame, int64_t n,
                        const at::Tensor& payload) {
  const int64_t esize = static_cast<int64_t>(payload.element_size());
  const int64_t payload_bytes = static_cast<int64_t>(payload.nbytes());
  if ((frame * 8) % esize != 0)
    return all.narrow(1, kSlots, (payload_bytes + 7) / 8)
        .view(at::kByte)
        .narrow(1, 0, payload_bytes)
        .contiguous()
        .view(payload.scalar_type());
  // A view of the received rows, built directly (ATen's view ops each cost
  // more than the rest of check_signatures); the deleter keeps them alive.
  auto* data = const_cast<int64_t*>(all.const_data_ptr<int64_t>()) + kSlots;
  return at::from_blob(
      data, {n, payload.numel()}, {frame * 8 / esize, 1},
      [keep = all](void*) {}, all.options().dtype(payload.scalar_type()));
}

}  // namespace

std::vector<int64_t> check_signatures(const CallSignature& mine,
                                      const CallSite& site,
                                      const Exchange& exchange, int64_t room,
                                      const at::Tensor& payload,
                                      at::Tensor* gathered,
                                      bool per_destination) {
  if (room < 0 || room % 8 != 0)
    throw std::logic_error("check_signatures: room is not a multiple of 8");
  const int64_t frame = kSlots + room / 8;  // int64 words per rank
  per_destination = per_destination && payload.defined();
  if (per_destination && (payload.dim() != 2 || payload.size(0) != site.n ||
                          !payload.is_contiguous()))
    throw std::logic_error(
        "check_signatures: per-destination payload not [n, m]");
  // The payload each message carries: one block per destination, or all.
  const at::Tensor block = per_destination ? payload.select(0, 0) : payload;
  const int64_t payload_bytes =
      payload.defined() ? static_cast<int64_t>(block.nbytes()) : 0;
  if (payload_bytes > room || (payload.defined() && !gathered))
    throw std::logic_error("check_signatures: payload too large or unused");
  // The message is built in a buffer of its size that this thread reuses
  // (groups of different rooms alternate): zeroed once when allocated, so
  // the room after the payload holds zeros or bytes of this job's earlier
  // payloads, never uninitialised memory; no peer reads it. The exchange
  // is synchronous: once it returned, the buffer is free again; after a
  // failed one (a work may still hold it) it is left to that work.
  // Per destination: n frames, keyed apart from the single ones.
  thread_local std::map<int64_t, at::Tensor> buffers;
  at::Tensor& buffer = buffers[per_destination ? -frame : frame];
  if (!buffer.defined())
    buffer = per_destination ? at::zeros({site.n, frame}, at::kLong)
                             : at::zeros({frame}, at::kLong);
  const std::vector<int64_t> row = encode(mine);
  int64_t* words = buffer.mutable_data_ptr<int64_t>();
  const int64_t frames = per_destination ? site.n : 1;
  const auto* data = static_cast<const char*>(
      payload_bytes > 0 ? payload.const_data_ptr() : nullptr);
  for (int64_t k = 0; k < frames; ++k) {
    std::memcpy(words + k * frame, row.data(), kSlots * sizeof(int64_t));
    if (payload_bytes > 0)
      std::memcpy(words + k * frame + kSlots, data + k * payload_bytes,
                  payload_bytes);
  }
  at::Tensor all;
  try {
    all = exchange(buffer).contiguous();
  } catch (...) {
    buffer = at::Tensor();
    throw;
  }
  const int64_t* rows = all.const_data_ptr<int64_t>();
  auto row_of = [&](int64_t s) { return rows + s * frame; };
  for (int64_t s = 0; s < site.n; ++s)
    if (!same_call(row_of(0), row_of(s)) || !same_call(row_of(s), row_of(0)))
      throw_disagreement(site, row_of);
  std::vector<int64_t> extents;
  if (mine.free_dim >= 0)
    for (int64_t s = 0; s < site.n; ++s)
      extents.push_back(row_of(s)[kFreeExtent]);
  if (payload.defined()) *gathered = payload_rows(all, frame, site.n, block);
  return extents;
}

void check_all_to_all_rows(const std::vector<int64_t>& in_rows,
                           const std::vector<int64_t>& out_rows,
                           const CallSite& site, const Exchange& exchange) {
  const int64_t n = site.n;
  if (static_cast<int64_t>(in_rows.size()) != n ||
      static_cast<int64_t>(out_rows.size()) != n)
    return;  // the kernel reports the local error (same on every rank)
  std::vector<int64_t> row(in_rows);
  row.insert(row.end(), out_rows.begin(), out_rows.end());
  at::Tensor all = exchange(at::tensor(row, at::kLong)).contiguous();
  const int64_t* v = all.const_data_ptr<int64_t>();
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t k = 0; k < n; ++k) {
      const int64_t sent = v[s * 2 * n + k];          // rank s's in_rows[k]
      const int64_t expected = v[k * 2 * n + n + s];  // rank k's out_rows[s]
      if (sent != expected) {
        std::ostringstream os;
        os << where(site) << ": rank " << s << " sends " << sent
           << " rows to rank " << k << " (its input_split_sizes[" << k
           << "]), but rank " << k << " expects " << expected
           << " (its output_split_sizes[" << s
           << "]); rank s's input_split_sizes[k] must equal rank k's "
              "output_split_sizes[s] (spmd consistency check)";
        throw CollectiveError(os.str());
      }
    }
  }
}

}  // namespace spmd::detail
