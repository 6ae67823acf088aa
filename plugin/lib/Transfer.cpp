//===- Transfer.cpp - statements, values, calls and checks ----------------===//
//
// The statement-level transfer functions, expression evaluation and the
// checks against declared types. Collectives and assert_type are in
// TransferCollectives.cpp, ordinary tensor ops in TransferOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "Transfer.h"

#include "clang/AST/ParentMapContext.h"

#include <spmd/core/annotation_rules.h>
#include <spmd/core/collectives.h>
#include <spmd/core/op_table.h>

using namespace clang;

namespace spmd::plugin {

void TUContext::noteAxes(const TypeAnnotation &A) {
  for (const AxisEntry &E : A.Entries)
    noteAxis(Axes.intern(E.Axis), E.AxisDecl);
}

Transfer::Transfer(TUContext &TU, const FunctionDecl *FD, FactArena &Arena)
    : TU(TU), Ctx(TU.Ctx), Types(TU.Types), FD(FD),
      Result(TU.Table.resultOf(FD)), Mesh(TU.Table.meshOf(FD)),
      LocalRegion(TU.Table.isLocal(FD)), Arena(Arena) {}

core::InferenceContext Transfer::inferenceContext() const {
  core::InferenceContext C;
  C.strict = false;
  if (Mesh)
    C.mesh_axes =
        std::vector<std::string>(Mesh->Axes.begin(), Mesh->Axes.end());
  return C;
}

//===----------------------------------------------------------------------===//
// The lattice and the core's types
//===----------------------------------------------------------------------===//

Value Transfer::declared(const TypeAnnotation &A, Origin O) {
  // The same few annotations are read over and over (a parameter at each
  // use): built once per origin.
  auto [It, New] = DeclaredValues.try_emplace(
      {&A, uint64_t(O.Loc.getRawEncoding()) << 8 | unsigned(O.Kind)});
  if (!New)
    return It->second;
  Value &V = It->second;
  V = Value::closed();
  for (const AxisEntry &E : A.Entries)
    V.set(axis(E.Axis),
          AxisFact::known(globalAxis(E.Axis) ? E.Type : E.Type.local(), O,
                          E.Pos));
  if (tracksRanks())
    V.setRank(A.Rank);
  return V;
}

core::TensorType Transfer::knownPart(const Value &V) const {
  core::TensorType T;
  for (const auto &[A, F] : V.axes())
    if (std::optional<PerAxisType> K = F.knownType())
      T.set(TU.Axes.name(A).str(), *K);
  return T;
}

void Transfer::setLayout(const Layout *L) {
  CurLayout = L;
  DeclaredTypes.clear();
  Result = L ? TU.Layouts.typeIn(FD, -1, *L) : TU.Table.resultOf(FD);
}

std::optional<bool> Transfer::layoutCondition(const Expr *Cond) {
  if (!CurLayout)
    return std::nullopt;
  return TU.Layouts.conditionIn(FD, Cond, *CurLayout);
}

const TypeAnnotation *Transfer::declaredType(const ValueDecl *D) {
  auto [It, New] = DeclaredTypes.try_emplace(D, nullptr);
  if (!New)
    return It->second;
  const TypeAnnotation *A = nullptr;
  if (const auto *P = dyn_cast<ParmVarDecl>(D);
      CurLayout && P && P->getDeclContext() == FD)
    A = TU.Layouts.typeIn(FD, int(P->getFunctionScopeIndex()), *CurLayout);
  else
    A = TU.Table.typeOf(D);
  It->second = A; // the lookups above leave DeclaredTypes alone
  return A;
}

unsigned Transfer::varIndex(const ValueDecl *VD) {
  return VarIndex.try_emplace(VD, VarIndex.size()).first->second;
}

void Transfer::setVar(const ValueDecl *VD, const Value &V) {
  if (declaredType(VD) && !isRebindable(VD))
    return; // a declared variable keeps its declared type
  Cur = Cur.set(varIndex(VD), V, Arena);
}

static bool isFreshParameter(const Expr *E, TypeClassifier &Types,
                             unsigned Depth);

bool Transfer::isRebindable(const ValueDecl *VD) {
  const auto *P = dyn_cast<ParmVarDecl>(VD);
  return P && P->getDeclContext() == FD && !P->getType()->isReferenceType() &&
         Types.isTracked(P->getType());
}

bool Transfer::holdsDeclared(const ValueDecl *VD, const TypeAnnotation &A) {
  auto It = VarIndex.find(VD);
  const Value *V = It == VarIndex.end() ? nullptr : Cur.get(It->second);
  if (!V)
    return true;
  Value D = declared(A, {A.Loc, OriginKind::Declared});
  if (D.rank() && V->rank() != D.rank())
    return false;
  for (const auto &[Ax, F] : D.axes()) {
    const AxisFact *G = V->get(Ax);
    if (!G || G->Mask != F.Mask || G->Shard != F.Shard)
      return false;
  }
  return true;
}

void Transfer::rebindParameter(const VarDecl *VD, const TypeAnnotation &A,
                               const Value &V, const Expr *RHS) {
  Value New = V;
  Value D = declared(A, {A.Loc, OriginKind::Declared});
  bool Filled = false;
  for (const auto &[Ax, F] : D.axes()) {
    const AxisFact *G = New.get(Ax);
    if (!G || (!G->knownType() && !G->isConflict())) {
      New.set(Ax, F);
      Filled = true;
    }
  }
  if (Filled) {
    if (!New.rank())
      New.setRank(D.rank());
    if (!isFreshParameter(RHS, Types, 0))
      checkUnknownUse(V, RHS);
  }
  Cur = Cur.set(varIndex(VD), New, Arena);
}

//===----------------------------------------------------------------------===//
// Blocks and statements
//===----------------------------------------------------------------------===//

FactMap Transfer::entryState() {
  FactMap S;
  for (const ParmVarDecl *P : FD->parameters())
    if (const TypeAnnotation *A = declaredType(P)) {
      TU.noteAxes(*A);
      S = S.set(varIndex(P), declared(*A, {A->Loc, OriginKind::Declared}),
                Arena);
    }
  if (LocalRegion)
    if (auto It = TU.InferredInputs.find(FD->getCanonicalDecl());
        It != TU.InferredInputs.end())
      for (unsigned I = 0; I < It->second.size() && I < FD->getNumParams(); ++I)
        if (!It->second[I].isEmpty() && !declaredType(FD->getParamDecl(I)))
          S = S.set(varIndex(FD->getParamDecl(I)), It->second[I], Arena);
  return S;
}

FactMap Transfer::block(const CFGBlock &B, FactMap In, ProblemHandler *Handler,
                        llvm::ArrayRef<AxisId> SizeOneAxes) {
  Cur = In;
  H = Handler;
  SizeOne = SizeOneAxes;
  ++MemoVisit; // forgets the values of the previous visit
  for (const CFGElement &E : B) {
    if (std::optional<CFGStmt> S = E.getAs<CFGStmt>()) {
      if (!isInertElement(S->getStmt()))
        stmt(S->getStmt());
    } else if (std::optional<CFGInitializer> I = E.getAs<CFGInitializer>()) {
      memberInitializer(I->getInitializer());
    }
  }
  H = nullptr;
  return Cur;
}

bool Transfer::isInertElement(const Stmt *S) {
  // Each kind here is one evalUncached gives unknown without looking further
  // (skipTransparent leaves it as it is, or strips a cast to such a kind).
  if (const auto *ICE = dyn_cast<ImplicitCastExpr>(S)) {
    if (ICE->getCastKind() != CK_FunctionToPointerDecay &&
        ICE->getCastKind() != CK_BuiltinFnToFnPtr)
      return false;
    S = ICE->getSubExpr()->IgnoreParens();
  }
  if (const auto *DRE = dyn_cast<DeclRefExpr>(S))
    return !isa<VarDecl, BindingDecl>(DRE->getDecl());
  if (const auto *UO = dyn_cast<UnaryOperator>(S))
    return UO->getOpcode() != UO_Deref;
  return isa<IntegerLiteral, FloatingLiteral, CXXBoolLiteralExpr, StringLiteral,
             CharacterLiteral, CXXNullPtrLiteralExpr, BinaryOperator>(S);
}

/// `: weight(w)` initializes an annotated field: checked like an assignment.
void Transfer::memberInitializer(const CXXCtorInitializer *Init) {
  const FieldDecl *F = Init->getMember();
  const Expr *IE = Init->getInit();
  if (!F || !IE || !Init->isWritten())
    return;
  if (const TypeAnnotation *A = TU.Table.typeOf(F)) {
    Destination D;
    D.Kind = Destination::FieldInit;
    D.Decl = F;
    D.Declared = A;
    checkAgainst(eval(IE), *A, D, IE);
  }
}

/// The member a structured binding of a struct names (`auto& [a, b] = s;`),
/// or null (an array element, a tuple-like binding).
static const FieldDecl *boundMember(const BindingDecl *BD) {
  const Expr *B = BD->getBinding();
  const auto *ME = B ? dyn_cast<MemberExpr>(B->IgnoreParenImpCasts()) : nullptr;
  return ME ? dyn_cast<FieldDecl>(ME->getMemberDecl()) : nullptr;
}

bool Transfer::isElementBinding(const BindingDecl *BD) {
  if (BD->getHoldingVar() || !BD->getBinding() ||
      !Types.isTracked(BD->getType()))
    return false;
  const FieldDecl *F = boundMember(BD);
  return !F || !TU.Table.typeOf(F); // else: the typed member itself
}

const BindingDecl *Transfer::elementBinding(const Expr *E) {
  const BindingDecl *BD = namedBinding(E, Types);
  return BD && isElementBinding(BD) ? BD : nullptr;
}

void Transfer::declStmt(const DeclStmt *DS) {
  for (const Decl *D : DS->decls()) {
    const auto *VD = dyn_cast<VarDecl>(D);
    if (!VD)
      continue;
    // (A local variable: declaredType is the table's, cached for its reads.)
    if (const TypeAnnotation *A = declaredType(VD)) {
      TU.noteAxes(*A);
      // `Tensor t;` is an undefined tensor: nothing to check.
      const auto *Ctor = dyn_cast_or_null<CXXConstructExpr>(VD->getInit());
      bool Undefined = Ctor && Ctor->getNumArgs() == 0;
      if (const Expr *Init = Undefined ? nullptr : VD->getInit())
        if (Types.isTracked(Init->getType()) || isa<CXXConstructExpr>(Init)) {
          Destination Dest;
          Dest.Kind = Destination::VarInit;
          Dest.Decl = VD;
          Dest.Declared = A;
          checkAgainst(eval(Init), *A, Dest, Init);
        }
      Cur = Cur.set(varIndex(VD), declared(*A, {A->Loc, OriginKind::Declared}),
                    Arena);
      continue;
    }
    // `auto& [q, k] = arr;`: each element binding starts with its
    // element's type (on every path: a later assignment is flow-sensitive).
    if (const auto *DD = dyn_cast<DecompositionDecl>(VD))
      for (const BindingDecl *BD : DD->bindings())
        if (isElementBinding(BD))
          Cur = Cur.set(varIndex(BD), eval(BD->getBinding()), Arena);
    if (!Types.isTracked(VD->getType()))
      continue;
    const Expr *Init = VD->getInit();
    // A reference bound to a variable or a field is that variable or field
    // (`Tensor& r = x;`): reads and writes go through to it.
    if (Init && VD->getType()->isReferenceType()) {
      const Expr *I = Init->IgnoreParenImpCasts();
      if (const auto *DRE = dyn_cast<DeclRefExpr>(I)) {
        if (const auto *T = dyn_cast<VarDecl>(DRE->getDecl())) {
          const ValueDecl *Target = T;
          if (const ValueDecl *Next = Aliases.lookup(T))
            Target = Next;
          Aliases[VD] = Target;
          continue;
        }
      } else if (const auto *ME = dyn_cast<MemberExpr>(I)) {
        if (const auto *F = dyn_cast<FieldDecl>(ME->getMemberDecl())) {
          Aliases[VD] = F;
          continue;
        }
      }
    }
    if (Init)
      noteViewBinding(VD, Init); // spec §6.11.1
    // The initializer's value is the arena's already: held, not copied.
    unsigned I = varIndex(VD);
    Cur = Init ? Cur.setShared(I, &eval(Init), Arena)
               : Cur.set(I, Value::unknown(), Arena);
  }
}

void Transfer::stmt(const Stmt *S) {
  if (const auto *DS = dyn_cast<DeclStmt>(S))
    return declStmt(DS);
  if (const auto *RS = dyn_cast<ReturnStmt>(S)) {
    const Expr *RV = RS->getRetValue();
    if (Result && RV && Types.isTracked(RV->getType())) {
      Destination D;
      D.Kind = Destination::Return;
      D.Decl = FD;
      D.Declared = Result;
      checkAgainst(eval(RV), *Result, D, RV);
    }
    return;
  }
  if (const auto *E = dyn_cast<Expr>(S))
    (void)eval(E); // for its effects (assignments, in-place ops, checks)
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

/// The unknown value, shared by every expression that has no other.
static const Value &unknownValue() {
  static const Value Unknown = Value::unknown();
  return Unknown;
}

const Value &Transfer::eval(const Expr *E) {
  const Value &Unknown = unknownValue();
  if (!E)
    return Unknown;
  MemoEntry *Entry = &Memo[E];
  if (!Entry->Skipped)
    Entry->Skipped = skipTransparent(E, Types);
  if (Entry->Skipped != E) {
    // A wrapper: the wrapped expression's own entry holds the value.
    E = Entry->Skipped;
    Entry = &Memo[E];
    Entry->Skipped = E; // skipTransparent is idempotent
  }
  if (Entry->Visit == MemoVisit && Entry->V)
    return *Entry->V;
  // A variable's fact is the FactMap's value itself (no copy); the rest is
  // evaluated and kept in the arena.
  if (const Value *Held = heldFact(E)) {
    Entry->Visit = MemoVisit;
    Entry->V = Held;
    return *Held;
  }
  const void *Buckets = Memo.getPointerIntoBucketsArray();
  Value V = evalUncached(E); // may grow Memo: then Entry is stale
  const Value *P = V == Unknown ? &Unknown : Arena.value(std::move(V));
  // Only a reallocation of the table moves the entries (an insertion into
  // room reserved by reserveMemo does not).
  if (Memo.getPointerIntoBucketsArray() != Buckets)
    Entry = &Memo[E];
  Entry->Visit = MemoVisit;
  Entry->V = P;
  return *P;
}

const Value *Transfer::lastValue(const Expr *E) const {
  auto It = Memo.find(E);
  if (It == Memo.end())
    return nullptr;
  if (It->second.Skipped && It->second.Skipped != E) {
    It = Memo.find(It->second.Skipped);
    if (It == Memo.end())
      return nullptr;
  }
  return It->second.V;
}

const Value *Transfer::heldFact(const Expr *E) {
  // evalDeclRef's last case, for the same expressions (evalUncached's
  // checks first): no binding, no alias, no declared type.
  const auto *DRE = dyn_cast<DeclRefExpr>(E);
  const auto *VD = DRE ? dyn_cast<VarDecl>(DRE->getDecl()) : nullptr;
  if (!VD || E->containsErrors() || E->isValueDependent() ||
      E->isTypeDependent() || Aliases.count(VD) || declaredType(VD))
    return nullptr;
  auto It = VarIndex.find(VD);
  return It == VarIndex.end() ? nullptr : Cur.get(It->second);
}

/// A variable, a structured binding or a reference to one: its declared
/// type, or its fact on this path.
Value Transfer::evalDeclRef(const DeclRefExpr *DRE) {
  // A structured binding: its holding variable's fact (set by its
  // declaration, `get<i>(e)`, and by assignments to the binding), or the
  // element of an array or struct.
  if (const auto *BD = dyn_cast<BindingDecl>(DRE->getDecl())) {
    // The holding variable's fact, or the element binding's own.
    const VarDecl *HV = BD->getHoldingVar();
    auto It = VarIndex.find(HV ? static_cast<const ValueDecl *>(HV) : BD);
    if (const Value *V = It == VarIndex.end() ? nullptr : Cur.get(It->second))
      return *V;
    if (HV)
      return HV->getInit() ? eval(HV->getInit()) : Value::unknown();
    return BD->getBinding() ? eval(BD->getBinding()) : Value::unknown();
  }
  const auto *VD = dyn_cast<VarDecl>(DRE->getDecl());
  if (!VD)
    return Value::unknown();
  if (const ValueDecl *Target = Aliases.lookup(VD)) {
    if (const auto *F = dyn_cast<FieldDecl>(Target)) {
      if (const TypeAnnotation *A = TU.Table.typeOf(F))
        return declared(*A, {A->Loc, OriginKind::Declared});
      return Value::unknown();
    }
    VD = cast<VarDecl>(Target);
  }
  if (const TypeAnnotation *A = declaredType(VD)) {
    if (isRebindable(VD)) // its fact since entry (or since `VD = e`)
      if (auto It = VarIndex.find(VD); It != VarIndex.end())
        if (const Value *V = Cur.get(It->second))
          return *V;
    return declared(*A, {A->Loc, OriginKind::Declared});
  }
  auto It = VarIndex.find(VD);
  const Value *V = It == VarIndex.end() ? nullptr : Cur.get(It->second);
  return V ? *V : Value::unknown();
}

/// A construction: an annotated constructor's call, or a container of
/// tensors built from its elements (an optional from a tensor, a tuple).
Value Transfer::evalConstruct(const CXXConstructExpr *CE) {
  // A constructor with annotated parameters: `Layer l(x);`, `Layer{x}`.
  if (const CXXConstructorDecl *Ctor = CE->getConstructor();
      Ctor && TU.isAnnotated(Ctor)) {
    llvm::SmallVector<const Expr *, 4> Args;
    argumentsByParameter(CE, Ctor, Args);
    return callAnnotated(CE, Ctor, Args);
  }
  if (!Types.isTensorContainer(CE->getType()) || isEmptyOptional(CE, Types)) {
    if (!Types.isTracked(CE->getType()))
      evalOpaqueConstruct(CE); // `Writer w(out);`
    return Value::unknown();
  }
  if (CE->getNumArgs() == 0 && !Types.isOptionalTensor(CE->getType()))
    return Value::empty(); // `std::vector<Tensor> v;`: filled by pushes
  llvm::SmallVector<const Expr *, 4> Elems;
  for (const Expr *A : CE->arguments()) {
    if (Types.isTracked(A->getType()) ||
        isa<InitListExpr>(skipBraceWrappers(A)))
      Elems.push_back(A);
  }
  return elementsOf(Elems);
}

Value Transfer::evalUncached(const Expr *E) {
  if (E->containsErrors() || E->isValueDependent() || E->isTypeDependent())
    return Value::unknown();
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    return evalDeclRef(DRE);
  if (const auto *ME = dyn_cast<MemberExpr>(E)) {
    if (const auto *F = dyn_cast<FieldDecl>(ME->getMemberDecl()))
      if (const TypeAnnotation *A = TU.Table.typeOf(F))
        return declared(*A, {A->Loc, OriginKind::Declared});
    return Value::unknown();
  }
  // Containers built in place: `{a, b}`, std::vector<Tensor>{...}, an
  // optional from a tensor, a tuple from its elements.
  if (const auto *SIL = dyn_cast<CXXStdInitializerListExpr>(E))
    return eval(SIL->getSubExpr());
  if (const auto *ILE = dyn_cast<InitListExpr>(E)) {
    if (!Types.isTensorContainer(ILE->getType()))
      return Value::unknown();
    llvm::SmallVector<const Expr *, 4> Elems(ILE->inits());
    return elementsOf(Elems);
  }
  if (const auto *CE = dyn_cast<CXXConstructExpr>(E))
    return evalConstruct(CE);
  if (const auto *UO = dyn_cast<UnaryOperator>(E))
    if (UO->getOpcode() == UO_Deref && Types.isTracked(UO->getType()))
      return derefIterator(UO->getSubExpr()); // a pointer into a TensorList
  if (const auto *CO = dyn_cast<AbstractConditionalOperator>(E)) {
    if (!Types.isTracked(CO->getType()))
      return Value::unknown();
    Value V = eval(CO->getTrueExpr());
    V.join(eval(CO->getFalseExpr()));
    return V;
  }
  if (const auto *CE = dyn_cast<CallExpr>(E))
    return evalCall(CE);
  return Value::unknown();
}

Value Transfer::evalCall(const CallExpr *CE) {
  const FunctionDecl *Callee = CE->getDirectCallee();
  if (!Callee)
    return evalIndirectCall(CE).value_or(Value::unknown());

  if (isSpmdFunction(Callee) && Callee->getIdentifier()) {
    if (std::optional<core::Collective> C =
            core::parse_collective(Callee->getName()))
      if (CE->getNumArgs() >= 2 && Types.isTensor(CE->getType()))
        return evalCollective(CE, *C);
    // Only the written arguments: assert_type(x, {...}) also passes its
    // defaulted spmd::SourceLocation.
    if (Callee->getName() == "assert_type" && numWrittenArgs(CE) == 2)
      return evalAssertType(CE);
  }

  if (std::optional<Value> V = evalContainerCall(CE, Callee))
    return *V;

  const auto *OpCall = dyn_cast<CXXOperatorCallExpr>(CE);
  if (OpCall && OpCall->getOperator() == OO_Equal && CE->getNumArgs() == 2 &&
      Types.isTracked(CE->getArg(0)->getType()))
    return evalAssignment(OpCall);

  if (OpCall && OpCall->getOperator() == OO_Call && !TU.isAnnotated(Callee))
    if (std::optional<Value> V = evalIndirectCall(CE))
      return *V; // a std::function or another callable object

  if (std::optional<Value> V = evalAutograd(CE, Callee))
    return *V;
  if (TU.isAnnotated(Callee))
    return evalUserCall(CE, Callee);
  if (std::optional<Value> V = evalForwarded(CE, Callee))
    return *V;
  if (std::optional<Value> V = evalOpaqueCall(CE, Callee))
    return *V;
  return evalOrdinaryOp(CE, Callee);
}

/// Tensor assignment: `x = expr`.
Value Transfer::evalAssignment(const CXXOperatorCallExpr *CE) {
  if (!Types.isTracked(CE->getArg(1)->getType()))
    return isEmptyOptional(CE->getArg(1), Types)
               ? Value::unknown()
               : eval(CE->getArg(0)); // x = scalar fills in place
  Value V = eval(CE->getArg(1));
  assign(CE->getArg(0), V, CE->getArg(1));
  // The value of `x = e` is x after the assignment: its declared type, or
  // e's (the LHS node itself may be memoized with the old value).
  LValue L = lvalueOf(CE->getArg(0));
  const ValueDecl *VD = L.Var;
  const FieldDecl *F = L.Field;
  if (VD && isRebindable(VD) && declaredType(VD)) {
    auto It = VarIndex.find(VD);
    const Value *Now = It == VarIndex.end() ? nullptr : Cur.get(It->second);
    return Now ? *Now : V;
  }
  if (const TypeAnnotation *A = VD  ? declaredType(VD)
                                : F ? TU.Table.typeOf(F)
                                    : nullptr)
    return declared(*A, {A->Loc, OriginKind::Declared});
  return V;
}

/// Ordinary tensor ops: methods of at::Tensor, operators on tensors, and free
/// functions in at:: / torch::.
Value Transfer::evalOrdinaryOp(const CallExpr *CE, const FunctionDecl *Callee) {
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
    const CXXMethodDecl *MD = MC->getMethodDecl();
    const Expr *Obj = MC->getImplicitObjectArgument();
    QualType ObjT = Obj ? Obj->getType() : QualType();
    if (!ObjT.isNull() && ObjT->isPointerType())
      ObjT = ObjT->getPointeeType(); // opt->relu(): the optional's tensor
    if (MD && MD->getIdentifier() && Obj && Types.isTensor(ObjT)) {
      llvm::SmallVector<const Expr *, 4> Args(MC->arguments());
      const auto *Op =
          calleeOp(MD, 0, [&] { return "." + MD->getName().str(); });
      return evalTensorOp(CE, Op->getKey(), Obj, Args, std::nullopt,
                          &Op->getValue());
    }
    return unannotatedResult(CE, Callee);
  }
  if (const auto *OpCall = dyn_cast<CXXOperatorCallExpr>(CE)) {
    if (llvm::none_of(CE->arguments(), [&](const Expr *A) {
          return Types.isTensor(A->getType());
        }))
      return Value::unknown();
    // Forms 2 and up: the operator and whether it is unary.
    bool Unary = CE->getNumArgs() == 1;
    const auto *Op =
        calleeOp(Callee, 2 + 2 * unsigned(OpCall->getOperator()) + Unary, [&] {
          return core::dunder_for_operator(
              getOperatorSpelling(OpCall->getOperator()), Unary);
        });
    if (!Op)
      return Value::unknown();
    llvm::SmallVector<const Expr *, 4> Args(CE->arguments());
    return evalTensorOp(CE, Op->getKey(), nullptr, Args, std::nullopt,
                        &Op->getValue());
  }
  // Form 1: a free function, an op when it is at:: or torch::'s.
  if (const auto *Op = calleeOp(Callee, 1, [&] {
        return Callee->getIdentifier() && isInTorchNamespace(Callee)
                   ? Callee->getName().str()
                   : std::string();
      })) {
    llvm::SmallVector<const Expr *, 4> Args(CE->arguments());
    return evalTensorOp(CE, Op->getKey(), nullptr, Args, std::nullopt,
                        &Op->getValue());
  }
  return unannotatedResult(CE, Callee);
}

Value Transfer::evalUserCall(const CallExpr *CE, const FunctionDecl *Callee) {
  llvm::SmallVector<const Expr *, 4> Args;
  argumentsByParameter(CE, Callee, Args);
  return callAnnotated(CE, Callee, Args);
}

Value Transfer::callAnnotated(const Expr *Call, const FunctionDecl *Callee,
                              llvm::ArrayRef<const Expr *> Args) {
  // A layer with layout flags: the layout its instance was constructed with
  // (the object of the call, through a module holder).
  std::optional<Layout> CallLayout;
  const Expr *Instance = nullptr;
  if (!TU.Layouts.flagsOf(Callee).Flags.empty()) {
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(Call))
      Instance = MC->getImplicitObjectArgument();
    else if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(Call);
             OC && OC->getNumArgs() > 0)
      Instance = OC->getArg(0);
    CallLayout = TU.Layouts.layoutOfInstance(Callee, Instance, FD, CurLayout);
  }
  if (TU.Table.isLocalInfer(Callee)) // in_types = Infer: nothing to check
    recordInferredInputs(Callee, Args, Call->getExprLoc());
  bool Partial = false;
  auto ParamType = [&](unsigned PI) {
    return CallLayout ? TU.Layouts.typeIn(Callee, int(PI), *CallLayout)
                      : TU.Table.paramOf(Callee, PI);
  };
  for (unsigned PI = 0; PI < Args.size(); ++PI) {
    if (PI >= Callee->getNumParams())
      break;
    const Expr *Arg = Args[PI];
    if (!Arg || isa<CXXDefaultArgExpr>(Arg) || isEmptyOptional(Arg, Types))
      continue;
    Arg = seeThroughOptional(Arg, Types);
    const TypeAnnotation *A = ParamType(PI);
    if (!A || !Types.isTracked(Arg->getType()))
      continue; // only tensors are tracked
    Destination D;
    if (CallLayout && A != TU.Table.paramOf(Callee, PI)) {
      D.LayoutLoc = TU.Layouts.whereDecided(Callee, int(PI), *CallLayout,
                                            &D.Layout.Flag, &D.Layout.Value);
      D.Layout.Instance = TU.Layouts.instanceDecl(Instance);
      D.Layout.Where = D.LayoutLoc;
    }
    D.Kind = Destination::Argument;
    D.Callee = Callee;
    D.ParamIndex = PI;
    D.Declared = A;
    checkAgainst(eval(Arg), *A, D, Arg);
  }
  const TypeAnnotation *R =
      CallLayout ? TU.Layouts.typeIn(Callee, -1, *CallLayout, &Partial)
                 : TU.Table.resultOf(Callee);
  if (Partial) // axes of an unknown layout: strict mode says so here, once
    checkUnknownLayout(Call, Callee, *CallLayout, Instance);
  if (!R && Partial) {
    Value U = Value::unknown();
    U.setFromError(true); // reported at the call: no follow-on report
    return U;
  }
  if (R) {
    Value V = declared(*R, {Call->getExprLoc(), OriginKind::CallResult});
    if (CallLayout && R != TU.Table.resultOf(Callee)) {
      LayoutChoice C;
      C.Where =
          TU.Layouts.whereDecided(Callee, -1, *CallLayout, &C.Flag, &C.Value);
      C.Instance = TU.Layouts.instanceDecl(Instance);
      if (C.Flag)
        TU.LayoutResults[Call->getExprLoc().getRawEncoding()] = C;
    }
    return V;
  }
  const auto *CE = dyn_cast<CallExpr>(Call);
  if (std::optional<core::OpClass> C = TU.Table.opClassOf(Callee); C && CE)
    return evalOpClassCall(CE, Callee, *C);
  return unannotatedResult(Call, Callee);
}

