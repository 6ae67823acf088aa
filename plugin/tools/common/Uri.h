//===- Uri.h - file:// URIs of paths ----------------------------*- C++ -*-===//
//
// The file URIs both tools write: SARIF artifact locations (spmd-check) and
// LSP document URIs (spmd-clangd).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TOOLS_URI_H
#define SPMD_TOOLS_URI_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace spmd::tools {

/// The file:// URI of an absolute path, percent-encoding every byte outside
/// RFC 3986's unreserved characters and '/'.
std::string fileUri(llvm::StringRef Path);

/// The path of a file:// URI (percent-decoded), or std::nullopt for another
/// scheme.
std::optional<std::string> uriToPath(llvm::StringRef Uri);

} // namespace spmd::tools

#endif // SPMD_TOOLS_URI_H
