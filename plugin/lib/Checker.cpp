//===- Checker.cpp - flow-sensitive SPMD type checking ----------*- C++ -*-===//
//
// Per function, a forward dataflow over clang::CFG to a fixed point. The fact
// tracked for each tensor variable is its SPMD type per mesh axis: a type, an
// unknown, or a conflict (different types reaching a merge). The transfer
// function interprets declarations, assignments, the runtime's collectives,
// spmd::assert_type, ordinary tensor ops and calls of annotated functions;
// legality and result types come from the core (spmd::core), so each rule
// lives in one place. Diagnostics are collected while re-walking the CFG with
// the converged facts, then sorted by location and emitted with their notes.
//
//===----------------------------------------------------------------------===//

#include "spmd/plugin/Checker.h"
#include "spmd/plugin/Annotations.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/RecursiveASTVisitor.h"
#include "clang/Analysis/CFG.h"
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringMap.h"

#include <spmd/core/annotation_rules.h>
#include <spmd/core/collectives.h>
#include <spmd/core/propagation.h>

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <map>
#include <set>

using namespace clang;

namespace spmd::plugin {

void linkAttributes();

namespace {

//===----------------------------------------------------------------------===//
// Which C++ types are tensors
//===----------------------------------------------------------------------===//

bool isInTopNamespace(const Decl *D, llvm::StringRef Name) {
  const DeclContext *DC = D->getDeclContext();
  const NamespaceDecl *Top = nullptr;
  for (; DC && !DC->isTranslationUnit(); DC = DC->getParent())
    if (const auto *NS = dyn_cast<NamespaceDecl>(DC))
      if (!NS->isInline())
        Top = NS;
  return Top && Top->getIdentifier() && Top->getName() == Name;
}

/// at::Tensor / at::TensorBase (torch::Tensor is an alias) and classes
/// derived from them are tensors; c10::Scalar and arithmetic types are
/// plain numbers.
class TypeClassifier {
public:
  bool isTensor(QualType T) {
    if (T.isNull())
      return false;
    const CXXRecordDecl *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
    return RD && isTensorRecord(RD);
  }
  bool isScalar(QualType T) {
    if (T.isNull())
      return false;
    T = T.getNonReferenceType();
    if (T->isArithmeticType() && !T->isBooleanType())
      return true;
    const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
    return RD && RD->getIdentifier() && RD->getName() == "Scalar" &&
           isInTopNamespace(RD, "c10");
  }

private:
  bool isTensorRecord(const CXXRecordDecl *RD) {
    RD = RD->getCanonicalDecl();
    auto It = Cache.find(RD);
    if (It != Cache.end())
      return It->second;
    Cache[RD] = false; // breaks cycles
    bool R = RD->getIdentifier() &&
             (RD->getName() == "Tensor" || RD->getName() == "TensorBase") &&
             isInTopNamespace(RD, "at");
    if (!R)
      if (const CXXRecordDecl *Def = RD->getDefinition())
        for (const CXXBaseSpecifier &B : Def->bases())
          if (isTensor(B.getType())) {
            R = true;
            break;
          }
    Cache[RD] = R;
    return R;
  }
  llvm::DenseMap<const CXXRecordDecl *, bool> Cache;
};

//===----------------------------------------------------------------------===//
// The lattice
//===----------------------------------------------------------------------===//

/// Why a value has a type on an axis (for the note pointing at the origin).
enum class OriginKind : uint8_t {
  Declared,
  Collective,
  AssertType,
  Inferred,
  CallResult,
};

struct Origin {
  SourceLocation Loc;
  OriginKind Kind = OriginKind::Inferred;
};

enum : uint8_t { BitUnknown = 16 };

unsigned typeIndex(TypeKind K) {
  switch (K) {
  case TypeKind::Replicate:
    return 0;
  case TypeKind::Invariant:
    return 1;
  case TypeKind::Varying:
  case TypeKind::Shard:
    return 2;
  case TypeKind::Partial:
    return 3;
  }
  return 2;
}
PerAxisType typeAt(unsigned Index) {
  static const PerAxisType Types[] = {types::R, types::I, types::V, types::P};
  return Types[Index];
}

/// What is known about one value on one axis: the set of types that may reach
/// it (bits 0-3: R, I, V, P) plus "unknown" (bit 4). One type: known; two or
/// more types: a conflict; unknown alone or with one type: unknown.
struct AxisFact {
  uint8_t Mask = 0;
  Origin Origins[4];

  static AxisFact known(PerAxisType T, Origin O) {
    AxisFact F;
    unsigned I = typeIndex(T.kind);
    F.Mask = 1u << I;
    F.Origins[I] = O;
    return F;
  }
  static AxisFact unknown() {
    AxisFact F;
    F.Mask = BitUnknown;
    return F;
  }
  unsigned numTypes() const { return llvm::popcount(unsigned(Mask & 15)); }
  bool isConflict() const { return numTypes() >= 2; }
  std::optional<PerAxisType> knownType() const {
    if (Mask & BitUnknown || numTypes() != 1)
      return std::nullopt;
    return typeAt(llvm::countr_zero(unsigned(Mask)));
  }
  const Origin &originOf(PerAxisType T) const {
    return Origins[typeIndex(T.kind)];
  }
  void join(const AxisFact &O) {
    for (unsigned I = 0; I < 4; ++I)
      if ((O.Mask & (1u << I)) && !(Mask & (1u << I)))
        Origins[I] = O.Origins[I];
    Mask |= O.Mask;
  }
  /// The two types of a conflict (the first two in R, I, V, P order).
  std::pair<PerAxisType, PerAxisType> conflictPair() const {
    llvm::SmallVector<unsigned, 4> Idx;
    for (unsigned I = 0; I < 4; ++I)
      if (Mask & (1u << I))
        Idx.push_back(I);
    return {typeAt(Idx[0]), typeAt(Idx[1])};
  }
};

/// The abstract SPMD type of one tensor value. Axes not listed are unknown
/// when the value is Open, and absent (not part of the type) when it is
/// closed, i.e. its axis set is exactly known (from an annotation).
struct Value {
  std::map<std::string, AxisFact, std::less<>> Axes;
  bool Open = true;

  static Value unknown() { return Value(); }
  static Value declared(const TypeAnnotation &A, Origin O) {
    Value V;
    V.Open = false;
    for (const AxisEntry &E : A.Entries)
      V.Axes[E.Axis] = AxisFact::known(E.Type, O);
    return V;
  }
  static Value of(const core::TensorType &T, Origin O, bool Open) {
    Value V;
    V.Open = Open;
    for (const auto &[Axis, Type] : T.map())
      V.Axes[Axis] = AxisFact::known(Type, O);
    return V;
  }

  const AxisFact *get(llvm::StringRef Axis) const {
    auto It = Axes.find(Axis);
    return It == Axes.end() ? nullptr : &It->second;
  }
  std::optional<PerAxisType> knownOn(llvm::StringRef Axis) const {
    const AxisFact *F = get(Axis);
    return F ? F->knownType() : std::nullopt;
  }
  /// The axes whose type is known, as a core type map.
  core::TensorType knownPart() const {
    core::TensorType T;
    for (const auto &[Axis, F] : Axes)
      if (std::optional<PerAxisType> K = F.knownType())
        T.set(Axis, *K);
    return T;
  }
  bool hasKnownAxis() const {
    for (const auto &[Axis, F] : Axes)
      if (F.knownType())
        return true;
    return false;
  }
  /// Nothing at all is known (an opaque value).
  bool isUnknown() const { return Open && !hasKnownAxis(); }