/// A call of a function typed by its op class (`[[spmd::op(kind)]]`): an
/// ordinary op whose operands are the call's own arguments (for a forwarded
/// call, those of the outer callee) and whose object is the receiver.
Value Transfer::evalOpClassCall(const CallExpr *CE, const FunctionDecl *Callee,
                                core::OpClass C) {
  const FunctionDecl *Outer = CE->getDirectCallee();
  llvm::SmallVector<const Expr *, 4> Args;
  argumentsByParameter(CE, Outer, Args);
  const Expr *Receiver = nullptr;
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE))
    Receiver = MC->getImplicitObjectArgument();
  else if (const auto *MD = dyn_cast_or_null<CXXMethodDecl>(Outer);
           MD && MD->isExplicitObjectMemberFunction() && !Args.empty())
    Receiver = Args.front(); // `this Self&`: parameter 0 is the object
  if (Receiver && Args.size() && Args.front() == Receiver)
    Args.erase(Args.begin());
  if (Receiver && !Types.isTensor(Receiver->getType()))
    Receiver = nullptr;
  return evalTensorOp(CE, Callee->getNameAsString(), Receiver, Args, C);
}

/// Whether \p E is an argument or the object of a call whose result is not a
/// tensor (a logging or conversion helper, `.item()`): no SPMD type flows on.
bool Transfer::consumedAsNonTensor(const Expr *E) {
  const Stmt *Child = E;
  for (unsigned Depth = 0; Depth < 6; ++Depth) {
    auto Parents = Ctx.getParents(*Child);
    if (Parents.size() != 1)
      return false;
    const auto *Parent = Parents[0].get<Expr>();
    if (!Parent)
      return false;
    if (const auto *CE = dyn_cast<CallExpr>(Parent))
      return !Types.isTracked(CE->getType());
    if (isa<CXXConstructExpr>(Parent))
      return false;
    Child = Parent;
  }
  return false;
}

