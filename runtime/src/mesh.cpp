// mesh.cpp - DeviceMesh (a grid of ranks with one process group per named
// axis; row-major, explicit strides, or existing c10d groups), flattened
// axes, the thread-local current mesh (MeshGuard) and reinterpret_mesh.
#include <spmd/checker.h>
#include <spmd/core/mesh_region.h>
#include <spmd/errors.h>
#include <spmd/mesh.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>

#include "checker/internal.h"
#include "error_text.h"

namespace spmd {
namespace {
thread_local const MeshGuard* tls_current_guard = nullptr;

// Checks the axes of a mesh shape (named, distinct, sizes >= 1, product the
// world size) and prints it: "DeviceMesh(dp=2, tp=4)".
std::string checked_shape(const std::vector<MeshDim>& shape, int world_size) {
  std::set<std::string> names;
  int64_t product = 1;
  std::ostringstream printed;
  printed << "DeviceMesh(";
  for (size_t i = 0; i < shape.size(); ++i) {
    const MeshDim& d = shape[i];
    std::string name = d.axis.name ? d.axis.name : "";
    if (name.empty()) throw InvalidArgument("DeviceMesh: an axis has no name");
    if (!names.insert(name).second)
      throw InvalidArgument("DeviceMesh: axis '" + name +
                            "' appears more than once in the shape");
    if (d.size < 1)
      throw InvalidArgument("DeviceMesh: axis '" + name + "' has size " +
                            std::to_string(d.size) + "; sizes must be >= 1");
    printed << (i ? ", " : "") << name << "=" << d.size;
  }
  printed << ")";
  // Overflow-safe: sizes whose product wraps around to the world size
  // (8 x (2^61 + 1) on 8 ranks) must not pass for a mesh of the world.
  for (const MeshDim& d : shape) {
    if (__builtin_mul_overflow(product, d.size, &product)) {
      throw InvalidArgument(
          "DeviceMesh: the axis sizes of the mesh " + printed.str() +
          " multiply to more than 2^63 - 1 ranks but the world has " +
          std::to_string(world_size) +
          "; the product of the axis sizes must equal the world size");
    }
  }
  if (product != world_size) {
    throw InvalidArgument("DeviceMesh: the mesh " + printed.str() + " has " +
                          std::to_string(product) +
                          " ranks but the world has " +
                          std::to_string(world_size) +
                          "; the product of the axis sizes must equal the "
                          "world size");
  }
  return printed.str();
}

// The rank stride of each axis: row-major (the last axis varies fastest)
// unless every axis gives one, and then they must lay out each rank once.
std::vector<int64_t> axis_strides(const std::vector<MeshDim>& shape,
                                  const std::string& printed, int world_size) {
  // Strides: row-major (the last axis varies fastest) unless all are given.
  std::size_t given = 0;
  for (const MeshDim& d : shape) given += d.stride != 0;
  if (given != 0 && given != shape.size())
    throw InvalidArgument("DeviceMesh " + printed +
                          ": strides are given for some axes only; give a "
                          "stride for every axis or for none (row-major)");
  std::vector<int64_t> strides(shape.size());
  int64_t row_major = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = given ? shape[i].stride : row_major;
    row_major *= shape[i].size;
  }
  if (given) {
    // The axes must lay out every rank exactly once: flattened, they are
    // the whole world (world:1).
    std::vector<core::MeshAxis> layouts;
    std::string text;
    for (size_t i = 0; i < shape.size(); ++i) {
      if (strides[i] < 1)
        throw InvalidArgument("DeviceMesh " + printed + ": axis '" +
                              std::string(shape[i].axis.name) +
                              "' has stride " + std::to_string(strides[i]) +
                              "; strides must be >= 1");
      layouts.push_back(core::MeshAxis::of(shape[i].size, strides[i]));
      text += (i ? ", " : "") + std::string(shape[i].axis.name) + "=" +
              layouts.back().to_string();
    }
    core::Result<core::MeshAxis> whole = core::flatten(layouts);
    if (!whole.ok() || whole.value() != core::MeshAxis::of(world_size, 1))
      throw InvalidArgument(
          "DeviceMesh " + printed + ": the strides (" + text +
          ") do not lay out each of the world's " + std::to_string(world_size) +
          " ranks exactly once; the axes must be orthogonal and flatten to "
          "(" +
          std::to_string(world_size) +
          ":1), e.g. a permutation of "
          "the row-major strides");
  }
  return strides;
}

// A tensor of `n` int64s on the device the group communicates (NCCL: the
// current CUDA device; otherwise the CPU).
at::Tensor exchange_buffer(const c10::intrusive_ptr<c10d::ProcessGroup>& g,
                           int64_t n) {
  const bool cuda =
      g->getBackendType() == c10d::ProcessGroup::BackendType::NCCL;
  return at::zeros(
      {n}, at::TensorOptions(at::kLong).device(cuda ? at::kCUDA : at::kCPU));
}

// All-gathers one int64 per rank over `g`, in group-rank order.
std::vector<int64_t> all_gather_one(
    const c10::intrusive_ptr<c10d::ProcessGroup>& g, int64_t value) {
  const int n = g->getSize();
  at::Tensor mine = exchange_buffer(g, 1).fill_(value);
  std::vector<std::vector<at::Tensor>> out(1);
  for (int i = 0; i < n; ++i) out[0].push_back(exchange_buffer(g, 1));
  std::vector<at::Tensor> in{mine};
  g->allgather(out, in)->wait();
  std::vector<int64_t> values;
  for (const at::Tensor& t : out[0]) values.push_back(t.item<int64_t>());
  return values;
}

// One axis of a mesh shape as a rank gave it to the DeviceMesh constructor.
struct GivenAxis {
  std::string name;
  int64_t size = 0;
  int64_t stride = 0;
};

// A rank's mesh shape as it travels between ranks: the world size, then
// name, size and stride of each axis, one per line.
std::string encode_shape(const std::vector<MeshDim>& shape, int world_size) {
  std::string text = std::to_string(world_size) + "\n";
  for (const MeshDim& d : shape)
    text += std::string(d.axis.name ? d.axis.name : "") + "\n" +
            std::to_string(d.size) + "\n" + std::to_string(d.stride) + "\n";
  return text;
}

std::pair<int64_t, std::vector<GivenAxis>> decode_shape(
    const std::string& text) {
  std::istringstream in(text);
  std::string line;
  int64_t world_size = 0;
  if (std::getline(in, line)) world_size = std::stoll(line);
  std::vector<GivenAxis> axes;
  GivenAxis a;
  std::string size, stride;
  while (std::getline(in, a.name) && std::getline(in, size) &&
         std::getline(in, stride)) {
    a.size = std::stoll(size);
    a.stride = std::stoll(stride);
    axes.push_back(a);
  }
  return {world_size, axes};
}

// "DeviceMesh(dp=2, tp=4)", with strides when given ("dp=2:4").
std::string print_given(const std::vector<GivenAxis>& axes) {
  std::string s = "DeviceMesh(";
  for (size_t i = 0; i < axes.size(); ++i) {
    s += (i ? ", " : "") + axes[i].name + "=" + std::to_string(axes[i].size);
    if (axes[i].stride != 0) s += ":" + std::to_string(axes[i].stride);
  }
  return s + ")";
}

// "rank 3", "ranks 0, 2-5".
std::string print_ranks(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (i ? ", " : "") + std::to_string(ranks[i]);
    if (j > i) s += (j == i + 1 ? ", " : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return s;
}

// How `other` differs from `ref`: "axis 'tp' (position 0, not 1), ...".
std::string shape_difference(
    const std::pair<int64_t, std::vector<GivenAxis>>& ref,
    const std::pair<int64_t, std::vector<GivenAxis>>& other) {
  std::vector<std::string> parts;
  if (ref.first != other.first)
    parts.push_back("the world size (" + std::to_string(other.first) +
                    ", not " + std::to_string(ref.first) + ")");
  auto position = [](const std::vector<GivenAxis>& axes,
                     const std::string& name) -> int {
    for (size_t i = 0; i < axes.size(); ++i)
      if (axes[i].name == name) return static_cast<int>(i);
    return -1;
  };
  for (size_t j = 0; j < other.second.size(); ++j) {
    const GivenAxis& a = other.second[j];
    const int i = position(ref.second, a.name);
    if (i < 0) {
      parts.push_back("axis '" + a.name + "' (not on rank 0)");
      continue;
    }
    const GivenAxis& b = ref.second[i];
    std::vector<std::string> what;
    if (static_cast<int>(j) != i)
      what.push_back("position " + std::to_string(j) + ", not " +
                     std::to_string(i));
    if (a.size != b.size)
      what.push_back("size " + std::to_string(a.size) + ", not " +
                     std::to_string(b.size));
    if (a.stride != b.stride)
      what.push_back("stride " + std::to_string(a.stride) + ", not " +
                     std::to_string(b.stride));
    if (what.empty()) continue;
    std::string w;
    for (const auto& x : what) w += (w.empty() ? "" : "; ") + x;
    parts.push_back("axis '" + a.name + "' (" + w + ")");
  }
  for (const GivenAxis& b : ref.second)
    if (position(other.second, b.name) < 0)
      parts.push_back("axis '" + b.name + "' (missing)");
  std::string s;
  for (size_t i = 0; i < parts.size(); ++i)
    s += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return s;
}

// FNV-1a, 64 bits: the fingerprint of an encoded shape.
int64_t fingerprint(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h);
}

// Every rank must construct a mesh with the same shape: a rank whose axes
// are in another order (or have other sizes, strides or names) would build
// axis groups holding other ranks, and collectives would combine the wrong
// ranks without any error. One all-gather of a fingerprint of the shape
// over the world group; only when fingerprints differ does one rank of each
// distinct shape publish it through the store, so that every rank raises
// the same spmd::InvalidArgument naming the ranks and the axes that differ.
void check_same_shape_on_every_rank(const World& world,
                                    const std::vector<MeshDim>& shape,
                                    int mesh_id) {
  const auto& pg = world.process_group();
  if (world.size() == 1 || world.backend() == Backend::Fake || !pg) return;
  const std::string mine = encode_shape(shape, world.size());
  std::vector<int64_t> prints;
  try {
    prints = all_gather_one(pg, fingerprint(mine));
  } catch (const std::exception& e) {
    throw CollectiveError(
        "DeviceMesh: rank " + std::to_string(world.rank()) + " of " +
        std::to_string(world.size()) +
        " could not compare its mesh shape with the other ranks' (timeout " +
        std::to_string(world.timeout().count()) +
        " ms; every rank must construct the same meshes in the same order): " +
        detail::error_text(e));
  }
  if (std::all_of(prints.begin(), prints.end(),
                  [&](int64_t p) { return p == prints.front(); }))
    return;
  // The distinct shapes, in the order of their lowest rank.
  std::vector<int64_t> order;
  std::map<int64_t, std::vector<int>> ranks_of;
  for (int r = 0; r < static_cast<int>(prints.size()); ++r) {
    if (ranks_of[prints[r]].empty()) order.push_back(prints[r]);
    ranks_of[prints[r]].push_back(r);
  }
  std::vector<std::pair<int64_t, std::vector<GivenAxis>>> shapes;
  try {
    auto store = c10::make_intrusive<c10d::PrefixStore>(
        "spmd/mesh" + std::to_string(mesh_id) + "/shape", world.store());
    const std::string key = std::to_string(world.rank());
    if (ranks_of[prints[world.rank()]].front() == world.rank())
      store->set(key, std::vector<uint8_t>(mine.begin(), mine.end()));
    for (int64_t p : order) {
      const int first = ranks_of[p].front();
      std::vector<uint8_t> text = first == world.rank()
                                      ? std::vector<uint8_t>()
                                      : store->get(std::to_string(first));
      shapes.push_back(decode_shape(
          first == world.rank() ? mine
                                : std::string(text.begin(), text.end())));
    }
  } catch (const std::exception& e) {
    throw CollectiveError(
        "DeviceMesh: the ranks constructed different meshes, and rank " +
        std::to_string(world.rank()) +
        " could not read the other shapes from the store: " +
        detail::error_text(e));
  }
  std::string message =
      "DeviceMesh: the ranks did not construct the same "
      "mesh: " +
      print_ranks(ranks_of[order[0]]) + " built " +
      print_given(shapes[0].second);
  for (size_t k = 1; k < order.size(); ++k) {
    message += "; " + print_ranks(ranks_of[order[k]]) + " built " +
               print_given(shapes[k].second);
    const std::string diff = shape_difference(shapes[0], shapes[k]);
    if (!diff.empty()) message += ", which differs in " + diff;
  }
  throw InvalidArgument(
      message +
      ". Every rank must construct each DeviceMesh with the same axis names, "
      "sizes, strides and order; otherwise an axis's process group holds "
      "different ranks on different ranks and collectives combine the wrong "
      "ranks");
}

// Returns once every rank has created its new process groups (a barrier:
// one all-gather over the world; callers decide to call it the same way on
// every rank). A rank that returned from a group's rendezvous while a peer
// was still connecting could otherwise destroy the group (drop the mesh)
// and close the connection under that peer, whose rendezvous then fails
// with "Connection closed by peer".
void wait_for_every_rank_connected(const World& world,
                                   const std::string& what) {
  const auto& pg = world.process_group();
  if (world.size() == 1 || world.backend() == Backend::Fake || !pg) return;
  try {
    all_gather_one(pg, 0);
  } catch (const std::exception& e) {
    throw CollectiveError(
        what + ": rank " + std::to_string(world.rank()) + " of " +
        std::to_string(world.size()) +
        " did not see every rank finish creating the mesh's process groups "
        "(timeout " +
        std::to_string(world.timeout().count()) +
        " ms; every rank must construct the same meshes in the same order): " +
        detail::error_text(e));
  }
}
}  // namespace

