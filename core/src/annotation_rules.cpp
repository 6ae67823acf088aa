// assert_type, mutate_type, the loss check and mesh completeness
// (spec §8.1, §8.2, §6.15, §4.3).
#include <spmd/core/annotation_rules.h>

#include <algorithm>

namespace spmd::core {

Result<TensorType> assert_type(const std::optional<TensorType>& current,
                               const TensorType& asserted) {
  if (!current) return asserted;
  TensorType out = *current;
  for (const auto& [axis, want] : asserted.map()) {
    auto have = current->get(axis);
    if (!have) {
      out.set(axis, want);
      continue;
    }
    if (*have == want) continue;
    if (have->kind == TypeKind::Varying && want.kind == TypeKind::Partial) {
      out.set(axis, want);  // implicit V -> P transmute
      continue;
    }
    TypeError e;
    e.kind = ErrorKind::SpmdTypeError;
    e.axis = axis;
    e.expected = to_string(want);
    e.actual = to_string(*have);
    e.message = "SPMD type mismatch on axis " + axis + ": tensor has " +
                e.actual + ", expected " + e.expected;
    return e;
  }
  return out;
}

Result<TensorType> mutate_type(const TensorType& current,
                               const std::string& axis, PerAxisType src,
                               PerAxisType dst) {
  auto have = current.get(axis);
  TypeError e;
  e.kind = ErrorKind::SpmdTypeError;
  e.axis = axis;
  e.expected = to_string(src.local());
  if (!have) {
    e.actual = current.to_string();
    e.message = "mutate_type: axis " + axis + " not found on tensor of type " +
                e.actual;
    return e;
  }
  if (*have != src.local()) {
    e.actual = to_string(*have);
    e.message = "mutate_type: expected current type " + e.expected +
                " on axis " + axis + ", got " + e.actual;
    return e;
  }
  TensorType out = current;
  out.set(axis, dst);
  return out;
}

Status check_loss(const std::optional<TensorType>& loss, bool strict) {
  TypeError e;
  e.kind = ErrorKind::SpmdTypeError;
  if (!loss) {
    if (!strict) return Ok{};
    e.actual = "untyped";
    e.message =
        "backward() on an untyped loss: its gradient contract is unknown";
    e.fix =
        "Annotate the loss first, e.g. spmd::assert_type(loss, {dp = P, "
        "tp = I})";
    return e;
  }
  for (const auto& [axis, t] : loss->map()) {
    e.axis = axis;
    e.actual = to_string(t);
    e.expected = "I or P";
    if (t.kind == TypeKind::Replicate) {
      e.message = "backward() on a Replicate loss on axis " + axis +
                  ": the implicit gradient 1.0 on every rank would over-count "
                  "by the size of " +
                  axis;
      e.fix = "Reduce with dst=I upstream (spmd::all_reduce(x, " + axis +
              ", P, I)), or call backward() on the local Partial loss";
      return e;
    }
    if (t.kind == TypeKind::Varying) {
      e.message = "backward() on a Varying loss on axis " + axis +
                  ": each rank holds a different loss";
      e.fix = "Declare the pending sum: spmd::reinterpret(loss, " + axis +
              ", V, P)";
      return e;
    }
  }
  return Ok{};
}

std::vector<std::string> missing_axes(
    const TensorType& type, const std::vector<std::string>& mesh_axes) {
  std::vector<std::string> out;
  for (const auto& a : mesh_axes)
    if (!type.has(a)) out.push_back(a);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Status check_mesh_complete(const TensorType& type,
                           const std::vector<std::string>& mesh_axes,
                           std::string_view subject, std::string_view mesh) {
  std::vector<std::string> missing = missing_axes(type, mesh_axes);
  if (missing.empty()) return Ok{};
  // The first missing axis in the mesh's own order (how the user wrote it).
  const std::string& first =
      *std::find_if(mesh_axes.begin(), mesh_axes.end(),
                    [&](const std::string& a) { return !type.has(a); });
  TypeError e;
  e.kind = ErrorKind::SpmdTypeError;
  e.axis = first;
  e.actual = type.to_string();
  e.expected = "{";
  for (std::size_t i = 0; i < missing.size(); ++i)
    e.expected += (i ? ", " : "") + missing[i];
  e.expected += "}";
  e.message = std::string(subject) + " has no type for axis '" + first +
              "' of " + std::string(mesh);
  e.fix = "annotate it on every mesh axis, e.g. spmd::assert_type(x, {" +
          first + " = R}) or [[spmd::type(" + first + " = ...)]]";
  return e;
}

}  // namespace spmd::core