Value Transfer::unannotatedResult(const Expr *Call,
                                  const FunctionDecl *Callee) {
  Value U = Value::unknown();
  // The user's own functions and layers only: a library's (std::, c10::,
  // torch::) are not the code's to annotate.
  if (!TU.Opts.Strict || !Callee || !Types.isTracked(Call->getType()) ||
      !reporting(DiagKind::UnknownType) || isInLibraryNamespace(Callee) ||
      TU.Ctx.getSourceManager().isInSystemHeader(Callee->getLocation()) ||
      typeStated(Call, /*AnyVariable=*/true) || consumedAsNonTensor(Call))
    return U;
  ProblemSite P;
  P.Kind = DiagKind::UnknownType;
  P.Loc = Call->getExprLoc();
  P.Range = Call->getSourceRange();
  P.Subject = Call;
  report(Problem::unannotatedCall(std::move(P), Callee));
  U.setFromError(true); // reported here: not again at each use
  return U;
}

std::optional<Value> Transfer::evalForwarded(const CallExpr *CE,
                                             const FunctionDecl *Callee) {
  if (TU.NotForwarding.count(Callee))
    return std::nullopt;
  // The outer call's arguments by parameter index of the current callee.
  llvm::SmallVector<const Expr *, 4> Args;
  argumentsByParameter(CE, Callee, Args);
  const FunctionDecl *F = Callee;
  for (unsigned Depth = 0; Depth < 4; ++Depth) {
    const CallExpr *Inner = forwardedCall(F, Types);
    if (!Inner)
      return notForwarding(Callee);
    const FunctionDecl *G = Inner->getDirectCallee();
    if (!G)
      return notForwarding(Callee);
    llvm::SmallVector<const Expr *, 4> InnerArgs, Next;
    argumentsByParameter(Inner, G, InnerArgs);
    for (const Expr *InnerArg : InnerArgs) {
      const Expr *A = skipTransparent(InnerArg, Types);
      const auto *DRE = dyn_cast<DeclRefExpr>(A);
      const auto *P = DRE ? dyn_cast<ParmVarDecl>(DRE->getDecl()) : nullptr;
      const auto *Owner =
          P ? dyn_cast<FunctionDecl>(P->getDeclContext()) : nullptr;
      if (Owner && Owner->getCanonicalDecl() == F->getCanonicalDecl()) {
        unsigned J = P->getFunctionScopeIndex();
        Next.push_back(J < Args.size() ? Args[J] : nullptr);
      } else {
        Next.push_back(nullptr); // a constant or a non-tensor
      }
    }
    if (TU.Table.isAnnotatedFunction(G))
      return callAnnotated(CE, G, Next);
    // A stock module without tensors (torch::nn::Dropout): its forward is
    // the op of the core's table.
    if (const auto *MD = dyn_cast<CXXMethodDecl>(G);
        MD && MD->getIdentifier() && MD->getName() == "forward" &&
        isInTorchNamespace(MD->getParent()) && MD->getParent()->getIdentifier())
      if (const core::OpRow *Row =
              core::find_stock_module(MD->getParent()->getName())) {
        llvm::SmallVector<const Expr *, 4> OpArgs;
        for (const Expr *A : Next)
          if (A)
            OpArgs.push_back(A);
        return evalTensorOp(CE, std::string(Row->name), nullptr, OpArgs);
      }
    F = G;
    Args = std::move(Next);
  }
  return notForwarding(Callee);
}

