//===- AstHelpers.cpp - how the analysis reads C++ expressions ------------===//

#include "AstHelpers.h"

#include "clang/AST/ExprCXX.h"

using namespace clang;

namespace spmd::plugin {

bool isInTopNamespace(const Decl *D, llvm::StringRef Name) {
  const DeclContext *DC = D->getDeclContext();
  const NamespaceDecl *Top = nullptr;
  for (; DC && !DC->isTranslationUnit(); DC = DC->getParent())
    if (const auto *NS = dyn_cast<NamespaceDecl>(DC))
      if (!NS->isInline())
        Top = NS;
  return Top && Top->getIdentifier() && Top->getName() == Name;
}

bool isSpmdFunction(const FunctionDecl *FD) {
  const auto *NS = dyn_cast<NamespaceDecl>(FD->getDeclContext());
  return NS && NS->getIdentifier() && NS->getName() == "spmd" &&
         NS->getParent()->getRedeclContext()->isTranslationUnit();
}

bool TypeClassifier::isTensor(QualType T) {
  if (T.isNull())
    return false;
  const CXXRecordDecl *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  return RD && isTensorRecord(RD);
}

bool TypeClassifier::isScalar(QualType T) {
  if (T.isNull())
    return false;
  T = T.getNonReferenceType();
  if (T->isArithmeticType() && !T->isBooleanType())
    return true;
  const CXXRecordDecl *RD = T->getAsCXXRecordDecl();
  return RD && RD->getIdentifier() && RD->getName() == "Scalar" &&
         isInTopNamespace(RD, "c10");
}

bool TypeClassifier::isTensorRecord(const CXXRecordDecl *RD) {
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

/// One step of skipTransparent: \p E itself when nothing can be stripped.
static const Expr *stripOne(const Expr *E, TypeClassifier &Types) {
  E = E->IgnoreParens();
  if (const auto *FE = dyn_cast<FullExpr>(E))
    return FE->getSubExpr();
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(E))
    return ICE->getSubExpr();
  if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(E))
    return MTE->getSubExpr();
  if (const auto *BTE = dyn_cast<CXXBindTemporaryExpr>(E))
    return BTE->getSubExpr();
  if (const auto *CE = dyn_cast<CXXConstructExpr>(E)) {
    if (CE->getNumArgs() >= 1 &&
        CE->getConstructor()->isCopyOrMoveConstructor() &&
        Types.isTensor(CE->getType()))
      return CE->getArg(0);
    return E;
  }
  if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(E)) {
    if (Types.isTensor(FC->getType()) &&
        Types.isTensor(FC->getSubExpr()->getType()))
      return FC->getSubExpr();
    return E;
  }
  if (const auto *SC = dyn_cast<CXXStaticCastExpr>(E)) {
    // std::move is a call; static_cast<Tensor&&>(x) is this.
    if (Types.isTensor(SC->getType()) &&
        Types.isTensor(SC->getSubExpr()->getType()))
      return SC->getSubExpr();
    return E;
  }
  if (const auto *Call = dyn_cast<CallExpr>(E))
    if (const FunctionDecl *FD = Call->getDirectCallee())
      if (FD->isInStdNamespace() && FD->getIdentifier() &&
          (FD->getName() == "move" || FD->getName() == "forward") &&
          Call->getNumArgs() == 1)
        return Call->getArg(0);
  return E;
}

const Expr *skipTransparent(const Expr *E, TypeClassifier &Types) {
  while (E) {
    const Expr *Next = stripOne(E, Types);
    if (Next == E)
      break;
    E = Next;
  }
  return E;
}

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

const Expr *skipBraceWrappers(const Expr *E) {
  const Expr *L = E->IgnoreParenImpCasts();
  while (true) {
    if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(L))
      L = MTE->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *BTE = dyn_cast<CXXBindTemporaryExpr>(L))
      L = BTE->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *SIL = dyn_cast<CXXStdInitializerListExpr>(L))
      L = SIL->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(L))
      L = FC->getSubExpr()->IgnoreParenImpCasts();
    else if (const auto *FE = dyn_cast<FullExpr>(L))
      L = FE->getSubExpr()->IgnoreParenImpCasts();
    else
      break;
  }
  return L;
}

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

bool isEditableRange(const Expr *E) {
  SourceRange R = E->getSourceRange();
  return R.isValid() && !R.getBegin().isMacroID() && !R.getEnd().isMacroID();
}

} // namespace spmd::plugin
