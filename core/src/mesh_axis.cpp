// Structural mesh axes (spec §10.1).
#include <spmd/core/mesh_axis.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

namespace spmd::core {

namespace {
std::vector<MeshAxis::Atom> canonical(std::vector<MeshAxis::Atom> atoms) {
  std::vector<MeshAxis::Atom> out;
  for (const auto& a : atoms) {
    if (a.first == 1) continue;
    if (!out.empty() && out.back().second == a.first * a.second) {
      out.back() = {out.back().first * a.first, a.second};
      continue;
    }
    out.push_back(a);
  }
  return out;
}
}  // namespace

MeshAxis MeshAxis::of(long size, long stride) {
  return from_layout({{size, stride}});
}

MeshAxis MeshAxis::from_layout(std::vector<Atom> atoms) {
  MeshAxis m;
  m.atoms_ = canonical(std::move(atoms));
  return m;
}

Result<MeshAxis> MeshAxis::from_ranks(std::vector<long> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  if (ranks.empty()) return MeshAxis{};
  const long base = ranks.front();
  for (long& r : ranks) r -= base;
  // Peel atoms innermost first: the smallest stride is ranks[1].
  std::vector<Atom> inner_first;
  std::vector<long> rest = ranks;
  while (rest.size() > 1) {
    long stride = rest[1];
    long size = 1;
    while (size < static_cast<long>(rest.size()) && rest[size] == size * stride)
      ++size;
    if (static_cast<long>(rest.size()) % size != 0) break;
    inner_first.push_back({size, stride});
    std::vector<long> next;
    for (std::size_t i = 0; i < rest.size(); i += size) next.push_back(rest[i]);
    rest = next;
  }
  std::vector<Atom> atoms(inner_first.rbegin(), inner_first.rend());
  MeshAxis m = from_layout(atoms);
  std::set<long> expect(ranks.begin(), ranks.end());
  if (rest.size() > 1 || m.rank_set() != expect) {
    TypeError e;
    e.kind = ErrorKind::InvalidArgument;
    e.message = "process group ranks do not form a strided layout";
    return e;
  }
  return m;
}

long MeshAxis::size() const {
  long s = 1;
  for (const auto& a : atoms_) s *= a.first;
  return s;
}

std::set<long> MeshAxis::rank_set() const {
  std::set<long> out{0};
  for (const auto& [size, stride] : atoms_) {
    std::set<long> next;
    for (long base : out)
      for (long c = 0; c < size; ++c) next.insert(base + c * stride);
    out = std::move(next);
  }
  return out;
}

bool MeshAxis::is_sub_axis_of(const MeshAxis& other) const {
  auto mine = rank_set(), theirs = other.rank_set();
  return std::includes(theirs.begin(), theirs.end(), mine.begin(), mine.end());
}

long MeshAxis::max_stride() const {
  long m = 0;
  for (const auto& a : atoms_) m = std::max(m, a.second);
  return m;
}

std::string MeshAxis::to_string() const {
  if (atoms_.empty()) return "(1:1)";
  std::string sizes, strides;
  for (std::size_t i = 0; i < atoms_.size(); ++i) {
    if (i) {
      sizes += ",";
      strides += ",";
    }
    sizes += std::to_string(atoms_[i].first);
    strides += std::to_string(atoms_[i].second);
  }
  if (atoms_.size() == 1) return "(" + sizes + ":" + strides + ")";
  return "(" + sizes + "):(" + strides + ")";
}

std::size_t hash_value(const MeshAxis& a) {
  std::size_t h = 0;
  for (const auto& [size, stride] : a.atoms())
    h = h * 1000003u ^ std::hash<long>()(size * 7919 + stride);
  return h;
}

bool are_orthogonal(const std::vector<MeshAxis>& axes) {
  std::vector<MeshAxis::Atom> atoms;
  for (const auto& a : axes)
    for (const auto& atom : a.atoms())
      if (atom.first > 1) atoms.push_back(atom);
  std::sort(atoms.begin(), atoms.end(), [](const auto& x, const auto& y) {
    return std::labs(x.second) < std::labs(y.second);
  });
  long span = 0;
  for (const auto& [size, stride] : atoms) {
    if (stride <= 0 || stride <= span) return false;
    span += (size - 1) * stride;
  }
  return true;
}

Result<MeshAxis> flatten(const std::vector<MeshAxis>& axes) {
  if (!are_orthogonal(axes)) {
    TypeError e;
    e.kind = ErrorKind::InvalidArgument;
    std::string list;
    for (const auto& a : axes)
      list += (list.empty() ? "" : ", ") + a.to_string();
    e.message = "cannot flatten mesh axes " + list + ": axes not orthogonal";
    return e;
  }
  std::vector<MeshAxis::Atom> atoms;
  for (const auto& a : axes)
    atoms.insert(atoms.end(), a.atoms().begin(), a.atoms().end());
  std::sort(atoms.begin(), atoms.end(),
            [](const auto& x, const auto& y) { return x.second > y.second; });
  return MeshAxis::from_layout(atoms);
}

}  // namespace spmd::core