  void join(const Value &O) {
    for (auto &[Axis, F] : Axes)
      if (!O.get(Axis))
        F.Mask |= BitUnknown;
    for (const auto &[Axis, F] : O.Axes) {
      auto It = Axes.find(Axis);
      if (It == Axes.end()) {
        AxisFact N = F;
        N.Mask |= BitUnknown;
        Axes.emplace(Axis, N);
      } else {
        It->second.join(F);
      }
    }
    Open = Open || O.Open;
  }
  bool sameFacts(const Value &O) const {
    if (Open != O.Open || Axes.size() != O.Axes.size())
      return false;
    for (const auto &[Axis, F] : Axes) {
      const AxisFact *G = O.get(Axis);
      if (!G || G->Mask != F.Mask)
        return false;
    }
    return true;
  }
};

using State = llvm::DenseMap<const VarDecl *, Value>;

void joinInto(State &A, const State &B) {
  for (const auto &[VD, V] : B) {
    auto It = A.find(VD);
    if (It == A.end())
      A.try_emplace(VD, V);
    else
      It->second.join(V);
  }
}

bool sameState(const State &A, const State &B) {
  if (A.size() != B.size())
    return false;
  for (const auto &[VD, V] : A) {
    auto It = B.find(VD);
    if (It == B.end() || !V.sameFacts(It->second))
      return false;
  }
  return true;
}

//===----------------------------------------------------------------------===//
// Diagnostics: collected, sorted by location, emitted with their notes
//===----------------------------------------------------------------------===//

struct PendingNote {
  SourceLocation Loc;
  std::string Text;
  llvm::SmallVector<FixItHint, 2> FixIts;
};

struct PendingDiag {
  DiagKind Kind;
  SourceLocation Loc;
  SourceRange Range;
  std::string Text;
  llvm::SmallVector<PendingNote, 3> Notes;
};

class Reporter {
public:
  Reporter(DiagnosticsEngine &DE, const SourceManager &SM, const Options &Opts)
      : DE(DE), SM(SM), Opts(Opts) {}

  bool enabled(DiagKind K) const {
    return Opts.severity(K) != Severity::Ignored;
  }
  void add(PendingDiag D) {
    if (enabled(D.Kind) && D.Loc.isValid())
      Pending.push_back(std::move(D));
  }

  unsigned flush() {
    std::sort(Pending.begin(), Pending.end(),
              [&](const PendingDiag &A, const PendingDiag &B) {
                if (A.Loc == B.Loc)
                  return A.Text < B.Text;
                return SM.isBeforeInTranslationUnit(A.Loc, B.Loc);
              });
    unsigned Count = 0;
    std::set<std::tuple<unsigned, unsigned, std::string>> Seen;
    for (const PendingDiag &D : Pending) {
      // Instantiations of one template report the same problem at the same
      // place; say it once, in the template's terms.
      if (!Seen.insert({unsigned(D.Kind), D.Loc.getRawEncoding(), D.Text})
               .second)
        continue;
      Severity Sev = Opts.severity(D.Kind);
      DiagnosticsEngine::Level L = DiagnosticsEngine::Error;
      if (Sev == Severity::Warning) {
        // Custom diagnostics cannot be remapped by -W flags in Clang 19, so
        // -w and -Werror are applied here.
        if (DE.getIgnoreAllWarnings())
          continue;
        L = DE.getWarningsAsErrors() ? DiagnosticsEngine::Error
                                     : DiagnosticsEngine::Warning;
      }
      std::string Fmt = "%0 [spmd:" + diagKindName(D.Kind).str() + "]";
      unsigned ID = DE.getDiagnosticIDs()->getCustomDiagID(
          static_cast<DiagnosticIDs::Level>(L), Fmt);
      DE.Report(D.Loc, ID) << D.Text << D.Range;
      unsigned NoteID = DE.getCustomDiagID(DiagnosticsEngine::Note, "%0");
      for (const PendingNote &N : D.Notes) {
        if (N.Loc.isInvalid())
          continue;
        auto B = DE.Report(N.Loc, NoteID);
        B << N.Text;
        for (const FixItHint &F : N.FixIts)
          B << F;
      }
      ++Count;
    }
    Pending.clear();
    return Count;
  }

private:
  DiagnosticsEngine &DE;
  const SourceManager &SM;
  const Options &Opts;
  std::vector<PendingDiag> Pending;
};

//===----------------------------------------------------------------------===//
// Shared per-translation-unit context
//===----------------------------------------------------------------------===//

struct TUContext {
  ASTContext &Ctx;
  const AnnotationTable &Table;
  const Options &Opts;
  Reporter &Rep;
  TypeClassifier Types;
  /// How to spell each axis in a fix-it (its spmd::Axis constant).
  llvm::StringMap<std::string> AxisSpelling;
  /// Statistics: function bodies seen, analysed, CFG blocks walked.
  unsigned FunctionsSeen = 0, FunctionsAnalyzed = 0, Blocks = 0;

  void noteAxis(llvm::StringRef Axis, const VarDecl *AxisDecl) {
    if (AxisDecl && !AxisSpelling.count(Axis))
      AxisSpelling[Axis] = AxisDecl->getQualifiedNameAsString();
  }
  std::string axisSpelling(llvm::StringRef Axis) const {
    auto It = AxisSpelling.find(Axis);
    return It == AxisSpelling.end() ? Axis.str() : It->second;
  }
};

std::string typeStr(PerAxisType T) { return core::to_string(T); }

std::string spmdTypeSpelling(PerAxisType T) {
  if (T.is_shard())
    return "spmd::S(" + std::to_string(T.dim) + ")";
  return "spmd::" + typeStr(T);
}

const char *originText(OriginKind K) {
  switch (K) {
  case OriginKind::Declared:
    return "declared here";
  case OriginKind::Collective:
    return "set by this collective";
  case OriginKind::AssertType:
    return "set by this spmd::assert_type";
  case OriginKind::Inferred:
    return "inferred from this operation";
  case OriginKind::CallResult:
    return "returned by this call (the callee's declared result type)";
  }
  return "from here";
}

PendingNote originNote(const AxisFact &F, PerAxisType T, llvm::StringRef Axis) {
  const Origin &O = F.originOf(T);
  return {O.Loc,
          "type " + typeStr(T) + " on axis '" + Axis.str() + "' " +
              originText(O.Kind),
          {}};
}

/// Strips what does not change a tensor value: parentheses, implicit
/// conversions, temporaries, copies and moves.
const Expr *skipTransparent(const Expr *E, TypeClassifier &Types) {
  while (E) {
    const Expr *Prev = E;
    E = E->IgnoreParens();
    if (const auto *FE = dyn_cast<FullExpr>(E))
      E = FE->getSubExpr();
    else if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E))
      E = ICE->getSubExpr();
    else if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(E))
      E = MTE->getSubExpr();
    else if (const auto *BTE = dyn_cast<CXXBindTemporaryExpr>(E))
      E = BTE->getSubExpr();
    else if (const auto *CE = dyn_cast<CXXConstructExpr>(E)) {
      if (CE->getNumArgs() >= 1 &&
          CE->getConstructor()->isCopyOrMoveConstructor() &&
          Types.isTensor(CE->getType()))
        E = CE->getArg(0);
    } else if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(E)) {
      if (Types.isTensor(FC->getType()) &&
          Types.isTensor(FC->getSubExpr()->getType()))
        E = FC->getSubExpr();
    } else if (const auto *SC = dyn_cast<CXXStaticCastExpr>(E)) {
      // std::move is a call; static_cast<Tensor&&>(x) is this.
      if (Types.isTensor(SC->getType()) &&
          Types.isTensor(SC->getSubExpr()->getType()))
        E = SC->getSubExpr();
    } else if (const auto *Call = dyn_cast<CallExpr>(E)) {
      if (const FunctionDecl *FD = Call->getDirectCallee())
        if (FD->isInStdNamespace() && FD->getIdentifier() &&
            (FD->getName() == "move" || FD->getName() == "forward") &&
            Call->getNumArgs() == 1)
          E = Call->getArg(0);
    }
    if (E == Prev)
      break;
  }
  return E;
}

/// The variable an lvalue expression names, if it is a plain variable.
const VarDecl *namedVar(const Expr *E, TypeClassifier &Types) {
  E = skipTransparent(E, Types);
  if (const auto *DRE = dyn_cast_or_null<DeclRefExpr>(E))
    return dyn_cast<VarDecl>(DRE->getDecl());
  return nullptr;
}

