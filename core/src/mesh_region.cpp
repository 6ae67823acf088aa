// Mesh axes as structure (spec §10.3, §6.2, §9.5): the axis table,
// reinterpret_mesh's two-pointer group walk, the automatic cross-mesh lift,
// axis-mismatch hints and collectives over flattened axes.
#include <spmd/core/mesh_region.h>

#include <algorithm>
#include <set>

namespace spmd::core {

namespace {

TypeError type_error(std::string message) {
  TypeError e;
  e.kind = ErrorKind::SpmdTypeError;
  e.message = std::move(message);
  return e;
}

std::string type_text(PerAxisType t) { return to_string(t.local()); }

// One axis on one side of a walk: its name, layout and (maybe) type.
struct Side {
  std::string name;
  MeshAxis layout;
  std::optional<PerAxisType> type;
};

std::string group_text(const std::vector<Side>& g) {
  std::string s = "{";
  for (std::size_t i = 0; i < g.size(); ++i) s += (i ? ", " : "") + g[i].name;
  return s + "}";
}

MeshAxis flatten_group(const std::vector<Side>& g) {
  std::vector<MeshAxis> axes;
  for (const Side& s : g) axes.push_back(s.layout);
  Result<MeshAxis> f = flatten(axes);
  return f.ok() ? f.value() : MeshAxis::of(0, 0);  // never equal to a real one
}

// Outermost first: largest stride descending, then name for ties.
void sort_outermost_first(std::vector<Side>& v) {
  std::sort(v.begin(), v.end(), [](const Side& a, const Side& b) {
    if (a.layout.max_stride() != b.layout.max_stride())
      return a.layout.max_stride() > b.layout.max_stride();
    return a.name < b.name;
  });
}

Result<MeshAxis> layout_of(const std::string& name, const AxisTable& table) {
  if (const MeshAxis* m = table.find(name)) return *m;
  TypeError e = type_error("mesh axis '" + name +
                           "' has no known layout; create it as an axis of a "
                           "DeviceMesh (or register it) before "
                           "reinterpreting across meshes");
  e.axis = name;
  return e;
}

// One matched group of the walk: source axes and the destination axes they
// become, both outermost first (a shared axis is a group of one).
struct Group {
  std::vector<std::string> src;
  std::vector<std::string> dst;
};

std::vector<std::string> names_of(const std::vector<Side>& g) {
  std::vector<std::string> out;
  for (const Side& s : g) out.push_back(s.name);
  return out;
}

// The shared part of spec §10.3: a source axis whose layout is a
// destination axis keeps its type there (in the full form, the destination's
// type must agree). The others are left in `src_rest`; `dst_used` marks the
// destination axes taken.
Status match_shared_axes(const TensorType& src, const std::vector<Side>& dst,
                         const AxisTable& table, TensorType& out,
                         std::vector<Group>* groups,
                         std::vector<Side>& src_rest,
                         std::vector<bool>& dst_used) {
  dst_used.assign(dst.size(), false);
  for (const auto& [name, type] : src.map()) {
    Result<MeshAxis> layout = layout_of(name, table);
    if (!layout.ok()) return layout.error();
    bool shared = false;
    for (std::size_t j = 0; j < dst.size(); ++j) {
      if (dst[j].layout != layout.value()) continue;
      if (dst[j].type && dst[j].type->local() != type.local()) {
        TypeError e =
            type_error("Shared mesh axis " + dst[j].name +
                       " changes local type from " + type_text(type) + " to " +
                       type_text(*dst[j].type) + " under reinterpret_mesh");
        e.axis = dst[j].name;
        return e;
      }
      out.set(dst[j].name, type);
      if (groups) groups->push_back({{name}, {dst[j].name}});
      dst_used[j] = true;
      shared = true;
      break;
    }
    if (!shared) src_rest.push_back({name, layout.value(), type});
  }
  return Ok{};
}

// The two-pointer walk of spec §10.3 over the axes that are not shared,
// outermost first: groups of source and destination axes that cover the
// same rank region map onto each other, with one local type per group.
Status walk_groups(std::vector<Side> src_rest, std::vector<Side> dst_rest,
                   bool axes_only, TensorType& out,
                   std::vector<Group>* groups) {
  sort_outermost_first(src_rest);
  sort_outermost_first(dst_rest);

  std::size_t i = 0, j = 0;
  long src_cum = 1, dst_cum = 1;
  std::vector<Side> sg, dg;
  std::optional<PerAxisType> sg_type, dg_type;
  while (i < src_rest.size() || j < dst_rest.size()) {
    if (src_cum <= dst_cum && i < src_rest.size()) {
      const Side& s = src_rest[i++];
      src_cum *= s.layout.size();
      sg.push_back(s);
      if (!sg_type) {
        sg_type = s.type->local();
      } else if (*sg_type != s.type->local()) {
        std::string prior;
        for (std::size_t k = 0; k + 1 < sg.size(); ++k)
          prior += (k ? ", " : "") + sg[k].name;
        std::string msg = "Axes " + group_text(sg) +
                          " would need to be flattened, but " + prior +
                          (sg.size() <= 2 ? " has" : " have") + " type " +
                          type_text(*sg_type) + " while " + s.name +
                          " has type " + type_text(*s.type);
        if (axes_only)
          msg +=
              "; check that the operand has the local SPMD types you "
              "expect and that the current mesh is right for this region "
              "of code";
        TypeError e = type_error(msg);
        e.axis = s.name;
        return e;
      }
    } else if (j < dst_rest.size()) {
      const Side& d = dst_rest[j++];
      dst_cum *= d.layout.size();
      dg.push_back(d);
      if (d.type) {
        if (!dg_type) {
          dg_type = d.type->local();
        } else if (*dg_type != d.type->local()) {
          return type_error("Axes " + group_text(dg) +
                            " would need to be flattened, but they have "
                            "mixed local types in the destination");
        }
      }
    } else {
      break;  // source exhausted while the destination is ahead
    }
    if (src_cum != dst_cum) continue;
    if (dg_type && *dg_type != *sg_type)
      return type_error("Source group " + group_text(sg) + " has type " +
                        type_text(*sg_type) + " but destination group " +
                        group_text(dg) + " has type " + type_text(*dg_type));
    if (flatten_group(sg) != flatten_group(dg))
      return type_error("Source group " + group_text(sg) +
                        " and destination group " + group_text(dg) +
                        " flatten to different rank regions (" +
                        flatten_group(sg).to_string() + " vs " +
                        flatten_group(dg).to_string() + ")");
    for (const Side& d : dg) out.set(d.name, *sg_type);
    if (groups) groups->push_back({names_of(sg), names_of(dg)});
    src_cum = dst_cum = 1;
    sg.clear();
    dg.clear();
    sg_type.reset();
    dg_type.reset();
  }
  if (src_cum != 1 || dst_cum != 1 || i < src_rest.size() ||
      j < dst_rest.size())
    return type_error(
        "The source and destination meshes do not appear to be related "
        "(their axes do not group into equal rank regions)");
  return Ok{};
}

// The shared part and the two-pointer walk of spec §10.3. `dst` carries
// types in the full form and none in the axes-only form. The matched groups
// go to `groups` when it is given.
Result<TensorType> walk(const TensorType& src, std::vector<Side> dst,
                        bool axes_only, const AxisTable& table,
                        std::vector<Group>* groups = nullptr) {
  TensorType out;
  std::vector<Side> src_rest;
  std::vector<bool> dst_used;
  if (Status s =
          match_shared_axes(src, dst, table, out, groups, src_rest, dst_used);
      !s.ok())
    return s.error();
  std::vector<Side> dst_rest;
  for (std::size_t j = 0; j < dst.size(); ++j)
    if (!dst_used[j]) dst_rest.push_back(dst[j]);
  if (src_rest.empty()) return out;
  if (dst_rest.empty()) {
    if (axes_only)
      return type_error("Operand has axes " + group_text(src_rest) +
                        " not in the destination mesh and no destination "
                        "axis to fold them into");
    return type_error(
        "Cross-mesh reinterpretation is incomplete: " + group_text(src_rest) +
        " have no destination axes to map to");
  }
  if (Status s = walk_groups(std::move(src_rest), std::move(dst_rest),
                             axes_only, out, groups);
      !s.ok())
    return s.error();
  return out;
}

Result<std::vector<Side>> sides(const std::vector<std::string>& names,
                                const TensorType* types,
                                const AxisTable& table) {
  std::vector<Side> out;
  for (const std::string& n : names) {
    Result<MeshAxis> layout = layout_of(n, table);
    if (!layout.ok()) return layout.error();
    if (layout.value().is_singleton()) continue;  // carries no information
    out.push_back({n, layout.value(),
                   types ? types->get(n) : std::optional<PerAxisType>()});
  }
  return out;
}

// "{a, b}" in outermost-first order.
std::string axes_text(const std::vector<std::string>& names,
                      const AxisTable& table) {
  std::vector<Side> v;
  for (const auto& n : names) {
    const MeshAxis* m = table.find(n);
    v.push_back({n, m ? *m : MeshAxis{}, std::nullopt});
  }
  sort_outermost_first(v);
  return group_text(v);
}

std::string rank_set_text(const MeshAxis& a) {
  std::string s = "{";
  bool first = true;
  for (long r : a.rank_set()) {
    s += (first ? "" : ", ") + std::to_string(r);
    first = false;
  }
  return s + "}";
}

TensorType uniform_r(const TensorType& t) {
  TensorType u;
  for (const auto& entry : t.map()) u.set(entry.first, spmd::types::R);
  return u;
}

}  // namespace

// ---- AxisTable --------------------------------------------------------------

Status AxisTable::add(const std::string& name, const MeshAxis& layout) {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) {
    by_name_.emplace(name, layout);
    return Ok{};
  }
  if (it->second == layout) return Ok{};
  TypeError e;
  e.kind = ErrorKind::InvalidArgument;
  e.axis = name;
  e.message = "mesh axis name '" + name + "' already names the layout " +
              it->second.to_string() + "; it cannot also name " +
              layout.to_string() +
              " in meshes over the same world (give the axes distinct names)";
  return e;
}

