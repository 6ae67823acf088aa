//===- Layouts.cpp - layers whose types depend on a constructor flag ------===//

#include "Layouts.h"

#include "AstHelpers.h"

#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtVisitor.h"
#include "clang/Basic/Diagnostic.h"

#include <spmd/core/per_axis_type.h>

using namespace clang;

namespace spmd::plugin {

int LayoutFlags::indexOf(const FieldDecl *F) const {
  for (unsigned I = 0; I < Flags.size(); ++I)
    if (Flags[I] == F)
      return int(I);
  return -1;
}

//===----------------------------------------------------------------------===//
// Flags and the types of a layout
//===----------------------------------------------------------------------===//

/// A data member \p Name of \p RD or one of its bases.
static const FieldDecl *findField(const CXXRecordDecl *RD, llvm::StringRef Name,
                                  unsigned Depth = 0) {
  if (!RD || !RD->hasDefinition() || Depth > 8)
    return nullptr;
  RD = RD->getDefinition();
  for (const FieldDecl *F : RD->fields())
    if (F->getIdentifier() && F->getName() == Name)
      return F;
  for (const CXXBaseSpecifier &B : RD->bases())
    if (const FieldDecl *F =
            findField(B.getType()->getAsCXXRecordDecl(), Name, Depth + 1))
      return F;
  return nullptr;
}

const FieldDecl *LayoutTable::resolve(const FunctionDecl *FD,
                                      llvm::StringRef Name) const {
  const auto *MD = dyn_cast<CXXMethodDecl>(FD);
  if (!MD || MD->isStatic())
    return nullptr;
  const FieldDecl *F = findField(MD->getParent(), Name);
  return F && F->getType()->isBooleanType() ? F : nullptr;
}

const LayoutFlags &LayoutTable::flagsOf(const FunctionDecl *FD) {
  FD = FD->getCanonicalDecl();
  auto [It, New] = Flags.try_emplace(FD);
  if (!New)
    return It->second;
  LayoutFlags LF;
  auto Add = [&](llvm::ArrayRef<WhenAnnotation> Ws) {
    for (const WhenAnnotation &W : Ws)
      if (const FieldDecl *F = resolve(FD, W.Flag))
        if (LF.indexOf(F) < 0 && LF.Flags.size() < MaxFlags)
          LF.Flags.push_back(F);
  };
  Add(Table.whensOf(FD, -1));
  for (unsigned I = 0; I < FD->getNumParams(); ++I)
    Add(Table.whensOf(FD, int(I)));
  // try_emplace's iterator may have moved if resolve() recursed: look again.
  return Flags[FD] = std::move(LF);
}

static const TypeAnnotation *baseType(const AnnotationTable &T,
                                      const FunctionDecl *FD, int Param) {
  return Param < 0 ? T.resultOf(FD) : T.paramOf(FD, unsigned(Param));
}

const TypeAnnotation *LayoutTable::typeInComplete(const FunctionDecl *FD,
                                                  int Param, uint32_t Values) {
  const TypeAnnotation *Base = baseType(Table, FD, Param);
  llvm::ArrayRef<WhenAnnotation> Ws = Table.whensOf(FD, Param);
  if (Ws.empty())
    return Base;
  const LayoutFlags &LF = flagsOf(FD);
  auto Key =
      std::make_tuple((const void *)FD->getCanonicalDecl(), Param, Values, ~0u);
  auto It = Specialized.find(Key);
  if (It != Specialized.end())
    return It->second ? It->second.get() : Base;
  std::unique_ptr<TypeAnnotation> Out;
  for (const WhenAnnotation &W : Ws) {
    int K = LF.indexOf(resolve(FD, W.Flag));
    if (K < 0 || bool(Values >> K & 1) != W.Value)
      continue;
    if (!Out) {
      Out = std::make_unique<TypeAnnotation>();
      if (Base)
        *Out = *Base;
    }
    for (const AxisEntry &E : W.Type.Entries) {
      auto Old = llvm::find_if(
          Out->Entries, [&](const AxisEntry &O) { return O.Axis == E.Axis; });
      if (Old != Out->Entries.end())
        *Old = E;
      else
        Out->Entries.push_back(E);
    }
    Out->Loc = W.Type.Loc;
  }
  const TypeAnnotation *R = Out ? Out.get() : Base;
  Specialized[Key] = std::move(Out);
  return R;
}

const TypeAnnotation *LayoutTable::typeIn(const FunctionDecl *FD, int Param,
                                          const Layout &L, bool *Partial) {
  const LayoutFlags &LF = flagsOf(FD);
  unsigned N = LF.Flags.size();
  if (N == 0)
    return baseType(Table, FD, Param);
  uint32_t All = (1u << N) - 1;
  uint32_t Known = L.Known & All, Values = L.Values & Known;
  if (Known == All)
    return typeInComplete(FD, Param, Values);
  // Unknown flags: the entries every completion agrees on.
  llvm::SmallVector<const TypeAnnotation *, 16> Options;
  for (uint32_t V = 0; V <= All; ++V)
    if ((V & Known) == Values)
      Options.push_back(typeInComplete(FD, Param, V));
  bool Same = llvm::all_of(
      Options, [&](const TypeAnnotation *A) { return A == Options.front(); });
  if (Same)
    return Options.front();
  auto Key = std::make_tuple((const void *)FD->getCanonicalDecl(), Param,
                             Values, Known);
  auto It = Specialized.find(Key);
  bool Dropped = false;
  if (It == Specialized.end()) {
    auto Common = std::make_unique<TypeAnnotation>();
    if (Options.front()) {
      Common->Loc = Options.front()->Loc;
      for (const AxisEntry &E : Options.front()->Entries) {
        bool Agree = llvm::all_of(Options, [&](const TypeAnnotation *A) {
          const AxisEntry *O = A ? A->entry(E.Axis) : nullptr;
          return O && O->Type == E.Type;
        });
        if (Agree)
          Common->Entries.push_back(E);
      }
    }
    It = Specialized.emplace(Key, std::move(Common)).first;
  }
  for (const TypeAnnotation *A : Options)
    if (A && A->Entries.size() != It->second->Entries.size())
      Dropped = true;
  if (Partial)
    *Partial = Dropped;
  return It->second->Entries.empty() ? nullptr : It->second.get();
}

SourceLocation LayoutTable::whereDecided(const FunctionDecl *FD, int Param,
                                         const Layout &L,
                                         const FieldDecl **Flag, bool *Value) {
  const LayoutFlags &LF = flagsOf(FD);
  for (const WhenAnnotation &W : Table.whensOf(FD, Param)) {
    int K = LF.indexOf(resolve(FD, W.Flag));
    if (K >= 0 && (L.Known >> K & 1) && bool(L.Values >> K & 1) == W.Value) {
      if (Flag)
        *Flag = LF.Flags[K];
      if (Value)
        *Value = W.Value;
      return L.Where[K];
    }
  }
  return SourceLocation();
}

//===----------------------------------------------------------------------===//
// Conditions on flags
//===----------------------------------------------------------------------===//

/// The flag field a condition reads directly (`flag_`, `this->flag_`).
static const FieldDecl *flagRead(const Expr *E) {
  const auto *ME = dyn_cast<MemberExpr>(E->IgnoreParenImpCasts());
  if (!ME || !isa<CXXThisExpr>(ME->getBase()->IgnoreParenImpCasts()))
    return nullptr;
  return dyn_cast<FieldDecl>(ME->getMemberDecl());
}

std::optional<bool> LayoutTable::conditionIn(const FunctionDecl *FD,
                                             const Expr *Cond,
                                             const Layout &L) {
  if (!Cond)
    return std::nullopt;
  Cond = Cond->IgnoreParenImpCasts();
  if (const auto *UO = dyn_cast<UnaryOperator>(Cond)) {
    if (UO->getOpcode() != UO_LNot)
      return std::nullopt;
    if (std::optional<bool> V = conditionIn(FD, UO->getSubExpr(), L))
      return !*V;
    return std::nullopt;
  }
  if (const auto *BO = dyn_cast<BinaryOperator>(Cond)) {
    if (BO->getOpcode() != BO_EQ && BO->getOpcode() != BO_NE)
      return std::nullopt;
    const Expr *A = BO->getLHS(), *B = BO->getRHS();
    const auto *Lit = dyn_cast<CXXBoolLiteralExpr>(B->IgnoreParenImpCasts());
    if (!Lit) {
      std::swap(A, B);
      Lit = dyn_cast<CXXBoolLiteralExpr>(B->IgnoreParenImpCasts());
    }
    std::optional<bool> V = Lit ? conditionIn(FD, A, L) : std::nullopt;
    if (!V)
      return std::nullopt;
    return (*V == Lit->getValue()) == (BO->getOpcode() == BO_EQ);
  }
  const FieldDecl *F = flagRead(Cond);
  int K = F ? flagsOf(FD).indexOf(F) : -1;
  if (K < 0 || !(L.Known >> K & 1))
    return std::nullopt;
  return bool(L.Values >> K & 1);
}

//===----------------------------------------------------------------------===//
// The layout of an instance, from its construction
//===----------------------------------------------------------------------===//

/// Strips what does not change which object an expression denotes:
/// parentheses, implicit conversions, temporaries, and the holder's `->`,
/// `*`, `.get()` (a module holder or smart pointer to the layer).
static const Expr *instanceOf(const Expr *E) {
  for (unsigned I = 0; E && I < 8; ++I) {
    E = E->IgnoreParenImpCasts();
    if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(E)) {
      E = MTE->getSubExpr();
      continue;
    }
    if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E)) {
      if ((OC->getOperator() == OO_Arrow || OC->getOperator() == OO_Star) &&
          OC->getNumArgs() == 1) {
        E = OC->getArg(0);
        continue;
      }
      return E;
    }
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
      const CXXMethodDecl *MD = MC->getMethodDecl();
      if (MD && MD->getIdentifier() && MC->getNumArgs() == 0 &&
          (MD->getName() == "get" || MD->getName() == "ptr")) {
        E = MC->getImplicitObjectArgument();
        continue;
      }
      return E;
    }
    if (const auto *UO = dyn_cast<UnaryOperator>(E);
        UO && UO->getOpcode() == UO_Deref) {
      E = UO->getSubExpr();
      continue;
    }
    return E;
  }
  return E;
}