const FieldDecl *namedField(const Expr *E, TypeClassifier &Types) {
  E = skipTransparent(E, Types);
  if (const auto *ME = dyn_cast_or_null<MemberExpr>(E))
    return dyn_cast<FieldDecl>(ME->getMemberDecl());
  return nullptr;
}

/// "'x'" for a named variable or field, "this value" otherwise.
std::string describeExpr(const Expr *E, TypeClassifier &Types) {
  if (const VarDecl *VD = namedVar(E, Types))
    return "'" + VD->getNameAsString() + "'";
  if (const FieldDecl *FD = namedField(E, Types))
    return "'" + FD->getNameAsString() + "'";
  return "this value";
}

//===----------------------------------------------------------------------===//
// One function
//===----------------------------------------------------------------------===//

class FunctionChecker {
public:
  FunctionChecker(TUContext &TU, const FunctionDecl *FD)
      : TU(TU), Ctx(TU.Ctx), Types(TU.Types), FD(FD),
        Result(TU.Table.resultOf(FD)), Mesh(TU.Table.meshOf(FD)) {}

  void run();

private:
  // Dataflow driver.
  State entryState();
  void transferBlock(const CFGBlock &B);
  void transferStmt(const Stmt *S);

  // Expressions.
  Value eval(const Expr *E);
  Value evalUncached(const Expr *E);
  Value evalCall(const CallExpr *CE);
  Value evalCollective(const CallExpr *CE, core::Collective C);
  Value evalAssertType(const CallExpr *CE);
  Value evalUserCall(const CallExpr *CE, const FunctionDecl *Callee);
  Value evalTensorOp(const CallExpr *CE, const FunctionDecl *Callee,
                     std::string Name, const Expr *Receiver,
                     llvm::ArrayRef<const Expr *> Args,
                     std::optional<core::OpClass> Class = std::nullopt);
  void assign(const Expr *LHS, const Value &V, const Expr *RHS,
              SourceLocation Loc, bool IsInit);
  void setVar(const VarDecl *VD, const Value &V);

  // Checks.
  bool checkUse(const Value &V, const Expr *E, llvm::StringRef Axis);
  void checkUnknownUse(const Value &V, const Expr *E);
  void checkAgainst(const Value &V, const TypeAnnotation &Want, DiagKind Kind,
                    const Expr *E, const std::string &Subject,
                    const std::string &Target, SourceLocation DeclLoc);
  std::optional<PendingNote> fixItNote(const Expr *E, llvm::StringRef Axis,
                                       PerAxisType From, PerAxisType To);
  void report(DiagKind K, SourceLocation Loc, SourceRange R, std::string Text,
              llvm::SmallVector<PendingNote, 3> Notes = {});

  core::InferenceContext inferenceContext() const {
    core::InferenceContext C;
    C.strict = false;
    if (Mesh)
      C.mesh_axes =
          std::vector<std::string>(Mesh->Axes.begin(), Mesh->Axes.end());
    return C;
  }

  TUContext &TU;
  ASTContext &Ctx;
  TypeClassifier &Types;
  const FunctionDecl *FD;
  const TypeAnnotation *Result;
  const MeshAnnotation *Mesh;

  State Cur;
  llvm::DenseMap<const Expr *, Value> Memo;
  bool Reporting = false;
  std::set<std::pair<const void *, std::string>> ReportedConflicts;
  llvm::DenseSet<const void *> ReportedUnknown;
};

void FunctionChecker::report(DiagKind K, SourceLocation Loc, SourceRange R,
                             std::string Text,
                             llvm::SmallVector<PendingNote, 3> Notes) {
  if (!Reporting || !TU.Rep.enabled(K))
    return;
  TU.Rep.add({K, Loc, R, std::move(Text), std::move(Notes)});
}

State FunctionChecker::entryState() {
  State S;
  for (const ParmVarDecl *P : FD->parameters())
    if (const TypeAnnotation *A = TU.Table.typeOf(P)) {
      for (const AxisEntry &E : A->Entries)
        TU.noteAxis(E.Axis, E.AxisDecl);
      S[P] = Value::declared(*A, {A->Loc, OriginKind::Declared});
    }
  return S;
}

/// Blocks reachable from the entry in reverse post-order (pruned edges,
/// which CFG's GraphTraits would hand out as null blocks, are skipped).
std::vector<const CFGBlock *> reversePostOrder(const CFG &Cfg) {
  std::vector<const CFGBlock *> Post;
  std::vector<bool> Seen(Cfg.getNumBlockIDs(), false);
  std::vector<std::pair<const CFGBlock *, CFGBlock::const_succ_iterator>> Stack;
  const CFGBlock *Entry = &Cfg.getEntry();
  Seen[Entry->getBlockID()] = true;
  Stack.push_back({Entry, Entry->succ_begin()});
  while (!Stack.empty()) {
    auto &[B, It] = Stack.back();
    if (It == B->succ_end()) {
      Post.push_back(B);
      Stack.pop_back();
      continue;
    }
    const CFGBlock *S = It->getReachableBlock();
    ++It;
    if (S && !Seen[S->getBlockID()]) {
      Seen[S->getBlockID()] = true;
      Stack.push_back({S, S->succ_begin()});
    }
  }
  return std::vector<const CFGBlock *>(Post.rbegin(), Post.rend());
}

void FunctionChecker::run() {
  CFG::BuildOptions BO;
  BO.setAllAlwaysAdd();
  BO.PruneTriviallyFalseEdges = true;
  BO.AddImplicitDtors = false;
  BO.AddTemporaryDtors = false;
  BO.AddInitializers = true; // member initializers of constructors
  BO.AddLifetime = false;
  BO.AddScopes = false;
  std::unique_ptr<CFG> Cfg = CFG::buildCFG(FD, FD->getBody(), &Ctx, BO);
  if (!Cfg)
    return; // e.g. unsupported statements: say nothing rather than guess.

  unsigned N = Cfg->getNumBlockIDs();
  TU.Blocks += N;
  std::vector<std::optional<State>> Out(N);
  std::vector<const CFGBlock *> Order = reversePostOrder(*Cfg);
  State Entry = entryState();

  auto InState = [&](const CFGBlock &B) -> std::optional<State> {
    if (&B == &Cfg->getEntry())
      return Entry;
    std::optional<State> In;
    for (const CFGBlock::AdjacentBlock &P : B.preds()) {
      const CFGBlock *PB = P.getReachableBlock();
      if (!PB || !Out[PB->getBlockID()])
        continue;
      if (!In)
        In = *Out[PB->getBlockID()];
      else
        joinInto(*In, *Out[PB->getBlockID()]);
    }
    return In;
  };

  // The lattice is finite (per axis a subset of {R, I, V, P, unknown}), so
  // this terminates; the cap guards against surprises, and a function that
  // hits it is not reported on.
  const unsigned MaxRounds = 64;
  // Round-robin in reverse post-order over the blocks whose inputs changed
  // (straight-line code converges in one round).
  std::vector<bool> Dirty(N, true);
  bool Changed = true;
  unsigned Round = 0;
  for (; Changed && Round < MaxRounds; ++Round) {
    Changed = false;
    for (const CFGBlock *B : Order) {
      if (!Dirty[B->getBlockID()])
        continue;
      Dirty[B->getBlockID()] = false;
      std::optional<State> In = InState(*B);
      if (!In)
        continue;
      Cur = std::move(*In);
      transferBlock(*B);
      std::optional<State> &O = Out[B->getBlockID()];
      if (!O || !sameState(*O, Cur)) {
        O = std::move(Cur);
        Changed = true;
        for (const CFGBlock::AdjacentBlock &S : B->succs())
          if (const CFGBlock *SB = S.getReachableBlock())
            Dirty[SB->getBlockID()] = true;
      }
    }
  }
  if (Changed)
    return;

  // Report with the converged facts.
  Reporting = true;
  for (const CFGBlock *B : Order) {
    std::optional<State> In = InState(*B);
    if (!In)
      continue;
    Cur = std::move(*In);
    transferBlock(*B);
  }
}

