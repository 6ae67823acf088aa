//===- TransferOps.cpp - ordinary tensor operations -----------------------===//
//
// An op's operands (tensors, scalars, tensor lists) become core::Operands; the
// core infers the result type or rejects the mix, and decides what an
// in-place op does to its destination.
//
//===----------------------------------------------------------------------===//

#include "Transfer.h"

#include "clang/AST/ParentMapContext.h"

#include <spmd/core/collectives.h>
#include <spmd/core/op_table.h>

#include <cstring>

using namespace clang;

namespace spmd::plugin {

namespace {

/// The tensor an op the core calls in-place writes: the object of a method
/// (`x.add_(y)`), else the first operand (`x += y`, `at::relu_(x)`).
const Expr *mutatedOperand(const Expr *Receiver,
                           llvm::ArrayRef<const Expr *> Args) {
  if (Receiver)
    return Receiver;
  return Args.empty() ? nullptr : Args[0];
}

/// Whether \p VD is assigned anywhere in \p Body after its declaration (then
/// its initializer does not say what storage it views).
bool isAssignedIn(const VarDecl *VD, const Stmt *Body) {
  if (!Body)
    return true;
  auto Names = [VD](const Expr *E) {
    const auto *D = dyn_cast<DeclRefExpr>(E->IgnoreParenImpCasts());
    return D && D->getDecl() == VD;
  };
  if (const auto *BO = dyn_cast<BinaryOperator>(Body))
    if (BO->isAssignmentOp() && Names(BO->getLHS()))
      return true;
  if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(Body))
    if (OC->getOperator() == OO_Equal && OC->getNumArgs() == 2 &&
        Names(OC->getArg(0)))
      return true;
  for (const Stmt *C : Body->children())
    if (C && isAssignedIn(VD, C))
      return true;
  return false;
}

} // namespace

void Transfer::noteViewBinding(const VarDecl *VD, const Expr *Init) {
  if (VD->getType()->isReferenceType() || !Types.isTensor(VD->getType()))
    return;
  // Down a chain of view ops to the tensor they view.
  const Expr *E = skipTransparent(Init, Types);
  bool SawView = false;
  for (unsigned Depth = 0; E && Depth < 16; ++Depth) {
    const Expr *Next = nullptr;
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(E)) {
      const CXXMethodDecl *M = MC->getMethodDecl();
      if (M && M->getIdentifier() && core::is_view_op(M->getName()))
        Next = MC->getImplicitObjectArgument();
    } else if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(E)) {
      // `x[i]` with an integer index is select; a tensor index copies.
      if (OC->getOperator() == OO_Subscript && OC->getNumArgs() == 2 &&
          OC->getArg(1)->getType()->isIntegerType())
        Next = OC->getArg(0);
    } else if (const auto *CE = dyn_cast<CallExpr>(E)) {
      const FunctionDecl *F = CE->getDirectCallee();
      if (F && F->getIdentifier() && CE->getNumArgs() > 0 &&
          core::is_view_op(F->getName()))
        Next = CE->getArg(0);
    }
    if (!Next)
      break;
    SawView = true;
    E = skipTransparent(Next, Types);
  }
  if (!SawView || !E)
    return;
  const ValueDecl *Base = nullptr;
  if (const VarDecl *B = namedVar(E, Types)) {
    Base = B;
    if (const ValueDecl *T = Aliases.lookup(B))
      Base = T;
    else if (const ValueDecl *R = ViewBases.lookup(B))
      Base = R;
  } else {
    Base = namedField(E, Types);
  }
  if (Base && Base != VD && !isAssignedIn(VD, FD->getBody()))
    ViewBases[VD] = Base;
}

