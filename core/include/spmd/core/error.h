// spmd/core/error.h - type errors as values.
//
// The core never throws: every rule returns a Result<T> holding either a value
// or a TypeError. The plugin renders a TypeError as a Clang diagnostic, the
// runtime throws it as an exception (spmd::SpmdTypeError and friends).
#ifndef SPMD_CORE_ERROR_H
#define SPMD_CORE_ERROR_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace spmd::core {

/// Error kinds of spec §9.1.
enum class ErrorKind {
  SpmdTypeError,  ///< a type violation (inference, mismatch, missing axis, ...)
  InvalidArgument,  ///< illegal src/dst, expert-mode gate, conflicting dims,
                    ///< ...
  UsageError,       ///< malformed type values or API misuse
  MeshResolutionError,  ///< an axis that cannot be resolved to a process group
  ShapeError,           ///< indivisible shard, wrong stack sizes
  NotImplemented,       ///< a documented but unsupported combination
  ParseError,           ///< bad text given to the type parser
  RedistributeError,    ///< global mode: a collective on a non-innermost axis
                        ///< of a multi-axis PartitionSpec entry (§12.4)
  DTensorPropagationError,  ///< global mode: ambiguous reshape of a sharded
                            ///< dim (§12.2)
};

/// Printable name of an ErrorKind ("SpmdTypeError", ...).
const char* to_string(ErrorKind kind);

/// A type error. `message` is the full one-paragraph text (it already names
/// the axis and the types); the other fields are structured copies for tools
/// (diagnostic arguments, SARIF, tests). `fix` is a one-line suggested fix or
/// empty; `suggestions` holds the §9.4 rewrite suggestions, one per line.
struct TypeError {
  ErrorKind kind = ErrorKind::SpmdTypeError;
  std::string message;
  std::string axis;      ///< the mesh axis involved, or empty
  std::string expected;  ///< expected type(s) as text, or empty
  std::string actual;    ///< actual type(s) as text, or empty
  std::string fix;       ///< one-line fix, or empty

  /// message, then the fix (or the §9.4 suggestions) on the next line.
  std::string full_message() const;
};

/// Either a T or a TypeError. Minimal on purpose (C++17 has no std::expected).
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(TypeError error) : v_(std::move(error)) {}

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  const T& operator*() const& { return value(); }
  const T* operator->() const { return &value(); }

  const TypeError& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

 private:
  std::variant<T, TypeError> v_;
};

/// Result of a check that yields no value.
struct Ok {};
using Status = Result<Ok>;

}  // namespace spmd::core

#endif  // SPMD_CORE_ERROR_H