const MeshAxis* AxisTable::find(std::string_view name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &it->second;
}

std::vector<std::string> AxisTable::names_of(const MeshAxis& layout) const {
  std::vector<std::string> out;
  for (const auto& [name, l] : by_name_)
    if (l == layout) out.push_back(name);
  return out;
}

bool AxisTable::same_axis(std::string_view a, std::string_view b) const {
  if (a == b) return true;
  const MeshAxis* x = find(a);
  const MeshAxis* y = find(b);
  return x != nullptr && y != nullptr && *x == *y;
}

// ---- reinterpret_mesh -------------------------------------------------------

Result<TensorType> reinterpret_mesh(const TensorType& src,
                                    const TensorType& dst,
                                    const AxisTable& table) {
  Result<std::vector<Side>> d = sides(dst.axes(), &dst, table);
  if (!d.ok()) return d.error();
  return walk(src, d.value(), /*axes_only=*/false, table);
}

Result<TensorType> reinterpret_mesh(const TensorType& src,
                                    const std::vector<std::string>& dst_axes,
                                    const AxisTable& table) {
  Result<std::vector<Side>> d = sides(dst_axes, nullptr, table);
  if (!d.ok()) return d.error();
  return walk(src, d.value(), /*axes_only=*/true, table);
}

namespace {

std::string entry_text(const SpecEntry& e) {
  if (e.size() == 1) return e.front();
  std::string s = "(";
  for (std::size_t i = 0; i < e.size(); ++i) s += (i ? ", " : "") + e[i];
  return s + ")";
}

std::string list_text(const std::vector<std::string>& v) {
  std::string s = "{";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s + "}";
}

const Group* group_of(const std::vector<Group>& groups, const std::string& a) {
  for (const Group& g : groups)
    if (std::find(g.src.begin(), g.src.end(), a) != g.src.end()) return &g;
  return nullptr;
}

// Step 5 of spec §10.3: every entry of `spec` re-expressed on the
// destination groups.
Result<PartitionSpec> remap_spec(const PartitionSpec& spec,
                                 const std::vector<Group>& groups) {
  std::vector<SpecEntry> out;
  for (long d = 0; d < spec.rank(); ++d) {
    const SpecEntry& e = spec.entry(d);
    SpecEntry mapped;
    std::size_t p = 0;
    while (p < e.size()) {
      const Group* g = group_of(groups, e[p]);
      auto fail = [&](const std::string& why) {
        TypeError err =
            type_error("reinterpret_mesh cannot carry " + spec.to_string() +
                       " to the destination mesh: dim " + std::to_string(d) +
                       " (" + entry_text(e) + "): " + why);
        err.axis = e[p];
        err.fix =
            "shard the dim on whole groups of axes that both meshes share "
            "(e.g. all_gather the axis first, or annotate the tensor on the "
            "destination mesh with assert_type after a local region)";
        return err;
      };
      if (g == nullptr)
        return fail("axis " + e[p] +
                    " has no counterpart in the destination mesh (it is not "
                    "in the tensor's type map)");
      const bool whole =
          p + g->src.size() <= e.size() &&
          std::equal(g->src.begin(), g->src.end(), e.begin() + long(p));
      if (!whole) {
        if (g->src.size() > 1 &&
            std::find(e.begin(), e.end(), g->src.front()) != e.end() &&
            std::all_of(g->src.begin(), g->src.end(), [&](const auto& a) {
              return std::find(e.begin(), e.end(), a) != e.end();
            }))
          return fail("the axes " + list_text(g->src) +
                      " become the one destination group " + list_text(g->dst) +
                      " only in their outer-to-inner order " +
                      entry_text(g->src) + "; the entry lists them in " +
                      "another order");
        return fail("axis " + e[p] +
                    " has no counterpart in the destination "
                    "mesh: it is only part of the source group " +
                    list_text(g->src) + ", which becomes " + list_text(g->dst) +
                    ", so no destination axis covers exactly its ranks");
      }
      mapped.insert(mapped.end(), g->dst.begin(), g->dst.end());
      p += g->src.size();
    }
    out.push_back(std::move(mapped));
  }
  return PartitionSpec(std::move(out));
}

}  // namespace