/// Strips temporaries, casts and cleanups around a constructed value.
static const Expr *peel(const Expr *E) {
  for (unsigned I = 0; E && I < 16; ++I) {
    const Expr *Next = E->IgnoreParens()->IgnoreImplicit();
    if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(Next))
      Next = FC->getSubExpr();
    else if (const auto *CE = dyn_cast<CastExpr>(Next))
      Next = CE->getSubExpr();
    else if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(Next))
      Next = BT->getSubExpr();
    else if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(Next))
      Next = MT->getSubExpr();
    if (Next == E)
      return E;
    E = Next;
  }
  return E;
}

/// Whether \p RD is a module holder or smart pointer that forwards its
/// constructor arguments to, or holds, the layer (torch::nn::ModuleHolder
/// and classes derived from it, std::shared_ptr, std::unique_ptr).
static bool isHolderClass(const CXXRecordDecl *RD, unsigned Depth = 0) {
  if (!RD || Depth > 8)
    return false;
  if (RD->getIdentifier()) {
    llvm::StringRef N = RD->getName();
    if (N == "ModuleHolder" || N == "shared_ptr" || N == "unique_ptr")
      return true;
  }
  if (!RD->hasDefinition())
    return false;
  for (const CXXBaseSpecifier &B : RD->getDefinition()->bases())
    if (isHolderClass(B.getType()->getAsCXXRecordDecl(), Depth + 1))
      return true;
  return false;
}