/// Whether the local variable \p VD is assigned after its initialisation in
/// \p Body (then its initializer does not say what it holds).
static bool isReassigned(const VarDecl *VD, const Stmt *Body) {
  if (!Body)
    return true;
  if (const auto *BO = dyn_cast<BinaryOperator>(Body))
    if (BO->isAssignmentOp())
      if (const auto *D = dyn_cast<DeclRefExpr>(BO->getLHS()->IgnoreParens()))
        if (D->getDecl() == VD)
          return true;
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(Body))
    if (OC->isAssignmentOp() && OC->getNumArgs() == 2)
      if (const auto *D =
              dyn_cast<DeclRefExpr>(OC->getArg(0)->IgnoreParenImpCasts()))
        if (D->getDecl() == VD)
          return true;
  if (const auto *UO = dyn_cast<UnaryOperator>(Body))
    if (UO->getOpcode() == UO_AddrOf)
      if (const auto *D = dyn_cast<DeclRefExpr>(UO->getSubExpr()))
        if (D->getDecl() == VD)
          return true; // may be written through the pointer
  for (const Stmt *C : Body->children())
    if (C && isReassigned(VD, C))
      return true;
  return false;
}

/// The function a callable expression holds: a function name or its
/// address, a lambda, or a std::function / function pointer built from one.
static const FunctionDecl *heldFunction(const Expr *E, unsigned Depth = 0) {
  for (unsigned I = 0; E && I < 12; ++I) {
    E = E->IgnoreParens()->IgnoreImplicit();
    if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
      return dyn_cast<FunctionDecl>(DRE->getDecl());
    if (const auto *UO = dyn_cast<UnaryOperator>(E);
        UO && (UO->getOpcode() == UO_AddrOf || UO->getOpcode() == UO_Deref)) {
      E = UO->getSubExpr();
      continue;
    }
    if (const auto *LE = dyn_cast<LambdaExpr>(E))
      return LE->getCallOperator();
    if (const auto *CE = dyn_cast<CXXConstructExpr>(E)) {
      if (CE->getNumArgs() != 1)
        return nullptr;
      E = CE->getArg(0);
      continue;
    }
    if (const auto *C = dyn_cast<CastExpr>(E)) {
      E = C->getSubExpr();
      continue;
    }
    if (const auto *MT = dyn_cast<MaterializeTemporaryExpr>(E)) {
      E = MT->getSubExpr();
      continue;
    }
    if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(E)) {
      E = BT->getSubExpr();
      continue;
    }
    return nullptr;
  }
  return nullptr;
}