DeviceMesh::DeviceMesh(std::shared_ptr<World> world, std::vector<MeshDim> shape)
    : world_(std::move(world)) {
  if (!world_) throw InvalidArgument("DeviceMesh: the world is null");
  const int mesh_id = world_->next_group_id();
  // Before any check of this rank alone: a rank whose shape is wrong still
  // takes part, and every rank then reports the same error.
  check_same_shape_on_every_rank(*world_, shape, mesh_id);
  if (shape.empty())
    throw InvalidArgument(
        "DeviceMesh: the shape is empty; give at least one axis, e.g. "
        "{{dp, " +
        std::to_string(world_->size()) + "}}");
  const std::string printed = checked_shape(shape, world_->size());
  const std::vector<int64_t> strides =
      axis_strides(shape, printed, world_->size());

  const int rank = world_->rank();
  axes_.resize(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    MeshAxisGroup& a = axes_[i];
    const int64_t stride = strides[i];
    a.name = shape[i].axis.name;
    a.size = shape[i].size;
    a.stride = stride;
    a.local_rank = (rank / stride) % a.size;
    a.mesh = printed;
    a.timeout = world_->timeout();
    a.check_collectives = world_->check_collectives();
    a.layout = core::MeshAxis::of(a.size, stride);
    const int64_t base = rank - a.local_rank * stride;
    for (int64_t k = 0; k < a.size; ++k)
      a.ranks.push_back(static_cast<int>(base + k * stride));
  }
  register_axes();
  // Groups are created in axis order on every rank; only members rendezvous,
  // and members of one group are all at the same axis step, so this cannot
  // deadlock.
  bool created = false;
  for (MeshAxisGroup& a : axes_) {
    a.group = world_->new_group(a.ranks, "spmd/mesh" + std::to_string(mesh_id) +
                                             "/" + a.name + "/" +
                                             std::to_string(a.ranks.front()));
    created |= a.size > 1 && a.group != world_->process_group();
  }
  // A mesh whose groups are all the world's or one-rank (a 1-D mesh) has
  // no rendezvous to finish; that decision is the same on every rank.
  if (created) wait_for_every_rank_connected(*world_, printed);
}

