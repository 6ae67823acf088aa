//===- Transfer.cpp - statements, values, calls and checks ----------------===//
//
// The statement-level transfer functions, expression evaluation and the
// checks against declared types. Collectives and assert_type are in
// TransferCollectives.cpp, ordinary tensor ops in TransferOps.cpp.
//
//===----------------------------------------------------------------------===//

#include "Transfer.h"

#include <spmd/core/annotation_rules.h>
#include <spmd/core/collectives.h>

using namespace clang;

namespace spmd::plugin {

void TUContext::noteAxes(const TypeAnnotation &A) {
  for (const AxisEntry &E : A.Entries)
    noteAxis(Axes.intern(E.Axis), E.AxisDecl);
}

Transfer::Transfer(TUContext &TU, const FunctionDecl *FD, FactArena &Arena)
    : TU(TU), Ctx(TU.Ctx), Types(TU.Types), FD(FD),
      Result(TU.Table.resultOf(FD)), Mesh(TU.Table.meshOf(FD)), Arena(Arena) {}

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
  Value V = Value::closed();
  for (const AxisEntry &E : A.Entries)
    V.set(axis(E.Axis),
          AxisFact::known(TU.Opts.Global ? E.Type : E.Type.local(), O));
  return V;
}

Value Transfer::fromCore(const core::TensorType &T, Origin O, bool Open) {
  Value V = Value::closed();
  V.setOpen(Open);
  for (const auto &[Name, Type] : T.map())
    V.set(axis(Name), AxisFact::known(Type, O));
  return V;
}

core::TensorType Transfer::knownPart(const Value &V) const {
  core::TensorType T;
  for (const auto &[A, F] : V.axes())
    if (std::optional<PerAxisType> K = F.knownType())
      T.set(TU.Axes.name(A).str(), *K);
  return T;
}

unsigned Transfer::varIndex(const VarDecl *VD) {
  return VarIndex.try_emplace(VD, VarIndex.size()).first->second;
}

void Transfer::setVar(const VarDecl *VD, const Value &V) {
  if (TU.Table.typeOf(VD))
    return; // a declared variable keeps its declared type
  Cur = Cur.set(varIndex(VD), V, Arena);
}

//===----------------------------------------------------------------------===//
// Blocks and statements
//===----------------------------------------------------------------------===//

FactMap Transfer::entryState() {
  FactMap S;
  for (const ParmVarDecl *P : FD->parameters())
    if (const TypeAnnotation *A = TU.Table.typeOf(P)) {
      TU.noteAxes(*A);
      S = S.set(varIndex(P), declared(*A, {A->Loc, OriginKind::Declared}),
                Arena);
    }
  return S;
}

