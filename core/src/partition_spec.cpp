// PartitionSpec, global types, S(i) sugar and spec refinement (spec §12.1,
// §8.1).
#include <spmd/core/annotation_rules.h>
#include <spmd/core/partition_spec.h>

#include <algorithm>
#include <cctype>
#include <map>

namespace spmd::core {
namespace {

TypeError type_error(std::string message, std::string axis = {},
                     std::string fix = {}) {
  TypeError e;
  e.kind = ErrorKind::SpmdTypeError;
  e.message = std::move(message);
  e.axis = std::move(axis);
  e.fix = std::move(fix);
  return e;
}

std::string entry_text(const SpecEntry& e) {
  if (e.empty()) return "None";
  if (e.size() == 1) return e[0];
  std::string s = "(";
  for (std::size_t i = 0; i < e.size(); ++i) s += (i ? ", " : "") + e[i];
  return s + ")";
}

}  // namespace

// ---- Shape -----------------------------------------------------------------

Shape Shape::of(const std::vector<long>& sizes) {
  Shape s;
  s.dims.emplace();
  for (long v : sizes) s.dims->push_back(v);
  return s;
}

Shape Shape::of_rank(long ndim) {
  Shape s;
  s.dims.emplace(static_cast<std::size_t>(ndim));
  return s;
}

std::optional<long> Shape::size(long i) const {
  if (!dims || i < 0 || i >= rank()) return std::nullopt;
  return (*dims)[i];
}

std::string Shape::to_string() const {
  if (!dims) return "[?...]";
  std::string s = "[";
  for (std::size_t i = 0; i < dims->size(); ++i) {
    if (i) s += ", ";
    s += (*dims)[i] ? std::to_string(*(*dims)[i]) : "?";
  }
  return s + "]";
}

// ---- PartitionSpec ---------------------------------------------------------

PartitionSpec PartitionSpec::none(long ndim) {
  return PartitionSpec(std::vector<SpecEntry>(static_cast<std::size_t>(ndim)));
}

Result<PartitionSpec> PartitionSpec::normalize(
    const std::vector<RawSpecEntry>& raw,
    const std::function<bool(std::string_view)>& is_singleton) {
  std::vector<SpecEntry> out;
  std::map<std::string, long> seen;
  for (std::size_t d = 0; d < raw.size(); ++d) {
    SpecEntry entry;
    if (raw[d]) {
      if (raw[d]->empty()) {
        TypeError e;
        e.kind = ErrorKind::InvalidArgument;
        e.message = "PartitionSpec entry for dim " + std::to_string(d) +
                    " is an empty tuple";
        e.fix = "write None for an unsharded dim";
        return e;
      }
      for (const auto& axis : *raw[d]) {
        if (is_singleton && is_singleton(axis)) continue;  // carries nothing
        auto [it, fresh] = seen.emplace(axis, static_cast<long>(d));
        if (!fresh) {
          return type_error("PartitionSpec axes are not orthogonal: axis " +
                                axis + " appears at dim " +
                                std::to_string(it->second) + " and at dim " +
                                std::to_string(d),
                            axis, "an axis may shard at most one dim, once");
        }
        entry.push_back(axis);
      }
    }
    out.push_back(std::move(entry));
  }
  return PartitionSpec(std::move(out));
}

Result<PartitionSpec> PartitionSpec::parse(std::string_view text) {
  auto fail = [&](std::size_t col, const std::string& what) -> TypeError {
    TypeError e;
    e.kind = ErrorKind::ParseError;
    e.message = "cannot parse PartitionSpec \"" + std::string(text) +
                "\" at column " + std::to_string(col) + ": " + what;
    return e;
  };
  std::size_t i = 0;
  auto skip = [&] {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
  };
  auto ident = [&]() -> std::string {
    std::size_t b = i;
    while (i < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[i])) ||
            text[i] == '_' || text[i] == '.'))
      ++i;
    return std::string(text.substr(b, i - b));
  };
  skip();
  if (text.substr(i, 13) == "PartitionSpec") i += 13;
  skip();
  if (i >= text.size() || text[i] != '(') return fail(i, "expected '('");
  ++i;
  std::vector<RawSpecEntry> raw;
  skip();
  if (i < text.size() && text[i] == ')') {
    ++i;
  } else {
    while (true) {
      skip();
      if (i < text.size() && text[i] == '(') {
        ++i;
        std::vector<std::string> axes;
        skip();
        while (i < text.size() && text[i] != ')') {
          std::string a = ident();
          if (a.empty()) return fail(i, "expected an axis name");
          axes.push_back(a);
          skip();
          if (i < text.size() && text[i] == ',') ++i;
          skip();
        }
        if (i >= text.size()) return fail(i, "missing ')'");
        ++i;
        raw.emplace_back(std::move(axes));
      } else {
        std::string a = ident();
        if (a.empty()) return fail(i, "expected None, an axis or a tuple");
        if (a == "None")
          raw.emplace_back(std::nullopt);
        else
          raw.emplace_back(std::vector<std::string>{a});
      }
      skip();
      if (i < text.size() && text[i] == ',') {
        ++i;
        continue;
      }
      if (i < text.size() && text[i] == ')') {
        ++i;
        break;
      }
      return fail(i, "expected ',' or ')'");
    }
  }
  skip();
  if (i != text.size()) return fail(i, "trailing characters");
  return normalize(raw);
}

