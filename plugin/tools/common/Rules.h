//===- Rules.h - descriptions of the SPMD diagnostic kinds ------*- C++ -*-===//
//
// Rule metadata for SARIF (reportingDescriptor) and LSP (codeDescription):
// one rule per spmd::plugin::DiagKind plus the diagnostics that have no kind.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TOOLS_RULES_H
#define SPMD_TOOLS_RULES_H

#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace spmd::tools {

struct RuleInfo {
  std::string Id;        ///< "spmd:collective-input"
  std::string Name;      ///< "CollectiveInput" (SARIF's rule name)
  std::string ShortText; ///< one line
  std::string FullText;  ///< a few sentences
  bool ErrorByDefault = true;
};

/// Every rule the tools can report, in a fixed order.
const std::vector<RuleInfo> &allRules();

/// The index of \p Id in allRules(), or -1.
int ruleIndex(llvm::StringRef Id);

/// Documentation of rule \p Id: SPMD_DOCS_URL "/tools.md#" + kind.
std::string ruleHelpUri(llvm::StringRef Id);

/// The version of the spmd-check tools ("0.1.0").
llvm::StringRef toolVersion();

} // namespace spmd::tools

#endif // SPMD_TOOLS_RULES_H