std::optional<Value> Transfer::evalIndirectCall(const CallExpr *CE) {
  // The callable: `fp(x)` / `(*fp)(x)` (the callee expression), or
  // `fn(x)` on a std::function (argument 0 of operator()).
  const auto *OpCall = dyn_cast<CXXOperatorCallExpr>(CE);
  const Expr *Callable = OpCall ? CE->getArg(0) : CE->getCallee();
  llvm::SmallVector<const Expr *, 4> Args;
  for (unsigned I = OpCall ? 1 : 0; I < CE->getNumArgs(); ++I)
    Args.push_back(CE->getArg(I));
  Callable = Callable->IgnoreParenImpCasts();
  if (const auto *UO = dyn_cast<UnaryOperator>(Callable);
      UO && UO->getOpcode() == UO_Deref)
    Callable = UO->getSubExpr()->IgnoreParenImpCasts();

  const ValueDecl *Holder = nullptr;
  const FunctionDecl *Target = nullptr;
  if (const auto *DRE = dyn_cast<DeclRefExpr>(Callable)) {
    Holder = DRE->getDecl();
    const auto *VD = dyn_cast<VarDecl>(Holder);
    if (VD && VD->isLocalVarDecl() && !isa<ParmVarDecl>(VD) &&
        !VD->getType()->isReferenceType() && VD->getInit() &&
        !isReassigned(VD, FD->getBody()))
      Target = heldFunction(VD->getInit());
  } else if (const auto *ME = dyn_cast<MemberExpr>(Callable)) {
    Holder = ME->getMemberDecl();
    // A callable member set by the constructors: the function they all
    // store in it.
    if (const auto *F = dyn_cast<FieldDecl>(Holder);
        F && isa<CXXThisExpr>(ME->getBase()->IgnoreParenImpCasts()))
      if (const auto *RD = dyn_cast<CXXRecordDecl>(F->getParent()))
        for (const CXXConstructorDecl *C : RD->ctors()) {
          const FunctionDecl *Def = nullptr;
          if (C->isCopyOrMoveConstructor() || !C->hasBody(Def))
            continue;
          for (const CXXCtorInitializer *Init :
               cast<CXXConstructorDecl>(Def)->inits()) {
            if (Init->getMember() != F || !Init->isWritten())
              continue;
            const FunctionDecl *T = heldFunction(Init->getInit());
            if (!T || (Target && Target != T)) {
              Target = nullptr;
              Holder = F; // several or unknown: only [[spmd::op]] helps
              goto Resolved;
            }
            Target = T;
          }
        }
  }
Resolved:
  if (Holder)
    if (std::optional<core::OpClass> C = TU.Table.opClassOfCallable(Holder))
      return evalTensorOp(CE, Holder->getNameAsString(), nullptr, Args, C);
  if (!Target) // what it may write: by the prototype's parameter types
    return evalOpaqueIndirect(CE);
  if (!TU.Table.resultOf(Target))
    if (std::optional<core::OpClass> C = TU.Table.opClassOf(Target))
      return evalTensorOp(CE, Target->getNameAsString(), nullptr, Args, *C);
  if (TU.isAnnotated(Target))
    return callAnnotated(CE, Target, Args);
  if (Target->getIdentifier() && isInTorchNamespace(Target))
    return evalTensorOp(CE, Target->getName().str(), nullptr, Args);
  // A function the checker cannot see through, as if called directly.
  return opaqueCall(CE, Target, Args, Types.isTracked(CE->getType()));
}

/// Calls that build, read or assign containers of tensors.
std::optional<Value> Transfer::evalContainerCall(const CallExpr *CE,
                                                 const FunctionDecl *Callee) {
  const auto *OpCall = dyn_cast<CXXOperatorCallExpr>(CE);
  if (OpCall && CE->getNumArgs() >= 1) {
    const Expr *Obj = CE->getArg(0);
    OverloadedOperatorKind OO = OpCall->getOperator();
    // std::tie(a, b) = e: every tied variable takes e's element type.
    if (OO == OO_Equal && CE->getNumArgs() == 2) {
      const auto *Tie = dyn_cast<CallExpr>(
          skipTransparent(Obj, Types)->IgnoreParenImpCasts());
      const FunctionDecl *TieFD = Tie ? Tie->getDirectCallee() : nullptr;
      if (TieFD && TieFD->isInStdNamespace() && TieFD->getIdentifier() &&
          TieFD->getName() == "tie") {
        Value V = eval(CE->getArg(1));
        for (const Expr *A : Tie->arguments())
          if (Types.isTracked(A->getType()))
            assign(A, V, CE->getArg(1));
        return V;
      }
      return std::nullopt;
    }
    if ((OO == OO_Subscript || OO == OO_Star || OO == OO_Arrow) &&
        Types.isTensorContainer(Obj->getType()))
      return elementOf(eval(Obj));
    if (OO == OO_Star && CE->getNumArgs() == 1 &&
        Types.isTracked(CE->getType()))
      return derefIterator(Obj);
    return std::nullopt;
  }
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
    const Expr *Obj = MC->getImplicitObjectArgument();
    const CXXMethodDecl *MD = MC->getMethodDecl();
    if (!Obj || !MD || !Types.isTensorContainer(Obj->getType()))
      return std::nullopt;
    if (MD->getIdentifier() && !Types.isOptionalTensor(Obj->getType()) &&
        pushInto(Obj, MC, MD->getName()))
      return Value::unknown();
    if (!Types.isTracked(CE->getType()))
      return Value::unknown();      // has_value(), size(), begin(), ...
    Value V = elementOf(eval(Obj)); // value(), at(i), front(), back()
    if (MD->getIdentifier() && MD->getName() == "value_or" &&
        MC->getNumArgs() == 1)
      V = elementsOf({Obj, MC->getArg(0)});
    return V;
  }
  if (!Callee->isInStdNamespace() || !Callee->getIdentifier())
    return std::nullopt;
  llvm::StringRef N = Callee->getName();
  if (N == "get" && CE->getNumArgs() == 1 &&
      Types.isTensorContainer(CE->getArg(0)->getType()))
    return elementOf(eval(CE->getArg(0)));
  if ((N == "make_pair" || N == "make_tuple" || N == "tie" ||
       N == "forward_as_tuple") &&
      Types.isTensorContainer(CE->getType())) {
    llvm::SmallVector<const Expr *, 4> Elems(CE->arguments());
    return elementsOf(Elems);
  }
  return std::nullopt;
}

/// An element read from a container value: unknown when the container has
/// no elements yet.
Value Transfer::elementOf(const Value &Container) {
  return Container.isEmpty() ? Value::unknown() : Container;
}

/// Disagreeing element types are unknown, not a conflict: each element keeps
/// its own type, the checker just does not know which one is read.
static void forgetConflicts(Value &V) {
  bool Differ = false;
  V.forEachFact([&](AxisId, AxisFact &F) {
    if (F.isConflict()) {
      F = AxisFact::unknown();
      Differ = true;
    }
  });
  if (Differ)
    V.setOpen(true); // strict mode reports a use of it
}

/// `v.push_back(x)`, `emplace_back`, `insert`, ... and `clear()`: a value
/// pushed into an annotated container (variable or field) is checked against
/// its element type; an unannotated local gets the join of its elements.
/// False when \p Name does not add or remove elements.
bool Transfer::pushInto(const Expr *Obj, const CXXMemberCallExpr *MC,
                        llvm::StringRef Name) {
  bool Clear = Name == "clear";
  if (!Clear && Name != "push_back" && Name != "emplace_back" &&
      Name != "push_front" && Name != "emplace_front" && Name != "insert" &&
      Name != "emplace")
    return false;
  LValue L = lvalueOf(Obj);
  if (Clear) {
    if (L.Var && !declaredType(L.Var))
      setVar(L.Var, Value::empty());
    return true;
  }
  // The pushed elements: tracked arguments (not iterators or counts); none
  // (a range of iterators, a tensor built in place) is an unknown element.
  llvm::SmallVector<const Expr *, 2> Elems;
  for (const Expr *A : MC->arguments())
    if (Types.isTracked(A->getType()) ||
        isa<InitListExpr>(skipBraceWrappers(A)))
      Elems.push_back(A);
  Value Pushed = Elems.empty() ? Value::unknown() : elementsOf(Elems);
  const Expr *Where = Elems.empty() ? Obj : Elems.front();
  Destination D;
  D.Kind = Destination::Push;
  if (const ValueDecl *VD = L.Var) {
    if (const TypeAnnotation *A = declaredType(VD)) {
      D.Decl = VD;
      D.Declared = A;
      checkAgainst(Pushed, *A, D, Where);
    } else if (Types.isTracked(VD->getType())) {
      Value V = eval(Obj);
      V.join(Pushed);
      forgetConflicts(V);
      setVar(VD, V);
    }
  } else if (const FieldDecl *F = L.Field) {
    if (const TypeAnnotation *A = TU.Table.typeOf(F)) {
      D.Decl = F;
      D.Declared = A;
      checkAgainst(Pushed, *A, D, Where);
    }
  }
  return true;
}

/// The type of every element: the elements' common type per axis; an axis on
/// which they differ is unknown (not a conflict: each element keeps its own
/// type, the checker just does not know which one is read).
Value Transfer::elementsOf(llvm::ArrayRef<const Expr *> Elems) {
  std::optional<Value> Out;
  for (const Expr *E : Elems) {
    if (isEmptyOptional(E, Types))
      continue;
    Value V;
    if (const auto *ILE = dyn_cast<InitListExpr>(skipBraceWrappers(E))) {
      llvm::SmallVector<const Expr *, 4> Inner(ILE->inits());
      V = elementsOf(Inner);
    } else if (Types.isTracked(E->getType())) {
      V = eval(E);
    } else {
      continue;
    }
    if (!Out)
      Out = V;
    else
      Out->join(V);
  }
  if (!Out)
    return Value::unknown();
  forgetConflicts(*Out);
  return *Out;
}

/// `*it` for an iterator of a range-for or of begin(): the range's element.
Value Transfer::derefIterator(const Expr *It) {
  It = It->IgnoreParenImpCasts();
  const auto *DRE = dyn_cast<DeclRefExpr>(It);
  const auto *IV = DRE ? dyn_cast<VarDecl>(DRE->getDecl()) : nullptr;
  const Expr *Init = IV ? IV->getInit() : nullptr;
  if (!Init)
    return Value::unknown();
  Init = skipTransparent(Init, Types)->IgnoreParenImpCasts();
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(Init)) {
    const CXXMethodDecl *MD = MC->getMethodDecl();
    if (MD && MD->getIdentifier() &&
        (MD->getName() == "begin" || MD->getName() == "cbegin"))
      return elementOf(eval(MC->getImplicitObjectArgument()));
  }
  if (const auto *C = dyn_cast<CallExpr>(Init))
    if (const FunctionDecl *FD = C->getDirectCallee())
      if (FD->isInStdNamespace() && FD->getIdentifier() &&
          (FD->getName() == "begin" || FD->getName() == "cbegin") &&
          C->getNumArgs() == 1)
        return elementOf(eval(C->getArg(0)));
  return Value::unknown();
}