/// `gather_output_` <-> `gather_output`, `m_gatherOutput` <-> `gatherOutput`.
static std::string flagStem(llvm::StringRef N) {
  if (N.starts_with("m_"))
    N = N.drop_front(2);
  N = N.trim('_');
  return N.lower();
}

/// Follows a construction site (through register_module, make_shared /
/// make_unique, new and module holders) to the arguments the layer \p Impl
/// is constructed with, and the constructor when it is named there.
/// False when the site is not a construction the checker can follow.
static bool layerConstruction(const Expr *Site, const CXXRecordDecl *Impl,
                              const CXXConstructorDecl *&Ctor,
                              llvm::SmallVectorImpl<const Expr *> &Args) {
  for (unsigned Hop = 0; Hop < 8 && Site; ++Hop) {
    const Expr *E = peel(Site);
    if (const auto *CE = dyn_cast<CallExpr>(E)) {
      const FunctionDecl *F = CE->getDirectCallee();
      if (!F || !F->getIdentifier())
        return false;
      llvm::StringRef N = F->getName();
      if (N == "register_module" && CE->getNumArgs() >= 2) {
        Site = CE->getArg(CE->getNumArgs() - 1);
        continue;
      }
      if ((N == "make_shared" || N == "make_unique") && F->isInStdNamespace()) {
        Args.append(CE->arg_begin(), CE->arg_end());
        return true;
      }
      return false;
    }
    if (const auto *NE = dyn_cast<CXXNewExpr>(E)) {
      Site = NE->getConstructExpr();
      continue;
    }
    const auto *CE = dyn_cast<CXXConstructExpr>(E);
    if (!CE)
      return false;
    const CXXRecordDecl *RD = CE->getType()->getAsCXXRecordDecl();
    if (RD && RD->getCanonicalDecl() == Impl->getCanonicalDecl()) {
      Ctor = CE->getConstructor();
      Args.append(CE->arg_begin(), CE->arg_end());
      return true;
    }
    if (!isHolderClass(RD))
      return false;
    if (CE->getNumArgs() == 1) {
      const CXXRecordDecl *ArgRD =
          CE->getArg(0)->getType().getNonReferenceType()->getAsCXXRecordDecl();
      if (ArgRD && (isHolderClass(ArgRD) ||
                    ArgRD->getCanonicalDecl() == Impl->getCanonicalDecl())) {
        Site = CE->getArg(0); // a holder from a holder or a shared_ptr
        continue;
      }
      if (CE->getArg(0)->getType()->isNullPtrType())
        return false; // an empty holder
    }
    Args.append(CE->arg_begin(), CE->arg_end()); // forwarded to the layer
    return true;
  }
  return false;
}

