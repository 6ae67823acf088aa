// collectives_gather.cpp - the all_gather kernel (spec §7.4;
// collectives_internal.h).
#include <ATen/ATen.h>
#include <spmd/errors.h>

#include <algorithm>

#include "collectives_internal.h"

namespace spmd::collective_impl {
namespace {

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

}  // namespace

// `stacked`, when defined, is what gather_stacked would return (the data
// travelled with the consistency check).
Tensor all_gather_kernel(const Tensor& x, const Plan& p,
                         const std::vector<int64_t>& extents,
                         const Tensor& stacked) {
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

}  // namespace spmd::collective_impl
