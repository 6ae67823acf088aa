//===- Checker.cpp - the SPMD checker over a translation unit ---*- C++ -*-===//
//
// Finds the function bodies worth analysing (annotated, or touching an
// annotated declaration or the runtime's API), runs the per-function dataflow
// (Dataflow.h) on each with one Reporter for the translation unit, and emits
// the diagnostics at the end, sorted. The pieces:
//
//   TypeLattice.h   the facts: per axis a set of types; join, equality, Top
//   FactMap.h       per-block states, persistent and shared
//   Transfer.h      transfer functions: facts in, facts and Problems out
//   Problems.h      the handler interface between analysis and words
//   Reporter.h      the words: messages, notes, fix-its; sorted, deduplicated
//   Dataflow.h      CFG, worklist, widening
//
//===----------------------------------------------------------------------===//

#include "spmd/plugin/Checker.h"
#include "spmd/plugin/Annotations.h"

#include "Dataflow.h"
#include "Reporter.h"

#include "clang/AST/ParentMapContext.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Basic/DiagnosticIDs.h"
#include "clang/Basic/SourceManager.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <spmd/core/collectives.h>

#include <chrono>

using namespace clang;

namespace spmd::plugin {

void linkAttributes();

namespace {

/// Finds whether a function body touches anything SPMD (annotated
/// declarations, the runtime's API); bodies that do not are not analysed.
class RelevanceFinder : public RecursiveASTVisitor<RelevanceFinder> {
public:
  explicit RelevanceFinder(const AnnotationTable &T) : Table(T) {}
  bool Found = false;

  bool VisitDeclRefExpr(DeclRefExpr *E) { return check(E->getDecl()); }
  bool VisitMemberExpr(MemberExpr *E) { return check(E->getMemberDecl()); }
  bool VisitVarDecl(VarDecl *D) { return check(D); }
  bool VisitCXXConstructExpr(CXXConstructExpr *E) {
    return E->getConstructor() ? check(E->getConstructor()) : true;
  }

private:
  bool check(const ValueDecl *D) {
    if (const auto *FD = dyn_cast<FunctionDecl>(D)) {
      if ((isSpmdFunction(FD) && FD->getIdentifier() &&
           (FD->getName() == "assert_type" ||
            core::parse_collective(FD->getName()))) ||
          Table.isAnnotatedFunction(FD) || Table.axisRankOf(FD))
        Found = true;
    } else if (Table.typeOf(D)) {
      Found = true;
    }
    return !Found;
  }
  const AnnotationTable &Table;
};

/// Whether the body of \p FD may hold a function body of its own: a lambda,
/// a block, a local class, or any other declaration that is not a variable
/// (which the check treats alike, to stay on the safe side). Sema adds each
/// of them to the innermost enclosing function's declaration context (a
/// lambda's closure class included; one nested in another lambda or a local
/// class is found through that one), so a scan of \p FD's own declarations
/// (its parameters and local variables, a few dozen) decides, instead of a
/// walk of every statement of the body.
bool mayHoldFunctions(const FunctionDecl *FD) {
  for (const Decl *D : FD->decls())
    if (!isa<VarDecl>(D))
      return true;
  return false;
}

/// Whether \p FD's body touches SPMD: an annotation on it or a parameter,
/// an annotated declaration or the runtime's API in its body.
bool isRelevant(TUContext &TU, const FunctionDecl *FD) {
  if (TU.Table.isAnnotatedFunction(FD))
    return true;
  for (const ParmVarDecl *P : FD->parameters())
    if (TU.Table.typeOf(P))
      return true;
  RelevanceFinder F(TU.Table);
  F.TraverseStmt(FD->getBody());
  return F.Found;
}

/// An unannotated function that only passes its parameters on to another
/// call (a module holder's operator(), a wrapper's forward): its calls are
/// checked against the callee where they happen, so its body, whose
/// parameters are untyped, has nothing to add.
bool isPureForwarder(TUContext &TU, const FunctionDecl *FD) {
  if (TU.Table.isAnnotatedFunction(FD))
    return false;
  const CallExpr *C = forwardedCall(FD, TU.Types);
  const FunctionDecl *G = C ? C->getDirectCallee() : nullptr;
  if (!G || isSpmdFunction(G))
    return false;
  for (const Expr *A : C->arguments()) {
    if (!TU.Types.isTracked(A->getType()))
      continue;
    const auto *DRE = dyn_cast<DeclRefExpr>(skipTransparent(A, TU.Types));
    const auto *P = DRE ? dyn_cast<ParmVarDecl>(DRE->getDecl()) : nullptr;
    const auto *Owner =
        P ? dyn_cast<FunctionDecl>(P->getDeclContext()) : nullptr;
    if (!Owner || Owner->getCanonicalDecl() != FD->getCanonicalDecl())
      return false;
  }
  return true;
}

class TUVisitor : public RecursiveASTVisitor<TUVisitor> {
public:
  TUVisitor(TUContext &TU, ProblemHandler &Handler)
      : TU(TU), Handler(Handler), SM(TU.Ctx.getSourceManager()) {}