std::optional<long> PartitionSpec::dim_of(std::string_view axis) const {
  for (std::size_t d = 0; d < entries_.size(); ++d)
    for (const auto& a : entries_[d])
      if (a == axis) return static_cast<long>(d);
  return std::nullopt;
}

bool PartitionSpec::is_innermost(std::string_view axis) const {
  auto d = dim_of(axis);
  return d && entries_[*d].back() == axis;
}

std::vector<std::string> PartitionSpec::axes() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) out.insert(out.end(), e.begin(), e.end());
  return out;
}

bool PartitionSpec::all_none() const {
  return std::all_of(entries_.begin(), entries_.end(),
                     [](const SpecEntry& e) { return e.empty(); });
}

PartitionSpec PartitionSpec::without(std::string_view axis) const {
  PartitionSpec out = *this;
  for (auto& e : out.entries_)
    e.erase(std::remove(e.begin(), e.end(), axis), e.end());
  return out;
}

PartitionSpec PartitionSpec::with_innermost(long dim,
                                            const std::string& axis) const {
  PartitionSpec out = *this;
  out.entries_.at(dim).push_back(axis);
  return out;
}

std::string PartitionSpec::to_string() const {
  std::string s = "PartitionSpec(";
  for (std::size_t d = 0; d < entries_.size(); ++d)
    s += (d ? ", " : "") + entry_text(entries_[d]);
  return s + ")";
}

// ---- GlobalType ------------------------------------------------------------

std::optional<PerAxisType> GlobalType::axis_type(std::string_view axis) const {
  auto t = local.get(axis);
  if (!t) return std::nullopt;
  if (spec)
    if (auto d = spec->dim_of(axis))
      return spmd::types::S(static_cast<int>(*d));
  return t;
}

std::string GlobalType::to_string() const {
  std::string s = "{";
  bool first = true;
  for (const auto& [axis, t] : local.map()) {
    s += (first ? "" : ", ") + axis + ": ";
    first = false;
    if (unmasked_rows.count(axis))
      s += "V(unmasked rows)";
    else if (unknown_shards.count(axis))
      s += "S(?)";
    else
      s += core::to_string(*axis_type(axis));
  }
  s += "}";
  if (spec) s += " " + spec->to_string();
  return s;
}

// ---- conversions -----------------------------------------------------------

Result<ShardsToSpec> shards_to_spec(
    const std::vector<std::pair<std::string, PerAxisType>>& entries,
    const Shape& shape) {
  ShardsToSpec out;
  std::vector<SpecEntry> spec;
  if (shape.rank_known()) spec.resize(static_cast<std::size_t>(shape.rank()));
  bool any = false;
  for (const auto& [axis, t] : entries) {
    if (!t.is_shard()) continue;
    any = true;
    if (!shape.rank_known()) {
      out.unknown.insert(axis);  // never guess a dim without the rank
      continue;
    }
    auto resolved = resolve_shard_dim(t, shape.rank());
    if (!resolved) {
      TypeError e = resolved.error();
      e.axis = axis;
      return e;
    }
    auto& entry = spec[static_cast<std::size_t>(resolved->dim)];
    if (!entry.empty()) {
      return type_error(
          "dim " + std::to_string(resolved->dim) +
              " is sharded on multiple axes (" + entry[0] + " and " + axis +
              "): the order of the axes on that dim is ambiguous",
          axis,
          "use an explicit PartitionSpec, e.g. PartitionSpec((" + entry[0] +
              ", " + axis + "), ...), to give the order");
    }
    entry.push_back(axis);
  }
  if (any && shape.rank_known()) out.spec = PartitionSpec(std::move(spec));
  return out;
}

std::vector<std::pair<std::string, PerAxisType>> spec_to_shards(
    const PartitionSpec& spec) {
  std::vector<std::pair<std::string, PerAxisType>> out;
  for (long d = 0; d < spec.rank(); ++d)
    for (const auto& a : spec.entry(d))
      out.emplace_back(a, spmd::types::S(static_cast<int>(d)));
  return out;
}

