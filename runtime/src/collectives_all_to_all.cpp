// collectives_all_to_all.cpp - the all_to_all kernel (spec §7.6;
// collectives_internal.h).
#include <ATen/ATen.h>
#include <spmd/errors.h>

#include <numeric>

#include "collectives_internal.h"
#include "torch_compat.h"

namespace spmd::collective_impl {
namespace {

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

}  // namespace

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

}  // namespace spmd::collective_impl