Result<GlobalType> reinterpret_mesh_global(
    const GlobalType& src, const std::optional<TensorType>& dst,
    const std::vector<std::string>& dst_axes, const AxisTable& table) {
  Result<std::vector<Side>> d =
      dst ? sides(dst->axes(), &*dst, table) : sides(dst_axes, nullptr, table);
  if (!d.ok()) return d.error();
  std::vector<Group> groups;
  Result<TensorType> map =
      walk(src.local, d.value(), /*axes_only=*/!dst, table, &groups);
  if (!map.ok()) return map.error();
  GlobalType out;
  out.local = map.value();
  if (src.spec) {
    Result<PartitionSpec> spec = remap_spec(*src.spec, groups);
    if (!spec.ok()) return spec.error();
    out.spec = spec.value();
  }
  for (const std::string& a : src.unknown_shards) {
    const Group* g = group_of(groups, a);
    if (g == nullptr) {
      out.unknown_shards.insert(a);
      continue;
    }
    out.unknown_shards.insert(g->dst.begin(), g->dst.end());
  }
  return out;
}

Result<TensorType> lift_to_mesh(const TensorType& operand,
                                const std::vector<std::string>& mesh_axes,
                                const AxisTable& table) {
  bool foreign = false;
  for (const auto& entry : operand.map())
    if (std::find(mesh_axes.begin(), mesh_axes.end(), entry.first) ==
        mesh_axes.end())
      foreign = true;
  if (!foreign) return operand;
  Result<TensorType> r = reinterpret_mesh(operand, mesh_axes, table);
  if (r.ok()) return r;
  TypeError e = r.error();
  e.message = "cannot be auto-reinterpreted from " +
              axes_text(operand.axes(), table) + " to the current mesh " +
              axes_text(mesh_axes, table) + ". " + e.message;
  e.fix =
      "Annotate the operand on the current mesh's axes, or switch to the "
      "mesh it was typed on";
  return e;
}

