// collectives_convert.cpp - the convert and local split kernels (spec §7.7,
// §7.12; collectives_internal.h): local, no communication.
#include <ATen/ATen.h>
#include <spmd/errors.h>

#include "collectives_internal.h"

namespace spmd::collective_impl {

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

}  // namespace spmd::collective_impl