DeviceMesh::DeviceMesh(const DeviceMesh& other)
    : world_(other.world_), axes_(other.axes_), flat_(other.flat_) {}

DeviceMesh& DeviceMesh::operator=(const DeviceMesh& other) {
  if (this != &other) {
    // Guards of the old value keep their own copy of it.
    alive_->store(false);
    alive_ = std::make_shared<std::atomic<bool>>(true);
    world_ = other.world_;
    axes_ = other.axes_;
    flat_ = other.flat_;
  }
  return *this;
}

DeviceMesh::~DeviceMesh() { alive_->store(false); }

void DeviceMesh::register_axes() const {
  // Singleton axes carry no information (spec §3.1) and may be reused under
  // the same name with another size by a later mesh.
  for (const MeshAxisGroup& a : axes_)
    if (a.size > 1) world_->register_axis(a.name, a.layout);
  for (const MeshAxisGroup& a : flat_)
    if (a.size > 1) world_->register_axis(a.name, a.layout);
}

namespace {

// The global ranks of `group` in group-rank order: one all_gather of this
// rank's global rank.
std::vector<int> discover_ranks(const c10::intrusive_ptr<c10d::ProcessGroup>& g,
                                int my_rank) {
  if (g->getSize() == 1) return {my_rank};
  std::vector<int> ranks;
  for (int64_t r : all_gather_one(g, my_rank))
    ranks.push_back(static_cast<int>(r));
  return ranks;
}

}  // namespace

