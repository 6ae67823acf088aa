// simulation.cpp - the records of a simulation and their un-sharding: the
// ranks' pieces of a quantity become one whole tensor according to its SPMD
// type (R/I: any rank, checking the others agree; S(i): concatenate; P: sum;
// V: stack one row per rank).
#include <ATen/ATen.h>
#include <spmd/checker.h>
#include <spmd/testing.h>

#include <algorithm>
#include <sstream>

namespace spmd::testing {
namespace {

std::string print_sizes(const at::Tensor& t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

// The pieces of one group along an axis must agree in dtype and in shape
// (except along the shard dim of S(i)).
void check_same_shapes(const std::string& what, const std::string& axis,
                       PerAxisType t, const std::vector<at::Tensor>& group,
                       int64_t r, int64_t stride) {
  const at::Tensor& first = group.front();
  for (size_t k = 1; k < group.size(); ++k) {
    const at::Tensor& g = group[k];
    bool same = g.sizes() == first.sizes();
    if (t.kind == TypeKind::Shard && g.dim() == first.dim()) {
      int64_t d = t.dim < 0 ? t.dim + first.dim() : t.dim;
      same = true;
      for (int64_t e = 0; e < g.dim(); ++e)
        if (e != d && g.size(e) != first.size(e)) same = false;
    }
    if (!same || g.scalar_type() != first.scalar_type())
      throw std::invalid_argument(
          what + " along axis '" + axis + "' (" + core::to_string(t) +
          "): rank " + std::to_string(r + int64_t(k) * stride) + " has " +
          print_sizes(g) + " " + std::string(c10::toString(g.scalar_type())) +
          " but rank " + std::to_string(r) + " has " + print_sizes(first) +
          " " + std::string(c10::toString(first.scalar_type())));
  }
}

// One group of pieces along an axis of type `t` as one tensor: R/I keep the
// first (recording how far the others disagree in `out`), S(i) concatenates
// on dim i, P sums, V stacks.
at::Tensor merge_group(const std::string& what, const std::string& axis,
                       PerAxisType t, const std::vector<at::Tensor>& group,
                       Unsharded& out) {
  const at::Tensor& first = group.front();
  const int64_t n = static_cast<int64_t>(group.size());
  at::Tensor merged;
  switch (t.kind) {
    case TypeKind::Replicate:
    case TypeKind::Invariant:
      merged = first;
      if (!first.is_meta()) {
        for (int64_t k = 1; k < n; ++k) {
          double d = group[k].numel() == 0
                         ? 0.0
                         : (group[k].to(at::kDouble) - first.to(at::kDouble))
                               .abs()
                               .max()
                               .item<double>();
          if (!(d <= out.disagreement)) {
            out.disagreement = d;
            out.disagreement_axis = axis;
          }
        }
      }
      break;
    case TypeKind::Shard: {
      int64_t d = t.dim < 0 ? t.dim + first.dim() : t.dim;
      if (d < 0 || d >= first.dim())
        throw std::invalid_argument(what + ": S(" + std::to_string(t.dim) +
                                    ") on axis '" + axis +
                                    "' is out of bounds for a tensor of " +
                                    std::to_string(first.dim()) + " dims");
      merged = at::cat(group, d);
      break;
    }
    case TypeKind::Partial:
      merged =
          at::stack(group, 0).sum(0, /*keepdim=*/false, first.scalar_type());
      break;
    case TypeKind::Varying:
      merged = at::stack(group, 0);
      break;
  }
  return merged;
}

// The type of each mesh axis, in mesh order, and each axis's rank stride;
// every axis the type names must be in the mesh, and every axis of size > 1
// must have a type.
void mesh_order_types(const std::vector<MeshDim>& shape, const TypeSpec& type,
                      const std::string& what, const std::string& mesh,
                      std::vector<PerAxisType>& ty,
                      std::vector<int64_t>& stride) {
  for (const auto& [axis, t] : type) {
    bool known = false;
    for (const MeshDim& d : shape) known |= axis == d.axis.name;
    if (!known)
      throw std::invalid_argument(what + ": its type " + to_string(type) +
                                  " names axis '" + axis +
                                  "', which is not in " + mesh);
  }
  const size_t n_axes = shape.size();
  ty.assign(n_axes, types::R);
  stride.assign(n_axes, 1);
  for (size_t i = n_axes; i-- > 0;) {
    if (i + 1 < n_axes) stride[i] = stride[i + 1] * shape[i + 1].size;
    const std::string axis = shape[i].axis.name;
    auto it = std::find_if(type.begin(), type.end(),
                           [&](const auto& e) { return e.first == axis; });
    if (it != type.end()) {
      ty[i] = it->second;
    } else if (shape[i].size > 1) {
      throw std::invalid_argument(what + ": its type " + to_string(type) +
                                  " has no entry for axis '" + axis + "' of " +
                                  mesh +
                                  "; record it with a type on every axis, "
                                  "e.g. {" +
                                  axis + " = R}");
    }
  }
}

}  // namespace

Simulation::Simulation(std::vector<MeshDim> shape, Mode mode,
                       std::vector<RankRecords> ranks, double seconds)
    : shape_(std::move(shape)),
      mode_(mode),
      ranks_(std::move(ranks)),
      seconds_(seconds) {}

std::string Simulation::mesh() const {
  std::ostringstream os;
  os << "DeviceMesh(";
  for (size_t i = 0; i < shape_.size(); ++i)
    os << (i ? ", " : "") << shape_[i].axis.name << "=" << shape_[i].size;
  os << ")";
  return os.str();
}

const Recorded& Simulation::find(int rank, std::string_view name,
                                 int step) const {
  const RankRecords* rr = nullptr;
  for (const RankRecords& r : ranks_)
    if (r.rank == rank) rr = &r;
  if (rr == nullptr)
    throw std::out_of_range("simulation of " + mesh() + ": rank " +
                            std::to_string(rank) + " did not run");
  const Recorded* found = nullptr;
  for (const Recorded& rec : rr->records) {
    if (rec.name != name) continue;
    if (step < 0 ? (!found || rec.step >= found->step) : rec.step == step)
      found = &rec;
  }
  if (found == nullptr)
    throw std::out_of_range(
        "simulation of " + mesh() + ": rank " + std::to_string(rank) +
        " recorded no '" + std::string(name) + "'" +
        (step < 0 ? std::string() : " at step " + std::to_string(step)));
  return *found;
}

const at::Tensor& Simulation::value(int rank, std::string_view name,
                                    int step) const {
  return find(rank, name, step).value;
}

std::vector<std::string> Simulation::names() const {
  std::vector<std::string> out;
  if (ranks_.empty()) return out;
  for (const Recorded& rec : ranks_.front().records)
    if (std::find(out.begin(), out.end(), rec.name) == out.end())
      out.push_back(rec.name);
  return out;
}

std::vector<int> Simulation::steps_of(std::string_view name) const {
  std::vector<int> out;
  if (ranks_.empty()) return out;
  for (const Recorded& rec : ranks_.front().records)
    if (rec.name == name) out.push_back(rec.step);
  std::sort(out.begin(), out.end());
  return out;
}

TypeSpec Simulation::type_of(std::string_view name) const {
  if (ranks_.empty())
    throw std::out_of_range("simulation of " + mesh() + ": no rank ran");
  return find(ranks_.front().rank, name, -1).type;
}

Unsharded Simulation::unshard(std::string_view name, int step) const {
  checker::NoTypecheckGuard untyped;
  at::NoGradGuard no_grad;
  const std::string what = "un-sharding '" + std::string(name) + "'";
  int64_t size = 1;
  for (const MeshDim& d : shape_) size *= d.size;
  if (static_cast<int64_t>(ranks_.size()) != size)
    throw std::invalid_argument(what + " needs every rank of " + mesh() +
                                ", but only " + std::to_string(ranks_.size()) +
                                " ran (SimulateOptions::fake_ranks)");
  if (step < 0) {
    auto steps = steps_of(name);
    if (steps.empty())
      throw std::out_of_range("simulation of " + mesh() +
                              ": rank 0 recorded "
                              "no '" +
                              std::string(name) + "'");
    step = steps.back();
  }
  // Each rank's piece and its type, which must be the same on every rank.
  std::vector<at::Tensor> pieces(size);
  const TypeSpec& type = find(ranks_.front().rank, name, step).type;
  for (const RankRecords& r : ranks_) {
    const Recorded& rec = find(r.rank, name, step);
    if (rec.type != type)
      throw std::invalid_argument(
          what + ": rank " + std::to_string(r.rank) + " recorded type " +
          to_string(rec.type) + " but rank " +
          std::to_string(ranks_.front().rank) + " recorded " + to_string(type));
    pieces[r.rank] = rec.value;
  }
  // The per-axis types, in mesh order; size-1 axes need none.
  const size_t n_axes = shape_.size();
  std::vector<PerAxisType> ty;
  std::vector<int64_t> stride;
  mesh_order_types(shape_, type, what, mesh(), ty, stride);
  // Collapse axis by axis: the non-V axes innermost first (so that two axes
  // sharding one dim nest outer-major, as Rank::local splits), then the V
  // axes innermost first (each stacks at dim 0, so V dims end in mesh
  // order). After collapsing axis i only coordinate 0 on it is kept.
  std::vector<size_t> order;
  for (size_t i = n_axes; i-- > 0;)
    if (ty[i].kind != TypeKind::Varying) order.push_back(i);
  for (size_t i = n_axes; i-- > 0;)
    if (ty[i].kind == TypeKind::Varying) order.push_back(i);

  Unsharded out;
  std::vector<bool> collapsed(n_axes, false);
  auto coord = [&](int64_t rank, size_t i) {
    return (rank / stride[i]) % shape_[i].size;
  };
  for (size_t i : order) {
    const int64_t n = shape_[i].size;
    const std::string axis = shape_[i].axis.name;
    for (int64_t r = 0; r < size; ++r) {
      if (coord(r, i) != 0) continue;
      bool kept = true;
      for (size_t j = 0; j < n_axes; ++j)
        if (collapsed[j] && coord(r, j) != 0) kept = false;
      if (!kept) continue;
      std::vector<at::Tensor> group;
      for (int64_t k = 0; k < n; ++k)
        group.push_back(pieces[r + k * stride[i]]);
      check_same_shapes(what, axis, ty[i], group, r, stride[i]);
      pieces[r] = merge_group(what, axis, ty[i], group, out);
    }
    collapsed[i] = true;
  }
  out.value = pieces[0];
  return out;
}

}  // namespace spmd::testing
