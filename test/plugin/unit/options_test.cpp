// GoogleTest for the analysis library's options: plugin-argument parsing and
// the stable diagnostic-kind names (which tools, docs and SARIF rely on).
#include "spmd/plugin/Options.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace spmd::plugin {
namespace {

TEST(PluginOptions, DefaultsAreErrorsExceptUnknownType) {
  Options O;
  EXPECT_FALSE(O.Strict);
  for (unsigned I = 0; I < NumDiagKinds; ++I) {
    auto K = static_cast<DiagKind>(I);
    EXPECT_EQ(O.severity(K),
              K == DiagKind::UnknownType ? Severity::Warning : Severity::Error)
        << diagKindName(K).str();
  }
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

}  // namespace
}  // namespace spmd::plugin
