//===- TransferCollectives.cpp - collectives and spmd::assert_type --------===//
//
// A collective call's constant arguments (axis, src, dst, options) are read
// into a core::CollectiveCall; the core decides its legality and its effect on
// the input's type. spmd::assert_type narrows or contradicts what is known.
//
//===----------------------------------------------------------------------===//

#include "Transfer.h"

#include <spmd/core/annotation_rules.h>
#include <spmd/core/collective_options.h>
#include <spmd/core/collectives.h>
#include <spmd/core/global_collectives.h>

using namespace clang;

namespace spmd::plugin {

namespace {

/// Whether \p E is an empty construction (`{}`, `T()`), i.e. the default.
bool isEmptyConstruct(const Expr *E) {
  const auto *CCE = dyn_cast<CXXConstructExpr>(E);
  return CCE && CCE->getNumArgs() == 0;
}

/// The value written for an option, as far as constant evaluation can read
/// it; what it cannot read is "unread" (given, value unknown).
core::OptionValue readOptionValue(core::OptionType Type, const Expr *Init,
                                  ASTContext &Ctx) {
  switch (Type) {
  case core::OptionType::Bool: {
    bool B;
    if (Init->EvaluateAsBooleanCondition(B, Ctx))
      return core::OptionValue::of(B);
    break;
  }
  case core::OptionType::Dim: {
    const Expr *X = Init;
    if (const auto *C = dyn_cast<CXXConstructExpr>(X))
      if (C->getNumArgs() == 1)
        X = C->getArg(0); // std::optional<int64_t>(k)
    Expr::EvalResult R;
    if (X->EvaluateAsInt(R, Ctx))
      return core::OptionValue::of(long(R.Val.getInt().getExtValue()));
    break;
  }
  case core::OptionType::Sizes:
  case core::OptionType::Dtype:
  case core::OptionType::BackwardOptions:
    break; // only their presence matters to the rules the plugin checks
  }
  return core::OptionValue::unread();
}

/// Sets the option named by field \p F from the expression written for it
/// (a field the core's table does not know, from a newer runtime, is not
/// checked). readOptionValue gives a value of the option's own type (or
/// unread), which set_option always accepts.
void setOptionField(const FieldDecl *F, const Expr *Value,
                    core::CollectiveCall &Call, ASTContext &Ctx) {
  if (const core::CollectiveOptionInfo *O = core::find_option(F->getName()))
    (void)core::set_option(Call, O->id, readOptionValue(O->type, Value, Ctx));
}

/// `v.f = e;` (built-in `=` or the field's own operator=): f and e.
std::optional<std::pair<const FieldDecl *, const Expr *>>
fieldAssignment(const Stmt *S, const VarDecl *VD) {
  if (const auto *EWC = dyn_cast<ExprWithCleanups>(S))
    S = EWC->getSubExpr();
  const Expr *LHS = nullptr, *RHS = nullptr;
  if (const auto *BO = dyn_cast<BinaryOperator>(S);
      BO && BO->getOpcode() == BO_Assign) {
    LHS = BO->getLHS();
    RHS = BO->getRHS();
  } else if (const auto *OC = dyn_cast<CXXOperatorCallExpr>(S);
             OC && OC->getOperator() == OO_Equal && OC->getNumArgs() == 2) {
    LHS = OC->getArg(0);
    RHS = OC->getArg(1);
  }
  const auto *ME =
      LHS ? dyn_cast<MemberExpr>(LHS->IgnoreParenImpCasts()) : nullptr;
  const auto *F = ME ? dyn_cast<FieldDecl>(ME->getMemberDecl()) : nullptr;
  const auto *Base =
      ME ? dyn_cast<DeclRefExpr>(ME->getBase()->IgnoreParenImpCasts())
         : nullptr;
  if (!F || !Base || Base->getDecl() != VD || ME->isArrow())
    return std::nullopt;
  return std::make_pair(F, skipBraceWrappers(RHS));
}

/// The references to \p VD under \p S: in all, and as the options argument
/// of an spmd collective (a const reference: read, not written).
void countOptionUses(const Stmt *S, const VarDecl *VD, unsigned &All,
                     unsigned &AsOptions) {
  if (!S)
    return;
  if (const auto *DRE = dyn_cast<DeclRefExpr>(S); DRE && DRE->getDecl() == VD)
    ++All;
  if (const auto *CE = dyn_cast<CallExpr>(S))
    if (const FunctionDecl *F = CE->getDirectCallee();
        F && isSpmdFunction(F) && F->getIdentifier() &&
        core::parse_collective(F->getName()))
      for (unsigned I = 1; I < CE->getNumArgs(); ++I)
        if (const auto *DRE =
                dyn_cast<DeclRefExpr>(CE->getArg(I)->IgnoreParenImpCasts());
            DRE && DRE->getDecl() == VD)
          ++AsOptions;
  for (const Stmt *C : S->children())
    countOptionUses(C, VD, All, AsOptions);
}

/// The compound statement under \p S one of whose statements declares \p VD,
/// and that statement's index.
const CompoundStmt *declaringBlock(const Stmt *S, const VarDecl *VD,
                                   unsigned &Index) {
  if (!S)
    return nullptr;
  if (const auto *CS = dyn_cast<CompoundStmt>(S)) {
    unsigned I = 0;
    for (const Stmt *C : CS->body()) {
      if (const auto *DS = dyn_cast<DeclStmt>(C))
        if (llvm::is_contained(DS->decls(), VD)) {
          Index = I;
          return CS;
        }
      ++I;
    }
  }
  for (const Stmt *C : S->children())
    if (const CompoundStmt *Found = declaringBlock(C, VD, Index))
      return Found;
  return nullptr;
}

/// Reads an options variable of the analysed function \p FD at the call
/// \p Call: its initializer, then the constant field assignments
/// (`opts.inplace = true;`) that come before the call among the statements
/// of the block that declares it. False (not read) when anything else
/// touches the variable: an assignment nested in a branch or a loop, a
/// method call, its address, a use other than as a collective's options.
bool readOptionsVariable(const VarDecl *VD, const FunctionDecl *FD,
                         const Expr *CallE, core::CollectiveCall &Call,
                         ASTContext &Ctx);

/// Reads the options argument of a collective when it is written in place
/// (`{}` or an aggregate initializer) or is a local variable set by constant
/// field assignments before the call (readOptionsVariable); otherwise the
/// checker cannot see it and assumes the most permissive options (expert_mode
/// on, not in place).
void readCollectiveOptions(const Expr *E, core::CollectiveCall &Call,
                           ASTContext &Ctx, const FunctionDecl *FD = nullptr,
                           const Expr *CallE = nullptr) {
  if (!E || isa<CXXDefaultArgExpr>(E))
    return;
  const Expr *Inner = skipBraceWrappers(E);
  if (isEmptyConstruct(Inner))
    return; // CollectiveOptions{} / CollectiveOptions()
  if (const auto *DRE = dyn_cast<DeclRefExpr>(Inner); DRE && FD && CallE)
    if (const auto *VD = dyn_cast<VarDecl>(DRE->getDecl()))
      if (readOptionsVariable(VD, FD, CallE, Call, Ctx))
        return;
  const auto *ILE = dyn_cast<InitListExpr>(Inner);
  const RecordDecl *RD = ILE ? ILE->getType()->getAsRecordDecl() : nullptr;
  if (!RD) {
    Call.expert_mode = true; // unknown options: do not guess a violation
    return;
  }
  unsigned I = 0;
  for (const FieldDecl *F : RD->fields()) {
    if (I >= ILE->getNumInits())
      break;
    const Expr *Init = ILE->getInit(I++)->IgnoreParenImpCasts();
    if (isa<ImplicitValueInitExpr>(Init) || isa<CXXDefaultInitExpr>(Init) ||
        isEmptyConstruct(Init))
      continue;
    setOptionField(F, Init, Call, Ctx); // the core's table says what F is
  }
}

bool readOptionsVariable(const VarDecl *VD, const FunctionDecl *FD,
                         const Expr *CallE, core::CollectiveCall &Call,
                         ASTContext &Ctx) {
  if (VD->getDeclContext() != FD || !VD->isLocalVarDecl() ||
      VD->getType()->isReferenceType() || VD->getType().isVolatileQualified())
    return false;
  const RecordDecl *RD = VD->getType()->getAsRecordDecl();
  unsigned DeclIndex = 0;
  const CompoundStmt *Block =
      RD ? declaringBlock(FD->getBody(), VD, DeclIndex) : nullptr;
  if (!Block)
    return false;
  // The initializer: none, `{}` / `()`, or an aggregate initializer.
  core::CollectiveCall Read = Call;
  if (const Expr *Init = VD->getInit()) {
    const Expr *I = skipBraceWrappers(Init);
    if (!isEmptyConstruct(I)) {
      if (!isa<InitListExpr>(I))
        return false; // a copy of another options value
      readCollectiveOptions(I, Read, Ctx);
    }
  }
  const SourceManager &SM = Ctx.getSourceManager();
  SourceLocation CallLoc = SM.getExpansionLoc(CallE->getBeginLoc());
  llvm::SmallVector<std::pair<const FieldDecl *, const Expr *>, 4> Before;
  unsigned I = 0;
  for (const Stmt *S : Block->body()) {
    if (I++ <= DeclIndex)
      continue;
    if (auto FA = fieldAssignment(S, VD)) {
      unsigned All = 0, AsOptions = 0;
      countOptionUses(FA->second, VD, All, AsOptions);
      if (All)
        return false; // `o.f = g(o)`
      if (SM.isBeforeInTranslationUnit(SM.getExpansionLoc(S->getEndLoc()),
                                       CallLoc))
        Before.push_back(*FA);
      continue;
    }
    unsigned All = 0, AsOptions = 0;
    countOptionUses(S, VD, All, AsOptions);
    if (All != AsOptions)
      return false;
  }
  for (const auto &[F, Value] : Before)
    setOptionField(F, Value, Read, Ctx);
  Call = Read;
  return true;
}

} // namespace

/// The collective call as written, or nullopt (reported) when its axis or
/// types are not constants the checker can read.
std::optional<core::CollectiveCall>
Transfer::readCollectiveCall(const CallExpr *CE, core::Collective C) {
  core::CollectiveCall Call;
  Call.op = C;
  unsigned OptionsArg = 2;
  // An op that takes no src/dst (invariant_to_replicate): the core says
  // which types it implies.
  if (auto Implied = core::implied_types(C)) {
    Call.src = Implied->first;
    Call.dst = Implied->second;
  } else {
    if (CE->getNumArgs() < 4)
      return std::nullopt;
    for (unsigned I = 0; I < 2; ++I) {
      const Expr *A = CE->getArg(2 + I);
      std::optional<PerAxisType> T = evaluatePerAxisType(A, Ctx);
      if (!T) {
        ProblemSite P;
        P.Kind = DiagKind::CollectiveArgument;
        P.Loc = A->getExprLoc();
        P.Range = A->getSourceRange();
        P.Subject = A;
        P.Call = CE;
        P.Op = C;
        report(I == 0 ? Problem::nonConstantSrc(std::move(P))
                      : Problem::nonConstantDst(std::move(P)));
        return std::nullopt;
      }
      (I == 0 ? Call.src : Call.dst) = *T;
    }
    OptionsArg = 4;
  }
  readCollectiveOptions(CE->getNumArgs() > OptionsArg ? CE->getArg(OptionsArg)
                                                      : nullptr,
                        Call, Ctx, FD, CE);
  return Call;
}

/// The value a collective \p Call at \p CE makes of \p In on axis \p To:
/// dst there, in its dim's tuple as the innermost axis (spec §12.4); the
/// size-1 dims and the rank kept only where the local shape is.
Value Transfer::collectiveResult(const CallExpr *CE,
                                 const core::CollectiveCall &Call,
                                 const Value &In, AxisId To) {
  Value Out = In;
  // Only all_reduce and reinterpret keep the local shape: the others may
  // change a size-1 dim (a gather along it).
  bool KeepsShape = Call.op == core::Collective::AllReduce ||
                    Call.op == core::Collective::Reinterpret;
  if (!KeepsShape)
    Out.setSizeOneDims(0);
  // A gather of a plain V stacks (a new dim), a scatter to V splits one.
  if (!KeepsShape && (Call.src.kind == TypeKind::Varying ||
                      Call.dst.kind == TypeKind::Varying))
    Out.setRank(std::nullopt);
  int Pos = Call.dst.is_shard() ? In.innermostPos(Call.dst.dim, To) : 0;
  if (Call.src.kind == TypeKind::Partial &&
      (Call.op == core::Collective::AllReduce ||
       Call.op == core::Collective::ReduceScatter))
    TU.Reductions.insert({CE->getExprLoc().getRawEncoding(), To});
  Out.set(To, AxisFact::known(globalAxis(To) ? Call.dst : Call.dst.local(),
                              {CE->getExprLoc(), OriginKind::Collective}, Pos));
  return Out;
}

Value Transfer::evalCollective(const CallExpr *CE, core::Collective C) {
  const Expr *X = CE->getArg(0);
  Value In = eval(X);

  const VarDecl *AxisDecl = nullptr;
  std::optional<std::string> AxisName =
      evaluateAxis(CE->getArg(1), Ctx, &AxisDecl);
  if (!AxisName) {
    ProblemSite P;
    P.Kind = DiagKind::CollectiveArgument;
    P.Loc = CE->getArg(1)->getExprLoc();
    P.Range = CE->getArg(1)->getSourceRange();
    P.Subject = CE->getArg(1);
    P.Call = CE;
    P.Op = C;
    report(Problem::nonConstantAxis(std::move(P)));
    return Value::error();
  }
  AxisId Axis = axis(*AxisName);
  TU.noteAxis(Axis, AxisDecl);

  std::optional<core::CollectiveCall> Call = readCollectiveCall(CE, C);
  if (!Call)
    return Value::unknown();
  core::Status Legal = core::check_arguments(*Call);
  if (!Legal.ok()) {
    ProblemSite P;
    P.Kind = DiagKind::CollectiveArgument;
    P.Loc = CE->getExprLoc();
    P.Range = CE->getSourceRange();
    P.Call = CE;
    P.Op = C;
    P.Error = Legal.error();
    report(Problem::illegalCollective(std::move(P)));
  }

  const AxisFact *F = In.get(Axis);
  // A reduce over the wrong axis: the result is typed as if it were over
  // the axis the value is pending on (the repair the report suggests), so
  // the one mistake gives one error.
  std::optional<AxisId> WrongAxis;
  if (F && F->isConflict())
    checkUse(In, X, Axis);
  else if (F && F->knownType()) {
    if (Legal.ok())
      WrongAxis = checkReduceAxis(CE, *Call, In, Axis);
    if (!WrongAxis && core::shard_dim_needed(*Call, shardLossOf(X, Axis)))
      checkUnknownShard(In, X, Axis);
    if (Legal.ok() && !WrongAxis && !checkInnermost(CE, *Call, In, Axis) &&
        !checkShardInput(CE, *Call, In, Axis))
      checkCollectiveInput(CE, *Call, In, Axis);
  } else {
    checkUnknownUse(In, X);
  }
  AxisId To = WrongAxis.value_or(Axis);
  Value Out = collectiveResult(CE, *Call, In, To);
  if (Call->inplace && Legal.ok())
    collectiveInPlace(CE, *Call, To, In, Out);
  return Out;
}

/// An in-place collective (`all_reduce(x, tp, P, R, {.inplace = true})`):
/// x itself now holds the result, an explicit change of type. An undeclared
/// variable or a by-value parameter takes it (the caller's variable is not
/// followed); a declared variable, reference parameter or field is checked
/// like an in-place op's destination. Given by a value the checker cannot
/// read, in place or not is unknown: so is x's type on the axis.
void Transfer::collectiveInPlace(const CallExpr *CE,
                                 const core::CollectiveCall &Call, AxisId Axis,
                                 const Value &In, const Value &Out) {
  const Expr *X = CE->getArg(0);
  LValue L = lvalueOf(X);
  const TypeAnnotation *A = L.Var     ? declaredType(L.Var)
                            : L.Field ? TU.Table.typeOf(L.Field)
                                      : nullptr;
  if (A && !(L.Var && isRebindable(L.Var))) {
    Destination D;
    D.Kind = Destination::InPlaceResult;
    D.Mutated = X;
    D.Declared = A;
    checkAgainst(Out, *A, D, CE);
    return;
  }
  if (!L.Var || !Types.isTensor(L.Var->getType()))
    return;
  bool Unread = Call.unread_options &
                (1u << static_cast<unsigned>(core::CollectiveOption::Inplace));
  Value After = Out;
  if (Unread) {
    After = In;
    After.set(Axis, AxisFact::unknown());
    After.setOpen(true); // strict mode reports its use when nothing is known
  }
  setVar(L.Var, After);
}

ProblemSite Transfer::collectiveInputProblem(const CallExpr *CE,
                                             const core::CollectiveCall &Call,
                                             AxisId Axis,
                                             PerAxisType Actual) const {
  ProblemSite P;
  P.Kind = DiagKind::CollectiveInput;
  const Expr *X = CE->getArg(0);
  P.Loc = X->getExprLoc();
  P.Range = X->getSourceRange();
  P.Subject = X;
  P.Call = CE;
  P.Op = Call.op;
  P.Axis = Axis;
  P.Expected = Call.src;
  P.Actual = Actual;
  return P;
}

std::optional<AxisId>
Transfer::checkReduceAxis(const CallExpr *CE, const core::CollectiveCall &Call,
                          const Value &In, AxisId Axis) {
  if (Call.expert_mode || Call.src.kind != TypeKind::Partial ||
      (Call.op != core::Collective::AllReduce &&
       Call.op != core::Collective::ReduceScatter))
    return std::nullopt;
  const AxisFact &F = *In.get(Axis);
  PerAxisType Known = *F.knownType();
  // Only types the reduce rejects anyway: R, I, a known shard (global mode).
  // A plain V is read as P (spec §7.3) and stays accepted.
  bool Rejected = Known == types::R || Known == types::I ||
                  (Known == types::V && F.shardDim() && globalAxis(Axis));
  if (!Rejected)
    return std::nullopt;
  // Reduced on this axis already: the double reduce's own report.
  const Origin &From = F.originOf(Known);
  if (From.Kind == OriginKind::Collective &&
      TU.Reductions.count({From.Loc.getRawEncoding(), Axis}))
    return std::nullopt;
  std::optional<AxisId> Pending;
  for (const Value::Entry &E : In.axes()) {
    if (E.first == Axis || E.second.knownType() != types::P)
      continue;
    if (Pending)
      return std::nullopt; // pending on two axes: which one was meant is
                           // unclear
    Pending = E.first;
  }
  if (!Pending)
    return std::nullopt;
  if (!reporting(DiagKind::CollectiveInput))
    return Pending;
  ProblemSite P = collectiveInputProblem(CE, Call, Axis, F.shown(Known));
  const Expr *X = CE->getArg(0);
  P.Origins.push_back({X, types::P, In.get(*Pending)->originOf(types::P)});
  P.Origins.push_back({X, F.shown(Known), From});
  report(Problem::reduceAxis(std::move(P), *Pending));
  return Pending;
}

/// The input's known type on the collective's axis must be its src.
void Transfer::checkCollectiveInput(const CallExpr *CE,
                                    const core::CollectiveCall &Call,
                                    const Value &In, AxisId Axis) {
  if (!reporting(DiagKind::CollectiveInput))
    return;
  const AxisFact &F = *In.get(Axis);
  PerAxisType Known = *F.knownType();
  core::TensorType InType = knownPart(In);
  llvm::StringRef Name = TU.Axes.name(Axis);
  // Global mode: a known shard dim names the input S(d) in the messages.
  PerAxisType Shown = F.shown(Known);
  std::optional<long> InShard;
  if (Shown.is_shard())
    InShard = Shown.dim;
  core::Result<core::TensorType> R =
      core::transfer(Call, InType, Name, /*strict=*/false, false, InShard);
  if (R.ok())
    return;
  ProblemSite P = collectiveInputProblem(CE, Call, Axis, Shown);
  const Expr *X = CE->getArg(0);
  const Origin &From = F.originOf(Known);
  P.Origins.push_back({X, Shown, From});
  P.Error = R.error();
  // A reduce of a value that is no pending sum (R or I): reduced already,
  // typically twice in a row. The advice is to drop this reduce, not to
  // make the value P again.
  if (Call.src.kind == TypeKind::Partial &&
      (Known == types::R || Known == types::I) &&
      (Call.op == core::Collective::AllReduce ||
       Call.op == core::Collective::ReduceScatter)) {
    bool ReducedBefore = From.Kind == OriginKind::Collective &&
                         TU.Reductions.count({From.Loc.getRawEncoding(), Axis});
    report(Problem::alreadyReduced(std::move(P), Call.dst, ReducedBefore));
    return;
  }
  // The input has the call's result type already: the src that accepts it
  // would make the call a no-op, so the advice is to remove the call.
  PerAxisType Dst = globalAxis(Axis) ? Call.dst : Call.dst.local();
  if (Shown == Dst && !core::implied_types(Call.op)) {
    report(Problem::noOpCollective(std::move(P), Call.dst));
    return;
  }
  // A different src would accept this input: offer it when legal.
  core::CollectiveCall Alt = Call;
  Alt.src = Shown;
  const Expr *SrcArg = nullptr;
  if (!core::implied_types(Call.op) && core::check_arguments(Alt).ok() &&
      core::transfer(Alt, InType, Name, false).ok() &&
      isEditableRange(CE->getArg(2)))
    SrcArg = CE->getArg(2);
  report(Problem::collectiveInput(std::move(P), SrcArg));
}

Value Transfer::evalAssertType(const CallExpr *CE) {
  const Expr *X = CE->getArg(0);
  Value In = eval(X);
  // The second argument is an initializer_list<AxisType>: {dp = R, ...}.
  const auto *ILE = dyn_cast<InitListExpr>(skipBraceWrappers(CE->getArg(1)));
  if (!ILE)
    return In;
  llvm::SmallVector<AxisEntry, 4> Asserted;
  llvm::SmallVector<const Expr *, 4> TypeArgs;
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
    TU.noteAxis(axis(E.Axis), E.AxisDecl);
    Asserted.push_back(E);
    TypeArgs.push_back(Op->getArg(1));
  }
  Value Out = In;
  for (size_t I = 0; I < Asserted.size(); ++I)
    assertOnAxis(CE, Asserted[I], TypeArgs[I], In, Out);
  const ValueDecl *VD = namedVar(X, Types);
  if (!VD)
    VD = elementBinding(X);
  if (VD && Types.isTensor(VD->getType()))
    setVar(VD, Out);
  return Out;
}