void Transfer::writeThroughAliases(const CallExpr *CE, llvm::StringRef Name,
                                   const ValueDecl *Written,
                                   const Expr *Mutated, const Value &Out) {
  if (!Written || ViewBases.empty())
    return;
  const ValueDecl *Root = Written;
  if (const auto *WV = dyn_cast<VarDecl>(Written))
    if (const ValueDecl *R = ViewBases.lookup(WV))
      Root = R;
  llvm::SmallVector<const ValueDecl *, 4> Group;
  if (Root != Written)
    Group.push_back(Root);
  for (const auto &[View, Base] : ViewBases)
    if (Base == Root && View != Written)
      Group.push_back(View);
  // (DenseMap order is not source order: sorted, for stable diagnostics.)
  llvm::sort(Group, [](const ValueDecl *A, const ValueDecl *B) {
    return A->getLocation() < B->getLocation();
  });
  const core::TensorType Wrote = knownPart(Out);
  for (const ValueDecl *M : Group) {
    const TypeAnnotation *A = isa<FieldDecl>(M)
                                  ? TU.Table.typeOf(cast<FieldDecl>(M))
                                  : declaredType(M);
    if (A && isRebindable(M) && !holdsDeclared(M, *A))
      A = nullptr;
    Value Before;
    if (A) {
      Before = declared(*A, {A->Loc, OriginKind::Declared});
    } else if (isa<FieldDecl>(M)) {
      continue; // an undeclared field is not tracked
    } else {
      auto It = VarIndex.find(M);
      const Value *V = It == VarIndex.end() ? nullptr : Cur.get(It->second);
      if (!V)
        continue;
      Before = *V;
    }
    core::TensorType BeforeKnown = knownPart(Before);
    if (BeforeKnown.empty())
      continue;
    core::Result<std::optional<core::TensorType>> R =
        core::apply_alias_write(std::string(Name), BeforeKnown, Wrote, false);
    std::optional<core::TypeError> Err;
    if (!R.ok())
      Err = R.error();
    else if (A && R.value() && !(*R.value() == BeforeKnown)) {
      // A declared tensor keeps its declared type: a view may not change it.
      core::TypeError E;
      E.kind = core::ErrorKind::SpmdTypeError;
      E.message = std::string(Name) +
                  ": in-place write through a view "
                  "changes '" +
                  M->getNameAsString() + "', declared " +
                  BeforeKnown.to_string() + ", to " + R.value()->to_string();
      E.fix = "Clone the view before writing to it, or declare '" +
              M->getNameAsString() + "' with the written type";
      Err = E;
    }
    if (Err) {
      ProblemSite P;
      P.Kind = DiagKind::InPlace;
      P.Loc = CE->getExprLoc();
      P.Range = CE->getSourceRange();
      P.Call = CE;
      P.Subject = Mutated;
      P.Error = std::move(*Err);
      report(Problem::inPlace(std::move(P)));
      continue;
    }
    if (A || !R.value())
      continue;
    Value After = Before;
    for (const auto &[Axis, T] : R.value()->map()) {
      AxisId Id = axis(Axis);
      const AxisFact *OF = Out.get(Id);
      if (Before.get(Id) && Before.get(Id)->knownType() == T)
        continue;
      After.set(Id, AxisFact::known(T, OF ? OF->originOf(T)
                                          : Before.get(Id)->originOf(T)));
    }
    setVar(M, After);
  }
}

/// A tensor operand. Conflicts and unknowns are reported at the use; a
/// conflicting axis then counts as unknown.
void Transfer::addTensorOperand(Operands &Ops, const Expr *E, int Pos) {
  // eval's value, held by reference (it lives as long as the analysis).
  const Value &V = eval(E);
  Ops.Sources.push_back({E, V});
  if (H)
    for (const auto &[Axis, F] : V.axes())
      if (F.isConflict())
        checkUse(V, E, Axis);
  checkUnknownUse(V, E);
  checkMesh(V, E);
  // The core's TensorType of the operand (knownPart(V)) is built only when
  // the core is asked (coreOperands): most ops hit the verdict memo.
  std::optional<core::TensorType> T;
  if (V.hasKnownAxis() || !V.isOpen())
    T.emplace();
  Ops.Core.push_back(core::Operand::tensor(std::move(T), Pos));
}

/// Ops.Core with each tensor operand's known axis types filled in from its
/// value (addTensorOperand leaves them empty).
std::vector<core::Operand> Transfer::coreOperands(const Operands &Ops) const {
  std::vector<core::Operand> Core(Ops.Core.begin(), Ops.Core.end());
  for (size_t I = 0; I < Core.size(); ++I)
    if (Core[I].kind == core::Operand::Kind::Tensor && Core[I].type &&
        Ops.Sources[I].E)
      Core[I].type = knownPart(Ops.Sources[I].V);
  return Core;
}

