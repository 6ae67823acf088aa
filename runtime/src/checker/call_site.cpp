// call_site.cpp - the user's call site in error messages and trace lines
// (spmd/source_location.h): the spmd:: calls in progress on this thread, the
// last one made under the checker, and the optional backtrace.
#include <c10/util/Backtrace.h>
#include <spmd/source_location.h>

#include <cstdlib>
#include <string>

#include "internal.h"

namespace spmd::detail {
namespace {

thread_local const CallSiteScope* tls_innermost = nullptr;
// The last call this thread made; nullptr name = none since the outermost
// TypecheckGuard began.
thread_local const char* tls_last_name = nullptr;
thread_local SourceLocation tls_last_loc{"", 0};

// Read on every error (errors are rare), so a test or a debugger session can
// turn it on at any time.
bool backtrace_wanted() {
  const char* v = std::getenv("SPMD_CHECKER_TRACE");
  return v != nullptr && *v != '\0' && std::string(v) != "0";
}

std::string called_from(const CallSiteScope& s) {
  return "Called from " + s.loc.to_string() + " (spmd::" + s.name + ")";
}

std::string after_line() {
  return "After spmd::" + std::string(tls_last_name) + " at " +
         tls_last_loc.to_string() + " (the last spmd call on this thread)";
}

// The lines with_call_site appends now, in order.
std::vector<std::string> lines_now() {
  std::vector<std::string> lines;
  for (const CallSiteScope* s = tls_innermost; s != nullptr; s = s->outer)
    lines.push_back(called_from(*s));
  if (lines.empty() && tls_last_name != nullptr &&
      spmd::checker::internal::tls_state != nullptr)
    lines.push_back(after_line());
  return lines;
}

bool holds_line(const std::string& message, const std::string& line) {
  std::size_t at = message.find(line);
  while (at != std::string::npos) {
    const bool starts = at == 0 || message[at - 1] == '\n';
    const std::size_t end = at + line.size();
    if (starts && (end == message.size() || message[end] == '\n')) return true;
    at = message.find(line, at + 1);
  }
  return false;
}

}  // namespace

CallSiteScope::CallSiteScope(const char* n, SourceLocation l) noexcept
    : name(n), loc(l), outer(tls_innermost) {
  tls_innermost = this;
  tls_last_name = n;
  tls_last_loc = l;
}

CallSiteScope::~CallSiteScope() { tls_innermost = outer; }

std::string with_call_site(const std::string& message) {
  std::string out = message;
  // A message already carrying a call site (an inner error re-wrapped
  // outside any call) gets no "After" line.
  const bool has_site = out.find("\nCalled from ") != std::string::npos;
  for (const std::string& line : lines_now()) {
    if (holds_line(out, line)) continue;
    if (has_site && line.rfind("After ", 0) == 0) continue;
    out += "\n" + line;
  }
  if (backtrace_wanted() && out.find("\nBacktrace:\n") == std::string::npos)
    out += "\nBacktrace:\n" +
           c10::get_lazy_backtrace(/*frames_to_skip=*/2,
                                   /*maximum_number_of_frames=*/32)
               ->get();
  return out;
}

std::string without_call_site(const std::string& message) {
  std::string out = message;
  std::size_t bt = out.find("\nBacktrace:\n");
  if (bt != std::string::npos) out.erase(bt);
  for (const std::string& line : lines_now()) {
    const std::string tail = "\n" + line;
    std::size_t at = out.find(tail);
    if (at != std::string::npos) out.erase(at, tail.size());
  }
  return out;
}

std::string last_call_site() {
  if (tls_last_name == nullptr) return "";
  return "after spmd::" + std::string(tls_last_name) + " at " +
         tls_last_loc.to_string();
}

void reset_last_call_site() { tls_last_name = nullptr; }

}  // namespace spmd::detail