FactMap Transfer::block(const CFGBlock &B, FactMap In,
                        ProblemHandler *Handler) {
  Cur = In;
  H = Handler;
  Memo.clear();
  for (const CFGElement &E : B) {
    if (std::optional<CFGStmt> S = E.getAs<CFGStmt>())
      stmt(S->getStmt());
    else if (std::optional<CFGInitializer> I = E.getAs<CFGInitializer>())
      memberInitializer(I->getInitializer());
  }
  H = nullptr;
  return Cur;
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

void Transfer::declStmt(const DeclStmt *DS) {
  for (const Decl *D : DS->decls()) {
    const auto *VD = dyn_cast<VarDecl>(D);
    if (!VD)
      continue;
    if (const TypeAnnotation *A = TU.Table.typeOf(VD)) {
      TU.noteAxes(*A);
      if (const Expr *Init = VD->getInit())
        if (Types.isTensor(Init->getType()) || isa<CXXConstructExpr>(Init)) {
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
    if (!Types.isTensor(VD->getType()))
      continue;
    const Expr *Init = VD->getInit();
    Cur = Cur.set(varIndex(VD), Init ? eval(Init) : Value::unknown(), Arena);
  }
}

void Transfer::stmt(const Stmt *S) {
  if (const auto *DS = dyn_cast<DeclStmt>(S))
    return declStmt(DS);
  if (const auto *RS = dyn_cast<ReturnStmt>(S)) {
    const Expr *RV = RS->getRetValue();
    if (Result && RV && Types.isTensor(RV->getType())) {
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

Value Transfer::eval(const Expr *E) {
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

Value Transfer::evalUncached(const Expr *E) {
  if (E->containsErrors() || E->isValueDependent() || E->isTypeDependent())
    return Value::unknown();
  if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
    const auto *VD = dyn_cast<VarDecl>(DRE->getDecl());
    if (!VD)
      return Value::unknown();
    if (const TypeAnnotation *A = TU.Table.typeOf(VD))
      return declared(*A, {A->Loc, OriginKind::Declared});
    auto It = VarIndex.find(VD);
    const Value *V = It == VarIndex.end() ? nullptr : Cur.get(It->second);
    return V ? *V : Value::unknown();
  }
  if (const auto *ME = dyn_cast<MemberExpr>(E)) {
    if (const auto *F = dyn_cast<FieldDecl>(ME->getMemberDecl()))
      if (const TypeAnnotation *A = TU.Table.typeOf(F))
        return declared(*A, {A->Loc, OriginKind::Declared});
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

Value Transfer::evalCall(const CallExpr *CE) {
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
  if (OpCall && OpCall->getOperator() == OO_Equal && CE->getNumArgs() == 2 &&
      Types.isTensor(CE->getArg(0)->getType()))
    return evalAssignment(OpCall);

  if (TU.Table.isAnnotatedFunction(Callee))
    return evalUserCall(CE, Callee);
  return evalOrdinaryOp(CE, Callee);
}

/// Tensor assignment: `x = expr`.
Value Transfer::evalAssignment(const CXXOperatorCallExpr *CE) {
  if (!Types.isTensor(CE->getArg(1)->getType()))
    return eval(CE->getArg(0)); // x = scalar fills in place
  Value V = eval(CE->getArg(1));
  assign(CE->getArg(0), V, CE->getArg(1));
  // The value of `x = e` is x after the assignment: its declared type, or
  // e's (the LHS node itself may be memoized with the old value).
  const VarDecl *VD = namedVar(CE->getArg(0), Types);
  const FieldDecl *F = VD ? nullptr : namedField(CE->getArg(0), Types);
  if (const TypeAnnotation *A = VD  ? TU.Table.typeOf(VD)
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
    if (MD && MD->getIdentifier() && Obj && Types.isTensor(Obj->getType())) {
      llvm::SmallVector<const Expr *, 4> Args(MC->arguments());
      return evalTensorOp(CE, "." + MD->getName().str(), Obj, Args);
    }
    return Value::unknown();
  }
  if (const auto *OpCall = dyn_cast<CXXOperatorCallExpr>(CE)) {
    if (llvm::none_of(CE->arguments(), [&](const Expr *A) {
          return Types.isTensor(A->getType());
        }))
      return Value::unknown();
    std::string Dunder = core::dunder_for_operator(
        getOperatorSpelling(OpCall->getOperator()), CE->getNumArgs() == 1);
    if (Dunder.empty())
      return Value::unknown();
    llvm::SmallVector<const Expr *, 4> Args(CE->arguments());
    return evalTensorOp(CE, Dunder, nullptr, Args);
  }
  if (Callee->getIdentifier() &&
      (isInTopNamespace(Callee, "at") || isInTopNamespace(Callee, "torch"))) {
    llvm::SmallVector<const Expr *, 4> Args(CE->arguments());
    return evalTensorOp(CE, Callee->getName().str(), nullptr, Args);
  }
  return Value::unknown();
}

Value Transfer::evalUserCall(const CallExpr *CE, const FunctionDecl *Callee) {
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
    Destination D;
    D.Kind = Destination::Argument;
    D.Callee = Callee;
    D.ParamIndex = PI;
    D.Declared = A;
    checkAgainst(eval(Arg), *A, D, Arg);
  }
  if (const TypeAnnotation *R = TU.Table.resultOf(Callee))
    return declared(*R, {CE->getExprLoc(), OriginKind::CallResult});
  if (std::optional<core::OpClass> C = TU.Table.opClassOf(Callee)) {
    llvm::SmallVector<const Expr *, 4> Args;
    const Expr *Receiver = nullptr;
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE))
      Receiver = MC->getImplicitObjectArgument();
    for (unsigned I = Skip; I < CE->getNumArgs(); ++I)
      Args.push_back(CE->getArg(I));
    if (Receiver && !Types.isTensor(Receiver->getType()))
      Receiver = nullptr;
    return evalTensorOp(CE, Callee->getNameAsString(), Receiver, Args, C);
  }
  return Value::unknown();
}

void Transfer::assign(const Expr *LHS, const Value &V, const Expr *RHS) {
  Destination D;
  if (const VarDecl *VD = namedVar(LHS, Types)) {
    if (const TypeAnnotation *A = TU.Table.typeOf(VD)) {
      D.Kind = Destination::VarAssign;
      D.Decl = VD;
      D.Declared = A;
      checkAgainst(V, *A, D, RHS);
      return;
    }
    if (Types.isTensor(VD->getType()))
      setVar(VD, V);
    return;
  }
  if (const FieldDecl *F = namedField(LHS, Types))
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
  if (reporting(P.Kind) && P.Loc.isValid())
    H->handle(std::move(P));
}

/// A use of a value whose type differs between the paths that reach it.
void Transfer::checkUse(const Value &V, const Expr *E, AxisId Axis) {
  const AxisFact *F = V.get(Axis);
  if (!F || !F->isConflict() || !reporting(DiagKind::PathConflict))
    return;
  auto [A, B] = F->conflictPair();
  Problem P;
  P.Kind = DiagKind::PathConflict;
  P.Code = ProblemCode::PathConflict;
  P.Loc = E->getExprLoc();
  P.Range = E->getSourceRange();
  P.Subject = E;
  P.Axis = Axis;
  P.Origins.push_back({nullptr, A, F->originOf(A)});
  P.Origins.push_back({nullptr, B, F->originOf(B)});
  report(std::move(P));
}

void Transfer::checkUnknownUse(const Value &V, const Expr *E) {
  if (!TU.Opts.Strict || !V.isUnknown() || !reporting(DiagKind::UnknownType))
    return;
  Problem P;
  P.Kind = DiagKind::UnknownType;
  P.Code = ProblemCode::UnknownUse;
  P.Loc = E->getExprLoc();
  P.Range = E->getSourceRange();
  P.Subject = E;
  report(std::move(P));
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
  Problem P;
  P.Kind = DiagKind::MeshCompleteness;
  P.Code = ProblemCode::MissingMeshAxis;
  P.Loc = E->getExprLoc();
  P.Range = E->getSourceRange();
  P.Subject = E;
  P.Axis = axis(S.error().axis);
  P.Mesh = Mesh;
  P.Type = std::move(Present);
  report(std::move(P));
}

std::optional<SuggestedCollective>
Transfer::conversion(const Expr *E, PerAxisType From, PerAxisType To) const {
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
  if (!core::check_arguments(*Route).ok() || !isEditableRange(E))
    return std::nullopt;
  return SuggestedCollective{E, *Route, To};
}

void Transfer::checkAgainst(const Value &V, const TypeAnnotation &Want,
                            const Destination &Dest, const Expr *E) {
  DiagKind Kind = Dest.Kind == Destination::Argument ? DiagKind::CallArgument
                  : Dest.Kind == Destination::Return ? DiagKind::ReturnType
                                                     : DiagKind::Assignment;
  if (!H)
    return; // nothing to record: a check changes no fact
  struct Mismatch {
    const AxisEntry *Entry;
    AxisId Axis;
    PerAxisType Have;
    const AxisFact *Fact;
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
    if (Have && *Have != Entry.Type.local())
      Mismatches.push_back({&Entry, A, *Have, F});
  }
  if (Mismatches.empty())
    return checkUnknownUse(V, E);
  if (!reporting(Kind))
    return;
  for (const Mismatch &M : Mismatches) {
    Problem P;
    P.Kind = Kind;
    P.Code = ProblemCode::Mismatch;
    P.Loc = E->getExprLoc();
    P.Range = E->getSourceRange();
    P.Subject = E;
    P.Axis = M.Axis;
    P.Expected = M.Entry->Type;
    P.Actual = M.Have;
    P.Origins.push_back({nullptr, M.Have, M.Fact->originOf(M.Have)});
    P.Dest = Dest;
    if (Mismatches.size() == 1)
      P.Fix = conversion(E, M.Have, M.Entry->Type);
    report(std::move(P));
  }
}

} // namespace spmd::plugin