void Transfer::addArgument(Operands &Ops, const Expr *A, int Pos) {
  if (isa<CXXDefaultArgExpr>(A))
    return;
  if (Types.isTensor(A->getType()))
    return addTensorOperand(Ops, A, Pos);
  // An optional weight or bias (at::linear, at::layer_norm): an operand
  // unless it is certainly empty.
  if (Types.isOptionalTensor(A->getType())) {
    if (!isEmptyOptional(A, Types))
      addTensorOperand(Ops, seeThroughOptional(A, Types), Pos);
    return;
  }
  if (Types.isScalar(A->getType())) {
    Ops.Core.push_back(core::Operand::weak_scalar(Pos));
    static const Value Unknown = Value::unknown();
    Ops.Sources.push_back({nullptr, Unknown, A});
    return;
  }
  llvm::SmallVector<const Expr *, 4> Elems;
  listElements(A, Types, Elems);
  for (const Expr *E : Elems)
    addTensorOperand(Ops, E, Pos);
}

const llvm::StringMapEntry<core::OpInfo> *
Transfer::calleeOp(const FunctionDecl *Callee, unsigned Form,
                   llvm::function_ref<std::string()> Name) {
  auto [It, New] = TU.CalleeOps.try_emplace({Callee, Form}, nullptr);
  if (New)
    if (std::string N = Name(); !N.empty())
      It->second = &TU.opEntry(N); // (OpInfos, not CalleeOps, may grow)
  return It->second;
}

Value Transfer::evalTensorOp(const CallExpr *CE, llvm::StringRef Name,
                             const Expr *Receiver,
                             llvm::ArrayRef<const Expr *> Args,
                             std::optional<core::OpClass> Class,
                             const core::OpInfo *KnownInfo) {
  // The core decides what the op is, in-place included (trailing `_`,
  // compound assignment, ATen spellings).
  const core::OpInfo &Known = KnownInfo ? *KnownInfo : TU.opInfo(Name);
  std::optional<core::OpInfo> Declared; // [[spmd::op]]: the declared class
  if (Class) {
    Declared = Known;
    Declared->op_class = *Class;
    Declared->known = true;
  }
  const core::OpInfo &Info = Declared ? *Declared : Known;
  const Expr *Mutated = Info.inplace ? mutatedOperand(Receiver, Args) : nullptr;
  if (!Types.isTracked(CE->getType()) && !Mutated)
    return Value::unknown(); // sizes, item, comparisons to bool, ...

  Operands Ops;
  int Pos = 0;
  if (Receiver)
    addTensorOperand(Ops, Receiver, Pos++);
  for (const Expr *A : Args) {
    // `x.to(other)` takes only other's dtype and device (the op table).
    if (Types.isTensor(A->getType()) &&
        core::gives_attributes_only(Name, Pos)) {
      ++Pos;
      continue;
    }
    addArgument(Ops, A, Pos++);
  }

  const InferVerdict &R = infer(Name, Info, Ops);
  if (R.Error) {
    reportOpType(CE, Name, Args, Info, Ops, *R.Error);
    return Value::error();
  }
  Value Out = resultOf(R, Ops, CE->getExprLoc());
  // Computed from a value an error produced, or from an unknown operand
  // (strict mode reported it at this op, its first use): no follow-on
  // unknown reports.
  for (const OperandSource &S : Ops.Sources)
    if (S.E && (S.V.fromError() || (TU.Opts.Strict && S.V.isUnknown())))
      Out.setFromError(true);
  propagateShards(CE, Name, Args, Ops, Out);
  if (Mutated)
    return applyInPlace(CE, Name, Mutated, Out);
  return Out;
}

