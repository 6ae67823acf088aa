// annotations.cpp - the runtime checker's public annotation API: assert_type
// and friends (spec §8), typed scalars, mutate_type, the loss check, and
// queries of the side table.
#include <ATen/ATen.h>
#include <spmd/core/annotation_rules.h>
#include <spmd/core/mesh_region.h>
#include <spmd/errors.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "internal.h"

namespace spmd::checker {
namespace internal {
namespace {

[[noreturn]] void throw_type(std::string message) {
  core::TypeError e;
  e.kind = core::ErrorKind::SpmdTypeError;
  e.message = std::move(message);
  spmd::throw_error(e);
}

[[noreturn]] void throw_usage(std::string message) {
  core::TypeError e;
  e.kind = core::ErrorKind::UsageError;
  e.message = std::move(message);
  spmd::throw_error(e);
}

// A name that is not an axis of the current mesh but, in the World's axis
// table, a flattened axis of mesh axes (dp_cp = dp x cp) or another name of
// one mesh axis (an expert mesh's etp = the dense tp): the non-singleton
// mesh axes it stands for, outermost first. nullopt when it is neither.
std::optional<std::vector<std::string>> flattened_components(
    std::string_view name, const Ctx& ctx) {
  const core::AxisTable* table = ctx.inference.axis_table.get();
  if (table == nullptr || !ctx.mesh) return std::nullopt;
  return core::axis_components(name, ctx.mesh->axes, *table);
}

[[noreturn]] void throw_no_axis(const std::string& axis, const Ctx& ctx) {
  std::string avail;
  for (const auto& a : ctx.mesh->all)
    avail += (avail.empty() ? "" : ", ") + a.name;
  // Flattened axes (and other names of mesh axes) that resolve here.
  std::string flat;
  if (const core::AxisTable* table = ctx.inference.axis_table.get()) {
    for (const auto& entry : table->entries()) {
      if (ctx.mesh->has_name(entry.first)) continue;
      if (auto comps = flattened_components(entry.first, ctx)) {
        std::string parts;
        for (const std::string& c : *comps)
          parts += (parts.empty() ? "" : " x ") + c;
        flat += (flat.empty() ? "" : ", ") + entry.first + " = " + parts;
      }
    }
  }
  throw_type("no mesh axis named '" + axis +
             "' in the current mesh. Available: " +
             (avail.empty() ? "(no named axes)" : avail) +
             (flat.empty() ? "" : "; flattened axes: " + flat));
}

// The mesh axes an annotation's axis name stands for: itself when it is an
// axis of the current mesh (or there is no mesh), the components of a
// flattened axis, else SpmdTypeError naming the known axes.
std::vector<std::string> resolve_annotation_axis(const std::string& axis,
                                                 const Ctx& ctx) {
  if (!ctx.mesh || ctx.mesh->has_name(axis)) return {axis};
  if (auto comps = flattened_components(axis, ctx)) return *comps;
  throw_no_axis(axis, ctx);
}

// `names` with flattened axes expanded and singleton components dropped;
// UsageError when an axis appears twice.
std::vector<std::string> expand_names(const std::vector<std::string>& names,
                                      std::set<std::string>& seen,
                                      const std::string& what, const Ctx& ctx) {
  std::vector<std::string> out;
  for (const std::string& n : names)
    for (const std::string& c : resolve_annotation_axis(n, ctx)) {
      if (ctx.mesh && ctx.mesh->is_singleton(c)) continue;
      if (!seen.insert(c).second)
        throw_usage(what + ": axis '" + c + "' is given twice" +
                    (c == n ? "" : " (through the flattened axis " + n + ")"));
      out.push_back(c);
    }
  return out;
}

// Builds the asserted global type (spec §8.1 steps 2-6): names checked
// against the current mesh, singleton axes dropped, S(i) resolved against
// x's ndim and recorded as V plus a PartitionSpec entry, one shard dim per
// axis.
core::GlobalType asserted_type(
    const at::Tensor& x,
    const std::vector<std::pair<std::string, PerAxisType>>& entries,
    const Ctx& ctx) {
  core::GlobalType g;
  TensorType& t = g.local;
  // (dim, the axis as written, the mesh axes it shards, outer to inner).
  std::vector<std::tuple<long, std::string, std::vector<std::string>>>
      shard_dims;
  std::set<std::string> seen;
  for (const auto& [axis, type] : entries) {
    // A flattened axis (dp_cp) stands for its components (dp, cp).
    std::vector<std::string> comps =
        expand_names({axis}, seen, "assert_type", ctx);
    if (comps.empty()) continue;
    PerAxisType local = type;
    if (type.is_shard()) {
      core::Result<PerAxisType> r = core::resolve_shard_dim(type, x.dim());
      if (!r.ok()) throw_with_context(r.error(), "");
      for (const auto& [dim, other, unused] : shard_dims) {
        (void)unused;
        if (dim == r.value().dim)
          throw_type(
              "assert_type: tensor dim " + std::to_string(dim) +
              " is sharded on multiple axes (" + other + " and " + axis +
              "); the order of the axes on one dim is ambiguous: give "
              "it with an explicit PartitionSpec, e.g. "
              "spmd::assert_type(x, {...}, checker::partition_spec(...)) "
              "with the entry {" +
              other + ", " + axis + "}, or annotate V");
      }
      shard_dims.emplace_back(r.value().dim, axis, comps);
      local = type.local();
    }
    for (const std::string& c : comps) t.set(c, local);
  }
  if (!shard_dims.empty()) {
    core::PartitionSpec spec = core::PartitionSpec::none(x.dim());
    for (const auto& [dim, unused, comps] : shard_dims) {
      (void)unused;
      for (const std::string& c : comps) spec = spec.with_innermost(dim, c);
    }
    g.spec = std::move(spec);
  }
  return g;
}

// The local map alone (typed scalars, overrides).
TensorType asserted_map(
    const at::Tensor& x,
    const std::vector<std::pair<std::string, PerAxisType>>& entries,
    const Ctx& ctx) {
  return asserted_type(x, entries, ctx).local;
}

// "{tp: S(0)}" for messages: the asserted type as written.
std::string asserted_string(const core::GlobalType& g) {
  return g.spec ? g.to_string() : g.local.to_string();
}

void assert_on(const at::Tensor& x, const core::GlobalType& asserted,
               const std::string& what, const Ctx& ctx) {
  if (!x.defined()) throw_usage(what + ": the tensor is undefined");
  core::Result<core::GlobalType> r =
      core::assert_global(global_of(x), asserted);
  if (!r.ok())
    throw_with_context(
        r.error(), "  In " + what + "(\n    x: " + describe_tensor(x) +
                       ",\n    type: " + asserted_string(asserted) + ",\n  )" +
                       mesh_suffix(ctx));
  stamp_global(x, r.value());
}

std::vector<std::pair<std::string, PerAxisType>> entries_of(
    std::initializer_list<AxisType> type) {
  std::vector<std::pair<std::string, PerAxisType>> entries;
  for (const AxisType& a : type) {
    if (a.axis == nullptr) throw_usage("assert_type: an axis has no name");
    entries.emplace_back(a.axis, a.type);
  }
  return entries;
}

}  // namespace

const at::Tensor& assert_entries(const at::Tensor& x,
                                 const std::vector<AxisType>& type,
                                 const std::string& what) {
  ThreadState* st = active_state();
  if (st == nullptr) return x;
  const Ctx& ctx = current_ctx(*st);
  std::vector<std::pair<std::string, PerAxisType>> entries;
  for (const AxisType& a : type) {
    if (a.axis == nullptr) throw_usage(what + ": an axis has no name");
    entries.emplace_back(a.axis, a.type);
  }
  assert_on(x, asserted_type(x, entries, ctx), what,
            ctx);  // S(i) keeps its dim
  return x;
}

core::BoundaryType resolve_boundary_names(const core::BoundaryType& leaf,
                                          const at::Tensor& t,
                                          const std::string& what) {
  using Kind = core::BoundaryType::Kind;
  ThreadState* st = active_state();
  if (st == nullptr || (leaf.kind != Kind::Types && leaf.kind != Kind::Spec))
    return leaf;
  const Ctx& ctx = current_ctx(*st);
  if (!ctx.mesh) return leaf;
  core::BoundaryType out = leaf;
  if (leaf.spec) {
    std::set<std::string> seen;
    std::vector<core::SpecEntry> entries;
    for (const core::SpecEntry& e : leaf.spec->entries())
      entries.push_back(expand_names(e, seen, what, ctx));
    out.spec = core::PartitionSpec(std::move(entries));
  }
  if (leaf.kind == Kind::Spec) return out;
  // (dim, axes outer to inner) of the S(i) entries, once a flattened S(i)
  // needs a tuple; otherwise S(i) stays sugar for the core.
  std::set<std::string> seen;
  out.entries.clear();
  bool needs_tuple = false;
  std::vector<std::pair<std::vector<std::string>, PerAxisType>> groups;
  for (const auto& [axis, type] : leaf.entries) {
    std::vector<std::string> comps = expand_names({axis}, seen, what, ctx);
    if (type.is_shard() && comps.size() > 1) needs_tuple = true;
    groups.emplace_back(std::move(comps), type);
  }
  if (!needs_tuple || leaf.spec || !t.defined()) {
    for (const auto& [comps, type] : groups)
      for (const std::string& c : comps) out.entries.emplace_back(c, type);
    return out;
  }
  std::vector<core::SpecEntry> dims(static_cast<std::size_t>(t.dim()));
  for (const auto& [comps, type] : groups) {
    if (!type.is_shard()) {
      for (const std::string& c : comps) out.entries.emplace_back(c, type);
      continue;
    }
    core::Result<PerAxisType> r = core::resolve_shard_dim(type, t.dim());
    if (!r.ok()) throw_with_context(r.error(), "");
    core::SpecEntry& e = dims[static_cast<std::size_t>(r.value().dim)];
    if (!e.empty())
      throw_type(what + ": dim " + std::to_string(r.value().dim) +
                 " is sharded on multiple axes; give an explicit "
                 "PartitionSpec to order them");
    e = comps;
    for (const std::string& c : comps)
      out.entries.emplace_back(c, type.local());
  }
  out.spec = core::PartitionSpec(std::move(dims));
  return out;
}

const at::Tensor& assert_like(const at::Tensor& t, const at::Tensor& src,
                              std::initializer_list<AxisType> overrides,
                              bool with_spec) {
  ThreadState* st = active_state();
  if (st == nullptr) return t;
  const Ctx& ctx = current_ctx(*st);
  const core::GlobalType over = asserted_type(t, entries_of(overrides), ctx);
  core::GlobalType g;
  g.local = get_type(src);
  for (const auto& [axis, ty] : over.local.map()) g.local.set(axis, ty);
  // The source's shard dims, less the overridden axes (spec §8.2).
  ShardRef s = with_spec ? shards_of(src) : nullptr;
  if (s != nullptr && s->spec) {
    core::PartitionSpec spec = *s->spec;
    for (const auto& entry : over.local.map()) spec = spec.without(entry.first);
    if (!spec.all_none()) {
      if (spec.rank() != t.dim())
        throw_type("assert_type_like: the source's " + spec.to_string() +
                   " has " + std::to_string(spec.rank()) +
                   " entries but the tensor has ndim " +
                   std::to_string(t.dim()) +
                   "; use spmd::assert_local_type_like (no PartitionSpec) "
                   "and give the shard dims with S(i) overrides");
      g.spec = std::move(spec);
    }
  }
  if (s != nullptr)
    for (const std::string& a : s->unknown)
      if (!over.local.has(a)) g.unknown_shards.insert(a);
  if (over.spec) {
    if (!g.spec) g.spec = core::PartitionSpec::none(t.dim());
    for (long d = 0; d < over.spec->rank(); ++d)
      for (const std::string& a : over.spec->entry(d))
        g.spec = g.spec->with_innermost(d, a);
  }
  assert_on(t, g, "assert_type_like", ctx);
  return t;
}

const at::Tensor& mutate_axes(
    const at::Tensor& x,
    const std::vector<std::tuple<std::string, PerAxisType, PerAxisType>>& ups) {
  TypeRef cur = type_of(x);
  if (cur == nullptr) {  // spec §8.2: it overwrites an existing type
    core::TypeError e;
    e.kind = core::ErrorKind::SpmdTypeError;
    e.message =
        "mutate_type: the tensor has no SPMD type; mutate_type changes the "
        "type of an already-typed tensor";
    e.fix = "annotate it first with spmd::assert_type";
    throw_with_context(
        e, "  In mutate_type(\n    x: " + describe_tensor(x) + ",\n  )");
  }
  TensorType t = *cur;
  for (const auto& [axis, src, dst] : ups) {
    core::Result<TensorType> r = core::mutate_type(t, axis, src, dst);
    if (!r.ok())
      throw_with_context(r.error(), "  In mutate_type(\n    x: " +
                                        describe_tensor(x) + ",\n  )");
    t = r.value();
  }
  // The shard dims of axes that stay V are kept (spec §12.1: only V axes
  // are in a PartitionSpec).
  ShardRef s = shards_of(x);
  if (s == nullptr) {
    stamp(x, intern(t));
    return x;
  }
  core::GlobalType g;
  g.local = t;
  auto still_v = [&](const std::string& a) {
    std::optional<PerAxisType> ty = t.get(a);
    return ty && ty->local() == spmd::types::V;
  };
  if (s->spec) {
    core::PartitionSpec spec = *s->spec;
    for (const std::string& a : s->spec->axes())
      if (!still_v(a)) spec = spec.without(a);
    if (!spec.all_none()) g.spec = std::move(spec);
  }
  for (const std::string& a : s->unknown)
    if (still_v(a)) g.unknown_shards.insert(a);
  stamp_global(x, g);
  return x;
}

}  // namespace internal

using namespace internal;

at::Tensor typed_scalar(const at::Scalar& value,
                        std::initializer_list<AxisType> type) {
  if (value.isBoolean())
    throw_usage("typed_scalar: bool is not a numeric scalar (spec §11)");
  at::Tensor t;
  {
    NoTypecheckGuard untyped;
    t = at::scalar_tensor(
        value, at::TensorOptions().dtype(value.isIntegral(false) ? at::kLong
                                                                 : at::kFloat));
  }
  ThreadState* st = active_state();
  if (st == nullptr) return t;
  for (const AxisType& a : type)
    if (a.type.is_shard())
      throw_usage("typed_scalar: S(i) is not a scalar type; use V");
  stamp(t, intern(asserted_map(t, entries_of(type), current_ctx(*st))));
  return t;
}

const at::Tensor& assert_type_like(const at::Tensor& t, const at::Tensor& src,
                                   std::initializer_list<AxisType> overrides,
                                   SourceLocation loc) {
  if (active_state() == nullptr) return t;
  spmd::detail::CallSiteScope site("assert_type_like", loc);
  // Global mode copies the source's PartitionSpec too (spec §8.2).
  return assert_like(t, src, overrides, is_global_mode());
}

const at::Tensor& mutate_type(const at::Tensor& x, const Axis& axis,
                              PerAxisType src, PerAxisType dst,
                              SourceLocation loc) {
  ThreadState* st = active_state();
  if (st == nullptr) return x;
  spmd::detail::CallSiteScope site("mutate_type", loc);
  const Ctx& ctx = current_ctx(*st);
  if (ctx.mesh && ctx.mesh->is_singleton(axis.name)) return x;
  return mutate_axes(x, {{axis.name, src, dst}});
}

const at::Tensor& mutate_type(const at::Tensor& x, PerAxisType src,
                              PerAxisType dst, SourceLocation loc) {
  ThreadState* st = active_state();
  if (st == nullptr) return x;
  spmd::detail::CallSiteScope site("mutate_type", loc);
  TypeRef cur = type_of(x);
  std::vector<std::tuple<std::string, PerAxisType, PerAxisType>> ups;
  if (cur)
    for (const std::string& axis : cur->axes())
      ups.emplace_back(axis, src, dst);
  return mutate_axes(x, ups);
}

const at::Tensor& reinterpret_no_grad(const at::Tensor& x, const Axis& axis,
                                      PerAxisType dst, SourceLocation loc) {
  ThreadState* st = active_state();
  if (st == nullptr) return x;
  spmd::detail::CallSiteScope site("reinterpret_no_grad", loc);
  auto same_data = [](PerAxisType t) {
    return t.local() == spmd::types::R || t.local() == spmd::types::I;
  };
  if (x.requires_grad())
    throw UsageError(
        "reinterpret_no_grad: the tensor requires grad, and R and I differ "
        "only in their gradients. Fix: retag x.detach(), or use "
        "spmd::reinterpret(x, axis, src, dst), which types the backward");
  if (!same_data(dst))
    throw UsageError("reinterpret_no_grad: dst must be R or I, got " +
                     core::to_string(dst) +
                     ". Fix: use spmd::reinterpret or spmd::convert");
  const Ctx& ctx = current_ctx(*st);
  if (ctx.mesh && ctx.mesh->is_singleton(axis.name)) return x;
  TypeRef cur = type_of(x);
  std::optional<PerAxisType> src =
      cur ? cur->get(axis.name) : std::optional<PerAxisType>();
  if (!src || !same_data(*src)) {
    const std::string name = axis.name;
    core::TypeError e;
    e.kind = core::ErrorKind::SpmdTypeError;
    e.axis = axis.name;
    e.message = src ? "reinterpret_no_grad: the type on axis " + name + " is " +
                          core::to_string(*src) + ", not R or I"
                    : "reinterpret_no_grad: axis " + name +
                          " is not in the tensor's SPMD type";
    e.fix = src ? "only R and I hold the same values on every rank; use "
                  "spmd::convert for other types"
                : "annotate the axis first with spmd::assert_type";
    throw_with_context(e, "  In reinterpret_no_grad(\n    x: " +
                              describe_tensor(x) + ",\n  )");
  }
  return mutate_axes(x, {{axis.name, *src, dst}});
}

void check_loss(const at::Tensor& loss, SourceLocation loc) {
  ThreadState* st = active_state();
  if (st == nullptr) return;
  spmd::detail::CallSiteScope site("check_loss", loc);
  check_loss_impl(loss, *st);
}

void backward(const at::Tensor& loss, const at::Tensor& gradient) {
  ThreadState* st = active_state();
  if (st != nullptr && !gradient.defined()) check_loss_impl(loss, *st);
  NoTypecheckGuard untyped_backward;
  loss.backward(gradient);
}

std::size_t side_table_size() { return store_size(); }
std::size_t sweep_side_table() { return sweep_store(); }
void clear_type(const at::Tensor& x) {
  if (x.defined()) erase_type(x.unsafeGetTensorImpl());
}

}  // namespace spmd::checker

