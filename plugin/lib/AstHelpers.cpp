//===- AstHelpers.cpp - how the analysis reads C++ expressions ------------===//

#include "AstHelpers.h"
#include "spmd/plugin/Annotations.h"

#include "clang/AST/ExprCXX.h"

using namespace clang;

namespace spmd::plugin {

llvm::StringRef topNamespaceName(const Decl *D) {
  const DeclContext *DC = D->getDeclContext();
  const NamespaceDecl *Top = nullptr;
  for (; DC && !DC->isTranslationUnit(); DC = DC->getParent())
    if (const auto *NS = dyn_cast<NamespaceDecl>(DC))
      if (!NS->isInline())
        Top = NS;
  return Top && Top->getIdentifier() ? Top->getName() : llvm::StringRef();
}

bool isInTopNamespace(const Decl *D, llvm::StringRef Name) {
  return !Name.empty() && topNamespaceName(D) == Name;
}

bool isInTorchNamespace(const Decl *D) {
  llvm::StringRef NS = topNamespaceName(D);
  return NS == "at" || NS == "torch";
}

bool isLibraryNamespaceName(llvm::StringRef NS) {
  return NS == "std" || NS == "c10" || NS == "at" || NS == "torch" ||
         NS == "spmd";
}

bool isInLibraryNamespace(const Decl *D) {
  return isLibraryNamespaceName(topNamespaceName(D));
}

bool isModuleRegistration(const FunctionDecl *FD) {
  if (!FD || !FD->getIdentifier() || !isInTorchNamespace(FD))
    return false;
  return FD->getName() == "register_parameter" ||
         FD->getName() == "register_buffer";
}

bool isSpmdFunction(const FunctionDecl *FD) {
  const auto *NS = dyn_cast<NamespaceDecl>(FD->getDeclContext());
  return NS && NS->getIdentifier() && NS->getName() == "spmd" &&
         NS->getParent()->getRedeclContext()->isTranslationUnit();
}

unsigned numWrittenArgs(const CallExpr *CE) {
  unsigned N = CE->getNumArgs();
  while (N > 0 && isa<CXXDefaultArgExpr>(CE->getArg(N - 1)))
    --N;
  return N;
}

bool TypeClassifier::isTensor(QualType T) {
  if (T.isNull())
    return false;
  // Asked for the same few types again and again: cached per Type node
  // (qualifiers do not matter), the latest one in front of the map (it
  // always holds what the map holds for its type).
  if (T.getTypePtr() == LastType)
    return LastIsTensor;
  auto [It, New] = TypeCache.try_emplace(T.getTypePtr(), false);
  if (!New) {
    LastType = T.getTypePtr();
    return LastIsTensor = It->second;
  }
  const CXXRecordDecl *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  bool R = RD && isTensorRecord(RD);
  TypeCache[T.getTypePtr()] = R; // isTensorRecord (bases) may grow the map
  LastType = T.getTypePtr();
  return LastIsTensor = R;
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

/// The class templates whose specialisations hold tensors as elements.
static bool isContainerTemplateName(const CXXRecordDecl *RD, bool &Optional) {
  if (!RD->getIdentifier())
    return false;
  llvm::StringRef N = RD->getName();
  Optional = N == "optional";
  if (RD->isInStdNamespace())
    return N == "optional" || N == "vector" || N == "array" || N == "tuple" ||
           N == "pair" || N == "initializer_list";
  return isInTopNamespace(RD, "c10") && (N == "optional" || N == "ArrayRef");
}

bool TypeClassifier::isContainerRecord(const CXXRecordDecl *RD) {
  RD = RD->getCanonicalDecl();
  auto It = ContainerCache.find(RD);
  if (It != ContainerCache.end())
    return It->second;
  ContainerCache[RD] = false; // breaks cycles
  ++ClassifyingContainers;
  bool R = false;
  bool Optional = false;
  if (const auto *Spec = dyn_cast<ClassTemplateSpecializationDecl>(RD);
      Spec && isContainerTemplateName(RD, Optional)) {
    unsigned Types = 0;
    R = true;
    for (const TemplateArgument &A : Spec->getTemplateArgs().asArray()) {
      if (A.getKind() == TemplateArgument::Pack) {
        for (const TemplateArgument &P : A.pack_elements()) {
          R &=
              P.getKind() == TemplateArgument::Type && isTracked(P.getAsType());
          ++Types;
        }
        continue;
      }
      if (A.getKind() != TemplateArgument::Type)
        continue; // std::array's size
      const CXXRecordDecl *Arg = A.getAsType()->getAsCXXRecordDecl();
      if (Arg && Arg->getIdentifier() && Arg->getName() == "allocator")
        continue; // std::vector's allocator
      R &= isTracked(A.getAsType());
      ++Types;
    }
    R &= Types > 0;
  }
  --ClassifyingContainers;
  ContainerCache[RD] = R;
  return R;
}

bool TypeClassifier::isTensorContainer(QualType T) {
  if (T.isNull())
    return false;
  // Asked for the same few types again and again: cached per Type node, but
  // only answers that isContainerRecord finished (inside its computation a
  // record being classified reads as false to break cycles).
  if (auto It = ContainerTypeCache.find(T.getTypePtr());
      It != ContainerTypeCache.end())
    return It->second;
  const CXXRecordDecl *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  bool R = RD && isContainerRecord(RD);
  if (!ClassifyingContainers)
    ContainerTypeCache[T.getTypePtr()] = R;
  return R;
}

bool TypeClassifier::isOptionalTensor(QualType T) {
  if (!isTensorContainer(T))
    return false;
  const CXXRecordDecl *RD = T.getNonReferenceType()->getAsCXXRecordDecl();
  bool Optional = false;
  return isContainerTemplateName(RD, Optional) && Optional;
}

bool isEmptyOptional(const Expr *E, TypeClassifier &Types) {
  if (isa<CXXDefaultArgExpr>(E))
    return true;
  const Expr *L = skipBraceWrappers(E);
  if (const auto *ILE = dyn_cast<InitListExpr>(L))
    return ILE->getNumInits() == 0;
  if (const auto *CE = dyn_cast<CXXConstructExpr>(L)) {
    if (!Types.isOptionalTensor(CE->getType()))
      return false;
    if (CE->getNumArgs() == 0)
      return true;
    if (CE->getNumArgs() == 1 && !Types.isTracked(CE->getArg(0)->getType()))
      return true; // from nullopt
    if (CE->getNumArgs() == 1 && isa<CXXDefaultArgExpr>(CE->getArg(0)))
      return true;
  }
  return false;
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
        Types.isTracked(CE->getType()))
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
    if (Types.isTracked(SC->getType()) &&
        Types.isTracked(SC->getSubExpr()->getType()))
      return SC->getSubExpr();
    return E;
  }
  // The cheap tests first: most calls are ops, not std::move.
  if (const auto *Call = dyn_cast<CallExpr>(E))
    if (Call->getNumArgs() == 1)
      if (const FunctionDecl *FD = Call->getDirectCallee())
        if (FD->getIdentifier() &&
            (FD->getName() == "move" || FD->getName() == "forward") &&
            FD->isInStdNamespace())
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
  if (const auto *DRE = dyn_cast_or_null<DeclRefExpr>(E)) {
    // A structured binding of a tuple-like value is its holding variable
    // (`auto [q, k] = f(); k = g(k);` assigns the binding).
    if (const auto *BD = dyn_cast<BindingDecl>(DRE->getDecl()))
      return BD->getHoldingVar();
    return dyn_cast<VarDecl>(DRE->getDecl());
  }
  return nullptr;
}