/// The layer's constructor a holder forwards \p NumArgs arguments to: the
/// only one that takes this many, or null.
static const CXXConstructorDecl *forwardedConstructor(const CXXRecordDecl *Impl,
                                                      size_t NumArgs) {
  const CXXConstructorDecl *Ctor = nullptr;
  for (const CXXConstructorDecl *C : Impl->ctors()) {
    if (C->isCopyOrMoveConstructor() || C->isDeleted())
      continue;
    if (NumArgs > C->getNumParams() || NumArgs < C->getMinRequiredArguments())
      continue;
    if (Ctor)
      return nullptr; // ambiguous
    Ctor = C;
  }
  return Ctor;
}

/// The constant \p E evaluates to as a condition, with its location.
static std::optional<bool> constantFlag(const Expr *E, ASTContext &Ctx,
                                        SourceLocation &Where) {
  bool B;
  if (E)
    Where = E->getExprLoc(); // also for a non-constant one (the report)
  if (!E || E->isValueDependent() || !E->EvaluateAsBooleanCondition(B, Ctx))
    return std::nullopt;
  return B;
}

std::optional<bool> LayoutTable::flagAtConstruction(const Expr *Site,
                                                    const CXXRecordDecl *Impl,
                                                    const FieldDecl *Flag,
                                                    SourceLocation &Where) {
  const CXXConstructorDecl *Ctor = nullptr;
  llvm::SmallVector<const Expr *, 8> Args;
  if (!layerConstruction(Site, Impl, Ctor, Args) || (Args.empty() && !Ctor))
    return std::nullopt;
  if (!Ctor && !(Ctor = forwardedConstructor(Impl, Args.size())))
    return std::nullopt;
  // What the constructor stores in the flag: its member initializer when
  // the definition is visible, else the parameter named like the flag.
  const Expr *Stored = nullptr;
  const FunctionDecl *Def = nullptr;
  if (Ctor->hasBody(Def))
    for (const CXXCtorInitializer *Init :
         cast<CXXConstructorDecl>(Def)->inits())
      if (Init->getMember() == Flag && Init->isWritten())
        Stored = Init->getInit();
  const ParmVarDecl *Param = nullptr;
  if (Stored) {
    const auto *DRE = dyn_cast<DeclRefExpr>(peel(Stored));
    Param = DRE ? dyn_cast<ParmVarDecl>(DRE->getDecl()) : nullptr;
    if (!Param)
      return constantFlag(Stored, Ctx, Where);
  } else if (!Def) {
    std::string Stem = flagStem(Flag->getName());
    for (const ParmVarDecl *P : Ctor->parameters())
      if (P->getIdentifier() && flagStem(P->getName()) == Stem &&
          P->getType()->isBooleanType())
        Param = P;
  }
  if (!Param)
    return std::nullopt;
  // The argument for that parameter, or its default.
  unsigned J = Param->getFunctionScopeIndex();
  const Expr *Arg = J < Args.size() ? Args[J] : nullptr;
  if (Arg && isa<CXXDefaultArgExpr>(Arg))
    Arg = nullptr;
  if (!Arg && J < Ctor->getNumParams())
    Arg = Ctor->getParamDecl(J)->getDefaultArg();
  return constantFlag(Arg, Ctx, Where);
}