void FunctionChecker::transferBlock(const CFGBlock &B) {
  Memo.clear();
  for (const CFGElement &E : B) {
    if (std::optional<CFGStmt> S = E.getAs<CFGStmt>()) {
      transferStmt(S->getStmt());
    } else if (std::optional<CFGInitializer> I = E.getAs<CFGInitializer>()) {
      // `: weight(w)` initializes an annotated field: check it like an
      // assignment.
      const CXXCtorInitializer *Init = I->getInitializer();
      const FieldDecl *F = Init->getMember();
      const Expr *IE = Init->getInit();
      if (!F || !IE || !Init->isWritten())
        continue;
      if (const TypeAnnotation *A = TU.Table.typeOf(F))
        checkAgainst(eval(IE), *A, DiagKind::Assignment, IE,
                     "initializer of '" + F->getNameAsString() + "'",
                     "'" + F->getNameAsString() + "' is declared", A->Loc);
    }
  }
}

void FunctionChecker::setVar(const VarDecl *VD, const Value &V) {
  if (TU.Table.typeOf(VD))
    return; // a declared variable keeps its declared type
  Cur[VD] = V;
}

void FunctionChecker::transferStmt(const Stmt *S) {
  if (const auto *DS = dyn_cast<DeclStmt>(S)) {
    for (const Decl *D : DS->decls()) {
      const auto *VD = dyn_cast<VarDecl>(D);
      if (!VD)
        continue;
      const TypeAnnotation *A = TU.Table.typeOf(VD);
      if (A) {
        for (const AxisEntry &E : A->Entries)
          TU.noteAxis(E.Axis, E.AxisDecl);
        if (const Expr *Init = VD->getInit())
          if (Types.isTensor(Init->getType()) || isa<CXXConstructExpr>(Init))
            checkAgainst(eval(Init), *A, DiagKind::Assignment, Init,
                         "initializer of '" + VD->getNameAsString() + "'",
                         "'" + VD->getNameAsString() + "' is declared", A->Loc);
        Cur[VD] = Value::declared(*A, {A->Loc, OriginKind::Declared});
        continue;
      }
      if (!Types.isTensor(VD->getType()))
        continue;
      const Expr *Init = VD->getInit();
      Cur[VD] = Init ? eval(Init) : Value::unknown();
    }
    return;
  }
  if (const auto *RS = dyn_cast<ReturnStmt>(S)) {
    const Expr *RV = RS->getRetValue();
    if (Result && RV && Types.isTensor(RV->getType()))
      checkAgainst(
          eval(RV), *Result, DiagKind::ReturnType, RV, "returned value",
          "'" + FD->getNameAsString() + "' is declared to return", Result->Loc);
    return;
  }
  if (const auto *E = dyn_cast<Expr>(S))
    (void)eval(E);
}

Value FunctionChecker::eval(const Expr *E) {
  if (!E)
    return Value::unknown();
  E = skipTransparent(E, Types);
  auto It = Memo.find(E);
  if (It != Memo.end())
    return It->second;
  Value V = evalUncached(E);
  Memo[E] = V;
  return V;
}

Value FunctionChecker::evalUncached(const Expr *E) {
  if (E->containsErrors() || E->isValueDependent() || E->isTypeDependent())
    return Value::unknown();
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    const auto *VD = dyn_cast<VarDecl>(DRE->getDecl());
    if (!VD)
      return Value::unknown();
    if (const TypeAnnotation *A = TU.Table.typeOf(VD))
      return Value::declared(*A, {A->Loc, OriginKind::Declared});
    auto It = Cur.find(VD);
    return It == Cur.end() ? Value::unknown() : It->second;
  }
  if (const auto *ME = dyn_cast<MemberExpr>(E)) {
    if (const auto *F = dyn_cast<FieldDecl>(ME->getMemberDecl()))
      if (const TypeAnnotation *A = TU.Table.typeOf(F))
        return Value::declared(*A, {A->Loc, OriginKind::Declared});
    return Value::unknown();
  }
  if (const auto *CO = dyn_cast<AbstractConditionalOperator>(E)) {
    if (!Types.isTensor(CO->getType()))
      return Value::unknown();
    Value V = eval(CO->getTrueExpr());
    V.join(eval(CO->getFalseExpr()));
    return V;
  }
  if (const auto *CE = dyn_cast<CallExpr>(E))
    return evalCall(CE);
  return Value::unknown();
}

//===----------------------------------------------------------------------===//
// Calls
//===----------------------------------------------------------------------===//

/// Whether \p FD is `spmd::<name>` (the runtime's API).
bool isSpmdFunction(const FunctionDecl *FD) {
  const auto *NS = dyn_cast<NamespaceDecl>(FD->getDeclContext());
  return NS && NS->getIdentifier() && NS->getName() == "spmd" &&
         NS->getParent()->getRedeclContext()->isTranslationUnit();
}

bool isCompoundAssign(OverloadedOperatorKind OO) {
  BinaryOperatorKind Op = BinaryOperator::getOverloadedOpcode(OO);
  return BinaryOperator::isCompoundAssignmentOp(Op);
}

Value FunctionChecker::evalCall(const CallExpr *CE) {
  const FunctionDecl *Callee = CE->getDirectCallee();
  if (!Callee)
    return Value::unknown();

  if (isSpmdFunction(Callee) && Callee->getIdentifier()) {
    if (std::optional<core::Collective> C =
            core::parse_collective(Callee->getName()))
      if (CE->getNumArgs() >= 2 && Types.isTensor(CE->getType()))
        return evalCollective(CE, *C);
    if (Callee->getName() == "assert_type" && CE->getNumArgs() == 2)
      return evalAssertType(CE);
  }

  const auto *OpCall = dyn_cast<CXXOperatorCallExpr>(CE);
  // Tensor assignment: `x = expr`.
  if (OpCall && OpCall->getOperator() == OO_Equal && CE->getNumArgs() == 2 &&
      Types.isTensor(CE->getArg(0)->getType())) {
    if (!Types.isTensor(CE->getArg(1)->getType()))
      return eval(CE->getArg(0)); // x = scalar fills in place
    Value V = eval(CE->getArg(1));
    assign(CE->getArg(0), V, CE->getArg(1), OpCall->getOperatorLoc(), false);
    // The value of `x = e` is x after the assignment: its declared type, or
    // e's (the LHS node itself may be memoized with the old value).
    const VarDecl *VD = namedVar(CE->getArg(0), Types);
    const FieldDecl *F = VD ? nullptr : namedField(CE->getArg(0), Types);
    if (const TypeAnnotation *A = VD  ? TU.Table.typeOf(VD)
                                  : F ? TU.Table.typeOf(F)
                                      : nullptr)
      return Value::declared(*A, {A->Loc, OriginKind::Declared});
    return V;
  }

  if (TU.Table.isAnnotatedFunction(Callee))
    return evalUserCall(CE, Callee);

  // Ordinary tensor ops: methods of at::Tensor, operators on tensors, and
  // free functions in at:: / torch::.
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
    const CXXMethodDecl *MD = MC->getMethodDecl();
    const Expr *Obj = MC->getImplicitObjectArgument();
    if (MD && MD->getIdentifier() && Obj && Types.isTensor(Obj->getType())) {
      llvm::SmallVector<const Expr *, 4> Args(MC->arguments());
      return evalTensorOp(CE, Callee, "." + MD->getName().str(), Obj, Args);
    }
    return Value::unknown();
  }
  if (OpCall) {
    bool AnyTensor = false;
    for (const Expr *A : CE->arguments())
      AnyTensor |= Types.isTensor(A->getType());
    if (!AnyTensor)
      return Value::unknown();
    OverloadedOperatorKind OO = OpCall->getOperator();
    bool Unary = CE->getNumArgs() == 1;
    std::string Dunder =
        core::dunder_for_operator(getOperatorSpelling(OO), Unary);
    if (Dunder.empty())
      return Value::unknown();
    llvm::SmallVector<const Expr *, 4> Args(CE->arguments());
    return evalTensorOp(CE, Callee, Dunder, nullptr, Args);
  }
  if (Callee->getIdentifier() &&
      (isInTopNamespace(Callee, "at") || isInTopNamespace(Callee, "torch"))) {
    llvm::SmallVector<const Expr *, 4> Args(CE->arguments());
    return evalTensorOp(CE, Callee, Callee->getName().str(), nullptr, Args);
  }
  return Value::unknown();
}

