//===- Output.cpp - JSON and SARIF reports of spmd-check ------------------===//

#include "Output.h"

#include "../common/Rules.h"
#include "../common/Uri.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/xxhash.h"

using llvm::json::Array;
using llvm::json::Object;
using llvm::json::Value;

namespace spmd::tools {

namespace {

Value jsonPosition(const Position &P) {
  return Object{{"line", P.Line}, {"column", P.Column}};
}

Value jsonRange(const Range &R) {
  return Object{{"start", jsonPosition(R.Begin)}, {"end", jsonPosition(R.End)}};
}

Value jsonDiag(const Diag &D) {
  Object O{{"severity", levelName(D.Severity)},
           {"message", D.Message},
           {"file", D.File},
           {"line", D.Loc.Line},
           {"column", D.Loc.Column}};
  if (!D.Rule.empty())
    O["rule"] = D.Rule;
  Array Ranges;
  for (const Range &R : D.Ranges)
    Ranges.push_back(jsonRange(R));
  O["ranges"] = std::move(Ranges);
  Array Fixes;
  for (const FixIt &F : D.FixIts)
    Fixes.push_back(Object{{"file", F.File},
                           {"range", jsonRange(F.Where)},
                           {"replacement", F.Replacement}});
  O["fixits"] = std::move(Fixes);
  if (D.Severity != Diag::Level::Note) {
    Array Notes;
    for (const Diag &N : D.Notes)
      Notes.push_back(jsonDiag(N));
    O["notes"] = std::move(Notes);
  }
  return O;
}

/// The artifactLocation of \p File: relative to the source root when inside.
Object artifactLocation(llvm::StringRef File, llvm::StringRef Root) {
  llvm::StringRef Rel = File;
  if (!Root.empty() && Rel.consume_front(Root) &&
      (Root.ends_with("/") || Rel.consume_front("/"))) {
    std::string Uri = fileUri(Rel);
    return Object{{"uri", Uri.substr(7)}, {"uriBaseId", "%SRCROOT%"}};
  }
  return Object{{"uri", fileUri(File)}};
}

/// A SARIF region; columns in UTF-16 code units (the run's columnKind).
Object sarifRegion(const Position &Begin, const Position *End) {
  Object R{{"startLine", Begin.Line}, {"startColumn", Begin.Utf16Column}};
  if (End && End->isValid()) {
    R["endLine"] = End->Line;
    R["endColumn"] = End->Utf16Column;
  }
  return R;
}

Object physicalLocation(const Diag &D, llvm::StringRef Root) {
  const Position *End = nullptr;
  Position Begin = D.Loc;
  for (const Range &R : D.Ranges)
    if (R.Begin.Line == D.Loc.Line && R.Begin.Column <= D.Loc.Column &&
        (R.End.Line > D.Loc.Line || R.End.Column > D.Loc.Column)) {
      Begin = R.Begin;
      End = &R.End;
      break;
    }
  return Object{{"artifactLocation", artifactLocation(D.File, Root)},
                {"region", sarifRegion(Begin, End)}};
}

llvm::StringRef sarifLevel(Diag::Level L) {
  switch (L) {
  case Diag::Level::Error:
  case Diag::Level::Fatal:
    return "error";
  case Diag::Level::Warning:
    return "warning";
  case Diag::Level::Note:
  case Diag::Level::Remark:
    return "note";
  }
  return "none";
}

Value sarifRule(const RuleInfo &R) {
  return Object{
      {"id", R.Id},
      {"name", R.Name},
      {"shortDescription", Object{{"text", R.ShortText}}},
      {"fullDescription", Object{{"text", R.FullText}}},
      {"help", Object{{"text", R.FullText + " See " + ruleHelpUri(R.Id)}}},
      {"helpUri", ruleHelpUri(R.Id)},
      {"defaultConfiguration",
       Object{{"level", R.ErrorByDefault ? "error" : "warning"}}},
      {"properties", Object{{"tags", Array{"spmd", "correctness"}}}}};
}

Value sarifResult(const Diag &D, llvm::StringRef Root) {
  Object R{{"ruleId", D.Rule},
           {"level", sarifLevel(D.Severity)},
           {"message", Object{{"text", D.Message}}}};
  int Index = ruleIndex(D.Rule);
  if (Index >= 0)
    R["ruleIndex"] = Index;
  Array Locations;
  if (!D.File.empty())
    Locations.push_back(
        Object{{"physicalLocation", physicalLocation(D, Root)}});
  R["locations"] = std::move(Locations);
  Array Related;
  for (const Diag &N : D.Notes) {
    if (N.File.empty())
      continue;
    Related.push_back(Object{{"id", static_cast<int64_t>(Related.size())},
                             {"physicalLocation", physicalLocation(N, Root)},
                             {"message", Object{{"text", N.Message}}}});
  }
  if (!Related.empty())
    R["relatedLocations"] = std::move(Related);
  // A fingerprint that survives unrelated edits above the diagnostic: the
  // rule, the file and the message (GitHub also hashes the line itself).
  std::string Key = D.Rule + "\n" + D.File + "\n" + D.Message;
  R["partialFingerprints"] =
      Object{{"spmdDiagnostic/v1", llvm::utohexstr(llvm::xxh3_64bits(Key))}};
  Array Fixes;
  for (const FixIt &F : D.FixIts) {
    Fixes.push_back(Object{
        {"description",
         Object{{"text", "Replace with '" + F.Replacement + "'"}}},
        {"artifactChanges",
         Array{Object{
             {"artifactLocation", artifactLocation(F.File, Root)},
             {"replacements",
              Array{Object{
                  {"deletedRegion", sarifRegion(F.Where.Begin, &F.Where.End)},
                  {"insertedContent", Object{{"text", F.Replacement}}}}}}}}}});
  }
  if (!Fixes.empty())
    R["fixes"] = std::move(Fixes);
  return R;
}

} // namespace

Value toJson(const std::vector<FileReport> &Reports) {
  Array Files, Diags;
  int64_t Errors = 0, Warnings = 0;
  for (const FileReport &F : Reports) {
    Object FO{{"file", F.File}, {"checked", F.Checked}};
    if (!F.Problem.empty())
      FO["problem"] = F.Problem;
    Files.push_back(std::move(FO));
    for (const Diag &D : F.Diags) {
      Errors += D.isError();
      Warnings += D.Severity == Diag::Level::Warning;
      Diags.push_back(jsonDiag(D));
    }
  }
  return Object{{"tool", "spmd-check"},      {"version", toolVersion()},
                {"files", std::move(Files)}, {"diagnostics", std::move(Diags)},
                {"errors", Errors},          {"warnings", Warnings}};
}

Value toSarif(const std::vector<FileReport> &Reports,
              llvm::StringRef SourceRoot) {
  Array Rules;
  for (const RuleInfo &R : allRules())
    Rules.push_back(sarifRule(R));
  Array Results;
  Array Notifications;
  for (const FileReport &F : Reports) {
    for (const Diag &D : F.Diags)
      Results.push_back(sarifResult(D, SourceRoot));
    if (!F.Checked)
      Notifications.push_back(Object{
          {"level", "error"},
          {"message", Object{{"text", F.Problem}}},
          {"locations",
           Array{Object{{"physicalLocation",
                         Object{{"artifactLocation",
                                 artifactLocation(F.File, SourceRoot)}}}}}}});
  }
  std::string RootUri = fileUri(SourceRoot);
  if (!llvm::StringRef(RootUri).ends_with("/"))
    RootUri += "/";
  Object Invocation{{"executionSuccessful", true}};
  if (!Notifications.empty())
    Invocation["toolExecutionNotifications"] = std::move(Notifications);
  Object Run{
      {"tool",
       Object{{"driver", Object{{"name", "spmd-check"},
                                {"version", toolVersion()},
                                {"semanticVersion", toolVersion()},
                                {"informationUri", ruleHelpUri("spmd:")},
                                {"rules", std::move(Rules)}}}}},
      {"originalUriBaseIds", Object{{"%SRCROOT%", Object{{"uri", RootUri}}}}},
      {"columnKind", "utf16CodeUnits"},
      {"invocations", Array{std::move(Invocation)}},
      {"results", std::move(Results)}};
  return Object{{"$schema", "https://json.schemastore.org/sarif-2.1.0.json"},
                {"version", "2.1.0"},
                {"runs", Array{std::move(Run)}}};
}

} // namespace spmd::tools