namespace {
/// Assignments `member = e` in a constructor body.
struct AssignmentFinder : ConstStmtVisitor<AssignmentFinder> {
  const FieldDecl *Member;
  llvm::SmallVectorImpl<const Expr *> &Out;
  AssignmentFinder(const FieldDecl *M, llvm::SmallVectorImpl<const Expr *> &O)
      : Member(M), Out(O) {}
  bool isMember(const Expr *E) const { return flagRead(E) == Member; }
  void VisitStmt(const Stmt *S) {
    for (const Stmt *C : S->children())
      if (C)
        Visit(C);
  }
  void VisitCXXOperatorCallExpr(const CXXOperatorCallExpr *E) {
    if (E->getOperator() == OO_Equal && E->getNumArgs() == 2 &&
        isMember(E->getArg(0)))
      Out.push_back(E->getArg(1));
    VisitStmt(E);
  }
  void VisitBinaryOperator(const BinaryOperator *E) {
    if (E->getOpcode() == BO_Assign && isMember(E->getLHS()))
      Out.push_back(E->getRHS());
    VisitStmt(E);
  }
};
} // namespace

void LayoutTable::constructionSites(const FieldDecl *Member,
                                    llvm::SmallVectorImpl<const Expr *> &Out) {
  const auto *RD = dyn_cast<CXXRecordDecl>(Member->getParent());
  if (!RD)
    return;
  for (const CXXConstructorDecl *C : RD->ctors()) {
    const FunctionDecl *Def = nullptr;
    if (C->isCopyOrMoveConstructor() || !C->hasBody(Def))
      continue;
    const auto *CD = cast<CXXConstructorDecl>(Def);
    for (const CXXCtorInitializer *Init : CD->inits())
      if (Init->getMember() == Member && Init->isWritten())
        Out.push_back(Init->getInit());
    if (CD->getBody())
      AssignmentFinder(Member, Out).Visit(CD->getBody());
  }
}

const ValueDecl *LayoutTable::instanceDecl(const Expr *Instance) const {
  const Expr *E = instanceOf(Instance);
  if (const auto *ME = dyn_cast_or_null<MemberExpr>(E))
    return dyn_cast<FieldDecl>(ME->getMemberDecl());
  if (const auto *DRE = dyn_cast_or_null<DeclRefExpr>(E))
    return dyn_cast<VarDecl>(DRE->getDecl());
  return nullptr;
}