Transfer::LValue Transfer::lvalueOf(const Expr *E) {
  LValue L;
  if (const VarDecl *VD = namedVar(E, Types)) {
    L.Var = VD;
    if (const ValueDecl *T = Aliases.lookup(VD)) {
      L.Var = dyn_cast<VarDecl>(T);
      L.Field = dyn_cast<FieldDecl>(T);
    }
    return L;
  }
  if (const BindingDecl *BD = elementBinding(E)) {
    L.Var = BD;
    return L;
  }
  // A binding of a typed member is that member (`a = v` checks v as
  // `s.a = v` would).
  if (const BindingDecl *BD = namedBinding(E, Types))
    L.Field = boundMember(BD);
  else
    L.Field = namedField(E, Types);
  return L;
}

void Transfer::assign(const Expr *LHS, const Value &V, const Expr *RHS) {
  Destination D;
  LValue L = lvalueOf(LHS);
  if (const ValueDecl *VD = L.Var) {
    if (const TypeAnnotation *A = declaredType(VD)) {
      if (isRebindable(VD))
        return rebindParameter(cast<VarDecl>(VD), *A, V, RHS);
      D.Kind = Destination::VarAssign;
      D.Decl = VD;
      D.Declared = A;
      checkAgainst(V, *A, D, RHS);
      return;
    }
    if (Types.isTracked(VD->getType()))
      setVar(VD, V);
    return;
  }
  if (const FieldDecl *F = L.Field)
    if (const TypeAnnotation *A = TU.Table.typeOf(F)) {
      D.Kind = Destination::FieldAssign;
      D.Decl = F;
      D.Declared = A;
      checkAgainst(V, *A, D, RHS);
    }
}

//===----------------------------------------------------------------------===//
// Checks
//===----------------------------------------------------------------------===//

void Transfer::report(Problem P) {
  // On an axis of one rank every type is every other: nothing to report.
  if (P.Axis && llvm::is_contained(SizeOne, *P.Axis))
    return;
  if (reporting(P.Kind) && P.Loc.isValid())
    H->handle(std::move(P));
}

/// The axis named by an argument of the runtime's axis lookups: an
/// spmd::Axis constant, its `.name`, or a string literal.
static std::optional<std::string> runtimeAxisName(const Expr *E,
                                                  const ASTContext &Ctx) {
  E = E->IgnoreUnlessSpelledInSource()->IgnoreParenImpCasts();
  if (const auto *SL = dyn_cast<StringLiteral>(E))
    return SL->getString().str();
  if (const auto *ME = dyn_cast<MemberExpr>(E))
    if (ME->getMemberDecl()->getIdentifier() &&
        ME->getMemberDecl()->getName() == "name")
      E = ME->getBase();
  return evaluateAxis(E, Ctx, nullptr);
}

/// The axis of a `spmd::MeshAxisGroup` expression: `mesh.axis("tp")`,
/// `*mesh.find("tp")`, `spmd::resolve_axis("tp")`.
static std::optional<std::string> meshAxisGroupOf(const Expr *E,
                                                  const ASTContext &Ctx) {
  E = E->IgnoreParenImpCasts();
  if (const auto *UO = dyn_cast<UnaryOperator>(E);
      UO && UO->getOpcode() == UO_Deref)
    E = UO->getSubExpr()->IgnoreParenImpCasts();
  const auto *CE = dyn_cast<CallExpr>(E);
  const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
  if (!F || !F->getIdentifier() || !isInTopNamespace(F, "spmd"))
    return std::nullopt;
  llvm::StringRef N = F->getName();
  if (N != "axis" && N != "find" && N != "resolve_axis")
    return std::nullopt;
  unsigned First = isa<CXXOperatorCallExpr>(CE) ? 1 : 0;
  if (CE->getNumArgs() != First + 1)
    return std::nullopt;
  return runtimeAxisName(CE->getArg(First), Ctx);
}

/// The runtime's own axis-size queries: `mesh.axis("tp").size` (also through
/// `find` or `resolve_axis`), its process group's `getSize()`, and
/// `spmd::testing::Rank::axis_size(tp)`.
static std::optional<std::string> runtimeAxisSize(const Expr *E,
                                                  const ASTContext &Ctx) {
  if (const auto *ME = dyn_cast<MemberExpr>(E)) {
    const auto *FD = dyn_cast<FieldDecl>(ME->getMemberDecl());
    const RecordDecl *RD = FD ? FD->getParent() : nullptr;
    if (FD && FD->getIdentifier() && FD->getName() == "size" &&
        RD->getIdentifier() && RD->getName() == "MeshAxisGroup" &&
        isInTopNamespace(RD, "spmd"))
      return meshAxisGroupOf(ME->getBase(), Ctx);
    return std::nullopt;
  }
  const auto *MC = dyn_cast<CXXMemberCallExpr>(E);
  const CXXMethodDecl *MD = MC ? MC->getMethodDecl() : nullptr;
  if (!MD || !MD->getIdentifier())
    return std::nullopt;
  if (MD->getName() == "axis_size" && isInTopNamespace(MD, "spmd") &&
      MC->getNumArgs() == 1)
    return runtimeAxisName(MC->getArg(0), Ctx);
  if (MD->getName() == "getSize" && MC->getNumArgs() == 0) {
    const Expr *Group = MC->getImplicitObjectArgument()->IgnoreParenImpCasts();
    if (const auto *Arrow = dyn_cast<CXXOperatorCallExpr>(Group);
        Arrow && Arrow->getOperator() == OO_Arrow)
      Group = Arrow->getArg(0)->IgnoreParenImpCasts(); // intrusive_ptr's ->
    if (const auto *G = dyn_cast<MemberExpr>(Group))
      if (const auto *FD = dyn_cast<FieldDecl>(G->getMemberDecl());
          FD && FD->getIdentifier() && FD->getName() == "group" &&
          FD->getParent()->getIdentifier() &&
          FD->getParent()->getName() == "MeshAxisGroup")
        return meshAxisGroupOf(G->getBase(), Ctx);
  }
  return std::nullopt;
}

std::optional<AxisId> Transfer::axisSizeOf(const Expr *E, unsigned Depth) {
  E = E->IgnoreParenCasts();
  if (std::optional<std::string> A = runtimeAxisSize(E, Ctx))
    return axis(*A);
  // A bound process group's size (`pg->getSize()`, `group.world_size()`),
  // or a variable or data member declared to hold the size.
  if (const std::string *A = groupQueryAxis(E, TU.Table, GroupQuery::Size))
    return axis(*A);
  if (const auto *CE = dyn_cast<CallExpr>(E)) {
    if (const FunctionDecl *F = CE->getDirectCallee())
      if (const std::string *A = TU.Table.axisSizeOf(F))
        return axis(*A);
    return std::nullopt;
  }
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E))
    if (const auto *VD = dyn_cast<VarDecl>(DRE->getDecl()))
      if (Depth == 0 && VD->isLocalVarDecl() && VD->getInit())
        return axisSizeOf(VD->getInit(), Depth + 1);
  return std::nullopt;
}

/// Whether `size Op C` is true for size 1 only (0) or false for size 1
/// only (1), as a size-1 guard is; nullopt when it is neither.
static std::optional<unsigned> sizeOneShape(BinaryOperatorKind Op, int64_t C) {
  auto Holds = [&](int64_t K) {
    switch (Op) {
    case BO_EQ:
      return K == C;
    case BO_NE:
      return K != C;
    case BO_LT:
      return K < C;
    case BO_LE:
      return K <= C;
    case BO_GT:
      return K > C;
    case BO_GE:
      return K >= C;
    default:
      return false;
    }
  };
  // Sizes are >= 1, and a comparison with a constant is monotone in the size
  // or an equality: these sizes decide what it does on every size above 1.
  bool Always = true, Never = true;
  for (int64_t K : {int64_t(2), int64_t(3), C - 1, C, C + 1, int64_t(1) << 30})
    if (K >= 2) {
      Always &= Holds(K);
      Never &= !Holds(K);
    }
  if (Holds(1) && Never)
    return 0u; // true only on one rank
  if (!Holds(1) && Always)
    return 1u; // false only on one rank
  return std::nullopt;
}

std::optional<std::pair<AxisId, unsigned>>
Transfer::sizeOneEdge(const Expr *Cond) {
  if (!Cond)
    return std::nullopt;
  Cond = Cond->IgnoreParenImpCasts();
  if (const auto *UO = dyn_cast<UnaryOperator>(Cond)) {
    if (UO->getOpcode() != UO_LNot)
      return std::nullopt;
    std::optional<std::pair<AxisId, unsigned>> R =
        sizeOneEdge(UO->getSubExpr());
    if (R)
      R->second = 1 - R->second;
    return R;
  }
  const auto *BO = dyn_cast<BinaryOperator>(Cond);
  if (!BO || !BO->isComparisonOp())
    return std::nullopt;
  BinaryOperatorKind Op = BO->getOpcode();
  const Expr *Size = BO->getLHS(), *Other = BO->getRHS();
  std::optional<AxisId> A = axisSizeOf(Size);
  if (!A) {
    std::swap(Size, Other);
    A = axisSizeOf(Size);
    Op = BinaryOperator::reverseComparisonOp(Op);
  }
  Expr::EvalResult R;
  if (!A || Other->isValueDependent() || !Other->EvaluateAsInt(R, Ctx))
    return std::nullopt;
  if (std::optional<unsigned> Edge =
          sizeOneShape(Op, R.Val.getInt().getSExtValue()))
    return std::make_pair(*A, *Edge);
  return std::nullopt;
}

