// spmd/source_location.h - the user's call site of an spmd:: call.
//
// Every public collective and annotation function (spmd::all_reduce, ...,
// spmd::assert_type, assert_type_like, mutate_type, check_loss,
// call_decomposed) takes a trailing `SourceLocation loc =
// SourceLocation::current()`; callers never write it. While such a call runs,
// every spmd::SpmdError it raises ends with
//   Called from <file>:<line> (spmd::<name>)
// and a checker error raised on an ATen op (outside any spmd:: call) names the
// last spmd:: call this thread made under the checker:
//   After spmd::all_reduce at <file>:<line> (the last spmd call on this thread)
// With SPMD_CHECKER_TRACE=1 in the environment the message also carries a
// native backtrace. TypecheckOptions::trace lines name the same last call.
//
// C++17: std::source_location is C++20, so current() reads the compiler
// builtins __builtin_FILE / __builtin_LINE (GCC >= 7, Clang >= 9), which,
// like std::source_location::current, give the location of the outermost
// call when they appear in a default argument.
#ifndef SPMD_SOURCE_LOCATION_H
#define SPMD_SOURCE_LOCATION_H

#include <string>

namespace spmd {

/// A source position: the file as the compiler names it and the line.
class SourceLocation {
 public:
  /// The location of the expression that calls the function whose default
  /// argument this is (or of this call when written explicitly).
  static constexpr SourceLocation current(
      const char* file = __builtin_FILE(),
      int line = __builtin_LINE()) noexcept {
    return SourceLocation(file, line);
  }
  /// An explicit position (for wrappers that forward their caller's).
  constexpr SourceLocation(const char* file, int line) noexcept
      : file_(file), line_(line) {}
  constexpr const char* file_name() const noexcept { return file_; }
  constexpr int line() const noexcept { return line_; }
  /// "file:line".
  std::string to_string() const {
    return std::string(file_) + ":" + std::to_string(line_);
  }

 private:
  const char* file_;
  int line_;
};

namespace detail {

/// Marks an spmd:: call in progress on this thread (RAII): errors raised
/// while it is alive get its "Called from" line, and it becomes the thread's
/// last spmd call site. `name` must be a string literal ("all_reduce").
class CallSiteScope {
 public:
  CallSiteScope(const char* name, SourceLocation loc) noexcept;
  ~CallSiteScope();
  CallSiteScope(const CallSiteScope&) = delete;
  CallSiteScope& operator=(const CallSiteScope&) = delete;

  const char* name;
  SourceLocation loc;
  const CallSiteScope* outer;
};

/// `message` with the call-site lines of this thread appended: one "Called
/// from" line per spmd:: call in progress (innermost first), else, while a
/// TypecheckGuard is alive, the "After spmd::<name> at" line of the last
/// call; plus a backtrace under SPMD_CHECKER_TRACE=1. Lines the message
/// already holds are not repeated. Used by spmd::SpmdError's constructor.
std::string with_call_site(const std::string& message);

/// `message` without the lines with_call_site would append now (to wrap an
/// inner error's text in a new error without repeating them).
std::string without_call_site(const std::string& message);

/// "after spmd::all_reduce at f.cpp:12", or "" when this thread made no spmd
/// call since its outermost TypecheckGuard began (for trace lines).
std::string last_call_site();

/// Forgets the last call site (the outermost TypecheckGuard calls it).
void reset_last_call_site();

}  // namespace detail
}  // namespace spmd

#endif  // SPMD_SOURCE_LOCATION_H
