// GoogleTest for the analysis without its words: real C++ (against the mini
// libtorch of test/plugin/Inputs) is parsed with the plugin's attributes, the
// analysis runs with a handler that records the Problems, and the tests check
// their data -- kind, axis, types, origins, suggested collective -- never
// message text (the -verify tests cover the text).
#include "Transfer.h"

#include <gtest/gtest.h>
#include <spmd/core/collective_options.h>

#include "Dataflow.h"
#include "Problems.h"
#include "clang/Tooling/Tooling.h"
#include "spmd/plugin/Annotations.h"

namespace spmd::plugin {
namespace {

struct Recorder : ProblemHandler {
  std::vector<Problem> Problems;
  bool isEnabled(DiagKind) const override { return true; }
  void handle(Problem P) override { Problems.push_back(std::move(P)); }
};

/// Parses \p Body after the tests' prelude, analyses it and returns what was
/// found, in order; \p Names receives the axis names.
struct Analysed {
  std::unique_ptr<clang::ASTUnit> AST;
  Recorder R;
  std::unique_ptr<TUContext> TU;
  Options Opts;

  explicit Analysed(const std::string &Body, bool Strict = false) {
    Opts.Strict = Strict;
    std::string Code = "#include \"Inputs/prelude.h\"\n" + Body;
    AST = clang::tooling::buildASTFromCodeWithArgs(
        Code,
        {"-std=c++17", "-resource-dir", SPMD_TEST_RESOURCE_DIR,
         "-I" SPMD_TEST_PLUGIN_DIR,
         "-I" SPMD_TEST_PLUGIN_DIR "/Inputs/mini-torch",
         "-I" SPMD_TEST_SOURCE_DIR "/annotations/include",
         "-I" SPMD_TEST_SOURCE_DIR "/runtime/include"},
        "input.cpp");
    if (!AST) return;
    clang::ASTContext &Ctx = AST->getASTContext();
    TU = std::make_unique<TUContext>(Ctx, AnnotationTable::get(Ctx), Opts);
    analyzeTranslationUnit(*TU, R);
  }
  ~Analysed() {
    if (AST) AnnotationTable::release(AST->getASTContext());
  }
  std::string axis(const Problem &P) const {
    return P.Axis ? TU->Axes.name(*P.Axis).str() : "";
  }
  unsigned line(clang::SourceLocation L) const {
    return AST->getSourceManager().getPresumedLineNumber(L);
  }
};

TEST(Transfer, CollectiveInputAsData) {
  Analysed T(R"(
Tensor f(SPMD_TYPE(tp = R) const Tensor& x) {
  return spmd::all_reduce(x, tp, P, R);
})");
  ASSERT_TRUE(T.AST);
  ASSERT_EQ(T.R.Problems.size(), 1u);
  const Problem &P = T.R.Problems[0];
  EXPECT_EQ(P.Kind, DiagKind::CollectiveInput);
  // A reduce of an R value: reduced already (not from a reduce here).
  EXPECT_EQ(P.code(), ProblemCode::AlreadyReduced);
  EXPECT_FALSE(P.redundant().ReducedBefore);
  EXPECT_EQ(P.redundant().Dst, types::R);
  EXPECT_EQ(P.Op, core::Collective::AllReduce);
  EXPECT_EQ(T.axis(P), "tp");
  EXPECT_EQ(P.Expected, types::P);
  EXPECT_EQ(P.Actual, types::R);
  ASSERT_EQ(P.Origins.size(), 1u);
  EXPECT_EQ(P.Origins[0].From.Kind, OriginKind::Declared);
  // Line 1 is the prelude's #include.
  EXPECT_EQ(T.line(P.Origins[0].From.Loc), 3u);
  EXPECT_EQ(T.line(P.Loc), 4u);
  ASSERT_TRUE(P.Error);
  EXPECT_EQ(P.Error->axis, "tp");
  // all_reduce(src=R) is illegal, so no other src is offered.
  // No other src is offered: only CollectiveInput carries a src repair.
  EXPECT_NE(P.code(), ProblemCode::CollectiveInput);
}

TEST(Transfer, NoOpCollectiveOffersNoSrc) {
  Analysed T(R"(
SPMD_TYPE(tp = P)
Tensor f(SPMD_TYPE(tp = P) const Tensor& p) {
  return spmd::reinterpret(p, tp, V, P);
})");
  ASSERT_EQ(T.R.Problems.size(), 1u);
  const Problem &P = T.R.Problems[0];
  // The src that accepts p (P) would make the call a no-op: remove it.
  EXPECT_EQ(P.code(), ProblemCode::NoOpCollective);
  EXPECT_EQ(P.Actual, types::P);
  EXPECT_EQ(P.redundant().Dst, types::P);
  // No other src is offered: only CollectiveInput carries a src repair.
  EXPECT_NE(P.code(), ProblemCode::CollectiveInput);
}

TEST(Transfer, DoubleReduceNamesTheFirst) {
  Analysed T(R"(
Tensor f(SPMD_TYPE(tp = P) const Tensor& p) {
  auto y = spmd::all_reduce(p, tp, P, I);
  return spmd::all_reduce(y, tp, P, R);
})");
  ASSERT_EQ(T.R.Problems.size(), 1u);
  const Problem &P = T.R.Problems[0];
  EXPECT_EQ(P.code(), ProblemCode::AlreadyReduced);
  EXPECT_TRUE(P.redundant().ReducedBefore);
  EXPECT_EQ(P.Actual, types::I);
  EXPECT_EQ(P.redundant().Dst, types::R);
  ASSERT_EQ(P.Origins.size(), 1u);
  EXPECT_EQ(T.line(P.Origins[0].From.Loc), 4u);
}

TEST(Transfer, OpTypeSuggestsACollective) {
  Analysed T(R"(
Tensor f(SPMD_TYPE(tp = P) const Tensor& p) {
  return torch::gelu(p);
})");
  ASSERT_EQ(T.R.Problems.size(), 1u);
  const Problem &P = T.R.Problems[0];
  EXPECT_EQ(P.Kind, DiagKind::OpType);
  EXPECT_EQ(T.axis(P), "tp");
  ASSERT_EQ(P.Origins.size(), 1u);
  EXPECT_EQ(P.Origins[0].Type, types::P);
  ASSERT_TRUE(P.Fix);
  EXPECT_EQ(P.Fix->Call.op, core::Collective::AllReduce);
  EXPECT_EQ(P.Fix->Call.src, types::P);
  EXPECT_EQ(P.Fix->Call.dst, types::R);
  EXPECT_EQ(P.Fix->Result, types::R);
  EXPECT_EQ(P.opTypeInfo().MovedReduce,
            nullptr);  // the result is returned, not reduced
}

TEST(Transfer, OpTypeFixMovesTheEnclosingReduce) {
  Analysed T(R"(
Tensor f(SPMD_TYPE(tp = P) const Tensor& p) {
  return spmd::all_reduce(torch::gelu(p), tp, P, R);
})");
  ASSERT_EQ(T.R.Problems.size(), 1u);
  const Problem &P = T.R.Problems[0];
  ASSERT_TRUE(P.Fix);
  ASSERT_NE(P.opTypeInfo().MovedReduce, nullptr);
  EXPECT_EQ(T.line(P.opTypeInfo().MovedReduce->getBeginLoc()), 4u);
}

TEST(Transfer, MismatchNamesItsDestination) {
  Analysed T(R"(
SPMD_TYPE(tp = R) Tensor g(SPMD_TYPE(tp = V) const Tensor& x) {
  return x;
})");
  ASSERT_EQ(T.R.Problems.size(), 1u);
  const Problem &P = T.R.Problems[0];
  EXPECT_EQ(P.Kind, DiagKind::ReturnType);
  EXPECT_EQ(P.code(), ProblemCode::Mismatch);
  EXPECT_EQ(P.mismatchInfo().Dest.Kind, Destination::Return);
  EXPECT_EQ(P.Expected, types::R);
  EXPECT_EQ(P.Actual, types::V);
  ASSERT_TRUE(P.mismatchInfo().Dest.Declared);
  // V -> R needs the shard dim: no automatic repair.
  EXPECT_FALSE(P.Fix);
}

TEST(Transfer, PathConflictHasBothOrigins) {
  Analysed T(R"(
void f(bool c, SPMD_TYPE(tp = R) const Tensor& r, SPMD_TYPE(tp = P) const Tensor& p) {
  Tensor x = r;
  if (c)
    x = p;
  Tensor y = torch::relu(x);
})");
  ASSERT_EQ(T.R.Problems.size(), 1u);
  const Problem &P = T.R.Problems[0];
  EXPECT_EQ(P.Kind, DiagKind::PathConflict);
  ASSERT_EQ(P.Origins.size(), 2u);
  EXPECT_EQ(P.Origins[0].Type, types::R);
  EXPECT_EQ(P.Origins[1].Type, types::P);
}

TEST(Transfer, StrictModeReportsUnknownUses) {
  const char *Code = R"(
Tensor f(const Tensor& x) { return spmd::all_reduce(x, tp, P, R); }
)";
  EXPECT_TRUE(Analysed(Code).R.Problems.empty());
  Analysed T(Code, /*Strict=*/true);
  ASSERT_EQ(T.R.Problems.size(), 1u);
  EXPECT_EQ(T.R.Problems[0].code(), ProblemCode::UnknownUse);
}

// A loop carrying a long chain of copies widens to unknown instead of
// giving up on the function: the error after the loop is still found.
TEST(Transfer, WideningKeepsReporting) {
  std::string Body =
      "void f(bool c, SPMD_TYPE(tp = P) const Tensor& p, "
      "SPMD_TYPE(tp = R) const Tensor& r) {\n";
  for (int I = 0; I <= 70; ++I)
    Body += "  Tensor x" + std::to_string(I) + " = r;\n";
  Body += "  while (c) {\n";
  for (int I = 70; I > 0; --I)
    Body +=
        "    x" + std::to_string(I) + " = x" + std::to_string(I - 1) + ";\n";
  Body += "    x0 = p;\n  }\n  Tensor bad = torch::relu(p);\n}\n";
  Analysed T(Body);
  bool SawRelu = false;
  for (const Problem &P : T.R.Problems) SawRelu |= P.Kind == DiagKind::OpType;
  EXPECT_TRUE(SawRelu);
}

// A raw c10d collective on a typed tensor is a problem of its own code: the
// call and the typed argument, no core verdict and no text.
TEST(Transfer, RawC10dIsACodeWithoutText) {
  Analysed T(R"(
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
void f(c10d::ProcessGroup &pg, SPMD_TYPE(dp = P) Tensor g, Tensor u) {
  std::vector<Tensor> gs{g};
  pg.allreduce(gs)->wait();
  std::vector<Tensor> us{u};
  pg.allreduce(us)->wait();
})");
  ASSERT_TRUE(T.AST);
  ASSERT_EQ(T.R.Problems.size(), 1u);
  const Problem &P = T.R.Problems[0];
  EXPECT_EQ(P.Kind, DiagKind::OpType);
  EXPECT_EQ(P.code(), ProblemCode::RawC10d);
  ASSERT_TRUE(P.Call);
  EXPECT_EQ(P.Call->getDirectCallee()->getName(), "allreduce");
  EXPECT_EQ(T.line(P.Loc), 6u);
  EXPECT_FALSE(P.Error);
}

/// The definition of `NS::Name` at namespace scope, or null.
const clang::CXXRecordDecl *findRecord(clang::ASTContext &Ctx,
                                       llvm::StringRef NS,
                                       llvm::StringRef Name) {
  for (const clang::Decl *D : Ctx.getTranslationUnitDecl()->decls())
    if (const auto *N = llvm::dyn_cast<clang::NamespaceDecl>(D);
        N && N->getName() == NS)
      for (const clang::Decl *M : N->decls())
        if (const auto *R = llvm::dyn_cast<clang::CXXRecordDecl>(M);
            R && R->getIdentifier() && R->getName() == Name &&
            R->isThisDeclarationADefinition())
          return R;
  return nullptr;
}

// The plugin reads an options initializer through the core's table, by
// field name and position; the table must describe the runtime's real
// spmd::CollectiveOptions field for field, in declaration order.
TEST(Transfer, CoreOptionsTableMatchesTheRuntimeStruct) {
  Analysed T("");
  ASSERT_TRUE(T.AST);
  const clang::CXXRecordDecl *RD =
      findRecord(T.AST->getASTContext(), "spmd", "CollectiveOptions");
  ASSERT_TRUE(RD);
  const auto &Table = core::collective_options();
  size_t I = 0;
  for (const clang::FieldDecl *F : RD->fields()) {
    SCOPED_TRACE(F->getName().str());
    ASSERT_LT(I, Table.size());
    const core::CollectiveOptionInfo &O = Table[I++];
    EXPECT_EQ(F->getName(), O.name);
    EXPECT_EQ(core::find_option(F->getName()), &O);
    std::string Type = F->getType().getAsString();
    switch (O.type) {
      case core::OptionType::Bool:
        EXPECT_TRUE(F->getType()->isBooleanType()) << Type;
        break;
      case core::OptionType::Dim:
        EXPECT_NE(Type.find("optional<int64_t>"), std::string::npos) << Type;
        break;
      case core::OptionType::Sizes:
        EXPECT_NE(Type.find("vector<int64_t>"), std::string::npos) << Type;
        break;
      case core::OptionType::Dtype:
        EXPECT_NE(Type.find("optional<c10::ScalarType>"), std::string::npos)
            << Type;
        break;
      case core::OptionType::BackwardOptions:
        EXPECT_NE(Type.find("BackwardOptions"), std::string::npos) << Type;
        break;
    }
  }
  EXPECT_EQ(I, Table.size());
}

}  // namespace
}  // namespace spmd::plugin