  bool shouldVisitTemplateInstantiations() const { return true; }

  /// The visitor looks for function bodies. A function's own body was
  /// analysed by VisitFunctionDecl; it is traversed only when it may hold
  /// another one (a lambda, a local class), else skipped (dataTraverseStmtPre
  /// turns the traversal away at its root). That is decided when the
  /// traversal reaches the body, after VisitFunctionDecl: the scan of the
  /// function's declarations (mayHoldFunctions) then reads declarations its
  /// analysis has just brought into the cache, instead of one cache miss per
  /// local variable of a body not yet looked at.
  bool dataTraverseStmtPre(Stmt *S) {
    return S != Body || mayHoldFunctions(BodyOwner);
  }

  bool TraverseDecl(Decl *D) {
    if (D && !isa<TranslationUnitDecl>(D) && !TU.Opts.AnalyzeSystemHeaders &&
        D->getLocation().isValid() && SM.isInSystemHeader(D->getLocation()))
      return true;
    const Stmt *OuterBody = Body;
    const FunctionDecl *OuterOwner = BodyOwner;
    Body = nullptr;
    BodyOwner = nullptr;
    // Before C++20 a lambda cannot be part of a type (decltype of one is an
    // unevaluated lambda): the walk of the statements then finds them all.
    if (const auto *FD = dyn_cast_or_null<FunctionDecl>(D);
        FD && !TU.Ctx.getLangOpts().CPlusPlus20)
      if (FD->doesThisDeclarationHaveABody())
        if (const Stmt *B = FD->getBody()) {
          Body = B;
          BodyOwner = FD;
        }
    bool Continue = RecursiveASTVisitor::TraverseDecl(D);
    Body = OuterBody;
    BodyOwner = OuterOwner;
    return Continue;
  }