const BindingDecl *namedBinding(const Expr *E, TypeClassifier &Types) {
  const auto *DRE = dyn_cast_or_null<DeclRefExpr>(skipTransparent(E, Types));
  return DRE ? dyn_cast<BindingDecl>(DRE->getDecl()) : nullptr;
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
    for (const Expr *I : ILE->inits()) {
      if (Types.isTensor(I->getType())) {
        Out.push_back(I);
        continue;
      }
      // A subscript made from a tensor (`x.index_put_({mask}, 0)`: an
      // at::indexing::TensorIndex).
      const auto *C = dyn_cast<CXXConstructExpr>(I->IgnoreParenImpCasts());
      const CXXRecordDecl *RD =
          C ? C->getType()->getAsCXXRecordDecl() : nullptr;
      if (RD && RD->getIdentifier() && RD->getName() == "TensorIndex" &&
          C->getNumArgs() == 1 && Types.isTensor(C->getArg(0)->getType()))
        Out.push_back(C->getArg(0));
    }
}

const Expr *seeThroughOptional(const Expr *E, TypeClassifier &Types) {
  const Expr *S = skipTransparent(E, Types);
  if (const auto *CE = dyn_cast<CXXConstructExpr>(S))
    if (Types.isOptionalTensor(CE->getType()) && CE->getNumArgs() == 1 &&
        Types.isTracked(CE->getArg(0)->getType()))
      return CE->getArg(0);
  return E;
}

const CallExpr *forwardedCall(const FunctionDecl *FD, TypeClassifier &Types) {
  const FunctionDecl *Def = nullptr;
  if (!FD || !FD->hasBody(Def) || !Def)
    return nullptr;
  const auto *Body = dyn_cast_or_null<CompoundStmt>(Def->getBody());
  if (!Body || Body->size() != 1)
    return nullptr;
  const Stmt *S = Body->body_front();
  const Expr *E = nullptr;
  if (const auto *RS = dyn_cast<ReturnStmt>(S))
    E = RS->getRetValue();
  else
    E = dyn_cast<Expr>(S);
  if (!E)
    return nullptr;
  return dyn_cast<CallExpr>(skipTransparent(E, Types));
}