/// core::infer, memoized per translation unit. The key holds what the core
/// sees: the op, its class, the function's mesh, and per operand its kind,
/// position and known axis types (the same TensorType addTensorOperand gives
/// the core).
const InferVerdict &Transfer::infer(llvm::StringRef Name,
                                    const core::OpInfo &Info,
                                    const Operands &Ops) {
  // Fixed-width fields appended byte for byte; an operand's axes are
  // preceded by their count, so no field can be mistaken for another.
  llvm::SmallString<128> Key(Name);
  Key.push_back(0);
  // Room for every field (at most 8 bytes per operand and 3 per axis) made
  // once, so that each field is a fixed-size copy with no capacity check.
  size_t Room = 2 + sizeof(const void *) + 8 * Ops.Core.size();
  for (const OperandSource &S : Ops.Sources)
    Room += 3 * S.V.axes().size();
  size_t Start = Key.size();
  Key.resize_for_overwrite(Start + Room);
  char *At = Key.data() + Start;
  auto Put = [&At](const auto &X) {
    std::memcpy(At, &X, sizeof(X));
    At += sizeof(X);
  };
  Put(uint8_t(Info.op_class));
  Put(uint8_t(Info.known));
  Put(static_cast<const void *>(Mesh));
  for (size_t I = 0; I < Ops.Core.size(); ++I) {
    const core::Operand &O = Ops.Core[I];
    Put(uint8_t(O.kind));
    Put(int32_t(O.position));
    bool Typed = O.type && Ops.Sources[I].E;
    Put(uint8_t(O.type.has_value() + Typed));
    if (!Typed)
      continue;
    // The count of known axes goes first: its place is kept and filled
    // once they are written.
    char *CountAt = At;
    At += sizeof(uint16_t);
    uint16_t Known = 0;
    for (const auto &[A, F] : Ops.Sources[I].V.axes())
      if (std::optional<PerAxisType> T = F.knownType()) {
        Put(uint16_t(A));
        Put(uint8_t(typeIndex(T->kind)));
        ++Known;
      }
    std::memcpy(CountAt, &Known, sizeof(Known));
  }
  Key.truncate(At - Key.data());
  auto [It, New] = TU.Verdicts.try_emplace(Key);
  if (!New)
    return It->second;
  core::Result<core::TensorType> R =
      core::infer(Info, coreOperands(Ops), inferenceContext());
  if (!R.ok())
    It->second.Error = R.error();
  else
    for (const auto &[AxisName, T] : R->map())
      It->second.Axes.push_back({axis(AxisName), T});
  llvm::sort(It->second.Axes, [](const auto &X, const auto &Y) {
    return X.first < Y.first;
  }); // for resultOf, which appends the axes in this order
  return It->second;
}

/// The result of an op the core accepted: an axis is known only if every
/// tensor operand is known on it (or provably lacks it), since an unknown
/// operand may carry any type. A type an operand already had keeps that
/// operand's origin, so notes lead back to the annotation or collective.
Value Transfer::resultOf(const InferVerdict &R, const Operands &Ops,
                         SourceLocation Loc) {
  Value Out = Value::closed();
  bool AnyOpen = false, AnyTensor = false;
  for (const OperandSource &S : Ops.Sources)
    if (S.E) {
      AnyTensor = true;
      AnyOpen |= S.V.isOpen();
    }
  // Per axis of the verdict (sorted by id: appended in order), one pass
  // over the operands: unknown if one is not known there, else the type
  // with the origin of the first operand that has it.
  for (const auto &[A, T] : R.Axes) {
    PerAxisType K = typeAt(typeIndex(T.kind)); // the fact's type (S(d): V)
    const AxisFact *From = nullptr;
    bool Unknown = false;
    for (const OperandSource &S : Ops.Sources) {
      if (!S.E)
        continue;
      const AxisFact *G = S.V.get(A);
      std::optional<PerAxisType> GK = G ? G->knownType() : std::nullopt;
      if (G ? !GK : S.V.isOpen()) {
        Unknown = true;
        break;
      }
      if (!From && GK == K)
        From = G;
    }
    Out.set(A, Unknown ? AxisFact::unknown()
               : From  ? AxisFact::known(K, From->originOf(K))
                       : AxisFact::known(T, {Loc, OriginKind::Inferred}));
  }
  Out.setOpen(AnyOpen || (!AnyTensor && !Mesh));
  return Out;
}

