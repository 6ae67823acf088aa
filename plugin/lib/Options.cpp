//===- Options.cpp - spmd-check options -----------------------------------===//
//
// Parsing of plugin arguments / tool flags into Options, and the tables of
// diagnostic kinds generated from DiagKinds.def.
//
//===----------------------------------------------------------------------===//

#include "spmd/plugin/Options.h"

#include "llvm/ADT/StringExtras.h"

namespace spmd::plugin {

namespace {

struct KindInfo {
  const char *Name;
  Severity Default;
  const char *Summary;
  const char *Description;
};

constexpr KindInfo Kinds[NumDiagKinds] = {
#define SPMD_DIAG_KIND(Enum, Name, Sev, Short, Full)                           \
  {Name, Severity::Sev, Short, Full},
#include "spmd/plugin/DiagKinds.def"
};

const KindInfo &info(DiagKind K) { return Kinds[static_cast<unsigned>(K)]; }

} // namespace

llvm::StringRef diagKindName(DiagKind K) { return info(K).Name; }
Severity defaultSeverity(DiagKind K) { return info(K).Default; }
llvm::StringRef diagKindSummary(DiagKind K) { return info(K).Summary; }
llvm::StringRef diagKindDescription(DiagKind K) { return info(K).Description; }

llvm::StringRef diagKindList() {
  static const std::string List = [] {
    std::string S;
    for (unsigned I = 0; I < NumDiagKinds; ++I)
      S += std::string(I ? ", " : "") + Kinds[I].Name;
    return S;
  }();
  return List;
}

std::optional<DiagKind> parseDiagKind(llvm::StringRef Name) {
  for (unsigned I = 0; I < NumDiagKinds; ++I)
    if (Name == Kinds[I].Name)
      return static_cast<DiagKind>(I);
  return std::nullopt;
}

Options::Options() {
  for (unsigned I = 0; I < NumDiagKinds; ++I)
    Severities[I] = Kinds[I].Default;
}

/// What parseArgs accepts, for error messages.
static std::string acceptedArguments() {
  return "expected 'strict', 'strict-shards', 'no-strict-shards', 'global', "
         "'local-axes=<axis,...>', "
         "'system-headers', 'stats', 'warn=<kind>', "
         "'error=<kind>' or 'ignore=<kind>' (kind: all, " +
         diagKindList().str() + ")";
}

bool collectPluginArgs(
    const std::map<std::string, std::vector<std::string>> &PluginArgs,
    std::vector<std::string> &Out, std::string &Err) {
  for (const auto &[Name, Args] : PluginArgs) {
    llvm::StringRef N(Name);
    if (N == "spmd-check") {
      Out.insert(Out.end(), Args.begin(), Args.end());
      continue;
    }
    if (N != "spmd") {
      if (!N.starts_with("spmd"))
        continue; // another plugin's
      Err = "unknown plugin name '" + Name + "' in -fplugin-arg-" + Name + "-" +
            (Args.empty() ? std::string() : Args.front()) +
            "; spmd-check's arguments are spelled "
            "-fplugin-arg-spmd-check-<arg>, " +
            acceptedArguments();
      return false;
    }
    for (llvm::StringRef A : Args) {
      if (A.consume_front("check-")) {
        Out.push_back(A.str());
        continue;
      }
      // `-fplugin-arg-spmd-chek-strict`: a misspelt `check-` is replaced,
      // not kept in front of the argument.
      auto [Head, Rest] = A.split('-');
      llvm::StringRef Meant =
          !Rest.empty() && Head.edit_distance("check") <= 2 ? Rest : A;
      Err = "unknown plugin argument -fplugin-arg-spmd-" + A.str() +
            " (did you mean -fplugin-arg-spmd-check-" + Meant.str() +
            "?); spmd-check's arguments are spelled "
            "-fplugin-arg-spmd-check-<arg>, " +
            acceptedArguments();
      return false;
    }
  }
  return true;
}

bool Options::parseArgs(llvm::ArrayRef<std::string> Args, std::string &Err) {
  bool Ok = parseEach(Args, Err);
  // strict includes the lost shard dims unless opted out, whatever the order.
  StrictShards = Strict && !NoStrictShards;
  return Ok;
}

bool Options::parseEach(llvm::ArrayRef<std::string> Args, std::string &Err) {
  for (llvm::StringRef Arg : Args) {
    if (Arg == "strict" || Arg == "strict-shards") { // the latter: an alias
      Strict = true;
      continue;
    }
    if (Arg == "no-strict-shards") {
      NoStrictShards = true;
      continue;
    }
    if (Arg == "global") {
      Global = true;
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
    if (Name == "local-axes") {
      llvm::SmallVector<llvm::StringRef, 4> Axes;
      Value.split(Axes, ',', -1, /*KeepEmpty=*/false);
      if (Axes.empty()) {
        Err = "'local-axes' needs a comma-separated list of mesh axes, e.g. "
              "local-axes=dp,ep";
        return false;
      }
      for (llvm::StringRef A : Axes)
        LocalAxes.push_back(A.trim().str());
      continue;
    }
    std::optional<Severity> Sev;
    if (Name == "warn")
      Sev = Severity::Warning;
    else if (Name == "error")
      Sev = Severity::Error;
    else if (Name == "ignore")
      Sev = Severity::Ignored;
    if (!Sev || Value.empty()) {
      Err = "unknown spmd-check argument '" + Arg.str() + "'; " +
            acceptedArguments();
      return false;
    }
    if (Value == "all") {
      Severities.fill(*Sev);
      continue;
    }
    std::optional<DiagKind> K = parseDiagKind(Value);
    if (!K) {
      Err = "unknown spmd-check diagnostic kind '" + Value.str() + "' in '" +
            Arg.str() + "'; expected all, " + diagKindList().str();
      return false;
    }
    Severities[static_cast<unsigned>(*K)] = *Sev;
  }
  return true;
}

} // namespace spmd::plugin