DeviceMesh DeviceMesh::from_groups(std::shared_ptr<World> world,
                                   std::vector<GroupAxis> axes) {
  if (!world)
    throw InvalidArgument("DeviceMesh::from_groups: the world is null");
  if (axes.empty())
    throw InvalidArgument(
        "DeviceMesh::from_groups: no axes; give at least one {axis, group}");
  DeviceMesh mesh(world);
  std::ostringstream printed;
  printed << "DeviceMesh(";
  std::set<std::string> names;
  std::vector<core::MeshAxis> layouts;
  for (size_t i = 0; i < axes.size(); ++i) {
    GroupAxis& g = axes[i];
    std::string name = g.axis.name ? g.axis.name : "";
    if (name.empty())
      throw InvalidArgument("DeviceMesh::from_groups: an axis has no name");
    if (!names.insert(name).second)
      throw InvalidArgument("DeviceMesh::from_groups: axis '" + name +
                            "' appears more than once");
    if (!g.group)
      throw InvalidArgument("DeviceMesh::from_groups: axis '" + name +
                            "' has a null process group");
    std::vector<int> ranks =
        g.ranks.empty() ? discover_ranks(g.group, world->rank()) : g.ranks;
    auto where = [&] {
      std::string s;
      for (int r : ranks) s += (s.empty() ? "" : ", ") + std::to_string(r);
      return "axis '" + name + "' (ranks [" + s + "])";
    };
    if (static_cast<int>(ranks.size()) != g.group->getSize())
      throw InvalidArgument("DeviceMesh::from_groups: " + where() + " lists " +
                            std::to_string(ranks.size()) +
                            " ranks but its group has " +
                            std::to_string(g.group->getSize()));
    if (!std::is_sorted(ranks.begin(), ranks.end()) ||
        std::adjacent_find(ranks.begin(), ranks.end()) != ranks.end())
      throw InvalidArgument(
          "DeviceMesh::from_groups: " + where() +
          ": group ranks must increase with the global rank (spec §1: "
          "group-local ranks are numbered in global-rank order)");
    auto me = std::find(ranks.begin(), ranks.end(), world->rank());
    if (me == ranks.end())
      throw InvalidArgument("DeviceMesh::from_groups: " + where() +
                            " does not contain this rank (" +
                            std::to_string(world->rank()) + ")");
    core::Result<core::MeshAxis> layout = core::MeshAxis::from_ranks(
        std::vector<long>(ranks.begin(), ranks.end()));
    if (!layout.ok())
      throw InvalidArgument("DeviceMesh::from_groups: " + where() + ": " +
                            layout.error().message);
    MeshAxisGroup a;
    a.name = name;
    a.size = static_cast<int64_t>(ranks.size());
    a.stride = layout.value().atoms().empty()
                   ? 1
                   : layout.value().atoms().back().second;
    a.local_rank = me - ranks.begin();
    a.ranks = ranks;
    a.group = g.group;
    a.layout = layout.value();
    a.timeout = world->timeout();
    a.check_collectives = world->check_collectives();
    layouts.push_back(a.layout);
    printed << (i ? ", " : "") << name << "=" << a.size;
    mesh.axes_.push_back(std::move(a));
  }
  printed << ")";
  if (!core::are_orthogonal(layouts)) {
    std::string text;
    for (const auto& a : mesh.axes_)
      text += (text.empty() ? "" : ", ") + a.name + "=" + a.layout.to_string();
    throw InvalidArgument("DeviceMesh::from_groups: the axes (" + text +
                          ") are not orthogonal: some ranks are reachable "
                          "along two of them (spec §10.2)");
  }
  for (auto& a : mesh.axes_) a.mesh = printed.str();
  mesh.register_axes();
  return mesh;
}