/// The number \p Cond compares with a constant as a size-1 guard does, when
/// it is a plain integer read (a variable, a data member or an accessor
/// without arguments, not a tensor's `size(d)`); else null.
static const Expr *guardLikeSize(const Expr *Cond, const ASTContext &Ctx) {
  Cond = Cond ? Cond->IgnoreParenImpCasts() : nullptr;
  if (const auto *UO = dyn_cast_or_null<UnaryOperator>(Cond))
    return UO->getOpcode() == UO_LNot ? guardLikeSize(UO->getSubExpr(), Ctx)
                                      : nullptr;
  const auto *BO = dyn_cast_or_null<BinaryOperator>(Cond);
  if (!BO)
    return nullptr;
  if (BO->isLogicalOp()) {
    if (const Expr *L = guardLikeSize(BO->getLHS(), Ctx))
      return L;
    return guardLikeSize(BO->getRHS(), Ctx);
  }
  if (!BO->isComparisonOp())
    return nullptr;
  for (bool Swap : {false, true}) {
    const Expr *Size = (Swap ? BO->getRHS() : BO->getLHS())->IgnoreParenCasts();
    const Expr *Other = Swap ? BO->getLHS() : BO->getRHS();
    BinaryOperatorKind Op =
        Swap ? BinaryOperator::reverseComparisonOp(BO->getOpcode())
             : BO->getOpcode();
    Expr::EvalResult R;
    if (!Size->getType()->isIntegerType() || Size->isValueDependent() ||
        Other->isValueDependent() || !Other->EvaluateAsInt(R, Ctx) ||
        Size->isEvaluatable(Ctx))
      continue;
    const auto *CE = dyn_cast<CallExpr>(Size);
    if (!isa<DeclRefExpr>(Size) && !isa<MemberExpr>(Size) &&
        !(CE && CE->getNumArgs() == 0))
      continue;
    if (sizeOneShape(Op, R.Val.getInt().getSExtValue()))
      return Size;
  }
  return nullptr;
}

/// A size-1-guard-like condition (guardLikeSize) of an `if` or `?:` in
/// \p Body one of whose sides holds \p A or \p B, whose number is not an
/// axis size the checker knows: its number, else null.
const Expr *Transfer::undeclaredSizeGuard(const Stmt *Body, SourceLocation A,
                                          SourceLocation B, unsigned Depth) {
  if (!Body || Depth > 64)
    return nullptr;
  const SourceManager &SM = Ctx.getSourceManager();
  auto Holds = [&](const Stmt *S) {
    if (!S)
      return false;
    SourceRange R = S->getSourceRange();
    auto In = [&](SourceLocation L) {
      return L.isValid() && R.isValid() &&
             !SM.isBeforeInTranslationUnit(L, R.getBegin()) &&
             !SM.isBeforeInTranslationUnit(R.getEnd(), L);
    };
    return In(A) || In(B);
  };
  const Expr *Cond = nullptr;
  const Stmt *Then = nullptr, *Else = nullptr;
  if (const auto *If = dyn_cast<IfStmt>(Body)) {
    Cond = If->getCond();
    Then = If->getThen();
    Else = If->getElse();
  } else if (const auto *CO = dyn_cast<ConditionalOperator>(Body)) {
    Cond = CO->getCond();
    Then = CO->getTrueExpr();
    Else = CO->getFalseExpr();
  }
  if (Cond && (Holds(Then) || Holds(Else)))
    if (const Expr *Size = guardLikeSize(Cond, Ctx); Size && !axisSizeOf(Size))
      return Size;
  for (const Stmt *C : Body->children())
    if (const Expr *Size = undeclaredSizeGuard(C, A, B, Depth + 1))
      return Size;
  return nullptr;
}

/// A use of a value whose type differs between the paths that reach it.
void Transfer::checkUse(const Value &V, const Expr *E, AxisId Axis) {
  const AxisFact *F = V.get(Axis);
  if (!F || !F->isConflict() || !reporting(DiagKind::PathConflict))
    return;
  ProblemSite P;
  P.Kind = DiagKind::PathConflict;
  P.Loc = E->getExprLoc();
  P.Range = E->getSourceRange();
  P.Subject = E;
  P.Axis = Axis;
  if (F->numTypes() == 1) { // two known shard dims
    P.Origins.push_back({nullptr, types::S(F->Shard), F->Origins[2]});
    P.Origins.push_back({nullptr, types::S(F->Shard2), F->Origin2});
  } else {
    auto [A, B] = F->conflictPair();
    P.Origins.push_back({nullptr, F->shown(A), F->originOf(A)});
    P.Origins.push_back({nullptr, F->shown(B), F->originOf(B)});
  }
  const Expr *UndeclaredSize = undeclaredSizeGuard(
      FD->getBody(), P.Origins[0].From.Loc, P.Origins[1].From.Loc);
  report(Problem::pathConflict(std::move(P), UndeclaredSize));
}

void Transfer::checkUnknownUse(const Value &V, const Expr *E) {
  if (!TU.Opts.Strict || !V.isUnknown() || V.fromError() ||
      !reporting(DiagKind::UnknownType))
    return;
  ProblemSite P;
  P.Kind = DiagKind::UnknownType;
  P.Loc = E->getExprLoc();
  P.Range = E->getSourceRange();
  P.Subject = E;
  report(Problem::unknownUse(std::move(P)));
}

bool Transfer::typeStated(const Expr *E, bool AnyVariable) {
  const Stmt *Child = E;
  for (unsigned Depth = 0; Depth < 6; ++Depth) {
    auto Parents = Ctx.getParents(*Child);
    if (Parents.size() != 1)
      return false;
    // A variable (or structured binding) holds it: its type may be stated
    // later (assert_type on the variable); the first use of the variable
    // is reported, naming the callee (Reporter).
    if (const auto *VD = Parents[0].get<VarDecl>())
      return AnyVariable || TU.Table.typeOf(VD) != nullptr;
    const auto *Parent = Parents[0].get<Expr>();
    if (!Parent)
      return false;
    if (const auto *CE = dyn_cast<CallExpr>(Parent);
        CE && !isa<CXXConstructExpr>(Parent)) {
      // Assigned to a variable or field with a declared type.
      if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(CE);
          Op && Op->getOperator() == OO_Equal && Op->getNumArgs() == 2 &&
          skipTransparent(Op->getArg(1), Types) == E) {
        if (const VarDecl *VD = namedVar(Op->getArg(0), Types))
          return TU.Table.typeOf(VD) != nullptr;
        if (const FieldDecl *FD = namedField(Op->getArg(0), Types))
          return TU.Table.typeOf(FD) != nullptr;
        return false;
      }
      const FunctionDecl *Callee = CE->getDirectCallee();
      // A tensor registered as a module's parameter or buffer takes the
      // type declared for the field it initialises (isFreshParameter).
      if (isModuleRegistration(Callee))
        return true;
      return Callee && isSpmdFunction(Callee) && Callee->getIdentifier() &&
             Callee->getName() == "assert_type" && CE->getNumArgs() > 0 &&
             skipTransparent(CE->getArg(0), Types) == E;
    }
    Child = Parent;
  }
  return false;
}

void Transfer::checkUnknownLayout(const Expr *Call, const FunctionDecl *Callee,
                                  const Layout &L, const Expr *Instance) {
  if (!TU.Opts.Strict || !reporting(DiagKind::UnknownType))
    return;
  // Its type is stated right there (assert_type, a typed variable).
  if (typeStated(Call))
    return;
  const LayoutFlags &LF = TU.Layouts.flagsOf(Callee);
  ProblemSite P;
  P.Kind = DiagKind::UnknownType;
  P.Loc = Call->getExprLoc();
  P.Range = Call->getSourceRange();
  P.Subject = Call;
  UnknownLayoutDetail D;
  D.Instance = TU.Layouts.instanceDecl(Instance);
  D.CalleeDecl = Callee;
  int Unknown = -1;
  for (unsigned I = 0; I < LF.Flags.size(); ++I)
    if (!(L.Known >> I & 1)) {
      D.UnknownFlags.push_back({LF.Flags[I], L.Where[I]});
      Unknown = int(I);
    }
  // One unknown flag: the result's type in each of its values.
  if (D.UnknownFlags.size() == 1) {
    Layout Off = L, On = L;
    Off.Known |= 1u << Unknown;
    On.Known |= 1u << Unknown;
    On.Values |= 1u << Unknown;
    const TypeAnnotation *F = TU.Layouts.typeIn(Callee, -1, Off);
    const TypeAnnotation *T = TU.Layouts.typeIn(Callee, -1, On);
    if (F && T)
      for (const AxisEntry &E : F->Entries)
        if (const AxisEntry *O = T->entry(E.Axis); O && O->Type != E.Type)
          D.LayoutTypes.push_back({axis(E.Axis), E.Type, O->Type});
  }
  report(Problem::unknownLayout(std::move(P), std::move(D)));
}