namespace spmd {

using checker::internal::TypeRef;

core::TensorType get_type(const at::Tensor& x) {
  TypeRef t = checker::internal::type_of(x);
  return t ? *t : core::TensorType();
}

bool has_type(const at::Tensor& x) {
  return checker::internal::type_of(x) != nullptr;
}

std::optional<PerAxisType> get_axis_type(const at::Tensor& x,
                                         const Axis& axis) {
  TypeRef t = checker::internal::type_of(x);
  if (t == nullptr) return std::nullopt;
  return t->get(axis.name);
}

const at::Tensor& assert_type(const at::Tensor& x,
                              std::initializer_list<AxisType> type,
                              SourceLocation loc) {
  checker::internal::ThreadState* st = checker::internal::active_state();
  if (st == nullptr) return x;  // off means off: one thread-local read
  detail::CallSiteScope site("assert_type", loc);
  const checker::internal::Ctx& ctx = checker::internal::current_ctx(*st);
  checker::internal::assert_on(x,
                               checker::internal::asserted_type(
                                   x, checker::internal::entries_of(type), ctx),
                               "assert_type", ctx);
  return x;
}

const at::Tensor& assert_type(const at::Tensor& x, PerAxisType type,
                              SourceLocation loc) {
  checker::internal::ThreadState* st = checker::internal::active_state();
  if (st == nullptr) return x;
  detail::CallSiteScope site("assert_type", loc);
  const checker::internal::Ctx& ctx = checker::internal::current_ctx(*st);
  if (!ctx.mesh)
    checker::internal::throw_type(
        "assert_type(x, " + core::to_string(type) +
        "): a bare type needs a current mesh (spmd::MeshGuard or "
        "TypecheckOptions::mesh); or name the axes: {tp = " +
        core::to_string(type) + "}");
  std::vector<std::pair<std::string, PerAxisType>> entries;
  for (const std::string& a : ctx.mesh->axes) entries.emplace_back(a, type);
  checker::internal::assert_on(
      x, checker::internal::asserted_type(x, entries, ctx), "assert_type", ctx);
  return x;
}

const at::Tensor& assert_type(const at::Tensor& x,
                              std::initializer_list<AxisType> type,
                              const core::PartitionSpec& spec,
                              SourceLocation loc) {
  using namespace checker::internal;
  ThreadState* st = active_state();
  if (st == nullptr) return x;
  detail::CallSiteScope site("assert_type", loc);
  const Ctx& ctx = current_ctx(*st);
  if (!x.defined()) throw_usage("assert_type: the tensor is undefined");
  std::vector<std::pair<std::string, PerAxisType>> entries = entries_of(type);
  for (const auto& [axis, ty] : entries)
    if (ty.is_shard())
      throw_type("assert_type: " + axis + " = " + core::to_string(ty) +
                 " together with an explicit PartitionSpec; write the shard "
                 "in the spec and V (or nothing) in the map");
  core::GlobalType asserted = asserted_type(x, entries, ctx);
  // Normalise the spec against the current mesh (§12.1).
  std::vector<core::RawSpecEntry> raw;
  for (const core::SpecEntry& e : spec.entries()) {
    std::vector<std::string> axes;  // flattened axes expanded
    for (const std::string& a : e)
      for (const std::string& c : resolve_annotation_axis(a, ctx))
        axes.push_back(c);
    raw.emplace_back(e.empty() ? core::RawSpecEntry()
                               : core::RawSpecEntry(axes));
  }
  core::Result<core::PartitionSpec> norm =
      core::PartitionSpec::normalize(raw, [&](std::string_view a) {
        return ctx.mesh && ctx.mesh->is_singleton(a);
      });
  if (!norm.ok()) throw_with_context(norm.error(), "");
  if (norm.value().rank() != x.dim())
    throw_type("assert_type: " + norm.value().to_string() + " has " +
               std::to_string(norm.value().rank()) +
               " entries but the tensor has ndim " + std::to_string(x.dim()) +
               "; give one entry per dim (None for an unsharded dim)");
  std::vector<std::pair<std::string, PerAxisType>> local_entries(
      asserted.local.map().begin(), asserted.local.map().end());
  core::Result<core::GlobalType> g = core::make_global(
      local_entries, norm.value(), core::Shape::of(x.sizes().vec()));
  if (!g.ok())
    throw_with_context(
        g.error(), "  In assert_type(\n    x: " + describe_tensor(x) +
                       ",\n    spec: " + norm.value().to_string() + ",\n  )" +
                       mesh_suffix(ctx));
  assert_on(x, g.value(), "assert_type", ctx);
  return x;
}

std::optional<core::PartitionSpec> get_partition_spec(const at::Tensor& x) {
  checker::internal::ShardRef s = checker::internal::shards_of(x);
  if (s == nullptr || !s->spec || s->spec->all_none()) return std::nullopt;
  return s->spec;
}

core::GlobalType get_global_type(const at::Tensor& x) {
  auto g = checker::internal::global_of(x);
  return g ? *g : core::GlobalType();
}

const std::vector<at::Tensor>& assert_type(const std::vector<at::Tensor>& xs,
                                           std::initializer_list<AxisType> type,
                                           SourceLocation loc) {
  for (const at::Tensor& x : xs) assert_type(x, type, loc);
  return xs;
}

}  // namespace spmd