ProblemSite Transfer::opTypeProblem(const CallExpr *CE, const Operands &Ops,
                                    const core::TypeError &Err) {
  ProblemSite P;
  P.Kind = DiagKind::OpType;
  P.Loc = CE->getExprLoc();
  P.Range = CE->getSourceRange();
  P.Call = CE;
  P.Error = Err;
  if (Err.axis.empty())
    return P;
  AxisId A = axis(Err.axis);
  P.Axis = A;
  // Where each operand's type on the failing axis came from (two at most).
  for (const OperandSource &S : Ops.Sources) {
    const AxisFact *F = S.E ? S.V.get(A) : nullptr;
    if (std::optional<PerAxisType> K = F ? F->knownType() : std::nullopt)
      if (P.Origins.size() < 2)
        P.Origins.push_back({S.E, F->shown(*K), F->originOf(*K)});
  }
  return P;
}

void Transfer::reportOpType(const CallExpr *CE, llvm::StringRef Name,
                            llvm::ArrayRef<const Expr *> CallArgs,
                            const core::OpInfo &Info, const Operands &Ops,
                            const core::TypeError &Err) {
  if (!reporting(DiagKind::OpType))
    return;
  ProblemSite P = opTypeProblem(CE, Ops, Err);
  const CallExpr *MovedReduce = nullptr;
  if (P.Axis) {
    AxisId A = *P.Axis;
    // A repair when converting one operand makes the op legal: under the
    // local rule and, in global mode, under the sharding rule too (a bias
    // typed I in a row-parallel linear becomes R, and an R bias would be
    // added to every rank's partial sum: no single conversion is right,
    // and the sharding rule's advice is given instead).
    core::InferenceContext IC = inferenceContext();
    std::vector<core::Operand> Core = coreOperands(Ops);
    std::optional<core::TypeError> ShardAdvice;
    for (size_t I = 0; I < Ops.Sources.size() && !P.Fix; ++I) {
      const OperandSource &S = Ops.Sources[I];
      std::optional<PerAxisType> K = S.E ? S.V.knownOn(A) : std::nullopt;
      if (!K)
        continue;
      for (PerAxisType Target : {types::R, types::V}) {
        if (Target == *K)
          continue;
        std::vector<core::Operand> Alt = Core;
        Alt[I].type->set(Err.axis, Target);
        if (!core::infer(Info, Alt, IC).ok())
          continue;
        if (std::optional<core::TypeError> No =
                shardRuleRejects(CE, Name, CallArgs, Ops, A, I, Target)) {
          if (!ShardAdvice)
            ShardAdvice = std::move(No);
          continue;
        }
        if ((P.Fix = conversion(S.E, *K, Target)))
          break;
      }
    }
    if (P.Fix && P.Fix->Call.src.kind == TypeKind::Partial)
      MovedReduce = enclosingReduce(CE, A, Info, Core, *P.Fix, IC);
    // The conversion the local rule would suggest is wrong here: the
    // sharding rule's repair replaces the local rule's advice.
    if (!P.Fix && ShardAdvice && !ShardAdvice->fix.empty()) {
      P.Error->fix = ShardAdvice->fix;
      P.Error->notes = ShardAdvice->notes;
    }
  }
  report(Problem::opType(std::move(P), MovedReduce));
}