const MeshAxisGroup& DeviceMesh::flatten(std::vector<Axis> axes,
                                         const Axis& name) {
  std::string flat_name = name.name ? name.name : "";
  if (flat_name.empty())
    throw InvalidArgument(
        "DeviceMesh::flatten: the flattened axis has no name");
  if (find(flat_name) != nullptr)
    throw InvalidArgument("DeviceMesh::flatten: " + to_string() +
                          " already has an axis named '" + flat_name + "'");
  if (axes.size() < 2)
    throw InvalidArgument("DeviceMesh::flatten: '" + flat_name +
                          "' needs at least two axes to flatten");
  std::vector<const MeshAxisGroup*> parts;
  std::vector<core::MeshAxis> layouts;
  for (const Axis& ax : axes) {
    const MeshAxisGroup* a = nullptr;
    for (const auto& m : axes_)
      if (ax.name && m.name == ax.name) a = &m;
    if (a == nullptr)
      throw InvalidArgument("DeviceMesh::flatten: '" +
                            std::string(ax.name ? ax.name : "") +
                            "' is not an axis of " + to_string());
    if (std::find(parts.begin(), parts.end(), a) != parts.end())
      throw InvalidArgument("DeviceMesh::flatten: axis '" + a->name +
                            "' is given twice");
    parts.push_back(a);
    layouts.push_back(a->layout);
  }
  core::Result<core::MeshAxis> layout = core::flatten(layouts);
  if (!layout.ok())
    throw InvalidArgument("DeviceMesh::flatten: " + layout.error().message);
  // The group: every rank reachable from this one along the parts.
  std::set<int> members{world_->rank()};
  for (const MeshAxisGroup* a : parts) {
    std::set<int> next;
    for (int base : members)
      for (int64_t k = 0; k < a->size; ++k)
        next.insert(static_cast<int>(base + (k - a->local_rank) * a->stride));
    members = std::move(next);
  }
  MeshAxisGroup f;
  f.name = flat_name;
  f.ranks.assign(members.begin(), members.end());
  f.size = static_cast<int64_t>(f.ranks.size());
  f.layout = layout.value();
  f.stride = f.layout.atoms().empty() ? 1 : f.layout.atoms().back().second;
  f.local_rank = std::find(f.ranks.begin(), f.ranks.end(), world_->rank()) -
                 f.ranks.begin();
  f.mesh = to_string();
  f.timeout = world_->timeout();
  f.check_collectives = world_->check_collectives();
  const int id = world_->next_group_id();
  f.group = world_->new_group(f.ranks, "spmd/mesh" + std::to_string(id) +
                                           "/flat/" + f.name + "/" +
                                           std::to_string(f.ranks.front()));
  // Flattened groups are the same size on every rank: all or none are new.
  if (f.size > 1 && f.group != world_->process_group())
    wait_for_every_rank_connected(*world_,
                                  "DeviceMesh::flatten('" + f.name + "')");
  if (f.size > 1) world_->register_axis(f.name, f.layout);
  flat_.push_back(std::move(f));
  return flat_.back();
}

