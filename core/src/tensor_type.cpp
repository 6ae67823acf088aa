// Whole-tensor type maps: building, text form, duality (spec §3).
#include <spmd/core/tensor_type.h>

#include <cctype>
#include <functional>

namespace spmd::core {

namespace {

/// A small recursive-descent reader for "{axis: T, ...}" that reports the
/// offending token and its column.
class TypeMapReader {
 public:
  explicit TypeMapReader(std::string_view text) : text_(text) {}

  Result<std::vector<std::pair<std::string, PerAxisType>>> read() {
    std::vector<std::pair<std::string, PerAxisType>> entries;
    skip_space();
    if (!consume('{')) return error("expected '{'");
    skip_space();
    if (consume('}')) return finish(std::move(entries));
    while (true) {
      skip_space();
      std::size_t axis_col = pos_;
      std::string axis = read_identifier();
      if (axis.empty()) return error("expected an axis name");
      for (const auto& e : entries)
        if (e.first == axis)
          return error_at(axis_col, axis, "axis '" + axis + "' repeated");
      skip_space();
      if (!consume(':')) return error("expected ':' after axis '" + axis + "'");
      skip_space();
      std::size_t type_col = pos_;
      std::string_view type_text = read_type_token();
      if (type_text.empty()) return error("expected a type (R, I, V, P, S(k))");
      Result<PerAxisType> t = parse_per_axis_type(type_text);
      if (!t.ok())
        return error_at(
            type_col, type_text,
            "expected R, I, V, P or S(<int>) for axis '" + axis + "'");
      entries.emplace_back(std::move(axis), t.value());
      skip_space();
      if (consume('}')) return finish(std::move(entries));
      if (!consume(',')) return error("expected ',' or '}'");
    }
  }

 private:
  Result<std::vector<std::pair<std::string, PerAxisType>>> finish(
      std::vector<std::pair<std::string, PerAxisType>> entries) {
    skip_space();
    if (pos_ != text_.size()) return error("unexpected text after '}'");
    return entries;
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::string read_identifier() {
    std::size_t start = pos_;
    while (pos_ < text_.size() &&
           (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
            text_[pos_] == '_'))
      ++pos_;
    if (start < pos_ &&
        std::isdigit(static_cast<unsigned char>(text_[start]))) {
      pos_ = start;
      return {};
    }
    return std::string(text_.substr(start, pos_ - start));
  }
  /// A type token: letters, or S(...) through the closing parenthesis.
  std::string_view read_type_token() {
    std::size_t start = pos_;
    while (pos_ < text_.size() &&
           std::isalnum(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
    if (pos_ < text_.size() && text_[pos_] == '(') {
      while (pos_ < text_.size() && text_[pos_] != ')') ++pos_;
      if (pos_ < text_.size()) ++pos_;
    }
    return text_.substr(start, pos_ - start);
  }
  std::string_view current_token() const {
    if (pos_ >= text_.size()) return "end of input";
    std::size_t end = pos_ + 1;
    while (end < text_.size() &&
           std::isalnum(static_cast<unsigned char>(text_[end])) &&
           std::isalnum(static_cast<unsigned char>(text_[pos_])))
      ++end;
    return text_.substr(pos_, end - pos_);
  }
  TypeError error(const std::string& what) const {
    return error_at(pos_, current_token(), what);
  }
  TypeError error_at(std::size_t col, std::string_view token,
                     const std::string& what) const {
    TypeError e;
    e.kind = ErrorKind::ParseError;
    std::string tok = token == "end of input" ? std::string(token)
                                              : "'" + std::string(token) + "'";
    e.message = "cannot parse SPMD type \"" + std::string(text_) +
                "\": " + what + ", got " + tok + " at column " +
                std::to_string(col + 1);
    e.actual = std::string(token);
    return e;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
};

}  // namespace

Result<TensorType> TensorType::from_entries(
    const std::vector<std::pair<std::string, PerAxisType>>& entries) {
  TensorType t;
  for (const auto& [axis, type] : entries) {
    if (t.has(axis)) {
      TypeError e;
      e.kind = ErrorKind::UsageError;
      e.axis = axis;
      e.message = "axis '" + axis + "' appears twice in one SPMD type";
      e.fix = "give each mesh axis exactly one type";
      return e;
    }
    t.set(axis, type);
  }
  return t;
}

Result<std::vector<std::pair<std::string, PerAxisType>>>
TensorType::parse_entries(std::string_view text) {
  return TypeMapReader(text).read();
}

Result<TensorType> TensorType::parse(std::string_view text) {
  auto entries = parse_entries(text);
  if (!entries.ok()) return entries.error();
  TensorType t;
  for (const auto& [axis, type] : entries.value()) t.set(axis, type);
  return t;
}

void TensorType::set(std::string axis, PerAxisType t) {
  map_[std::move(axis)] = t.local();
}

void TensorType::erase(std::string_view axis) {
  auto it = map_.find(axis);
  if (it != map_.end()) map_.erase(it);
}

std::optional<PerAxisType> TensorType::get(std::string_view axis) const {
  auto it = map_.find(axis);
  if (it == map_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> TensorType::axes() const {
  std::vector<std::string> out;
  out.reserve(map_.size());
  for (const auto& entry : map_) out.push_back(entry.first);
  return out;
}

std::string TensorType::to_string() const {
  std::string s = "{";
  bool first = true;
  for (const auto& [axis, type] : map_) {
    if (!first) s += ", ";
    first = false;
    s += axis + ": " + core::to_string(type);
  }
  return s + "}";
}

TensorType TensorType::backward() const {
  TensorType out;
  for (const auto& [axis, type] : map_) out.set(axis, backward_type(type));
  return out;
}

std::size_t hash_value(const TensorType& t) {
  std::size_t h = 0x9e3779b97f4a7c15ull;
  for (const auto& [axis, type] : t.map()) {
    h ^= std::hash<std::string>()(axis) + 0x9e3779b9 + (h << 6) + (h >> 2);
    h ^= hash_value(type) + 0x9e3779b9 + (h << 6) + (h >> 2);
  }
  return h;
}

}  // namespace spmd::core
