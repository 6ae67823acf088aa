//===- Options.cpp - spmd-check options -----------------------------------===//
//
// Parsing of plugin arguments / tool flags into Options.
//
//===----------------------------------------------------------------------===//

#include "spmd/plugin/Options.h"

#include "llvm/ADT/StringExtras.h"

namespace spmd::plugin {

static constexpr const char *KindNames[NumDiagKinds] = {"collective-argument",
                                                        "collective-input",
                                                        "op-type",
                                                        "inplace",
                                                        "mesh",
                                                        "assignment",
                                                        "call-argument",
                                                        "return",
                                                        "assert-type",
                                                        "path-conflict",
                                                        "unknown-type"};

llvm::StringRef diagKindName(DiagKind K) {
  return KindNames[static_cast<unsigned>(K)];
}

std::optional<DiagKind> parseDiagKind(llvm::StringRef Name) {
  for (unsigned I = 0; I < NumDiagKinds; ++I)
    if (Name == KindNames[I])
      return static_cast<DiagKind>(I);
  return std::nullopt;
}

Options::Options() {
  Severities.fill(Severity::Error);
  Severities[static_cast<unsigned>(DiagKind::UnknownType)] = Severity::Warning;
}

bool Options::parseArgs(llvm::ArrayRef<std::string> Args, std::string &Err) {
  auto Kinds = [] {
    std::string S;
    for (unsigned I = 0; I < NumDiagKinds; ++I)
      S += std::string(I ? ", " : "") + KindNames[I];
    return S;
  };
  for (llvm::StringRef Arg : Args) {
    if (Arg == "strict") {
      Strict = true;
      continue;
    }
    if (Arg == "system-headers") {
      AnalyzeSystemHeaders = true;
      continue;
    }
    if (Arg == "stats") {
      Stats = true;
      continue;
    }
    auto [Name, Value] = Arg.split('=');
    std::optional<Severity> Sev;
    if (Name == "warn")
      Sev = Severity::Warning;
    else if (Name == "error")
      Sev = Severity::Error;
    else if (Name == "ignore")
      Sev = Severity::Ignored;
    if (!Sev || Value.empty()) {
      Err = "unknown spmd-check argument '" + Arg.str() +
            "'; expected 'strict', 'system-headers', 'stats', 'warn=<kind>', "
            "'error=<kind>' or 'ignore=<kind>' (kind: all, " +
            Kinds() + ")";
      return false;
    }
    if (Value == "all") {
      Severities.fill(*Sev);
      continue;
    }
    std::optional<DiagKind> K = parseDiagKind(Value);
    if (!K) {
      Err = "unknown spmd-check diagnostic kind '" + Value.str() + "' in '" +
            Arg.str() + "'; expected all, " + Kinds();
      return false;
    }
    Severities[static_cast<unsigned>(*K)] = *Sev;
  }
  return true;
}

} // namespace spmd::plugin
