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
#include <vector>

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

/// A type error, in separate parts so that each front end renders it its
/// own way (the plugin as a one-line diagnostic with notes, the runtime as
/// the text of an exception). `message` is one line that names the axis and
/// the types; `fix` is one line of advice, or empty; `notes` are further
/// one-line facts or alternatives (the §9.4 rewrite suggestions), in order.
/// No part contains a newline. The other fields are structured copies for
/// tools (diagnostic arguments, SARIF, tests).
struct TypeError {
  ErrorKind kind = ErrorKind::SpmdTypeError;
  std::string message;
  std::string axis;                ///< the mesh axis involved, or empty
  std::string expected;            ///< expected type(s) as text, or empty
  std::string actual;              ///< actual type(s) as text, or empty
  std::string fix;                 ///< one-line fix, or empty
  std::vector<std::string> notes;  ///< further lines, or empty

  /// The plain-text rendering (the runtime's exceptions): message, then the
  /// fix on the next line, then each note on its own line, indented by two
  /// spaces.
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