std::vector<std::string> DeviceMesh::axis_names() const {
  std::vector<std::string> names;
  for (const auto& a : axes_) names.push_back(a.name);
  return names;
}

const MeshAxisGroup* DeviceMesh::find(std::string_view name) const {
  for (const auto& a : axes_)
    if (a.name == name) return &a;
  for (const auto& a : flat_)
    if (a.name == name) return &a;
  return nullptr;
}

const MeshAxisGroup& DeviceMesh::axis(std::string_view name) const {
  if (const MeshAxisGroup* a = find(name)) return *a;
  throw MeshResolutionError("Axis '" + std::string(name) +
                            "' is not in the current mesh " + to_string() +
                            "; use one of its axes or enter a MeshGuard for a "
                            "mesh that has it");
}

std::string DeviceMesh::to_string() const {
  return axes_.empty() ? "DeviceMesh()" : axes_.front().mesh;
}

MeshGuard::MeshGuard(const DeviceMesh& mesh)
    : mesh_(&mesh),
      alive_(mesh.alive_),
      keep_(mesh),
      previous_(tls_current_guard) {
  tls_current_guard = this;
}

MeshGuard::~MeshGuard() { tls_current_guard = previous_; }

const DeviceMesh* MeshGuard::mesh() const {
  return alive_->load() ? mesh_ : &keep_;
}

