//===- Output.h - JSON and SARIF reports of spmd-check ----------*- C++ -*-===//

#ifndef SPMD_TOOLS_SPMD_CHECK_OUTPUT_H
#define SPMD_TOOLS_SPMD_CHECK_OUTPUT_H

#include "../common/Diagnostics.h"

#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace spmd::tools {

/// The outcome of checking one source file.
struct FileReport {
  std::string File;     ///< absolute path
  bool Checked = false; ///< the frontend ran (even if it found errors)
  std::string Problem;  ///< why it was not checked, when !Checked
  std::vector<Diag> Diags;
};

/// The JSON report: {"tool", "version", "files": [...], "diagnostics": [...],
/// "errors", "warnings"}; documented in docs/tools.md.
llvm::json::Value toJson(const std::vector<FileReport> &Reports);

/// A SARIF 2.1.0 log with one run, as GitHub code scanning accepts it:
/// rules with ids and descriptions, results with ruleId/ruleIndex/level/
/// message/locations, notes as relatedLocations, fix-its as fixes. File URIs
/// are relative to \p SourceRoot (uriBaseId %SRCROOT%) when inside it.
llvm::json::Value toSarif(const std::vector<FileReport> &Reports,
                          llvm::StringRef SourceRoot);

} // namespace spmd::tools

#endif // SPMD_TOOLS_SPMD_CHECK_OUTPUT_H