/// The problem of assert_type's entry \p E on axis \p A: where, what
/// was asserted; the caller adds what is known.
static ProblemSite assertProblem(const CallExpr *CE, const AxisEntry &E,
                                 AxisId A) {
  ProblemSite P;
  P.Kind = DiagKind::AssertType;
  P.Loc = E.Loc;
  P.Range = CE->getSourceRange();
  P.Subject = CE->getArg(0);
  P.Call = CE;
  P.Axis = A;
  P.Expected = E.Type;
  return P;
}

bool Transfer::checkAssertedPartial(const CallExpr *CE, const AxisEntry &E,
                                    const Expr *TypeArg, const Value &In,
                                    AxisId A, Value &Out) {
  // The V -> P refinement (spec §8.1 step 8) is for a V whose shard dim is
  // unknown; a known shard is no pending sum, as for reinterpret.
  const AxisFact *F = In.get(A);
  std::optional<int> D = F ? F->shardDim() : std::nullopt;
  if (!F || !globalAxis(A) || E.Type != types::P ||
      F->knownType() != types::V || !D)
    return false;
  Out.set(
      A, AxisFact::known(types::P, {CE->getExprLoc(), OriginKind::AssertType}));
  if (!reporting(DiagKind::AssertType))
    return true;
  const Expr *X = CE->getArg(0);
  ProblemSite P = assertProblem(CE, E, A);
  P.Actual = types::S(*D);
  P.Origins.push_back({X, *P.Actual, F->originOf(types::V)});
  P.Error = core::check_asserted_partial(E.Axis, *D).error();
  report(Problem::assertPartial(std::move(P),
                                isEditableRange(TypeArg) ? TypeArg : nullptr));
  return true;
}

