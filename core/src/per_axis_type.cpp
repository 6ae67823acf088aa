// Per-axis types: printing, parsing, shard-dim resolution (spec §2).
#include <spmd/core/per_axis_type.h>

#include <cctype>
#include <functional>
#include <string>

namespace spmd::core {

std::string to_string(PerAxisType t) {
  switch (t.kind) {
    case TypeKind::Replicate:
      return "R";
    case TypeKind::Invariant:
      return "I";
    case TypeKind::Varying:
      return "V";
    case TypeKind::Partial:
      return "P";
    case TypeKind::Shard:
      return "S(" + std::to_string(t.dim) + ")";
  }
  return "?";
}

std::string full_name(PerAxisType t) {
  switch (t.kind) {
    case TypeKind::Replicate:
      return "Replicate";
    case TypeKind::Invariant:
      return "Invariant";
    case TypeKind::Varying:
      return "Varying";
    case TypeKind::Partial:
      return "Partial";
    case TypeKind::Shard:
      return "Shard(" + std::to_string(t.dim) + ")";
  }
  return "?";
}

namespace {
std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

TypeError parse_error(std::string_view token, std::string_view what) {
  TypeError e;
  e.kind = ErrorKind::ParseError;
  e.message =
      "invalid SPMD type '" + std::string(token) + "': " + std::string(what);
  e.actual = std::string(token);
  e.expected = "R, I, V, P or S(<int>)";
  return e;
}
}  // namespace

Result<PerAxisType> parse_per_axis_type(std::string_view text) {
  std::string_view s = trim(text);
  if (s == "R") return spmd::types::R;
  if (s == "I") return spmd::types::I;
  if (s == "V") return spmd::types::V;
  if (s == "P") return spmd::types::P;
  if (s.size() >= 4 && s.front() == 'S') {
    std::string_view rest = trim(s.substr(1));
    if (rest.size() < 3 || rest.front() != '(' || rest.back() != ')')
      return parse_error(s, "expected S(<int>)");
    std::string_view num = trim(rest.substr(1, rest.size() - 2));
    bool negative = !num.empty() && num.front() == '-';
    std::string_view digits = negative ? num.substr(1) : num;
    if (digits.empty() || digits.size() > 9)
      return parse_error(s, "expected an integer dimension inside S(...)");
    long value = 0;
    for (char c : digits) {
      if (!std::isdigit(static_cast<unsigned char>(c)))
        return parse_error(s, "expected an integer dimension inside S(...)");
      value = value * 10 + (c - '0');
    }
    return spmd::types::S(static_cast<int>(negative ? -value : value));
  }
  return parse_error(s.empty() ? text : s, "expected R, I, V, P or S(<int>)");
}

Result<PerAxisType> resolve_shard_dim(PerAxisType t, long ndim) {
  if (!t.is_shard()) return t;
  long d = t.dim;
  if (d < -ndim || d >= ndim) {
    TypeError e;
    e.kind = ErrorKind::SpmdTypeError;
    e.message = to_string(t) + " is out of bounds for tensor with ndim=" +
                std::to_string(ndim);
    e.actual = to_string(t);
    return e;
  }
  if (d < 0) d += ndim;
  return spmd::types::S(static_cast<int>(d));
}

std::size_t hash_value(PerAxisType t) {
  std::size_t h = static_cast<std::size_t>(t.kind);
  if (t.is_shard()) h = h * 1000003u ^ std::hash<int>()(t.dim);
  return h;
}

}  // namespace spmd::core