// ---- hints (§9.5) -----------------------------------------------------------

namespace {

// The axes in play for a pair of operand axis sets: their axes and the
// registered sub-axes of them.
std::vector<std::string> hint_universe(const TensorType& a, const TensorType& b,
                                       const AxisTable& table) {
  std::vector<std::string> universe;
  for (const auto& [name, layout] : table.entries()) {
    bool relevant = a.has(name) || b.has(name);
    for (const auto& n : a.axes())
      relevant |= layout.is_proper_sub_axis_of(*table.find(n));
    for (const auto& n : b.axes())
      relevant |= layout.is_proper_sub_axis_of(*table.find(n));
    if (relevant) universe.push_back(name);
  }
  return universe;
}

// (b) `sub` is a proper sub-axis of `super`: the operand typed `sub_type`
// lacks the complement of `sub` in `super`, when one is registered.
std::string sub_axis_hint(const std::string& sub, const std::string& super,
                          const TensorType& sub_type,
                          const std::vector<std::string>& universe,
                          const AxisTable& table) {
  const MeshAxis& s = *table.find(sub);
  const MeshAxis& p = *table.find(super);
  std::string complement;
  for (const std::string& c : universe) {
    const MeshAxis& m = *table.find(c);
    if (m == s || !(m <= p) || !are_orthogonal({s, m})) continue;
    Result<MeshAxis> f = flatten({s, m});
    if (f.ok() && f.value() == p) {
      complement = c;
      break;
    }
  }
  return sub + " is a sub-axis of " + super + " (ranks " + rank_set_text(s) +
         " vs " + rank_set_text(p) + "), so the operand with axes " +
         axes_text(sub_type.axes(), table) +
         (complement.empty() ? " is missing some mesh axes."
                             : " is missing axis " + complement + ".");
}

// (c) the non-shared regions of a and b partially overlap: the axes each
// operand is missing, or nothing.
std::optional<std::string> overlap_hint(
    const TensorType& a, const TensorType& b,
    const std::vector<std::string>& a_only,
    const std::vector<std::string>& b_only,
    const std::vector<std::string>& universe, const AxisTable& table) {
  auto region = [&](const std::vector<std::string>& names)
      -> std::optional<std::set<long>> {
    std::vector<MeshAxis> axes;
    for (const auto& n : names) axes.push_back(*table.find(n));
    Result<MeshAxis> f = flatten(axes);
    if (!f.ok()) return std::nullopt;
    return f.value().rank_set();
  };
  auto ra = region(a_only), rb = region(b_only);
  if (!ra || !rb || *ra == *rb) return std::nullopt;
  bool overlap = false;
  for (long r : *ra) overlap |= r != 0 && rb->count(r) != 0;
  if (!overlap) return std::nullopt;
  auto missing = [&](const TensorType& t) {
    std::vector<std::string> m;
    for (const std::string& c : universe) {
      if (t.has(c)) continue;
      bool ok = true;
      for (const auto& n : t.axes())
        ok &= are_orthogonal({*table.find(c), *table.find(n)});
      if (ok) m.push_back(c);
    }
    return m;
  };
  std::vector<std::string> parts;
  for (const TensorType* t : {&a, &b}) {
    auto m = missing(*t);
    if (m.empty()) continue;
    std::string names;
    for (const auto& n : m) names += (names.empty() ? "" : ", ") + n;
    parts.push_back("the operand with axes " + axes_text(t->axes(), table) +
                    " is missing " + names);
  }
  if (parts.empty()) return std::nullopt;
  std::string msg = "The non-shared axes " + axes_text(a_only, table) +
                    " and " + axes_text(b_only, table) + " partially overlap: ";
  for (std::size_t k = 0; k < parts.size(); ++k)
    msg += (k ? "; " : "") + parts[k];
  return msg + ".";
}

// The hints for one pair of distinct operand axis sets, in order: (a) they
// are cross-mesh compatible; else (b) sub-axis relationships; else (c) a
// partial overlap.
void pair_hints(const TensorType& a, const TensorType& b,
                const AxisTable& table, std::vector<std::string>& out) {
  if (reinterpret_mesh(a, b, table).ok()) {
    const TensorType& fine = a.size() >= b.size() ? a : b;
    const TensorType& coarse = a.size() >= b.size() ? b : a;
    out.push_back("The operand axes " + axes_text(coarse.axes(), table) +
                  " and " + axes_text(fine.axes(), table) +
                  " are cross-mesh compatible: use reinterpret_mesh to "
                  "convert the operand with axes " +
                  axes_text(coarse.axes(), table) + " to axes " +
                  axes_text(fine.axes(), table) + " before this operation.");
    return;
  }
  std::vector<std::string> a_only, b_only;
  for (const auto& n : a.axes())
    if (!b.has(n)) a_only.push_back(n);
  for (const auto& n : b.axes())
    if (!a.has(n)) b_only.push_back(n);
  if (a_only.empty() || b_only.empty()) return;
  const std::vector<std::string> universe = hint_universe(a, b, table);
  bool found_sub = false;
  for (const auto& x : a_only)
    for (const auto& y : b_only) {
      const MeshAxis &mx = *table.find(x), &my = *table.find(y);
      if (mx.is_proper_sub_axis_of(my)) {
        found_sub = true;
        out.push_back(sub_axis_hint(x, y, a, universe, table));
      } else if (my.is_proper_sub_axis_of(mx)) {
        found_sub = true;
        out.push_back(sub_axis_hint(y, x, b, universe, table));
      }
    }
  if (found_sub) return;
  if (auto h = overlap_hint(a, b, a_only, b_only, universe, table))
    out.push_back(*h);
}

}  // namespace