/// Reads the options argument of a collective when it is written in place
/// (`{}` or an aggregate initializer); otherwise the checker cannot see it
/// and assumes the most permissive options (expert_mode on).
void readCollectiveOptions(const Expr *E, core::CollectiveCall &Call,
                           ASTContext &Ctx) {
  if (!E || isa<CXXDefaultArgExpr>(E))
    return;
  const Expr *Inner = E->IgnoreParenImpCasts();
  while (true) {
    if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(Inner))
      Inner = MTE->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *BTE = dyn_cast<CXXBindTemporaryExpr>(Inner))
      Inner = BTE->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(Inner))
      Inner = FC->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *FE = dyn_cast<FullExpr>(Inner))
      Inner = FE->getSubExpr()->IgnoreParenImpCasts();
    else
      break;
  }
  if (const auto *CCE = dyn_cast<CXXConstructExpr>(Inner))
    if (CCE->getNumArgs() == 0)
      return; // CollectiveOptions{} / CollectiveOptions()
  const auto *ILE = dyn_cast<InitListExpr>(Inner);
  if (!ILE) {
    Call.expert_mode = true; // unknown options: do not guess a violation
    return;
  }
  const RecordDecl *RD = ILE->getType()->getAsRecordDecl();
  if (!RD) {
    Call.expert_mode = true;
    return;
  }
  unsigned I = 0;
  for (const FieldDecl *F : RD->fields()) {
    if (I >= ILE->getNumInits())
      break;
    const Expr *Init = ILE->getInit(I++)->IgnoreParenImpCasts();
    if (isa<ImplicitValueInitExpr>(Init) || isa<CXXDefaultInitExpr>(Init))
      continue;
    if (const auto *CCE = dyn_cast<CXXConstructExpr>(Init))
      if (CCE->getNumArgs() == 0)
        continue;
    llvm::StringRef Name = F->getName();
    auto Bool = [&](bool &Out) {
      bool B;
      if (Init->EvaluateAsBooleanCondition(B, Ctx))
        Out = B;
      else
        Out = true;
    };
    auto Int = [&](std::optional<long> &Out) {
      Expr::EvalResult R;
      const Expr *X = Init;
      if (const auto *C = dyn_cast<CXXConstructExpr>(X))
        if (C->getNumArgs() == 1)
          X = C->getArg(0);
      if (X->EvaluateAsInt(R, Ctx))
        Out = R.Val.getInt().getExtValue();
    };
    if (Name == "expert_mode")
      Bool(Call.expert_mode);
    else if (Name == "inplace")
      Bool(Call.inplace);
    else if (Name == "op_dtype")
      Call.has_op_dtype = true;
    else if (Name == "out_dtype")
      Call.has_out_dtype = true;
    else if (Name == "gather_dim")
      Int(Call.gather_dim);
    else if (Name == "scatter_dim")
      Int(Call.scatter_dim);
    else if (Name == "split_dim")
      Int(Call.split_dim);
    else if (Name == "concat_dim")
      Int(Call.concat_dim);
    else if (Name == "split_sizes")
      Call.split_sizes = {1};
    else if (Name == "input_split_sizes")
      Call.input_split_sizes = {1};
    else if (Name == "output_split_sizes")
      Call.output_split_sizes = {1};
  }
}

Value FunctionChecker::evalCollective(const CallExpr *CE, core::Collective C) {
  const Expr *X = CE->getArg(0);
  Value In = eval(X);
  std::string OpName = std::string("spmd::") + core::to_string(C);

  const VarDecl *AxisDecl = nullptr;
  std::optional<std::string> Axis = evaluateAxis(CE->getArg(1), Ctx, &AxisDecl);
  if (!Axis) {
    report(DiagKind::CollectiveArgument, CE->getArg(1)->getExprLoc(),
           CE->getArg(1)->getSourceRange(),
           "the axis of " + OpName +
               " must be a constant spmd::Axis (declared with SPMD_AXIS) "
               "for the static checker to follow the collective");
    return Value::unknown();
  }
  TU.noteAxis(*Axis, AxisDecl);

  core::CollectiveCall Call;
  Call.op = C;
  unsigned OptionsArg;
  if (C == core::Collective::InvariantToReplicate) {
    Call.src = types::I;
    Call.dst = types::R;
    OptionsArg = 2;
  } else {
    if (CE->getNumArgs() < 4)
      return Value::unknown();
    const char *Names[] = {"src", "dst"};
    std::optional<PerAxisType> T[2];
    for (unsigned I = 0; I < 2; ++I) {
      const Expr *A = CE->getArg(2 + I);
      T[I] = evaluatePerAxisType(A, Ctx);
      if (!T[I]) {
        report(DiagKind::CollectiveArgument, A->getExprLoc(),
               A->getSourceRange(),
               std::string(Names[I]) + " of " + OpName +
                   " must be a constant expression (R, I, V, P or S(k)) for "
                   "the static checker");
        return Value::unknown();
      }
    }
    Call.src = *T[0];
    Call.dst = *T[1];
    OptionsArg = 4;
  }
  readCollectiveOptions(CE->getNumArgs() > OptionsArg ? CE->getArg(OptionsArg)
                                                      : nullptr,
                        Call, Ctx);

  core::Status Legal = core::check_arguments(Call);
  if (!Legal.ok())
    report(DiagKind::CollectiveArgument, CE->getExprLoc(), CE->getSourceRange(),
           Legal.error().full_message());

  Origin O{CE->getExprLoc(), OriginKind::Collective};
  Value Out = In;
  PerAxisType Dst = Call.dst.local();
  const AxisFact *F = In.get(*Axis);
  if (F && F->isConflict()) {
    checkUse(In, X, *Axis);
  } else if (std::optional<PerAxisType> Known =
                 F ? F->knownType() : std::nullopt) {
    if (Legal.ok()) {
      core::Result<core::TensorType> R =
          core::transfer(Call, In.knownPart(), *Axis, /*strict=*/false);
      if (!R.ok()) {
        llvm::SmallVector<PendingNote, 3> Notes;
        Notes.push_back(originNote(*F, *Known, *Axis));
        // A different src would accept this input: offer it when legal.
        core::CollectiveCall Alt = Call;
        Alt.src = *Known;
        if (CE->getNumArgs() > 2 &&
            C != core::Collective::InvariantToReplicate &&
            core::check_arguments(Alt).ok() &&
            core::transfer(Alt, In.knownPart(), *Axis, false).ok()) {
          const Expr *SrcArg = CE->getArg(2);
          if (SrcArg->getSourceRange().isValid() &&
              !SrcArg->getBeginLoc().isMacroID() &&
              !SrcArg->getEndLoc().isMacroID())
            Notes.push_back(
                {SrcArg->getExprLoc(),
                 "did you mean src = " + typeStr(*Known) + "?",
                 {FixItHint::CreateReplacement(
                     CharSourceRange::getTokenRange(SrcArg->getSourceRange()),
                     spmdTypeSpelling(*Known))}});
        }
        report(DiagKind::CollectiveInput, X->getExprLoc(), X->getSourceRange(),
               R.error().full_message(), Notes);
      }
    }
  } else {
    checkUnknownUse(In, X);
  }
  Out.Axes[*Axis] = AxisFact::known(Dst, O);
  return Out;
}

