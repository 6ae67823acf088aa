// spmd/mesh.h - a device mesh with named axes and the thread-local current
// mesh through which collectives resolve their axis argument (spec §4, §4.5).
#ifndef SPMD_MESH_H
#define SPMD_MESH_H

#include <spmd/annotations.h>
#include <spmd/core/mesh_axis.h>
#include <spmd/process_groups.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spmd {

/// One dimension of a mesh shape: `{dp, 2}`.
struct MeshDim {
  Axis axis;
  int64_t size;
};

/// One named axis of a DeviceMesh and this rank's place on it.
struct MeshAxisGroup {
  std::string name;
  int64_t size = 1;        ///< ranks along the axis
  int64_t stride = 1;      ///< distance in global ranks between neighbours
  int64_t local_rank = 0;  ///< this rank's index along the axis
  /// The ranks that differ from this one only along this axis, in axis order.
  std::vector<int> ranks;
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  core::MeshAxis layout;  ///< (size:stride), spec §10.1
  std::string mesh;  ///< the owning mesh, printed ("DeviceMesh(dp=2, tp=4)")
  std::chrono::milliseconds timeout{0};  ///< the World's collective timeout
  bool check_collectives = true;         ///< WorldOptions::check_collectives
};

/// A row-major grid of the world's ranks with named axes; the last axis has
/// stride 1. Creates one process group per axis: the ranks that differ only
/// along that axis (all ranks call the constructor with the same shape, in
/// the same order relative to other meshes of the World).
class DeviceMesh {
 public:
  /// Errors (spmd::InvalidArgument): an empty shape, a repeated axis name, a
  /// size < 1, a product of sizes different from the world size (the message
  /// gives both numbers).
  DeviceMesh(std::shared_ptr<World> world, std::vector<MeshDim> shape);
  /// A copy is the same mesh (it shares the axes' process groups).
  DeviceMesh(const DeviceMesh& other);
  DeviceMesh& operator=(const DeviceMesh& other);
  ~DeviceMesh();

  int64_t ndim() const { return static_cast<int64_t>(axes_.size()); }
  int64_t size() const { return world_->size(); }
  int rank() const { return world_->rank(); }
  const std::shared_ptr<World>& world() const { return world_; }
  const std::vector<MeshAxisGroup>& axes() const { return axes_; }
  std::vector<std::string> axis_names() const;
  /// The axis named `name`, or nullptr.
  const MeshAxisGroup* find(std::string_view name) const;
  /// The axis named `name`. Errors: spmd::MeshResolutionError
  /// "Axis 'x' is not in the current mesh DeviceMesh(dp=2, tp=4)".
  const MeshAxisGroup& axis(std::string_view name) const;
  /// "DeviceMesh(dp=2, tp=4)".
  std::string to_string() const;

 private:
  friend class MeshGuard;
  std::shared_ptr<World> world_;
  std::vector<MeshAxisGroup> axes_;
  /// Cleared when this object is destroyed; guards watch it.
  std::shared_ptr<std::atomic<bool>> alive_ =
      std::make_shared<std::atomic<bool>>(true);
};

/// Makes `mesh` the calling thread's current mesh until destruction (RAII;
/// guards nest, the innermost wins, spec §4.1). The guard shares ownership
/// of the mesh's axes and process groups: if `mesh` is destroyed first, the
/// guard's own copy stays current, so collectives keep working.
class MeshGuard {
 public:
  explicit MeshGuard(const DeviceMesh& mesh);
  ~MeshGuard();
  MeshGuard(const MeshGuard&) = delete;
  MeshGuard& operator=(const MeshGuard&) = delete;

  /// The guarded mesh while it lives, else the guard's copy of it.
  const DeviceMesh* mesh() const;

 private:
  const DeviceMesh* mesh_;
  std::shared_ptr<std::atomic<bool>> alive_;  // mesh_ not yet destroyed
  DeviceMesh keep_;                           // the same mesh, owned here
  const MeshGuard* previous_;
};

/// The calling thread's innermost current mesh, or nullptr. While the mesh
/// given to the innermost MeshGuard lives, this is that object.
const DeviceMesh* current_mesh();

/// Resolves a collective's axis through the current mesh (spec §4.5).
/// Errors: spmd::MeshResolutionError "passing an axis name ('tp') requires
/// an ambient DeviceMesh ..." with no current mesh; "Axis 'x' is not in the
/// current mesh DeviceMesh(dp=2)" otherwise.
const MeshAxisGroup& resolve_axis(std::string_view name);

}  // namespace spmd

#endif  // SPMD_MESH_H