std::string axis_mismatch_hint(const std::vector<TensorType>& operands,
                               const AxisTable& table) {
  // Distinct axis sets, in operand order.
  std::vector<TensorType> sets;
  for (const TensorType& t : operands) {
    TensorType u = uniform_r(t);
    if (std::find(sets.begin(), sets.end(), u) == sets.end()) sets.push_back(u);
  }
  for (const TensorType& t : sets)
    for (const std::string& n : t.axes())
      if (table.find(n) == nullptr) return "";  // no structure known
  std::vector<std::string> hints;
  for (std::size_t i = 0; i < sets.size(); ++i)
    for (std::size_t j = i + 1; j < sets.size(); ++j)
      pair_hints(sets[i], sets[j], table, hints);
  std::string out;
  for (const std::string& h : hints) out += (out.empty() ? "" : " ") + h;
  return out;
}

// ---- collectives over flattened axes ---------------------------------------

std::optional<std::vector<std::string>> axis_components(
    std::string_view axis, const std::vector<std::string>& candidates,
    const AxisTable& table) {
  const MeshAxis* target = table.find(axis);
  if (target == nullptr) return std::nullopt;
  std::vector<std::pair<long, std::string>> subs;  // (max stride, name)
  std::vector<MeshAxis> layouts;
  for (const std::string& n : candidates) {
    const MeshAxis* m = table.find(n);
    if (m == nullptr) continue;
    if (*m == *target) return std::vector<std::string>{n};  // same axis
    if (m->is_proper_sub_axis_of(*target)) {
      subs.emplace_back(m->max_stride(), n);
      layouts.push_back(*m);
    }
  }
  if (subs.empty()) return std::nullopt;
  Result<MeshAxis> f = flatten(layouts);
  if (!f.ok() || f.value() != *target) return std::nullopt;
  // Orthogonal sub-axes have distinct strides, so the order is total.
  std::sort(subs.begin(), subs.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> out;
  for (const auto& entry : subs) out.push_back(entry.second);
  return out;
}

std::optional<std::vector<std::string>> resolve_collective_axes(
    std::string_view axis, const TensorType& x, const AxisTable& table) {
  if (x.has(axis)) return std::vector<std::string>{std::string(axis)};
  return axis_components(axis, x.axes(), table);
}

Result<TensorType> transfer_on_axis(const CollectiveCall& call,
                                    const std::optional<TensorType>& input,
                                    std::string_view axis, bool strict,
                                    bool axis_is_singleton,
                                    const AxisTable* table) {
  if (table == nullptr || axis_is_singleton || !input)
    return transfer(call, input, axis, strict, axis_is_singleton);
  std::optional<std::vector<std::string>> subs =
      resolve_collective_axes(axis, *input, *table);
  if (!subs || (subs->size() == 1 && subs->front() == axis)) {
    return transfer(call, input, axis, strict, axis_is_singleton);
  }
  TensorType t = *input;
  for (const std::string& sub : *subs) {
    Result<TensorType> r = transfer(call, t, sub, strict, false);
    if (!r.ok()) return r;
    t = r.value();
  }
  return t;
}

}  // namespace spmd::core