Result<GlobalType> make_global(
    const std::vector<std::pair<std::string, PerAxisType>>& entries,
    const std::optional<PartitionSpec>& explicit_spec, const Shape& shape) {
  GlobalType g;
  if (explicit_spec && shape.rank_known() &&
      explicit_spec->rank() != shape.rank()) {
    return type_error(
        "PartitionSpec " + explicit_spec->to_string() + " has " +
            std::to_string(explicit_spec->rank()) +
            " entries but the tensor has ndim=" + std::to_string(shape.rank()),
        {}, "give one entry per tensor dim");
  }
  bool has_shard =
      std::any_of(entries.begin(), entries.end(),
                  [](const auto& e) { return e.second.is_shard(); });
  if (has_shard && explicit_spec) {
    for (const auto& [axis, t] : entries)
      if (t.is_shard())
        return type_error("S(" + std::to_string(t.dim) + ") on axis " + axis +
                              " together with an explicit PartitionSpec",
                          axis,
                          "write the sharding once: either S(i) entries or the "
                          "PartitionSpec (with " +
                              axis + ": V in the map)");
  }
  auto local = TensorType::from_entries(entries);
  if (!local) return local.error();
  g.local = *local;
  if (explicit_spec) {
    g.spec = explicit_spec;
  } else {
    auto conv = shards_to_spec(entries, shape);
    if (!conv) return conv.error();
    g.spec = conv->spec;
    g.unknown_shards = conv->unknown;
  }
  if (g.spec) {
    for (const auto& axis : g.spec->axes()) {
      auto t = g.local.get(axis);
      if (!t) {
        g.local.set(axis, spmd::types::V);  // absent -> V (§8.1 step 5)
      } else if (t->kind != TypeKind::Varying) {
        return type_error(
            "axis " + axis + " shards dim " +
                std::to_string(*g.spec->dim_of(axis)) +
                " in the PartitionSpec but is typed " + core::to_string(*t) +
                " in the map; only a Varying axis can be sharded",
            axis, "type " + axis + " as V (or S(i)), or drop it from the spec");
      }
    }
  }
  return g;
}

Result<PartitionSpec> refine_spec(const std::optional<PartitionSpec>& existing,
                                  const PartitionSpec& asserted) {
  if (!existing) return asserted;
  if (existing->rank() != asserted.rank()) {
    return type_error("PartitionSpec rank mismatch: tensor has " +
                      existing->to_string() + ", asserted " +
                      asserted.to_string());
  }
  std::vector<SpecEntry> out = existing->entries();
  for (long d = 0; d < asserted.rank(); ++d) {
    const SpecEntry& want = asserted.entry(d);
    const SpecEntry& have = existing->entry(d);
    if (want.empty() || want == have) continue;
    if (have.empty()) {
      for (const auto& a : want) {
        auto other = existing->dim_of(a);
        if (other && *other != d)
          return type_error(
              "axis " + a + " already shards dim " + std::to_string(*other) +
                  " of the tensor (" + existing->to_string() +
                  "); it cannot also shard dim " + std::to_string(d),
              a);
      }
      out[static_cast<std::size_t>(d)] = want;
      continue;
    }
    return type_error("PartitionSpec conflict at dim " + std::to_string(d) +
                          ": tensor has " + entry_text(have) + ", asserted " +
                          entry_text(want) + " (" + existing->to_string() +
                          " vs " + asserted.to_string() + ")",
                      want.back());
  }
  return PartitionSpec(std::move(out));
}

Result<GlobalType> assert_global(const std::optional<GlobalType>& current,
                                 const GlobalType& asserted) {
  if (!current) return asserted;
  auto local = assert_type(current->local, asserted.local);
  if (!local) return local.error();
  GlobalType out;
  out.local = *local;
  out.unknown_shards = current->unknown_shards;
  for (const auto& a : asserted.unknown_shards)
    if (!(current->spec && current->spec->dim_of(a)))
      out.unknown_shards.insert(a);
  if (asserted.spec) {
    auto spec = refine_spec(current->spec, *asserted.spec);
    if (!spec) return spec.error();
    out.spec = *spec;
    for (const auto& a : out.spec->axes()) out.unknown_shards.erase(a);
  } else {
    out.spec = current->spec;
  }
  // An axis the map now says is not V cannot stay in the spec (V -> P).
  if (out.spec) {
    for (const auto& a : out.spec->axes()) {
      auto t = out.local.get(a);
      if (t && t->kind != TypeKind::Varying)
        return type_error("axis " + a + " is sharded (" +
                              out.spec->to_string() + ") but was asserted " +
                              core::to_string(*t),
                          a);
    }
  }
  return out;
}

Status check_global_operand(
    const GlobalType& t, const std::function<bool(std::string_view)>& is_global,
    std::string_view what) {
  for (const auto& [axis, type] : t.local.map()) {
    if (!is_global(axis)) continue;
    bool sharded =
        (t.spec && t.spec->dim_of(axis)) || t.unknown_shards.count(axis) != 0;
    if (type.kind == TypeKind::Varying && !sharded) {
      TypeError e = type_error(
          std::string(what) + " has Varying type on axis " + axis +
              " but no PartitionSpec entry: global mode needs to know which "
              "tensor dim " +
              axis + " shards",
          axis,
          "assert_type the tensor with S(i) on " + axis +
              " (or a PartitionSpec); if it is a pending sum, reinterpret it "
              "from V to P; if it cannot be expressed, use a local region");
      e.expected = "S(i)";
      e.actual = "V";
      return e;
    }
    if (type.kind != TypeKind::Varying && sharded) {
      return type_error(std::string(what) +
                            " has a PartitionSpec entry on axis " + axis +
                            " but local type is " + core::to_string(type) +
                            ", not V; only Varying axes can be sharded",
                        axis);
    }
  }
  return Ok{};
}

}  // namespace spmd::core
