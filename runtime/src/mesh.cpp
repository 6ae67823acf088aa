// mesh.cpp - DeviceMesh (row-major grid of ranks with one process group per
// named axis) and the thread-local current mesh (MeshGuard).
#include <spmd/errors.h>
#include <spmd/mesh.h>

#include <set>
#include <sstream>

namespace spmd {
namespace {
thread_local const MeshGuard* tls_current_guard = nullptr;
}  // namespace

DeviceMesh::DeviceMesh(std::shared_ptr<World> world, std::vector<MeshDim> shape)
    : world_(std::move(world)) {
  if (!world_) throw InvalidArgument("DeviceMesh: the world is null");
  if (shape.empty())
    throw InvalidArgument(
        "DeviceMesh: the shape is empty; give at least one axis, e.g. "
        "{{dp, " +
        std::to_string(world_->size()) + "}}");
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
    product *= d.size;
    printed << (i ? ", " : "") << name << "=" << d.size;
  }
  printed << ")";
  if (product != world_->size()) {
    throw InvalidArgument("DeviceMesh: the mesh " + printed.str() + " has " +
                          std::to_string(product) +
                          " ranks but the world has " +
                          std::to_string(world_->size()) +
                          "; the product of the axis sizes must equal the "
                          "world size");
  }

  // Row-major: the last axis varies fastest (stride 1).
  const int mesh_id = world_->next_group_id();
  const int rank = world_->rank();
  int64_t stride = 1;
  axes_.resize(shape.size());
  for (size_t i = shape.size(); i-- > 0;) {
    MeshAxisGroup& a = axes_[i];
    a.name = shape[i].axis.name;
    a.size = shape[i].size;
    a.stride = stride;
    a.local_rank = (rank / stride) % a.size;
    a.mesh = printed.str();
    a.timeout = world_->timeout();
    a.check_collectives = world_->check_collectives();
    a.layout = core::MeshAxis::of(a.size, stride);
    const int64_t base = rank - a.local_rank * stride;
    for (int64_t k = 0; k < a.size; ++k)
      a.ranks.push_back(static_cast<int>(base + k * stride));
    stride *= a.size;
  }
  // Groups are created in axis order on every rank; only members rendezvous,
  // and members of one group are all at the same axis step, so this cannot
  // deadlock.
  for (MeshAxisGroup& a : axes_) {
    a.group = world_->new_group(a.ranks, "spmd/mesh" + std::to_string(mesh_id) +
                                             "/" + a.name + "/" +
                                             std::to_string(a.ranks.front()));
  }
}

DeviceMesh::DeviceMesh(const DeviceMesh& other)
    : world_(other.world_), axes_(other.axes_) {}

DeviceMesh& DeviceMesh::operator=(const DeviceMesh& other) {
  if (this != &other) {
    // Guards of the old value keep their own copy of it.
    alive_->store(false);
    alive_ = std::make_shared<std::atomic<bool>>(true);
    world_ = other.world_;
    axes_ = other.axes_;
  }
  return *this;
}

DeviceMesh::~DeviceMesh() { alive_->store(false); }

std::vector<std::string> DeviceMesh::axis_names() const {
  std::vector<std::string> names;
  for (const auto& a : axes_) names.push_back(a.name);
  return names;
}

const MeshAxisGroup* DeviceMesh::find(std::string_view name) const {
  for (const auto& a : axes_)
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

}  // namespace spmd
