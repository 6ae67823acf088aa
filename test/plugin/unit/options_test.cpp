// GoogleTest for the analysis library's options: plugin-argument parsing and
// the stable diagnostic-kind names (which tools, docs and SARIF rely on).
#include "spmd/plugin/Options.h"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <string>
#include <vector>

namespace spmd::plugin {
namespace {

TEST(PluginOptions, DefaultsAreErrorsExceptStrictModeWarnings) {
  Options O;
  EXPECT_FALSE(O.Strict);
  EXPECT_FALSE(O.Global);
  for (unsigned I = 0; I < NumDiagKinds; ++I) {
    auto K = static_cast<DiagKind>(I);
    bool StrictOnly = K == DiagKind::UnknownType || K == DiagKind::OpaqueCall;
    EXPECT_EQ(O.severity(K), StrictOnly ? Severity::Warning : Severity::Error)
        << diagKindName(K).str();
  }
}

TEST(PluginOptions, GlobalMode) {
  Options O;
  std::string Err;
  ASSERT_TRUE(O.parseArgs({"global"}, Err)) << Err;
  EXPECT_TRUE(O.Global);
  EXPECT_FALSE(O.Strict);
}

TEST(PluginOptions, KindNamesRoundTrip) {
  for (unsigned I = 0; I < NumDiagKinds; ++I) {
    auto K = static_cast<DiagKind>(I);
    std::optional<DiagKind> Back = parseDiagKind(diagKindName(K));
    ASSERT_TRUE(Back.has_value());
    EXPECT_EQ(*Back, K);
  }
  EXPECT_FALSE(parseDiagKind("no-such-kind").has_value());
  EXPECT_EQ(diagKindName(DiagKind::CollectiveInput), "collective-input");
  EXPECT_EQ(diagKindName(DiagKind::PathConflict), "path-conflict");
}

// Every row of DiagKinds.def, read here through the same X-macro: a kind
// added there is checked here without editing this test.
struct DefRow {
  DiagKind Kind;
  const char *Name;
  Severity Default;
  const char *Summary;
  const char *Description;
};
const DefRow DefRows[] = {
#define SPMD_DIAG_KIND(Enum, Name, Sev, Short, Full) \
  {DiagKind::Enum, Name, Severity::Sev, Short, Full},
#include "spmd/plugin/DiagKinds.def"
};
static_assert(std::size(DefRows) == NumDiagKinds);

TEST(DiagKinds, EveryRowOfTheDefFileIsWired) {
  Options Defaults;
  std::string List = diagKindList().str();
  for (unsigned I = 0; I < NumDiagKinds; ++I) {
    const DefRow &R = DefRows[I];
    SCOPED_TRACE(R.Name);
    EXPECT_EQ(static_cast<unsigned>(R.Kind), I);
    EXPECT_EQ(diagKindName(R.Kind), R.Name);
    EXPECT_EQ(parseDiagKind(R.Name), R.Kind);
    EXPECT_EQ(defaultSeverity(R.Kind), R.Default);
    EXPECT_EQ(Defaults.severity(R.Kind), R.Default);
    EXPECT_EQ(diagKindSummary(R.Kind), R.Summary);
    EXPECT_EQ(diagKindDescription(R.Kind), R.Description);
    EXPECT_NE(List.find(R.Name), std::string::npos);
    // Names are lower-case words joined by '-' (they are CLI arguments).
    for (char C : llvm::StringRef(R.Name))
      EXPECT_TRUE((C >= 'a' && C <= 'z') || C == '-') << R.Name;
    for (unsigned J = 0; J < I; ++J) EXPECT_STRNE(DefRows[J].Name, R.Name);
  }
}

TEST(PluginOptions, ArgumentsApplyInOrder) {
  Options O;
  std::string Err;
  ASSERT_TRUE(O.parseArgs({"strict", "warn=all", "error=op-type",
                           "ignore=return", "stats", "system-headers"},
                          Err))
      << Err;
  EXPECT_TRUE(O.Strict);
  EXPECT_TRUE(O.Stats);
  EXPECT_TRUE(O.AnalyzeSystemHeaders);
  EXPECT_EQ(O.severity(DiagKind::OpType), Severity::Error);
  EXPECT_EQ(O.severity(DiagKind::ReturnType), Severity::Ignored);
  EXPECT_EQ(O.severity(DiagKind::CollectiveInput), Severity::Warning);
}

TEST(PluginOptions, StrictIncludesLostShardDimsUnlessOptedOut) {
  std::string Err;
  Options Plain;
  ASSERT_TRUE(Plain.parseArgs({"global"}, Err)) << Err;
  EXPECT_FALSE(Plain.Strict);
  EXPECT_FALSE(Plain.StrictShards);
  Options S;
  ASSERT_TRUE(S.parseArgs({"strict"}, Err)) << Err;
  EXPECT_TRUE(S.Strict);
  EXPECT_TRUE(S.StrictShards);
  // strict-shards is still accepted: an alias of strict.
  Options Alias;
  ASSERT_TRUE(Alias.parseArgs({"strict-shards"}, Err)) << Err;
  EXPECT_TRUE(Alias.Strict);
  EXPECT_TRUE(Alias.StrictShards);
  // The opt-out wins in either order, also when the arguments come one call
  // at a time (spmd-check's tools parse a compile command's that way).
  for (auto Args : {std::vector<std::string>{"strict", "no-strict-shards"},
                    std::vector<std::string>{"no-strict-shards", "strict"}}) {
    Options O;
    ASSERT_TRUE(O.parseArgs(Args, Err)) << Err;
    EXPECT_TRUE(O.Strict);
    EXPECT_FALSE(O.StrictShards);
    Options One;
    for (const std::string &A : Args)
      ASSERT_TRUE(One.parseArgs({A}, Err)) << Err;
    EXPECT_FALSE(One.StrictShards);
  }
  // Alone it does not turn strict mode on.
  Options Off;
  ASSERT_TRUE(Off.parseArgs({"no-strict-shards"}, Err)) << Err;
  EXPECT_FALSE(Off.Strict);
  EXPECT_FALSE(Off.StrictShards);
}

TEST(PluginOptions, BadArgumentsNameTheProblem) {
  Options O;
  std::string Err;
  EXPECT_FALSE(O.parseArgs({"sprict"}, Err));
  EXPECT_NE(Err.find("unknown spmd-check argument 'sprict'"),
            std::string::npos);
  EXPECT_NE(Err.find("strict"), std::string::npos);
  EXPECT_FALSE(O.parseArgs({"warn=op-typo"}, Err));
  EXPECT_NE(Err.find("'op-typo'"), std::string::npos);
  EXPECT_NE(Err.find("op-type"), std::string::npos);
  EXPECT_FALSE(O.parseArgs({"warn="}, Err));
}

TEST(PluginOptions, DriverSpellingsAreCollectedInOrder) {
  std::map<std::string, std::vector<std::string>> Map = {
      {"spmd", {"check-strict", "check-warn=op-type"}},
      {"spmd-check", {"stats"}},
      {"other-plugin", {"whatever"}}};
  std::vector<std::string> Out;
  std::string Err;
  ASSERT_TRUE(collectPluginArgs(Map, Out, Err)) << Err;
  EXPECT_EQ(Out, (std::vector<std::string>{"strict", "warn=op-type", "stats"}));
}

TEST(PluginOptions, MisspelledPluginArgumentIsAnError) {
  std::vector<std::string> Out;
  std::string Err;
  // -fplugin-arg-spmd-strict: plugin "spmd", argument "strict".
  EXPECT_FALSE(collectPluginArgs({{"spmd", {"strict"}}}, Out, Err));
  EXPECT_NE(Err.find("-fplugin-arg-spmd-strict"), std::string::npos) << Err;
  EXPECT_NE(Err.find("did you mean -fplugin-arg-spmd-check-strict"),
            std::string::npos)
      << Err;
  EXPECT_NE(Err.find("'system-headers'"), std::string::npos) << Err;
  // -fplugin-arg-spmdcheck-strict: plugin "spmdcheck".
  Err.clear();
  EXPECT_FALSE(collectPluginArgs({{"spmdcheck", {"strict"}}}, Out, Err));
  EXPECT_NE(Err.find("unknown plugin name 'spmdcheck'"), std::string::npos)
      << Err;
}

TEST(PluginOptions, MisspelledCheckPrefixIsReplacedInTheSuggestion) {
  std::vector<std::string> Out;
  std::string Err;
  // -fplugin-arg-spmd-chek-strict: plugin "spmd", argument "chek-strict".
  EXPECT_FALSE(collectPluginArgs({{"spmd", {"chek-strict"}}}, Out, Err));
  EXPECT_NE(Err.find("did you mean -fplugin-arg-spmd-check-strict?"),
            std::string::npos)
      << Err;
  // An argument that only starts like one keeps its whole name.
  Err.clear();
  EXPECT_FALSE(collectPluginArgs({{"spmd", {"strict-shards"}}}, Out, Err));
  EXPECT_NE(Err.find("did you mean -fplugin-arg-spmd-check-strict-shards?"),
            std::string::npos)
      << Err;
}

}  // namespace
}  // namespace spmd::plugin