/// Inside [[spmd::mesh]], a value with a declared (closed) type must name
/// every mesh axis (the core's rule, spec 4.3). An axis counts when the value
/// has it at all, known or not.
void Transfer::checkMesh(const Value &V, const Expr *E) {
  if (!Mesh || V.isOpen() || V.axes().empty() ||
      !reporting(DiagKind::MeshCompleteness))
    return;
  core::TensorType Present;
  for (const auto &[A, F] : V.axes())
    Present.set(TU.Axes.name(A).str(), F.knownType().value_or(types::R));
  std::vector<std::string> MeshAxes(Mesh->Axes.begin(), Mesh->Axes.end());
  core::Status S = core::check_mesh_complete(Present, MeshAxes, "", "");
  if (S.ok())
    return;
  ProblemSite P;
  P.Kind = DiagKind::MeshCompleteness;
  P.Loc = E->getExprLoc();
  P.Range = E->getSourceRange();
  P.Subject = E;
  P.Axis = axis(S.error().axis);
  report(Problem::missingMeshAxis(std::move(P), {Mesh, std::move(Present)}));
}

std::optional<SuggestedCollective>
Transfer::conversion(const Expr *E, PerAxisType From, PerAxisType To) const {
  // V -> R/I needs the shard dim (stack vs concat): a fix only for a known
  // S(d) (global mode), gathered along it.
  if (From == types::V && (To == types::R || To == types::I))
    return std::nullopt;
  std::optional<core::CollectiveCall> Route = core::route_redistribute(
      From.is_shard() && (To == types::R || To == types::I) ? From
                                                            : From.local(),
      To);
  if (!Route)
    return std::nullopt;
  // Routes delegate to convert with expert_mode set; offer only what user
  // code may call without it.
  Route->expert_mode = false;
  if (!core::check_arguments(*Route).ok() || !isEditableRange(E))
    return std::nullopt;
  return SuggestedCollective{E, *Route, To};
}

/// A tensor created for its destination: a factory call, or
/// torch::nn::Module::register_parameter / register_buffer (directly or in a
/// helper whose body only returns such a call). Its type is the one declared
/// for the destination (a checkpoint loader fills it), so an unknown value
/// there is not reported.
static bool isFreshParameter(const Expr *E, TypeClassifier &Types,
                             unsigned Depth = 0) {
  E = skipTransparent(seeThroughOptional(E, Types), Types);
  const auto *CE = dyn_cast_or_null<CallExpr>(E);
  const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
  if (!F || !F->getIdentifier())
    return false;
  if (isModuleRegistration(F))
    return true;
  if (isInTorchNamespace(F) && !isa<CXXMethodDecl>(F)) {
    core::OpShape S = core::classify_op(F->getName()).shape;
    if (S == core::OpShape::DeterministicFactory ||
        S == core::OpShape::RandomFactory)
      return true;
  }
  if (Depth < 2)
    if (const CallExpr *Inner = forwardedCall(F, Types))
      return isFreshParameter(Inner, Types, Depth + 1);
  return false;
}

/// Global mode: the order in which \p V's axes shard dim \p D, when the
/// declared tuple of that dim (\p Want's entries with \p Entry's dim, spec
/// §12.1) names the same axes in another order; nullopt when the orders
/// agree, the axes differ, or \p V gives no order (map entries).
std::optional<llvm::SmallVector<AxisId, 3>>
Transfer::tupleOrderDiffers(const Value &V, int D, const TypeAnnotation &Want,
                            const AxisEntry &Entry) const {
  llvm::SmallVector<const AxisEntry *, 3> Declared;
  for (const AxisEntry &O : Want.Entries)
    if (O.Type.is_shard() && O.Type.dim == Entry.Type.dim)
      Declared.push_back(&O);
  if (Declared.size() < 2)
    return std::nullopt;
  llvm::stable_sort(Declared, [](const AxisEntry *X, const AxisEntry *Y) {
    return X->Pos < Y->Pos;
  });
  llvm::SmallVector<AxisId, 3> Have;
  llvm::SmallVector<int, 3> Positions;
  for (AxisId A : V.tupleOf(D))
    if (llvm::any_of(Declared, [&](const AxisEntry *O) {
          return O->Axis == TU.Axes.name(A);
        })) {
      Have.push_back(A);
      Positions.push_back(V.get(A)->Pos);
    }
  if (Have.size() != Declared.size())
    return std::nullopt;
  for (size_t I = 1; I < Positions.size(); ++I)
    if (Positions[I] == Positions[I - 1])
      return std::nullopt; // no order given
  for (size_t I = 0; I < Have.size(); ++I)
    if (TU.Axes.name(Have[I]) != Declared[I]->Axis)
      return Have;
  return std::nullopt;
}

/// Whether \p E makes an undefined tensor: `torch::Tensor()`,
/// `torch::Tensor{}` or `{}` of a tensor type (a reset, as a cache's
/// clear() writes it). It holds no data, so it has no SPMD type to give.
static bool isUndefinedTensor(const Expr *E, TypeClassifier &Types) {
  for (int Depth = 0; E && Depth < 6; ++Depth) {
    E = E->IgnoreImplicit();
    if (const auto *FC = dyn_cast<CXXFunctionalCastExpr>(E)) {
      E = FC->getSubExpr();
      continue;
    }
    if (const auto *ILE = dyn_cast<InitListExpr>(E)) {
      if (ILE->getNumInits() == 1) {
        E = ILE->getInit(0);
        continue;
      }
      return ILE->getNumInits() == 0 && Types.isTensor(ILE->getType());
    }
    if (const auto *CE = dyn_cast<CXXConstructExpr>(E)) {
      if (CE->getNumArgs() == 1 && CE->getConstructor() &&
          (CE->getConstructor()->isCopyOrMoveConstructor())) {
        E = CE->getArg(0);
        continue;
      }
      return CE->getNumArgs() == 0 && Types.isTensor(CE->getType());
    }
    if (isa<ImplicitValueInitExpr, CXXScalarValueInitExpr>(E))
      return Types.isTensor(E->getType());
    return false;
  }
  return false;
}

/// Whether \p E, stored into the declared variable or field of \p Dest,
/// is an undefined tensor (isUndefinedTensor): a reset, which keeps the
/// declared type.
static bool isUndefinedReset(const Destination &Dest, const Expr *E,
                             TypeClassifier &Types) {
  bool Stores = Dest.Kind == Destination::FieldAssign ||
                Dest.Kind == Destination::FieldInit ||
                Dest.Kind == Destination::VarInit ||
                Dest.Kind == Destination::VarAssign;
  return Stores && isUndefinedTensor(E, Types);
}

void Transfer::checkAgainst(const Value &V, const TypeAnnotation &Want,
                            const Destination &Dest, const Expr *E) {
  DiagKind Kind = Dest.Kind == Destination::Argument ? DiagKind::CallArgument
                  : Dest.Kind == Destination::Return ? DiagKind::ReturnType
                                                     : DiagKind::Assignment;
  if (!H)
    return; // nothing to record: a check changes no fact
  if (isUndefinedReset(Dest, E, Types))
    return; // the declared type stays: nothing to check
  struct Mismatch {
    const AxisEntry *Entry;
    AxisId Axis;
    PerAxisType Have;
    const AxisFact *Fact;
    /// A tuple entry in another order: the value's order, outer to inner.
    llvm::SmallVector<AxisId, 3> Order = {};
  };
  llvm::SmallVector<Mismatch, 2> Mismatches;
  for (const AxisEntry &Entry : Want.Entries) {
    AxisId A = axis(Entry.Axis);
    const AxisFact *F = V.get(A);
    if (F && F->isConflict()) {
      checkUse(V, E, A);
      continue;
    }
    std::optional<PerAxisType> Have = F ? F->knownType() : std::nullopt;
    if (TU.Opts.StrictShards && tracksRanks())
      checkShardAgainst(V, E, A, Entry.Type);
    if (Have && *Have != Entry.Type.local())
      Mismatches.push_back({&Entry, A, *Have, F});
    // Global mode: a known shard against a declared S(k) on another dim.
    std::optional<int> D = F ? F->shardDim() : std::nullopt;
    if (Have && D && Entry.Type.is_shard() && globalAxis(A)) {
      std::optional<int> Rank = V.rank();
      int K = Entry.Type.dim;
      bool Differ = Rank ? (*D < 0 ? *D + *Rank : *D) != (K < 0 ? K + *Rank : K)
                         : (*D < 0) == (K < 0) && *D != K;
      if (Differ)
        Mismatches.push_back({&Entry, A, types::S(*D), F});
      else if (Entry.Pos == 0)
        if (std::optional<llvm::SmallVector<AxisId, 3>> Order =
                tupleOrderDiffers(V, *D, Want, Entry))
          Mismatches.push_back({&Entry, A, types::S(*D), F, *Order});
    }
  }
  if (Mismatches.empty()) {
    bool Initialises = Dest.Kind == Destination::FieldAssign ||
                       Dest.Kind == Destination::FieldInit ||
                       Dest.Kind == Destination::VarInit ||
                       Dest.Kind == Destination::VarAssign;
    if (Initialises && isFreshParameter(E, Types))
      return;
    return checkUnknownUse(V, E);
  }
  if (!reporting(Kind))
    return;
  for (const Mismatch &M : Mismatches) {
    ProblemSite P;
    P.Kind = Kind;
    P.Loc = E->getExprLoc();
    P.Range = E->getSourceRange();
    P.Subject = E;
    P.Axis = M.Axis;
    P.Expected = M.Entry->Type;
    // A V with a known shard dim is named S(d) (global mode).
    PerAxisType Shown = M.Have.is_shard() ? M.Have : M.Fact->shown(M.Have);
    P.Actual = Shown;
    P.Origins.push_back({nullptr, Shown, M.Fact->originOf(M.Have)});
    if (Mismatches.size() == 1 && !M.Have.is_shard())
      P.Fix = conversion(E, gatherable(V, M.Axis, Shown), M.Entry->Type);
    report(Problem::mismatch(std::move(P), {Dest, M.Order}));
  }
}

} // namespace spmd::plugin