  bool VisitFunctionDecl(FunctionDecl *FD) {
    analyze(FD);
    return true;
  }
  bool VisitLambdaExpr(LambdaExpr *LE) {
    CXXMethodDecl *Call = LE->getCallOperator();
    if (!Call)
      return true;
    if (FunctionTemplateDecl *FT = Call->getDescribedFunctionTemplate()) {
      for (FunctionDecl *Spec : FT->specializations())
        analyze(Spec);
      return true;
    }
    analyze(Call);
    return true;
  }

private:
  void analyze(const FunctionDecl *FD) {
    if (!FD->doesThisDeclarationHaveABody() || FD->isDependentContext() ||
        FD->isInvalidDecl() || FD->isDefaulted() || FD->isDeleted() ||
        !FD->getBody())
      return;
    if (!Done.insert(FD).second)
      return;
    // A local region whose inputs are inferred from its calls: analysed
    // after the rest, when its calls have been seen (analyzeDeferred).
    if (!Deferring && TU.Table.isLocalInfer(FD)) {
      Deferred.push_back(FD);
      return;
    }
    ++TU.FunctionsSeen;
    if (TU.Table.isUnchecked(FD) || !isRelevant(TU, FD) ||
        isPureForwarder(TU, FD))
      return;
    ++TU.FunctionsAnalyzed;
    analyzeFunction(TU, FD, Handler);
  }

public:
  /// Analyses the [[spmd::local(spmd::Infer)]] regions held back by
  /// analyze(), in the order they were found.
  void analyzeDeferred() {
    Deferring = true;
    for (const FunctionDecl *FD : Deferred) {
      Done.erase(FD);
      analyze(FD);
    }
    Deferred.clear();
  }

private:
  TUContext &TU;
  ProblemHandler &Handler;
  const SourceManager &SM;
  llvm::DenseSet<const FunctionDecl *> Done;
  std::vector<const FunctionDecl *> Deferred;
  bool Deferring = false;
  /// The body of the function being traversed (before C++20), skipped
  /// when it holds no other function, and that function; else null.
  const Stmt *Body = nullptr;
  const FunctionDecl *BodyOwner = nullptr;
};

class SPMDCheckConsumer : public ASTConsumer {
public:
  explicit SPMDCheckConsumer(Options Opts) : Opts(std::move(Opts)) {}
  void HandleTranslationUnit(ASTContext &Ctx) override {
    checkTranslationUnit(Ctx, Opts, Ctx.getDiagnostics());
  }

private:
  Options Opts;
};

} // namespace

bool bodyIsAnalysed(TUContext &TU, const FunctionDecl *FD) {
  if (auto It = TU.AnalysedBodies.find(FD); It != TU.AnalysedBodies.end())
    return It->second;
  // The conditions of TUVisitor::analyze (and TraverseDecl's system
  // headers), for the definition this declaration has, if any.
  const FunctionDecl *Def = nullptr;
  bool R = FD->hasBody(Def) && Def && Def->getBody() &&
           !Def->isDependentContext() && !Def->isInvalidDecl() &&
           !Def->isDefaulted() && !Def->isDeleted() &&
           (TU.Opts.AnalyzeSystemHeaders || Def->getLocation().isInvalid() ||
            !TU.Ctx.getSourceManager().isInSystemHeader(Def->getLocation())) &&
           !TU.Table.isUnchecked(Def) && isRelevant(TU, Def) &&
           !isPureForwarder(TU, Def);
  TU.AnalysedBodies[FD] = R;
  return R;
}

namespace {

/// Restricts the ASTContext's traversal scope, over which getParents builds
/// its parent map, to the translation unit's top-level declarations outside
/// system headers while the checker runs, and restores the caller's scope
/// after. The transfer functions ask for the parents of expressions in the
/// bodies they analyse (typeStated, consumedAsNonTensor, enclosingReduce),
/// and TUVisitor analyses no body of a system header (unless
/// AnalyzeSystemHeaders): the parent map then covers the code the checker
/// reads, not the whole of libtorch's headers, which the first getParents
/// call would otherwise walk (seconds per translation unit).
class UserTraversalScope {
public:
  UserTraversalScope(ASTContext &Ctx, const Options &Opts)
      : Ctx(Ctx), Saved(Ctx.getTraversalScope()) {
    if (Opts.AnalyzeSystemHeaders)
      return;
    const SourceManager &SM = Ctx.getSourceManager();
    std::vector<Decl *> Scope;
    for (Decl *D : Ctx.getTranslationUnitDecl()->decls())
      if (D->getLocation().isInvalid() ||
          !SM.isInSystemHeader(D->getLocation()))
        Scope.push_back(D);
    Ctx.setTraversalScope(Scope);
    Changed = true;
  }
  ~UserTraversalScope() {
    if (Changed)
      Ctx.setTraversalScope(Saved);
  }
  UserTraversalScope(const UserTraversalScope &) = delete;
  UserTraversalScope &operator=(const UserTraversalScope &) = delete;

private:
  ASTContext &Ctx;
  std::vector<Decl *> Saved;
  bool Changed = false;
};

} // namespace

void analyzeTranslationUnit(TUContext &TU, ProblemHandler &Handler) {
  UserTraversalScope Scope(TU.Ctx, TU.Opts);
  TUVisitor V(TU, Handler);
  V.TraverseDecl(TU.Ctx.getTranslationUnitDecl());
  V.analyzeDeferred();
}

unsigned checkTranslationUnit(ASTContext &Ctx, const Options &Opts,
                              DiagnosticsEngine &Diags) {
  linkAttributes();
  unsigned Count = 0;
  if (!Diags.hasFatalErrorOccurred()) {
    auto Start = std::chrono::steady_clock::now();
    TUContext TU(Ctx, AnnotationTable::get(Ctx), Opts);
    Reporter Rep(Diags, TU);
    TU.Layouts.validate(Diags); // annotation errors found only now
    analyzeTranslationUnit(TU, Rep);
    Count = Rep.flush();
    if (Opts.Stats) {
      double Ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - Start)
                      .count();
      llvm::errs() << "spmd-check: " << TU.FunctionsAnalyzed << " of "
                   << TU.FunctionsSeen << " function bodies analysed, "
                   << TU.Blocks << " CFG blocks, " << TU.Visits
                   << " block visits, " << Count << " diagnostics, "
                   << llvm::format("%.2f", Ms) << " ms\n";
    }
  }
  AnnotationTable::release(Ctx);
  return Count;
}

std::unique_ptr<ASTConsumer> createSPMDCheckConsumer(Options Opts) {
  return std::make_unique<SPMDCheckConsumer>(std::move(Opts));
}

std::optional<DiagKind> diagKindOf(const Diagnostic &Info) {
  unsigned ID = Info.getID();
  if (ID < diag::DIAG_UPPER_LIMIT || Info.getNumArgs() < 2 ||
      Info.getArgKind(1) != DiagnosticsEngine::ak_uint ||
      Info.getDiags()->getDiagnosticIDs()->getDescription(ID) !=
          Reporter::format())
    return std::nullopt;
  uint64_t K = Info.getRawArg(1);
  if (K >= NumDiagKinds)
    return std::nullopt;
  return static_cast<DiagKind>(K);
}

std::string diagMessageOf(const Diagnostic &Info) {
  if (diagKindOf(Info) &&
      Info.getArgKind(0) == DiagnosticsEngine::ak_std_string)
    return Info.getArgStdStr(0);
  llvm::SmallString<256> Text;
  Info.FormatDiagnostic(Text);
  return std::string(Text);
}

} // namespace spmd::plugin
