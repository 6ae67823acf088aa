//===- Rules.cpp - descriptions of the SPMD diagnostic kinds --------------===//

#include "Rules.h"

#include "spmd/plugin/Options.h"

#include "llvm/ADT/StringExtras.h"

#ifndef SPMD_DOCS_URL
#define SPMD_DOCS_URL "https://github.com/spmd-check/spmd-check/blob/main/docs"
#endif
#ifndef SPMD_TOOLS_VERSION
#define SPMD_TOOLS_VERSION "0.0.0"
#endif

namespace spmd::tools {

namespace {

std::string camelCase(llvm::StringRef Kind) {
  std::string Name;
  bool Upper = true;
  for (char C : Kind) {
    if (C == '-') {
      Upper = true;
      continue;
    }
    Name += Upper ? llvm::toUpper(C) : C;
    Upper = false;
  }
  return Name;
}

std::vector<RuleInfo> makeRules() {
  std::vector<RuleInfo> Rules;
  for (unsigned I = 0; I < plugin::NumDiagKinds; ++I) {
    auto K = static_cast<plugin::DiagKind>(I);
    llvm::StringRef Kind = plugin::diagKindName(K);
    // Descriptions and severities come from DiagKinds.def.
    Rules.push_back({("spmd:" + Kind).str(), camelCase(Kind),
                     plugin::diagKindSummary(K).str(),
                     plugin::diagKindDescription(K).str(),
                     plugin::defaultSeverity(K) == plugin::Severity::Error});
  }
  Rules.push_back({"spmd:annotation", "Annotation", "Malformed SPMD annotation",
                   "An [[spmd::...]] attribute is ill-formed or placed on a "
                   "declaration it does not apply to.",
                   true});
  Rules.push_back({"clang-diagnostic-error", "CompilerError",
                   "The file does not compile",
                   "Clang reported an error; the SPMD analysis needs a file "
                   "that compiles.",
                   true});
  return Rules;
}

} // namespace

const std::vector<RuleInfo> &allRules() {
  static const std::vector<RuleInfo> Rules = makeRules();
  return Rules;
}

int ruleIndex(llvm::StringRef Id) {
  const std::vector<RuleInfo> &Rules = allRules();
  for (size_t I = 0; I < Rules.size(); ++I)
    if (Rules[I].Id == Id)
      return static_cast<int>(I);
  return -1;
}

std::string ruleHelpUri(llvm::StringRef Id) {
  llvm::StringRef Anchor = Id;
  Anchor.consume_front("spmd:");
  std::string Uri = SPMD_DOCS_URL "/tools.md";
  if (!Anchor.empty())
    Uri += ("#" + Anchor).str();
  return Uri;
}

llvm::StringRef toolVersion() { return SPMD_TOOLS_VERSION; }

} // namespace spmd::tools