Layout LayoutTable::layoutOfInstance(const FunctionDecl *FD,
                                     const Expr *Instance,
                                     const FunctionDecl *CurrentFD,
                                     const Layout *Current) {
  Layout L;
  const LayoutFlags &LF = flagsOf(FD);
  const auto *MD = dyn_cast<CXXMethodDecl>(FD);
  if (LF.Flags.empty() || !MD || !Instance)
    return L;
  const Expr *E = instanceOf(Instance);
  if (!E)
    return L;
  if (isa<CXXThisExpr>(E)) {
    if (!Current || !CurrentFD)
      return L;
    const LayoutFlags &Mine = flagsOf(CurrentFD);
    for (unsigned I = 0; I < LF.Flags.size(); ++I) {
      int K = Mine.indexOf(LF.Flags[I]);
      if (K >= 0 && (Current->Known >> K & 1)) {
        L.Known |= 1u << I;
        if (Current->Values >> K & 1)
          L.Values |= 1u << I;
      }
    }
    return L;
  }
  llvm::SmallVector<const Expr *, 2> Sites;
  if (const auto *ME = dyn_cast<MemberExpr>(E)) {
    const auto *F = dyn_cast<FieldDecl>(ME->getMemberDecl());
    if (!F || !isa<CXXThisExpr>(ME->getBase()->IgnoreParenImpCasts()))
      return L;
    constructionSites(F, Sites);
  } else if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    const auto *VD = dyn_cast<VarDecl>(DRE->getDecl());
    if (!VD || !VD->isLocalVarDecl() || isa<ParmVarDecl>(VD) ||
        VD->getType()->isReferenceType() || !VD->getInit())
      return L;
    Sites.push_back(VD->getInit());
  }
  if (Sites.empty())
    return L;
  const CXXRecordDecl *Impl = MD->getParent();
  for (unsigned I = 0; I < LF.Flags.size(); ++I) {
    std::optional<bool> Agreed;
    SourceLocation FirstWhere;
    bool OK = true;
    for (const Expr *S : Sites) {
      SourceLocation Where;
      std::optional<bool> V = flagAtConstruction(S, Impl, LF.Flags[I], Where);
      if (!V || (Agreed && *Agreed != *V)) {
        // A non-constant argument: where it is, for the report (Known
        // stays unset, so nothing reads it as a decision).
        if (!V && Sites.size() == 1)
          L.Where[I] = Where;
        OK = false;
        break;
      }
      if (!Agreed)
        FirstWhere = Where;
      Agreed = V;
    }
    if (!OK || !Agreed)
      continue;
    L.Known |= 1u << I;
    if (*Agreed)
      L.Values |= 1u << I;
    L.Where[I] = FirstWhere;
  }
  return L;
}

//===----------------------------------------------------------------------===//
// Checks at the end of the translation unit
//===----------------------------------------------------------------------===//

/// Types as the user wrote them (`bool`, not `_Bool`).
static PrintingPolicy printing(const ASTContext &Ctx) {
  PrintingPolicy PP = Ctx.getPrintingPolicy();
  PP.Bool = true;
  return PP;
}

static bool sameType(const TypeAnnotation &A, const TypeAnnotation &B) {
  if (A.Entries.size() != B.Entries.size())
    return false;
  for (const AxisEntry &E : A.Entries) {
    const AxisEntry *O = B.entry(E.Axis);
    if (!O || O->Type != E.Type)
      return false;
  }
  return true;
}

