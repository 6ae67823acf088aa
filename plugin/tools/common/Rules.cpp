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

using plugin::DiagKind;

/// Short and full descriptions of each kind (spec sections in brackets).
std::pair<const char *, const char *> describe(DiagKind K) {
  switch (K) {
  case DiagKind::CollectiveArgument:
    return {"Illegal src/dst or options of a collective",
            "A collective's src/dst pair is not one the collective accepts, or "
            "its options contradict the types (spec 7)."};
  case DiagKind::CollectiveInput:
    return {"Collective input type differs from its declared src",
            "The inferred type of a collective's input on its axis differs "
            "from the src type written at the call (spec 7.2)."};
  case DiagKind::OpType:
    return {"Tensor operation mixes incompatible SPMD types",
            "An ordinary tensor operation combines operand types that the "
            "propagation rules reject, e.g. P with V (spec 6.4)."};
  case DiagKind::InPlace:
    return {"In-place operation changes a tensor's SPMD type",
            "An in-place or out= operation would give its destination a type "
            "other than the one it has (spec 6.11)."};
  case DiagKind::MeshCompleteness:
    return {"Operand lacks an axis of the function's mesh",
            "Inside a function with [[spmd::mesh(...)]], an operand's type "
            "does not mention every axis of the mesh (spec 6.3)."};
  case DiagKind::Assignment:
    return {"Value differs from the declared SPMD type",
            "A value assigned to or initializing an annotated variable or "
            "field has another SPMD type (spec 8)."};
  case DiagKind::CallArgument:
    return {"Argument differs from the parameter's SPMD type",
            "An argument passed to an annotated parameter has another SPMD "
            "type (spec 8)."};
  case DiagKind::ReturnType:
    return {"Returned value differs from the declared result type",
            "A function annotated with a result type returns a value of "
            "another SPMD type (spec 8)."};
  case DiagKind::AssertType:
    return {"spmd::assert_type contradicts the inferred type",
            "The type asserted with spmd::assert_type differs from the type "
            "inferred at that point (spec 8.1)."};
  case DiagKind::PathConflict:
    return {"Control-flow paths disagree on a tensor's type",
            "Two paths reaching a merge point give a tensor different SPMD "
            "types."};
  case DiagKind::UnknownType:
    return {"Tensor of unknown SPMD type used (strict mode)",
            "In strict mode, the first use of a tensor whose SPMD type is "
            "unknown in a checked function is reported."};
  }
  return {"SPMD type error", "An SPMD type error."};
}

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
  plugin::Options Defaults;
  for (unsigned I = 0; I < plugin::NumDiagKinds; ++I) {
    auto K = static_cast<DiagKind>(I);
    llvm::StringRef Kind = plugin::diagKindName(K);
    auto [Short, Full] = describe(K);
    Rules.push_back({("spmd:" + Kind).str(), camelCase(Kind), Short, Full,
                     Defaults.severity(K) == plugin::Severity::Error});
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