Value FunctionChecker::evalAssertType(const CallExpr *CE) {
  const Expr *X = CE->getArg(0);
  Value In = eval(X);
  // The second argument is an initializer_list<AxisType>: {dp = R, ...}.
  const Expr *L = CE->getArg(1)->IgnoreParenImpCasts();
  while (true) {
    if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(L))
      L = MTE->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *SIL = dyn_cast<CXXStdInitializerListExpr>(L))
      L = SIL->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *FE = dyn_cast<FullExpr>(L))
      L = FE->getSubExpr()->IgnoreParenImpCasts();
    else
      break;
  }
  const auto *ILE = dyn_cast<InitListExpr>(L);
  if (!ILE)
    return In;
  TypeAnnotation Asserted;
  Asserted.Loc = CE->getExprLoc();
  for (const Expr *Init : ILE->inits()) {
    const Expr *I = Init->IgnoreParenImpCasts();
    if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(I))
      I = MTE->getSubExpr()->IgnoreParenImpCasts();
    if (const auto *CCE = dyn_cast<CXXConstructExpr>(I))
      if (CCE->getNumArgs() == 1)
        I = CCE->getArg(0)->IgnoreParenImpCasts();
    const auto *Op = dyn_cast<CXXOperatorCallExpr>(I);
    if (!Op || Op->getOperator() != OO_Equal || Op->getNumArgs() != 2)
      return In;
    AxisEntry E;
    std::optional<std::string> Axis =
        evaluateAxis(Op->getArg(0), Ctx, &E.AxisDecl);
    std::optional<PerAxisType> T = evaluatePerAxisType(Op->getArg(1), Ctx);
    if (!Axis || !T)
      return In; // not constant: a runtime-only assertion
    E.Axis = *Axis;
    E.Type = *T;
    E.Loc = Op->getExprLoc();
    TU.noteAxis(E.Axis, E.AxisDecl);
    Asserted.Entries.push_back(E);
  }
  Origin O{CE->getExprLoc(), OriginKind::AssertType};
  Value Out = In;
  for (const AxisEntry &E : Asserted.Entries) {
    PerAxisType Want = E.Type.local();
    const AxisFact *F = In.get(E.Axis);
    std::optional<PerAxisType> Have = F ? F->knownType() : std::nullopt;
    if (F && F->isConflict()) {
      checkUse(In, X, E.Axis);
    } else if (Have) {
      core::TensorType Cur;
      Cur.set(E.Axis, *Have);
      core::TensorType A;
      A.set(E.Axis, Want);
      core::Result<core::TensorType> R = core::assert_type(Cur, A);
      if (!R.ok()) {
        llvm::SmallVector<PendingNote, 3> Notes;
        Notes.push_back(originNote(*F, *Have, E.Axis));
        if (std::optional<PendingNote> Fix =
                fixItNote(X, E.Axis, *Have, E.Type))
          Notes.push_back(*Fix);
        report(DiagKind::AssertType, E.Loc, CE->getSourceRange(),
               "spmd::assert_type: " + describeExpr(X, Types) + " has type " +
                   typeStr(*Have) + " on axis '" + E.Axis +
                   "', but the assertion says " + typeStr(E.Type) + " (" +
                   R.error().message + ")",
               Notes);
        Out.Axes[E.Axis] = AxisFact::known(Want, O);
        continue;
      }
      if (std::optional<PerAxisType> N = R->get(E.Axis))
        Out.Axes[E.Axis] = AxisFact::known(*N, O);
      continue;
    }
    Out.Axes[E.Axis] = AxisFact::known(Want, O);
  }
  if (const VarDecl *VD = namedVar(X, Types))
    if (Types.isTensor(VD->getType()))
      setVar(VD, Out);
  return Out;
}

Value FunctionChecker::evalUserCall(const CallExpr *CE,
                                    const FunctionDecl *Callee) {
  // Map arguments to parameters (a member operator's object is argument 0).
  unsigned Skip = 0;
  if (isa<CXXOperatorCallExpr>(CE) && isa<CXXMethodDecl>(Callee) &&
      !cast<CXXMethodDecl>(Callee)->isStatic())
    Skip = 1;
  for (unsigned I = Skip; I < CE->getNumArgs(); ++I) {
    unsigned PI = I - Skip;
    if (PI >= Callee->getNumParams())
      break;
    const Expr *Arg = CE->getArg(I);
    if (isa<CXXDefaultArgExpr>(Arg))
      continue;
    const TypeAnnotation *A = TU.Table.paramOf(Callee, PI);
    if (!A || !Types.isTensor(Arg->getType()))
      continue; // only tensors are tracked
    const ParmVarDecl *P = Callee->getParamDecl(PI);
    std::string PName = P->getIdentifier() ? "'" + P->getNameAsString() + "'"
                                           : "#" + std::to_string(PI + 1);
    checkAgainst(eval(Arg), *A, DiagKind::CallArgument, Arg,
                 "argument " + describeExpr(Arg, Types) + " of '" +
                     Callee->getNameAsString() + "'",
                 "parameter " + PName + " is declared", A->Loc);
  }
  if (const TypeAnnotation *R = TU.Table.resultOf(Callee))
    return Value::declared(*R, {CE->getExprLoc(), OriginKind::CallResult});
  if (std::optional<core::OpClass> C = TU.Table.opClassOf(Callee)) {
    llvm::SmallVector<const Expr *, 4> Args;
    const Expr *Receiver = nullptr;
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE))
      Receiver = MC->getImplicitObjectArgument();
    for (unsigned I = Skip; I < CE->getNumArgs(); ++I)
      Args.push_back(CE->getArg(I));
    if (Receiver && !Types.isTensor(Receiver->getType()))
      Receiver = nullptr;
    return evalTensorOp(CE, Callee, Callee->getNameAsString(), Receiver, Args,
                        C);
  }
  return Value::unknown();
}

/// The tensors in a list argument ({a, b} for cat/stack).
void listElements(const Expr *E, TypeClassifier &Types,
                  llvm::SmallVectorImpl<const Expr *> &Out) {
  const Expr *L = E->IgnoreParenImpCasts();
  while (true) {
    if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(L))
      L = MTE->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *BTE = dyn_cast<CXXBindTemporaryExpr>(L))
      L = BTE->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *SIL = dyn_cast<CXXStdInitializerListExpr>(L))
      L = SIL->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *CCE = dyn_cast<CXXConstructExpr>(L);
             CCE && CCE->getNumArgs() == 1)
      L = CCE->getArg(0)->IgnoreParenImpCasts();
    else
      break;
  }
  if (const auto *ILE = dyn_cast<InitListExpr>(L))
    for (const Expr *I : ILE->inits())
      if (Types.isTensor(I->getType()))
        Out.push_back(I);
}