/// The spmd::all_reduce (src P, on axis \p A) whose input is the op call
/// \p CE itself, when reducing the operand \p Fix targets to that reduce's
/// dst also makes the op legal: `all_reduce(gelu(p), tp, P, R)` is repaired
/// by moving the reduce onto p, not by a second one. Null otherwise.
const CallExpr *Transfer::enclosingReduce(
    const CallExpr *CE, AxisId A, const core::OpInfo &Info,
    const std::vector<core::Operand> &Core, const SuggestedCollective &Fix,
    const core::InferenceContext &IC) {
  const Stmt *Child = CE;
  for (unsigned Depth = 0; Depth < 6; ++Depth) {
    auto Parents = Ctx.getParents(*Child);
    if (Parents.size() != 1)
      return nullptr;
    const auto *Parent = Parents[0].get<Expr>();
    if (!Parent)
      return nullptr;
    const auto *Outer = dyn_cast<CallExpr>(Parent);
    if (!Outer || isa<CXXConstructExpr>(Parent)) {
      Child = Parent;
      continue;
    }
    const FunctionDecl *Callee = Outer->getDirectCallee();
    if (!Callee || !isSpmdFunction(Callee) || !Callee->getIdentifier() ||
        core::parse_collective(Callee->getName()) !=
            core::Collective::AllReduce ||
        Outer->getNumArgs() < 4 ||
        skipTransparent(Outer->getArg(0), Types) !=
            skipTransparent(CE, Types) ||
        !isEditableRange(Outer))
      return nullptr;
    std::optional<std::string> Axis =
        evaluateAxis(Outer->getArg(1), Ctx, nullptr);
    std::optional<PerAxisType> Src = evaluatePerAxisType(Outer->getArg(2), Ctx);
    std::optional<PerAxisType> Dst = evaluatePerAxisType(Outer->getArg(3), Ctx);
    if (!Axis || *Axis != TU.Axes.name(A) || !Src ||
        Src->kind != TypeKind::Partial || !Dst)
      return nullptr;
    // The op must be legal on its pending-sum operands reduced to the
    // outer dst (the fix's own target was checked already).
    if (*Dst != Fix.Result) {
      std::vector<core::Operand> Alt = Core;
      for (core::Operand &O : Alt)
        if (O.type && O.type->get(*Axis) == types::P)
          O.type->set(*Axis, *Dst);
      if (!core::infer(Info, Alt, IC).ok())
        return nullptr;
    }
    return Outer;
  }
  return nullptr;
}

/// An in-place op: the core decides whether the destination may take the
/// result's type; a declared destination is checked like an assignment.
Value Transfer::applyInPlace(const CallExpr *CE, llvm::StringRef Name,
                             const Expr *Mutated, const Value &Out) {
  LValue L = lvalueOf(Mutated);
  const ValueDecl *VD = L.Var;
  const FieldDecl *Field = L.Field;
  Value Before = eval(Mutated);
  core::TensorType BeforeKnown = knownPart(Before);
  std::optional<core::TensorType> BeforeT;
  if (!BeforeKnown.empty())
    BeforeT = BeforeKnown;
  // Rows of a vocab-parallel lookup zeroed in place (`rows.masked_fill_(m,
  // 0)`) are the same local data, now known to be a pending sum
  // (core::zeroed_rows_type): spec 8.1's V -> P refinement, not a change of
  // type; the in-place rule and a declared destination see the V.
  Value AsLocal = Out;
  for (const auto &[A, F] : Before.axes()) {
    const AxisFact *OF = Out.get(A);
    if (F.Shard == AxisFact::UnmaskedRows && F.knownType() && OF &&
        OF->knownType() && OF->knownType()->kind == TypeKind::Partial)
      AsLocal.set(A, AxisFact::known(types::V, F.originOf(types::V)));
  }
  core::Result<core::TensorType> After = core::apply_inplace(
      std::string(Name), BeforeT, knownPart(AsLocal), false);
  if (!After.ok()) {
    ProblemSite P;
    P.Kind = DiagKind::InPlace;
    P.Loc = CE->getExprLoc();
    P.Range = CE->getSourceRange();
    P.Call = CE;
    P.Subject = Mutated;
    P.Error = After.error();
    report(Problem::inPlace(std::move(P)));
    return Before;
  }
  const TypeAnnotation *A = VD      ? declaredType(VD)
                            : Field ? TU.Table.typeOf(Field)
                                    : nullptr;
  // A parameter rebound to another type (`x = f(x);`) no longer holds the
  // caller's tensor: updated like an undeclared variable.
  if (A && VD && isRebindable(VD) && !holdsDeclared(VD, *A))
    A = nullptr;
  if (A) {
    Destination D;
    D.Kind = Destination::InPlaceResult;
    D.Mutated = Mutated;
    D.Declared = A;
    checkAgainst(AsLocal, *A, D, CE);
    writeThroughAliases(CE, Name, VD, Mutated, Out);
    return Before;
  }
  if (VD && Types.isTensor(VD->getType()))
    setVar(VD, Out);
  writeThroughAliases(CE, Name, VD, Mutated, Out);
  return Out;
}

} // namespace spmd::plugin
