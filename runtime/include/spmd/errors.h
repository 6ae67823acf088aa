// spmd/errors.h - the runtime's exceptions (spec §9.1).
//
// Every core::TypeError becomes one of these, with the same message. All
// derive from spmd::SpmdError (a std::runtime_error) carrying the core kind.
#ifndef SPMD_ERRORS_H
#define SPMD_ERRORS_H

#include <spmd/core/error.h>
#include <spmd/source_location.h>

#include <stdexcept>
#include <string>

namespace spmd {

/// Base of every spmd-check runtime error. The message ends with the user's
/// call site (spmd/source_location.h): "Called from <file>:<line>
/// (spmd::<name>)" for an error raised inside an spmd:: call, else, under
/// the checker, the last spmd:: call of the thread.
class SpmdError : public std::runtime_error {
 public:
  SpmdError(core::ErrorKind kind, const std::string& message)
      : std::runtime_error(detail::with_call_site(message)), kind_(kind) {}
  core::ErrorKind kind() const { return kind_; }

 private:
  core::ErrorKind kind_;
};

/// A type violation (inference, collective input mismatch, missing axis...).
class SpmdTypeError : public SpmdError {
 public:
  explicit SpmdTypeError(const std::string& m)
      : SpmdError(core::ErrorKind::SpmdTypeError, m) {}
};
/// Illegal src/dst, expert-mode gate, conflicting dims, dtype options, ...
class InvalidArgument : public SpmdError {
 public:
  explicit InvalidArgument(const std::string& m)
      : SpmdError(core::ErrorKind::InvalidArgument, m) {}
};
/// Malformed type values, API misuse.
class UsageError : public SpmdError {
 public:
  explicit UsageError(const std::string& m)
      : SpmdError(core::ErrorKind::UsageError, m) {}
};
/// An axis that cannot be resolved to a process group (no mesh, not in it).
class MeshResolutionError : public SpmdError {
 public:
  explicit MeshResolutionError(const std::string& m)
      : SpmdError(core::ErrorKind::MeshResolutionError, m) {}
};
/// Indivisible shards, wrong stack sizes, mismatched split sizes.
class ShapeError : public SpmdError {
 public:
  explicit ShapeError(const std::string& m)
      : SpmdError(core::ErrorKind::ShapeError, m) {}
};

/// A documented but unsupported combination (e.g. nested backward options on
/// the composed reinterpret(I, V) / reinterpret(I, P), spec §7.10).
class NotImplementedError : public SpmdError {
 public:
  explicit NotImplementedError(const std::string& m)
      : SpmdError(core::ErrorKind::NotImplemented, m) {}
};
/// Bad text given to a type parser.
class ParseError : public SpmdError {
 public:
  explicit ParseError(const std::string& m)
      : SpmdError(core::ErrorKind::ParseError, m) {}
};

/// Global mode (spec §12.4): a collective on an axis that is not the innermost
/// of its multi-axis PartitionSpec entry.
class RedistributeError : public SpmdError {
 public:
  explicit RedistributeError(const std::string& m)
      : SpmdError(core::ErrorKind::RedistributeError, m) {}
};
/// Global mode (spec §12.2): a reshape or op that would split or merge a
/// sharded dim in a way no PartitionSpec can describe.
class DTensorPropagationError : public SpmdError {
 public:
  explicit DTensorPropagationError(const std::string& m)
      : SpmdError(core::ErrorKind::DTensorPropagationError, m) {}
};

/// A communication failure of a collective: a peer that never arrived within
/// the timeout, a broken connection, a failed rendezvous. The message names
/// the collective, the mesh axis, the group size and this rank's place in it.
/// Not a type error, so it is not an SpmdError.
class CollectiveError : public std::runtime_error {
 public:
  explicit CollectiveError(const std::string& m) : std::runtime_error(m) {}
};

/// Throws the exception class matching error.kind with error.full_message().
[[noreturn]] void throw_error(const core::TypeError& error);

/// Throws the exception class matching kind, for an error made of a message
/// and an optional fix (printed after it).
[[noreturn]] void throw_error(core::ErrorKind kind, std::string message,
                              std::string fix = {});

/// Returns the value or throws it as an exception.
template <typename T>
T value_or_throw(core::Result<T> r) {
  if (!r.ok()) throw_error(r.error());
  return std::move(r).value();
}

}  // namespace spmd

#endif  // SPMD_ERRORS_H