Value FunctionChecker::evalTensorOp(const CallExpr *CE,
                                    const FunctionDecl *Callee,
                                    std::string Name, const Expr *Receiver,
                                    llvm::ArrayRef<const Expr *> Args,
                                    std::optional<core::OpClass> Class) {
  bool ResultIsTensor = Types.isTensor(CE->getType());
  bool InPlace = false;
  const Expr *Mutated = nullptr;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(CE)) {
    if (isCompoundAssign(Op->getOperator()) && !Args.empty()) {
      InPlace = true;
      Mutated = Args[0];
    }
  } else if (Receiver && Name.size() > 2 && Name[0] == '.' &&
             Name.back() == '_' && Name.compare(0, 3, ".__") != 0) {
    InPlace = true;
    Mutated = Receiver;
  }
  if (!ResultIsTensor && !InPlace)
    return Value::unknown(); // sizes, item, comparisons to bool, ...

  struct OperandSource {
    const Expr *E;
    Value V;
  };
  std::vector<core::Operand> Operands;
  std::vector<OperandSource> Sources; // parallel to Operands (null E: scalar)
  auto AddTensor = [&](const Expr *E, int Pos) {
    Value V = eval(E);
    // Conflicts and unknowns are reported at the use; a conflicting axis
    // then counts as unknown.
    for (const auto &[Axis, F] : V.Axes)
      if (F.isConflict())
        checkUse(V, E, Axis);
    checkUnknownUse(V, E);
    if (Mesh && !V.Open && !V.Axes.empty())
      for (const std::string &M : Mesh->Axes)
        if (!V.get(M)) {
          report(DiagKind::MeshCompleteness, E->getExprLoc(),
                 E->getSourceRange(),
                 describeExpr(E, Types) + " has no type for axis '" + M +
                     "' of the function's mesh [[spmd::mesh]]; annotate it "
                     "on every mesh axis",
                 {{Mesh->Loc, "mesh declared here", {}}});
          break;
        }
    core::TensorType Known = V.knownPart();
    std::optional<core::TensorType> T;
    if (!Known.empty() || !V.Open)
      T = Known;
    Operands.push_back(core::Operand::tensor(T, Pos));
    Sources.push_back({E, std::move(V)});
  };
  auto AddArg = [&](const Expr *A, int Pos) {
    if (isa<CXXDefaultArgExpr>(A))
      return;
    if (Types.isTensor(A->getType())) {
      AddTensor(A, Pos);
      return;
    }
    if (Types.isScalar(A->getType())) {
      Operands.push_back(core::Operand::weak_scalar(Pos));
      Sources.push_back({nullptr, Value::unknown()});
      return;
    }
    llvm::SmallVector<const Expr *, 4> Elems;
    listElements(A, Types, Elems);
    for (const Expr *E : Elems)
      AddTensor(E, Pos);
  };
  int Pos = 0;
  if (Receiver)
    AddTensor(Receiver, Pos++);
  for (const Expr *A : Args)
    AddArg(A, Pos++);

  core::OpInfo Info = core::classify_op(Name);
  if (Class) {
    Info.op_class = *Class;
    Info.known = true;
  }
  core::InferenceContext IC = inferenceContext();
  core::Result<core::TensorType> R = core::infer(Info, Operands, IC);
  Origin O{CE->getExprLoc(), OriginKind::Inferred};
  if (!R.ok()) {
    const core::TypeError &Err = R.error();
    llvm::SmallVector<PendingNote, 3> Notes;
    std::optional<PendingNote> Fix;
    if (!Err.axis.empty()) {
      // Point at where each operand's type on the failing axis came from.
      for (const OperandSource &S : Sources) {
        if (!S.E)
          continue;
        const AxisFact *F = S.V.get(Err.axis);
        if (std::optional<PerAxisType> K = F ? F->knownType() : std::nullopt)
          if (Notes.size() < 2) {
            PendingNote N = originNote(*F, *K, Err.axis);
            N.Text = describeExpr(S.E, Types) + " has " + N.Text;
            Notes.push_back(N);
          }
      }
      // A fix-it when converting one operand makes the op legal.
      for (size_t I = 0; I < Sources.size() && !Fix; ++I) {
        const OperandSource &S = Sources[I];
        std::optional<PerAxisType> K =
            S.E ? S.V.knownOn(Err.axis) : std::nullopt;
        if (!K)
          continue;
        for (PerAxisType Target : {types::R, types::V}) {
          if (Target == *K)
            continue;
          std::vector<core::Operand> Alt = Operands;
          Alt[I].type->set(Err.axis, Target);
          if (!core::infer(Info, Alt, IC).ok())
            continue;
          Fix = fixItNote(S.E, Err.axis, *K, Target);
          if (Fix)
            break;
        }
      }
    }
    if (Fix)
      Notes.push_back(*Fix);
    else if (!Err.fix.empty())
      Notes.push_back({CE->getExprLoc(), "suggestion: " + Err.fix, {}});
    report(DiagKind::OpType, CE->getExprLoc(), CE->getSourceRange(),
           Err.message, Notes);
    return Value::unknown();
  }

  // An axis is known in the result only if every tensor operand is known on
  // it (or provably lacks it): an unknown operand may carry any type.
  bool AnyOpen = false;
  Value Out = Value::of(*R, O, false);
  bool AnyTensor = false;
  for (const OperandSource &S : Sources) {
    if (!S.E)
      continue;
    AnyTensor = true;
    AnyOpen |= S.V.Open;
    for (auto &[Axis, F] : Out.Axes) {
      const AxisFact *G = S.V.get(Axis);
      if ((G && !G->knownType()) || (!G && S.V.Open))
        F = AxisFact::unknown();
    }
  }
  // A result type that an operand already had keeps that operand's origin,
  // so notes lead back to the annotation or collective behind it.
  for (auto &[Axis, F] : Out.Axes) {
    std::optional<PerAxisType> T = F.knownType();
    if (!T)
      continue;
    for (const OperandSource &S : Sources)
      if (S.E && S.V.knownOn(Axis) == T) {
        F = AxisFact::known(*T, S.V.get(Axis)->originOf(*T));
        break;
      }
  }
  Out.Open = AnyOpen || (!AnyTensor && !Mesh);

  if (InPlace && Mutated) {
    const VarDecl *VD = namedVar(Mutated, Types);
    const FieldDecl *FDecl = namedField(Mutated, Types);
    Value Before = eval(Mutated);
    core::TensorType BeforeKnown = Before.knownPart();
    std::optional<core::TensorType> BeforeT;
    if (!BeforeKnown.empty())
      BeforeT = BeforeKnown;
    core::Result<core::TensorType> After =
        core::apply_inplace(Name, BeforeT, Out.knownPart(), false);
    if (!After.ok()) {
      report(DiagKind::InPlace, CE->getExprLoc(), CE->getSourceRange(),
             After.error().full_message());
      return Before;
    }
    Value New = Out;
    if (const TypeAnnotation *A = VD      ? TU.Table.typeOf(VD)
                                  : FDecl ? TU.Table.typeOf(FDecl)
                                          : nullptr) {
      checkAgainst(New, *A, DiagKind::Assignment, CE,
                   "result of the in-place operation",
                   describeExpr(Mutated, Types) + " is declared", A->Loc);
      return Before;
    }
    if (VD && Types.isTensor(VD->getType()))
      setVar(VD, New);
    return New;
  }
  return Out;
}