namespace {

/// Custom diagnostics of the annotations' own checks (not analysis
/// diagnostics: these are about how an annotation is written).
DiagnosticBuilder report(DiagnosticsEngine &DE, DiagnosticIDs::Level L,
                         SourceLocation Loc, const char *Fmt) {
  return DE.Report(Loc, DE.getDiagnosticIDs()->getCustomDiagID(L, Fmt));
}
DiagnosticBuilder error(DiagnosticsEngine &DE, SourceLocation Loc,
                        const char *Fmt) {
  return report(DE, DiagnosticIDs::Error, Loc, Fmt);
}
DiagnosticBuilder note(DiagnosticsEngine &DE, SourceLocation Loc,
                       const char *Fmt) {
  return report(DE, DiagnosticIDs::Note, Loc, Fmt);
}
/// A warning, or an error under -Werror (custom diagnostics are not
/// remapped by -W flags in Clang 19).
DiagnosticBuilder warning(DiagnosticsEngine &DE, SourceLocation Loc,
                          const char *Fmt) {
  return report(DE,
                DE.getWarningsAsErrors() ? DiagnosticIDs::Error
                                         : DiagnosticIDs::Warning,
                Loc, Fmt);
}

/// The function an annotated declaration belongs to (itself, or the
/// function of a parameter).
const FunctionDecl *functionOf(const Decl *D) {
  if (const auto *FD = dyn_cast<FunctionDecl>(D))
    return FD;
  if (const auto *P = dyn_cast<ParmVarDecl>(D))
    return dyn_cast<FunctionDecl>(P->getDeclContext());
  return nullptr;
}

/// The parameter index of an annotated declaration, -1 for a function.
int paramIndexOf(const Decl *D) {
  if (const auto *P = dyn_cast<ParmVarDecl>(D))
    return int(P->getFunctionScopeIndex());
  return -1;
}

/// "result" or "parameter 'x'" (or "parameter #2" when it has no name).
std::string slotName(const FunctionDecl *FD, int Param) {
  if (Param < 0)
    return "result";
  const ParmVarDecl *P = FD->getParamDecl(Param);
  return "parameter " + (P->getIdentifier() ? "'" + P->getName().str() + "'"
                                            : "#" + std::to_string(Param + 1));
}

} // namespace

void LayoutTable::validate(DiagnosticsEngine &DE) {
  validateWhenPlacement(DE);
  validateFlagCounts(DE);
  validateOverrides(DE);
  // Warnings: annotations that can have no effect, and redeclarations that
  // disagree.
  if (DE.getIgnoreAllWarnings())
    return;
  warnUntracked(DE);
  warnRedeclarations(DE);
}

/// [[spmd::when]] / [[spmd::unless]]: on a method, naming a bool member.
void LayoutTable::validateWhenPlacement(DiagnosticsEngine &DE) {
  for (const Decl *D : Table.whenDecls()) {
    const FunctionDecl *FD = functionOf(D);
    int Param = paramIndexOf(D);
    if (!FD || FD->isDependentContext())
      continue;
    // The annotations of this very declaration.
    llvm::ArrayRef<WhenAnnotation> Ws;
    for (const FunctionDecl *R : FD->redecls()) {
      const Decl *Owner = Param < 0 ? (const Decl *)R
                          : unsigned(Param) < R->getNumParams()
                              ? (const Decl *)R->getParamDecl(Param)
                              : nullptr;
      if (Owner == D)
        Ws = Table.whensOf(R, Param);
    }
    const auto *MD = dyn_cast<CXXMethodDecl>(FD);
    for (const WhenAnnotation &W : Ws) {
      const char *Attr = W.Value ? "spmd::when" : "spmd::unless";
      if (!MD || MD->isStatic()) {
        error(DE, W.Type.Loc,
              "'%0' applies to non-static methods (the flag is a "
              "data member of the instance), but '%1' is not one")
            << Attr << FD->getQualifiedNameAsString();
        continue;
      }
      if (resolve(FD, W.Flag))
        continue;
      const FieldDecl *Any = findField(MD->getParent(), W.Flag);
      error(DE, W.FlagLoc,
            "'%0' names '%1', which is not a bool data member of "
            "'%2'%3")
          << Attr << W.Flag << MD->getParent()->getName()
          << (Any ? " (it has type '" +
                        Any->getType().getAsString(printing(Ctx)) + "')"
                  : std::string());
    }
  }
}

/// At most MaxFlags layout flags per method.
void LayoutTable::validateFlagCounts(DiagnosticsEngine &DE) {
  for (const auto &Entry : Flags) {
    const FunctionDecl *FD = Entry.first;
    llvm::SmallVector<const FieldDecl *, 8> All;
    auto Count = [&](llvm::ArrayRef<WhenAnnotation> Ws) {
      for (const WhenAnnotation &W : Ws)
        if (const FieldDecl *F = resolve(FD, W.Flag))
          if (!llvm::is_contained(All, F))
            All.push_back(F);
    };
    Count(Table.whensOf(FD, -1));
    for (unsigned I = 0; I < FD->getNumParams(); ++I)
      Count(Table.whensOf(FD, int(I)));
    if (All.size() > MaxFlags)
      error(DE, FD->getLocation(),
            "'%0' depends on %1 layout flags; at most %2 "
            "are supported (its body is checked once per "
            "combination); the others are ignored")
          << FD->getQualifiedNameAsString() << unsigned(All.size()) << MaxFlags;
  }
}