const DeviceMesh* current_mesh() {
  return tls_current_guard ? tls_current_guard->mesh() : nullptr;
}

const MeshAxisGroup& resolve_axis(std::string_view name) {
  const DeviceMesh* mesh = current_mesh();
  if (mesh == nullptr)
    throw MeshResolutionError(
        "passing an axis name ('" + std::string(name) +
        "') requires an ambient DeviceMesh: no current mesh is set on this "
        "thread; wrap the call in spmd::MeshGuard guard(mesh);");
  return mesh->axis(name);
}

namespace {

std::vector<std::string> mesh_axis_names(const DeviceMesh& to) {
  std::vector<std::string> names;
  for (const MeshAxisGroup& a : to.axes())
    if (a.size > 1) names.push_back(a.name);
  return names;
}

at::Tensor retag(const at::Tensor& x, const DeviceMesh& to,
                 const std::optional<core::TensorType>& dst,
                 const std::string& call) {
  using namespace checker::internal;
  at::Tensor y;
  {
    checker::NoTypecheckGuard untyped;  // the alias itself is not an op to type
    y = x.alias();
  }
  if (!checker::is_type_checking()) return y;
  std::optional<core::GlobalType> src = global_of(x);
  if (!src) {
    core::TypeError e;
    e.message =
        "reinterpret_mesh requires a tensor with an existing local "
        "SPMD type";
    e.fix = "Annotate it first, e.g. spmd::assert_type(x, {dp = V, tp = R})";
    throw_with_context(
        e, "  In " + call + "(\n    x: " + describe_tensor(x) + ",\n  )");
  }
  static const core::AxisTable kEmpty;
  const core::AxisTable& table =
      to.world()->axis_table() ? *to.world()->axis_table() : kEmpty;
  // The type map and the PartitionSpec move together (spec §10.3 step 5).
  core::Result<core::GlobalType> r = core::reinterpret_mesh_global(
      *src, dst, dst ? std::vector<std::string>() : mesh_axis_names(to), table);
  if (!r.ok())
    throw_with_context(r.error(),
                       "  In " + call + "(\n    x: " + describe_tensor(x) +
                           ",\n    to: " + to.to_string() + ",\n  )");
  stamp_global(y, r.value());
  return y;
}

}  // namespace

at::Tensor reinterpret_mesh(const at::Tensor& x, const DeviceMesh& to) {
  return retag(x, to, std::nullopt, "reinterpret_mesh");
}

at::Tensor reinterpret_mesh(const at::Tensor& x,
                            std::initializer_list<AxisType> type,
                            const DeviceMesh& to) {
  std::vector<std::pair<std::string, PerAxisType>> entries;
  for (const AxisType& e : type) {
    const MeshAxisGroup* a = to.find(e.axis ? e.axis : "");
    if (a == nullptr)
      throw MeshResolutionError(
          "reinterpret_mesh: axis '" + std::string(e.axis ? e.axis : "") +
          "' is not in the destination mesh " + to.to_string());
    if (a->size > 1) entries.emplace_back(e.axis, e.type);
  }
  core::Result<core::TensorType> dst = core::TensorType::from_entries(entries);
  if (!dst.ok()) throw UsageError(dst.error().message);
  return retag(x, to, dst.value(), "reinterpret_mesh");
}

}  // namespace spmd