void FunctionChecker::assign(const Expr *LHS, const Value &V, const Expr *RHS,
                             SourceLocation Loc, bool IsInit) {
  (void)Loc;
  (void)IsInit;
  if (const VarDecl *VD = namedVar(LHS, Types)) {
    if (const TypeAnnotation *A = TU.Table.typeOf(VD)) {
      checkAgainst(V, *A, DiagKind::Assignment, RHS,
                   "value assigned to '" + VD->getNameAsString() + "'",
                   "'" + VD->getNameAsString() + "' is declared", A->Loc);
      return;
    }
    if (Types.isTensor(VD->getType()))
      setVar(VD, V);
    return;
  }
  if (const FieldDecl *F = namedField(LHS, Types))
    if (const TypeAnnotation *A = TU.Table.typeOf(F))
      checkAgainst(V, *A, DiagKind::Assignment, RHS,
                   "value assigned to '" + F->getNameAsString() + "'",
                   "'" + F->getNameAsString() + "' is declared", A->Loc);
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

/// Reports a use of a value whose type differs between the paths that reach
/// it. Returns false when the axis is in conflict.
bool FunctionChecker::checkUse(const Value &V, const Expr *E,
                               llvm::StringRef Axis) {
  const AxisFact *F = V.get(Axis);
  if (!F || !F->isConflict())
    return true;
  const void *Key = namedVar(E, Types)
                        ? static_cast<const void *>(namedVar(E, Types))
                        : static_cast<const void *>(E);
  if (!Reporting || !ReportedConflicts.insert({Key, Axis.str()}).second)
    return false;
  auto [A, B] = F->conflictPair();
  llvm::SmallVector<PendingNote, 3> Notes;
  Notes.push_back(originNote(*F, A, Axis));
  Notes.push_back(originNote(*F, B, Axis));
  report(DiagKind::PathConflict, E->getExprLoc(), E->getSourceRange(),
         describeExpr(E, Types) + " has type " + typeStr(A) + " on axis '" +
             Axis.str() + "' on one path and " + typeStr(B) +
             " on another; make every path (branch or loop iteration) "
             "leave it with the same type",
         Notes);
  return false;
}

void FunctionChecker::checkUnknownUse(const Value &V, const Expr *E) {
  if (!TU.Opts.Strict || !V.isUnknown())
    return;
  const void *Key = namedVar(E, Types)
                        ? static_cast<const void *>(namedVar(E, Types))
                        : static_cast<const void *>(E);
  if (!Reporting || !ReportedUnknown.insert(Key).second)
    return;
  report(DiagKind::UnknownType, E->getExprLoc(), E->getSourceRange(),
         describeExpr(E, Types) +
             " has an unknown SPMD type; annotate it with [[spmd::type(...)]] "
             "or spmd::assert_type");
}

std::optional<PendingNote> FunctionChecker::fixItNote(const Expr *E,
                                                      llvm::StringRef Axis,
                                                      PerAxisType From,
                                                      PerAxisType To) {
  // V -> R/I needs the shard dim (stack vs concat), which the checker does
  // not track: no automatic fix there.
  if (From.local() == types::V && (To == types::R || To == types::I))
    return std::nullopt;
  std::optional<core::CollectiveCall> Route =
      core::route_redistribute(From.local(), To);
  if (!Route)
    return std::nullopt;
  // Routes delegate to convert with expert_mode set; offer only what user
  // code may call without it.
  Route->expert_mode = false;
  if (!core::check_arguments(*Route).ok())
    return std::nullopt;
  const SourceManager &SM = Ctx.getSourceManager();
  SourceRange R = E->getSourceRange();
  if (R.isInvalid() || R.getBegin().isMacroID() || R.getEnd().isMacroID())
    return std::nullopt;
  SourceLocation After =
      Lexer::getLocForEndOfToken(R.getEnd(), 0, SM, Ctx.getLangOpts());
  if (After.isInvalid())
    return std::nullopt;
  std::string Op = std::string("spmd::") + core::to_string(Route->op);
  std::string Tail = ", " + TU.axisSpelling(Axis) + ", " +
                     spmdTypeSpelling(Route->src) + ", " +
                     spmdTypeSpelling(Route->dst) + ")";
  PendingNote N;
  N.Loc = E->getExprLoc();
  N.Text = "insert " + Op + "(..." + Tail + " to make " +
           describeExpr(E, Types) + " " + typeStr(To) + " on axis '" +
           Axis.str() + "'";
  N.FixIts.push_back(FixItHint::CreateInsertion(R.getBegin(), Op + "("));
  N.FixIts.push_back(FixItHint::CreateInsertion(After, Tail));
  return N;
}

void FunctionChecker::checkAgainst(const Value &V, const TypeAnnotation &Want,
                                   DiagKind Kind, const Expr *E,
                                   const std::string &Subject,
                                   const std::string &Target,
                                   SourceLocation DeclLoc) {
  struct Mismatch {
    const AxisEntry *Entry;
    PerAxisType Have;
    const AxisFact *Fact;
  };
  llvm::SmallVector<Mismatch, 2> Mismatches;
  for (const AxisEntry &Entry : Want.Entries) {
    const AxisFact *F = V.get(Entry.Axis);
    if (F && F->isConflict()) {
      checkUse(V, E, Entry.Axis);
      continue;
    }
    std::optional<PerAxisType> Have = F ? F->knownType() : std::nullopt;
    if (Have && *Have != Entry.Type.local())
      Mismatches.push_back({&Entry, *Have, F});
  }
  if (Mismatches.empty()) {
    checkUnknownUse(V, E);
    return;
  }
  for (const Mismatch &M : Mismatches) {
    llvm::SmallVector<PendingNote, 3> Notes;
    Notes.push_back(originNote(*M.Fact, M.Have, M.Entry->Axis));
    Notes.push_back({DeclLoc, "declared type is " + Want.str(), {}});
    if (Mismatches.size() == 1)
      if (std::optional<PendingNote> Fix =
              fixItNote(E, M.Entry->Axis, M.Have, M.Entry->Type))
        Notes.push_back(*Fix);
    report(Kind, E->getExprLoc(), E->getSourceRange(),
           Subject + " has type " + typeStr(M.Have) + " on axis '" +
               M.Entry->Axis + "', but " + Target + " " +
               typeStr(M.Entry->Type) + " there",
           Notes);
  }
}

//===----------------------------------------------------------------------===//
// The translation unit
//===----------------------------------------------------------------------===//

/// Finds whether a function body touches anything SPMD (annotated
/// declarations, the runtime's API); bodies that do not are not analysed.
class RelevanceFinder : public RecursiveASTVisitor<RelevanceFinder> {
public:
  explicit RelevanceFinder(const AnnotationTable &T) : Table(T) {}
  bool Found = false;

  bool VisitDeclRefExpr(DeclRefExpr *E) { return check(E->getDecl()); }
  bool VisitMemberExpr(MemberExpr *E) { return check(E->getMemberDecl()); }
  bool VisitVarDecl(VarDecl *D) { return check(D); }

private:
  bool check(const ValueDecl *D) {
    if (const auto *FD = dyn_cast<FunctionDecl>(D)) {
      if ((isSpmdFunction(FD) && FD->getIdentifier() &&
           (FD->getName() == "assert_type" ||
            core::parse_collective(FD->getName()))) ||
          Table.isAnnotatedFunction(FD))
        Found = true;
    } else if (Table.typeOf(D)) {
      Found = true;
    }
    return !Found;
  }
  const AnnotationTable &Table;
};

class TUVisitor : public RecursiveASTVisitor<TUVisitor> {
public:
  TUVisitor(TUContext &TU) : TU(TU), SM(TU.Ctx.getSourceManager()) {}

  bool shouldVisitTemplateInstantiations() const { return true; }

  bool TraverseDecl(Decl *D) {
    if (D && !isa<TranslationUnitDecl>(D) && !TU.Opts.AnalyzeSystemHeaders &&
        D->getLocation().isValid() && SM.isInSystemHeader(D->getLocation()))
      return true;
    return RecursiveASTVisitor::TraverseDecl(D);
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
    ++TU.FunctionsSeen;
    if (TU.Table.isUnchecked(FD))
      return;
    if (!TU.Table.isAnnotatedFunction(FD)) {
      bool Relevant = false;
      for (const ParmVarDecl *P : FD->parameters())
        Relevant |= TU.Table.typeOf(P) != nullptr;
      if (!Relevant) {
        RelevanceFinder F(TU.Table);
        F.TraverseStmt(FD->getBody());
        if (!F.Found)
          return;
      }
    }
    ++TU.FunctionsAnalyzed;
    FunctionChecker(TU, FD).run();
  }

  TUContext &TU;
  const SourceManager &SM;
  llvm::DenseSet<const FunctionDecl *> Done;
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

unsigned checkTranslationUnit(ASTContext &Ctx, const Options &Opts,
                              DiagnosticsEngine &Diags) {
  linkAttributes();
  unsigned Count = 0;
  if (!Diags.hasFatalErrorOccurred()) {
    auto Start = std::chrono::steady_clock::now();
    const AnnotationTable &Table = AnnotationTable::get(Ctx);
    Reporter Rep(Diags, Ctx.getSourceManager(), Opts);
    TUContext TU{Ctx, Table, Opts, Rep, {}, {}};
    TUVisitor V(TU);
    V.TraverseDecl(Ctx.getTranslationUnitDecl());
    Count = Rep.flush();
    if (Opts.Stats) {
      double Ms = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - Start)
                      .count();
      llvm::errs() << "spmd-check: " << TU.FunctionsAnalyzed << " of "
                   << TU.FunctionsSeen << " function bodies analysed, "
                   << TU.Blocks << " CFG blocks, " << Count << " diagnostics, "
                   << llvm::format("%.2f", Ms) << " ms\n";
    }
  }
  AnnotationTable::release(Ctx);
  return Count;
}

std::unique_ptr<ASTConsumer> createSPMDCheckConsumer(Options Opts) {
  return std::make_unique<SPMDCheckConsumer>(std::move(Opts));
}

} // namespace spmd::plugin
