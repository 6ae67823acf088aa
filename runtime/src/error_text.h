// error_text.h - the text of a c10d / Gloo exception for the runtime's own
// messages: c10::Error's message without the C++ backtrace that what()
// appends (dozens of "frame #N" lines that would bury the one-line cause).
#ifndef SPMD_RUNTIME_ERROR_TEXT_H
#define SPMD_RUNTIME_ERROR_TEXT_H

#include <c10/util/Exception.h>

#include <exception>
#include <string>

namespace spmd::detail {

/// e.what(), without the backtrace when e is a c10::Error; on one line.
inline std::string error_text(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  std::string text =
      c10_error ? c10_error->what_without_backtrace() : std::string(e.what());
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  for (char& c : text)
    if (c == '\n') c = ' ';
  return text;
}

}  // namespace spmd::detail

#endif  // SPMD_RUNTIME_ERROR_TEXT_H