void argumentsByParameter(const Expr *Call, const FunctionDecl *Callee,
                          llvm::SmallVectorImpl<const Expr *> &Out) {
  Out.clear();
  llvm::ArrayRef<const Expr *> Args;
  if (const auto *CE = dyn_cast<CallExpr>(Call))
    Args = llvm::ArrayRef(CE->getArgs(), CE->getNumArgs());
  else if (const auto *CCE = dyn_cast<CXXConstructExpr>(Call))
    Args = llvm::ArrayRef(CCE->getArgs(), CCE->getNumArgs());
  if (!Callee)
    return;
  // Only an operator call passes the object of an implicit-object or static
  // member as an argument; an explicit object parameter (`this Self&`) takes
  // it as parameter 0 in every form.
  const auto *MD = dyn_cast<CXXMethodDecl>(Callee);
  if (MD && isa<CXXOperatorCallExpr>(Call) &&
      !MD->isExplicitObjectMemberFunction() && !Args.empty())
    Args = Args.drop_front();
  Args = Args.take_front(Callee->getNumParams());
  Out.append(Args.begin(), Args.end());
}

bool isEditableRange(const Expr *E) {
  SourceRange R = E->getSourceRange();
  return R.isValid() && !R.getBegin().isMacroID() && !R.getEnd().isMacroID();
}

/// The object \p E refers to, with dereferences, address-ofs, smart
/// pointers' `->` / `*` / `.get()`, parentheses and casts taken off.
static const Expr *groupObject(const Expr *E) {
  for (unsigned I = 0; E && I < 8; ++I) {
    E = E->IgnoreParenCasts();
    if (const auto *UO = dyn_cast<UnaryOperator>(E);
        UO && (UO->getOpcode() == UO_Deref || UO->getOpcode() == UO_AddrOf)) {
      E = UO->getSubExpr();
      continue;
    }
    if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(E);
        Op && (Op->getOperator() == OO_Arrow || Op->getOperator() == OO_Star) &&
        Op->getNumArgs() == 1) {
      E = Op->getArg(0);
      continue;
    }
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
      const CXXMethodDecl *MD = MC->getMethodDecl();
      if (MD && MD->getIdentifier() && MD->getName() == "get" &&
          MC->getNumArgs() == 0) {
        E = MC->getImplicitObjectArgument();
        continue;
      }
    }
    if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(E)) {
      E = MTE->getSubExpr();
      continue;
    }
    if (const auto *CE = dyn_cast<CXXConstructExpr>(E);
        CE && CE->getNumArgs() == 1 &&
        CE->getConstructor()->isCopyOrMoveConstructor()) {
      E = CE->getArg(0);
      continue;
    }
    break;
  }
  return E;
}

const std::string *groupAxisOf(const Expr *E, const AnnotationTable &Table,
                               unsigned Depth) {
  E = groupObject(E);
  if (!E || Depth > 2)
    return nullptr;
  if (const auto *ME = dyn_cast<MemberExpr>(E))
    return Table.axisGroupOf(dyn_cast<FieldDecl>(ME->getMemberDecl()));
  const auto *DRE = dyn_cast<DeclRefExpr>(E);
  const auto *VD = DRE ? dyn_cast<VarDecl>(DRE->getDecl()) : nullptr;
  if (!VD)
    return nullptr;
  if (const std::string *A = Table.axisGroupOf(VD))
    return A;
  // A local alias of a bound group (a reference, a pointer or a copy of a
  // smart pointer), never reassigned in practice: the group it was
  // initialised from.
  if (VD->isLocalVarDecl() && !isa<ParmVarDecl>(VD) && VD->getInit() &&
      (VD->getType()->isReferenceType() || VD->getType()->isPointerType() ||
       VD->getType().isConstQualified() || VD->getType()->isRecordType()))
    return groupAxisOf(VD->getInit(), Table, Depth + 1);
  return nullptr;
}

GroupQuery groupQueryKind(llvm::StringRef Name) {
  if (Name == "size" || Name == "getSize" || Name == "get_size" ||
      Name == "world_size" || Name == "worldSize" || Name == "getWorldSize" ||
      Name == "get_world_size" || Name == "num_ranks" || Name == "nranks")
    return GroupQuery::Size;
  if (Name == "rank" || Name == "getRank" || Name == "get_rank" ||
      Name == "local_rank" || Name == "getLocalRank")
    return GroupQuery::Rank;
  return GroupQuery::None;
}

const std::string *groupQueryAxis(const Expr *E, const AnnotationTable &Table,
                                  GroupQuery Q) {
  if (!E || Q == GroupQuery::None)
    return nullptr;
  E = E->IgnoreParenCasts();
  auto Held = [&](const ValueDecl *D) {
    return Q == GroupQuery::Size ? Table.axisSizeOfVar(D)
                                 : Table.axisRankOfVar(D);
  };
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    return Held(DRE->getDecl());
  if (const auto *ME = dyn_cast<MemberExpr>(E))
    return Held(ME->getMemberDecl());
  const auto *CE = dyn_cast<CallExpr>(E);
  const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
  if (!F || !F->getIdentifier() || groupQueryKind(F->getName()) != Q)
    return nullptr;
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
    if (MC->getNumArgs() == 0)
      return groupAxisOf(MC->getImplicitObjectArgument(), Table);
    return nullptr;
  }
  if (!isa<CXXOperatorCallExpr>(CE) && CE->getNumArgs() == 1)
    return groupAxisOf(CE->getArg(0), Table); // get_world_size(group)
  return nullptr;
}

} // namespace spmd::plugin
