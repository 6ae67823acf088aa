// spmd/mesh.h - a device mesh with named axes and the thread-local current
// mesh through which collectives resolve their axis argument (spec §4, §4.5);
// flattened axes, meshes built from existing c10d groups, several meshes over
// one world and reinterpret_mesh (spec §10).
#ifndef SPMD_MESH_H
#define SPMD_MESH_H

#include <spmd/annotations.h>
#include <spmd/core/mesh_axis.h>
#include <spmd/process_groups.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace spmd {

/// One dimension of a mesh shape: `{dp, 2}`, or `{dp, 2, 1}` with an
/// explicit stride for a layout that is not row-major.
struct MeshDim {
  Axis axis;
  int64_t size;
  /// Distance in global ranks between neighbours along the axis; 0 (the
  /// default) lays the mesh out row-major. Give it for every axis or none.
  int64_t stride = 0;
};

/// An axis backed by an existing c10d process group (a trainer that already
/// built its groups): `{tp, tp_group}`.
struct GroupAxis {
  Axis axis;
  c10::intrusive_ptr<c10d::ProcessGroup> group;
  /// The group's global ranks in group-rank order. Empty: discovered with
  /// one all_gather of the global rank over the group.
  std::vector<int> ranks;
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

/// A grid of the world's ranks with named axes, row-major by default (the
/// last axis has stride 1) or with explicit strides. Creates one process
/// group per axis: the ranks that differ only along that axis (all ranks
/// call the constructor with the same shape, in the same order relative to
/// other meshes of the World). Several meshes may share one World (a dense
/// {dp, tp} and an expert {edp, ep, etp}); their axes are registered in the
/// World's axis table, through which the runtime checker relates them
/// (spec §6.2). Meshes of one World are built by one thread at a time.
class DeviceMesh {
 public:
  /// Every rank first compares its shape (axis names, sizes, strides, order
  /// and the world size) with the other ranks' through one all-gather of a
  /// fingerprint over the world group. A mesh with axis groups other than
  /// the world's returns only once every rank has connected them (one more
  /// world all-gather), so a rank may drop it at once without breaking a
  /// peer's rendezvous.
  /// Errors (spmd::InvalidArgument): ranks that gave different shapes (the
  /// same message on every rank, naming the ranks and the axes that
  /// differ), an empty shape, a repeated axis name, a size < 1, a product
  /// of sizes different from the world size (the message gives both
  /// numbers; a product that overflows is rejected too), strides given for
  /// some axes only, strides that do not lay out every rank of the world
  /// exactly once, an axis name that another mesh of the World uses for a
  /// different layout. spmd::CollectiveError: a rank that does not take
  /// part in the comparison within the World's timeout.
  DeviceMesh(std::shared_ptr<World> world, std::vector<MeshDim> shape);
  /// A copy is the same mesh (it shares the axes' process groups).
  DeviceMesh(const DeviceMesh& other);
  DeviceMesh& operator=(const DeviceMesh& other);
  ~DeviceMesh();

  /// A mesh whose axes are existing process groups (collective when a
  /// GroupAxis has no `ranks`: every member of that group must call it).
  /// Errors (spmd::InvalidArgument): no axes, a null group, a repeated name,
  /// ranks that do not contain this rank, are not increasing or do not form
  /// a strided layout, axes that are not orthogonal, a name that another
  /// mesh of the World uses for a different layout.
  static DeviceMesh from_groups(std::shared_ptr<World> world,
                                std::vector<GroupAxis> axes);

  /// Adds the flattened axis `name` = the product of `axes` (spec §10.1
  /// flatten; e.g. dp_cp = dp x cp) with its own process group, usable as a
  /// collective axis; it is not an axis of the mesh's type maps (it
  /// overlaps them). Every rank must call it, in the same order. Returns
  /// the new axis. Errors (spmd::InvalidArgument): fewer than two axes, an
  /// unknown or repeated axis, a name already in use.
  const MeshAxisGroup& flatten(std::vector<Axis> axes, const Axis& name);

  int64_t ndim() const { return static_cast<int64_t>(axes_.size()); }
  int64_t size() const { return world_->size(); }
  int rank() const { return world_->rank(); }
  const std::shared_ptr<World>& world() const { return world_; }
  const std::vector<MeshAxisGroup>& axes() const { return axes_; }
  std::vector<std::string> axis_names() const;
  /// The flattened axes added by flatten(), in creation order.
  const std::deque<MeshAxisGroup>& flattened_axes() const { return flat_; }
  /// The axis (or flattened axis) named `name`, or nullptr.
  const MeshAxisGroup* find(std::string_view name) const;
  /// The axis named `name`. Errors: spmd::MeshResolutionError
  /// "Axis 'x' is not in the current mesh DeviceMesh(dp=2, tp=4)".
  const MeshAxisGroup& axis(std::string_view name) const;
  /// "DeviceMesh(dp=2, tp=4)".
  std::string to_string() const;

 private:
  explicit DeviceMesh(std::shared_ptr<World> world)
      : world_(std::move(world)) {}
  void register_axes() const;

  friend class MeshGuard;
  std::shared_ptr<World> world_;
  std::vector<MeshAxisGroup> axes_;
  std::deque<MeshAxisGroup> flat_;  // stable addresses for axis()
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

/// reinterpret_mesh (spec §10.3), axes-only form: an alias of `x` (no data
/// change) typed on the axes of `to`, the types derived from x's type; e.g.
/// {dp: V, tp: R} on a dense mesh becomes {edp: V, ep: V, etp: R} on an
/// expert mesh where dp = edp x ep and etp is tp. Outside a TypecheckGuard
/// it is x.alias(). Throws SpmdTypeError when x is untyped or the two
/// presentations are not compatible (mixed types in a flattened group,
/// different rank regions, unrelated meshes).
at::Tensor reinterpret_mesh(const at::Tensor& x, const DeviceMesh& to);

/// reinterpret_mesh, full form: the destination type map is given (its axes
/// from `to`'s World) and must agree with the derived one.
at::Tensor reinterpret_mesh(const at::Tensor& x,
                            std::initializer_list<AxisType> type,
                            const DeviceMesh& to);

}  // namespace spmd

#endif  // SPMD_MESH_H