/// An override keeps the types of the method it overrides.
void LayoutTable::validateOverrides(DiagnosticsEngine &DE) {
  for (const Decl *D : Table.typedDecls()) {
    const auto *MD = dyn_cast_or_null<CXXMethodDecl>(functionOf(D));
    const TypeAnnotation *Own = Table.ownType(D);
    if (!MD || !Own || MD->size_overridden_methods() == 0)
      continue;
    int Param = paramIndexOf(D);
    for (const CXXMethodDecl *O : MD->overridden_methods()) {
      const TypeAnnotation *Base = baseType(Table, O, Param);
      if (!Base || sameType(*Own, *Base))
        continue;
      error(DE, Own->Loc,
            "the %0 of '%1' is declared %2, but the method it "
            "overrides, '%3', declares %4; an override must keep "
            "the types of the method it overrides (callers through "
            "the base class use those)")
          << slotName(MD, Param) << MD->getQualifiedNameAsString() << Own->str()
          << O->getQualifiedNameAsString() << Base->str();
      note(DE, Base->Loc, "'%0' declares %1 here")
          << O->getQualifiedNameAsString() << Base->str();
    }
  }
}

/// An annotation that can have no effect: on a value the analysis does not
/// track (not a tensor or a container of tensors).
void LayoutTable::warnUntracked(DiagnosticsEngine &DE) {
  for (const Decl *D : Table.typedDecls()) {
    const TypeAnnotation *Own = Table.ownType(D);
    QualType T;
    std::string Name;
    if (const auto *FD = dyn_cast<FunctionDecl>(D)) {
      T = FD->getReturnType();
      Name = "the result of '" + FD->getNameAsString() + "'";
    } else if (const auto *VD = dyn_cast<ValueDecl>(D)) {
      T = VD->getType();
      Name = "'" + VD->getNameAsString() + "'";
    }
    if (!Own || T.isNull() || T->isDependentType() ||
        T->isUndeducedAutoType() || T->isVoidType() || D->isTemplated() ||
        Types.isTracked(T.getNonReferenceType()))
      continue;
    if (const auto *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
        RD && !RD->hasDefinition())
      continue;
    warning(DE, Own->Loc,
            "'spmd::type' on %0 has no effect: its type '%1' is not a "
            "tensor or a container of tensors, which is all the checker "
            "tracks; remove the annotation")
        << Name << T.getAsString(printing(Ctx));
  }
}

/// Redeclarations of a function that annotate its result or a parameter
/// differently: which one a call sees depends on the declaration it names.
void LayoutTable::warnRedeclarations(DiagnosticsEngine &DE) {
  for (const Decl *D : Table.typedDecls()) {
    const FunctionDecl *FD = functionOf(D);
    const TypeAnnotation *Own = Table.ownType(D);
    if (!FD || !Own)
      continue;
    int Param = paramIndexOf(D);
    for (const FunctionDecl *Prev = FD->getPreviousDecl(); Prev;
         Prev = Prev->getPreviousDecl()) {
      if (Param >= int(Prev->getNumParams()))
        break;
      const TypeAnnotation *Earlier =
          Table.ownType(Param < 0 ? static_cast<const Decl *>(Prev)
                                  : Prev->getParamDecl(Param));
      if (!Earlier)
        continue;
      if (!sameType(*Own, *Earlier)) {
        std::string What =
            Param < 0 ? std::string("the result") : slotName(FD, Param);
        warning(DE, Own->Loc,
                "'spmd::type' on %0 of '%1' is %2 here but %3 on an "
                "earlier declaration; which one a call uses depends on "
                "the declaration it sees: make them agree, or annotate "
                "one declaration only")
            << What << FD->getQualifiedNameAsString() << Own->str()
            << Earlier->str();
        note(DE, Earlier->Loc, "earlier annotation is here");
      }
      break; // the earlier one was compared with its own predecessors
    }
  }
}

} // namespace spmd::plugin
