// collectives_reduce.cpp - the all_reduce and reduce_scatter kernels (spec
// §7.3, §7.5; collectives_internal.h).
#include <ATen/ATen.h>
#include <spmd/errors.h>

#include <numeric>

#include "collectives_internal.h"
#include "torch_compat.h"

namespace spmd::collective_impl {
namespace {

// ---------------------------------------------------------------------------
// Raw communication on the axis group.

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

}  // namespace

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

}  // namespace spmd::collective_impl