/// One `axis = type` of an assert_type: checks it against what is known and
/// sets the asserted (or the core's narrowed) type in \p Out.
void Transfer::assertOnAxis(const CallExpr *CE, const AxisEntry &E,
                            const Expr *TypeArg, const Value &In, Value &Out) {
  const Expr *X = CE->getArg(0);
  Origin O{CE->getExprLoc(), OriginKind::AssertType};
  AxisId A = axis(E.Axis);
  PerAxisType Want = E.Type.local();
  const AxisFact *F = In.get(A);
  std::optional<PerAxisType> Have = F ? F->knownType() : std::nullopt;
  if (F && F->isConflict())
    checkUse(In, X, A);
  if (!Have || (F && F->isConflict())) {
    Out.set(A, AxisFact::known(globalAxis(E.Axis) ? E.Type : Want, O));
    return;
  }
  if (checkAssertedPartial(CE, E, TypeArg, In, A, Out))
    return;
  core::TensorType Known, Claimed;
  Known.set(E.Axis, *Have);
  Claimed.set(E.Axis, Want);
  // Global mode: asserting S(k) gives a V its dim, and contradicts a known
  // other dim (spec §8.1 step 9).
  bool GlobalShard = globalAxis(E.Axis) && E.Type.is_shard();
  std::optional<int> HaveDim = F->shardDim();
  std::optional<long> Rank;
  if (std::optional<int> RK = In.rank())
    Rank = *RK;
  core::Status DimOk = core::Ok{};
  if (GlobalShard && HaveDim)
    DimOk = core::check_asserted_shard_dim(E.Axis, *HaveDim, E.Type.dim, Rank);
  bool OtherDim = !DimOk.ok();
  core::Result<core::TensorType> R = core::assert_type(Known, Claimed);
  if (R.ok() && !OtherDim) {
    if (std::optional<PerAxisType> N = R->get(E.Axis)) {
      AxisFact NF = AxisFact::known(*N, O);
      if (GlobalShard && N->kind == TypeKind::Varying) {
        // The same dim keeps its place in the dim's tuple; a new dim puts
        // the axis innermost there.
        int Pos = HaveDim ? F->Pos : In.innermostPos(E.Type.dim, A);
        NF = AxisFact::known(E.Type, O, Pos);
      }
      Out.set(A, NF);
    }
    return;
  }
  if (OtherDim)
    Have = types::S(*HaveDim);
  Out.set(A, AxisFact::known(GlobalShard ? E.Type : Want, O));
  ProblemSite P = assertProblem(CE, E, A);
  // Global mode: a V whose shard dim is known is named S(d).
  PerAxisType Shown = Have->is_shard() ? *Have : F->shown(*Have);
  P.Actual = Shown;
  P.Origins.push_back({X, Shown, F->originOf(*Have)});
  if (OtherDim) {
    P.Error = DimOk.error();
  } else {
    P.Error = R.error();
    if (reporting(P.Kind))
      P.Fix = conversion(X, gatherable(In, A, Shown), E.Type);
  }
  report(OtherDim ? Problem::assertShardDim(std::move(P))
                  : Problem::assertMismatch(std::move(P)));
}

} // namespace spmd::plugin
