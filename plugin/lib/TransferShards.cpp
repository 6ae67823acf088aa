//===- TransferShards.cpp - global mode: shard dims and ranks -------------===//
//
// Global mode (Options::Global, docs/plugin.md "Global mode"): a V that is
// known to be S(d) keeps d. A collective whose src is S(i) needs its input
// sharded on dim i; a known shard is not a pending sum, so it is not accepted
// where src is P nor reinterpreted as P (outside expert mode); ordinary ops
// move the shard by the core's sharding propagation (sharding_propagation.h).
// Ranks are tracked where the code shows them (spmd::rank, factories with a
// shape, shape ops with constant arguments); without a rank, S(-1) and S(1)
// are compared only when both have the same sign, and a rule that needs a
// rank answers "unknown shard", never a guess (reported in strict mode).
//
//===----------------------------------------------------------------------===//

#include "Transfer.h"

#include <spmd/core/global_collectives.h>
#include <spmd/core/masks.h>
#include <spmd/core/op_table.h>
#include <spmd/core/partition_spec.h>
#include <spmd/core/sharding_propagation.h>

using namespace clang;

namespace spmd::plugin {

namespace {

/// Whether \p CE calls libtorch's embedding(weight, indices) (at:: or
/// torch::, table first), not torch::nn::functional's (indices first).
bool tableFirstEmbedding(const CallExpr *CE) {
  const FunctionDecl *FD = CE->getDirectCallee();
  if (!FD)
    return false;
  const auto *NS = dyn_cast<NamespaceDecl>(FD->getDeclContext());
  return NS && (NS->getName() == "at" || NS->getName() == "torch") &&
         NS->getParent()->getRedeclContext()->isTranslationUnit();
}

/// The value of \p E when it is a numeric constant (an int or floating
/// literal, possibly converted to at::Scalar).
std::optional<double> numericConstant(const Expr *E, const ASTContext &Ctx) {
  for (int Depth = 0; E && Depth < 4; ++Depth) {
    E = E->IgnoreImplicit();
    if (const auto *C = dyn_cast<CXXConstructExpr>(E)) {
      if (C->getNumArgs() != 1)
        return std::nullopt;
      E = C->getArg(0);
      continue;
    }
    break;
  }
  Expr::EvalResult R;
  if (!E || E->isValueDependent() || !E->EvaluateAsRValue(R, Ctx))
    return std::nullopt;
  if (R.Val.isInt())
    return double(R.Val.getInt().getSExtValue());
  if (R.Val.isFloat())
    return R.Val.getFloat().convertToDouble();
  return std::nullopt;
}

} // namespace

bool Transfer::checkShardInput(const CallExpr *CE,
                               const core::CollectiveCall &Call,
                               const Value &In, AxisId Axis) {
  if (!globalAxis(Axis))
    return false;
  llvm::StringRef Name = TU.Axes.name(Axis);
  const AxisFact *F = In.get(Axis);
  if (F && F->knownType() && F->Shard == AxisFact::UnmaskedRows) {
    core::Status S = core::check_unmasked_rows_input(Call, Name);
    if (!S.ok())
      return checkUnmaskedRows(CE, Call, In, Axis, S.error());
  }
  std::optional<int> D = F ? F->shardDim() : std::nullopt;
  if (!D || Call.expert_mode)
    return false;
  std::optional<long> Rank;
  if (std::optional<int> R = In.rank())
    Rank = *R;
  if (std::optional<core::TypeError> Why =
          core::src_shard_rank_dependent(Call, *D, Rank))
    checkUnknownShard(In, CE->getArg(0), Axis, std::move(*Why));
  core::Status S = core::check_sharded_input(Call, Name, *D, Rank);
  if (S.ok())
    return false;
  if (!reporting(DiagKind::CollectiveInput))
    return true;
  ProblemSite P = collectiveInputProblem(CE, Call, Axis, types::S(*D));
  const Expr *X = CE->getArg(0);
  P.Origins.push_back({X, F->shown(types::V), F->originOf(types::V)});
  P.Error = S.error();
  const Expr *SrcArg = nullptr;
  if (core::src_names_other_dim(Call, *D, Rank)) {
    if (Call.dst == types::S(*D)) {
      // src = S(d) would make it a no-op (all_to_all(x, tp, S(d), S(d))).
      report(Problem::noOpCollective(std::move(P), Call.dst));
      return true;
    }
    if (isEditableRange(CE->getArg(2)))
      SrcArg = CE->getArg(2);
  }
  report(Problem::collectiveInput(std::move(P), SrcArg));
  return true;
}

std::optional<core::SpecEntry> Transfer::tupleEntry(const Value &V, int Dim,
                                                    AxisId Axis) const {
  llvm::SmallVector<AxisId, 4> Tuple = V.tupleOf(Dim);
  const AxisFact *F = V.get(Axis);
  if (!F)
    return std::nullopt;
  core::RawSpecEntry Raw{std::vector<std::string>()};
  for (AxisId A : Tuple) {
    if (!globalAxis(A))
      continue; // a local axis keeps local semantics (spec §12.5)
    // Two axes at one position: written as `dp = S(0), tp = S(0)`, whose
    // order nobody gave.
    if (A != Axis && V.get(A)->Pos == F->Pos)
      return std::nullopt;
    Raw->push_back(TU.Axes.name(A).str());
  }
  // §12.1's normalisation: an axis known to have one rank here (a size-1
  // guard) leaves the tuple.
  auto Singleton = [&](std::string_view Name) {
    std::optional<AxisId> A = TU.Axes.find(llvm::StringRef(Name));
    return A && llvm::is_contained(SizeOne, *A);
  };
  core::Result<core::PartitionSpec> N =
      core::PartitionSpec::normalize({Raw}, Singleton);
  if (!N.ok() || N->rank() != 1)
    return std::nullopt;
  return N->entry(0);
}

bool Transfer::checkInnermost(const CallExpr *CE,
                              const core::CollectiveCall &Call, const Value &In,
                              AxisId Axis) {
  if (!globalAxis(Axis))
    return false;
  const AxisFact *F = In.get(Axis);
  std::optional<int> D = F ? F->shardDim() : std::nullopt;
  if (!D)
    return false;
  std::optional<core::SpecEntry> Entry = tupleEntry(In, *D, Axis);
  if (!Entry)
    return false;
  core::Status S = core::check_innermost(core::to_string(Call.op),
                                         TU.Axes.name(Axis), *Entry, *D);
  if (S.ok())
    return false;
  if (!reporting(DiagKind::CollectiveInput))
    return true;
  ProblemSite P = collectiveInputProblem(CE, Call, Axis, types::S(*D));
  P.Origins.push_back(
      {CE->getArg(0), F->shown(types::V), F->originOf(types::V)});
  P.Error = S.error();
  report(Problem::collectiveInput(std::move(P), nullptr));
  return true;
}

bool Transfer::checkUnmaskedRows(const CallExpr *CE,
                                 const core::CollectiveCall &Call,
                                 const Value &In, AxisId Axis,
                                 core::TypeError Err) {
  if (!reporting(DiagKind::CollectiveInput))
    return true;
  const AxisFact *F = In.get(Axis);
  ProblemSite P = collectiveInputProblem(CE, Call, Axis, types::V);
  const Expr *X = CE->getArg(0);
  P.Origins.push_back({X, F->shown(types::V), F->originOf(types::V)});
  P.Error = std::move(Err);
  report(Problem::collectiveInput(std::move(P), nullptr));
  return true;
}

void Transfer::recordInferredInputs(const FunctionDecl *Callee,
                                    llvm::ArrayRef<const Expr *> Args,
                                    SourceLocation CallLoc) {
  std::vector<Value> &In = TU.InferredInputs[Callee->getCanonicalDecl()];
  if (In.size() < Callee->getNumParams())
    In.resize(Callee->getNumParams(), Value::empty());
  for (unsigned PI = 0; PI < Callee->getNumParams(); ++PI) {
    if (!Types.isTracked(Callee->getParamDecl(PI)->getType()))
      continue;
    const Expr *Arg = PI < Args.size() ? Args[PI] : nullptr;
    Value V = Value::unknown();
    if (Arg && !isa<CXXDefaultArgExpr>(Arg) && Types.isTracked(Arg->getType()))
      V = eval(Arg);
    // The body is local (spec §12.3): a shard is V there, and no rank is
    // tracked.
    // Notes point at the argument.
    Origin At{Arg ? Arg->getExprLoc() : CallLoc, OriginKind::CallArgument};
    V.forEachFact([&](AxisId, AxisFact &F) {
      F.Shard = AxisFact::UnknownShard;
      F.Pos = 0;
      for (Origin &O : F.Origins)
        O = At;
    });
    V.setRank(std::nullopt);
    In[PI].join(V);
  }
}

core::ShardLossReason Transfer::shardLossOf(const Expr *E, AxisId Axis) {
  LValue L = lvalueOf(E);
  const TypeAnnotation *A = L.Var     ? declaredType(L.Var)
                            : L.Field ? TU.Table.typeOf(L.Field)
                                      : nullptr;
  if (A && L.Var && isRebindable(L.Var) && !holdsDeclared(L.Var, *A))
    A = nullptr; // rebound: no longer the declared value
  if (A)
    for (const AxisEntry &Entry : A->Entries)
      if (axis(Entry.Axis) == Axis && Entry.Type.kind == TypeKind::Varying)
        return core::ShardLossReason::DeclaredV;
  return core::ShardLossReason::OpDidNotSay;
}

void Transfer::checkUnknownShard(const Value &V, const Expr *E, AxisId Axis,
                                 std::optional<core::TypeError> Why) {
  if (!globalAxis(Axis) || !TU.Opts.Strict || !E || V.fromError() ||
      !reporting(DiagKind::UnknownType))
    return;
  const AxisFact *F = V.get(Axis);
  std::optional<PerAxisType> K = F ? F->knownType() : std::nullopt;
  if (!K || K->kind != TypeKind::Varying ||
      (F->Shard != AxisFact::UnknownShard && !Why))
    return;
  const Origin &O = F->originOf(types::V);
  if (!Why) {
    auto It = TU.ShardLoss.find({O.Loc.getRawEncoding(), Axis});
    if (It != TU.ShardLoss.end())
      Why = It->second;
    else {
      Why = core::shard_loss(O.Kind == OriginKind::Inferred
                                 ? core::ShardLossReason::OpDidNotSay
                                 : core::ShardLossReason::DeclaredV,
                             "", TU.Axes.name(Axis));
    }
  }
  ProblemSite P;
  P.Kind = DiagKind::UnknownType;
  P.Loc = E->getExprLoc();
  P.Range = E->getSourceRange();
  P.Subject = E;
  P.Axis = Axis;
  P.Origins.push_back({nullptr, F->shown(types::V), O});
  P.Error = std::move(Why);
  report(Problem::unknownShard(std::move(P)));
}

namespace {

/// The value of an integer constant argument, or nullopt.
std::optional<long> intConst(const Expr *E, const ASTContext &Ctx) {
  E = E->IgnoreParenImpCasts();
  if (E->isValueDependent() || !E->getType()->isIntegralOrEnumerationType())
    return std::nullopt;
  Expr::EvalResult R;
  if (!E->EvaluateAsInt(R, Ctx))
    return std::nullopt;
  return R.Val.getInt().getExtValue();
}

/// An integer or integer-list argument (`2`, `{B, -1, 64}` as an
/// IntArrayRef): its elements, nullopt for one that is not a constant;
/// nullopt when \p E is neither (a tensor, a scalar, options, a vector
/// variable).
using IntList = std::vector<std::optional<long>>;
std::optional<IntList> intList(const Expr *E, const ASTContext &Ctx) {
  for (unsigned Depth = 0; Depth < 8; ++Depth) {
    E = E->IgnoreParenImpCasts();
    if (isa<CXXDefaultArgExpr>(E))
      return std::nullopt;
    if (const auto *MTE = dyn_cast<MaterializeTemporaryExpr>(E)) {
      E = MTE->getSubExpr();
    } else if (const auto *BT = dyn_cast<CXXBindTemporaryExpr>(E)) {
      E = BT->getSubExpr();
    } else if (const auto *SIL = dyn_cast<CXXStdInitializerListExpr>(E)) {
      E = SIL->getSubExpr();
    } else if (const auto *CE = dyn_cast<CXXConstructExpr>(E)) {
      // ArrayRef(std::initializer_list) or ArrayRef(const T &one).
      if (CE->getNumArgs() != 1)
        return std::nullopt;
      E = CE->getArg(0);
    } else if (const auto *IL = dyn_cast<InitListExpr>(E)) {
      IntList L;
      for (const Expr *Init : IL->inits()) {
        if (!Init->getType()->isIntegralOrEnumerationType())
          return std::nullopt;
        L.push_back(intConst(Init, Ctx));
      }
      return L;
    } else if (E->getType()->isIntegralOrEnumerationType()) {
      return IntList{intConst(E, Ctx)};
    } else {
      return std::nullopt;
    }
  }
  return std::nullopt;
}

/// The structural arguments of an op (dims, sizes, keepdim) from its
/// integer arguments \p L in call order, for the op rules that read them;
/// which argument is which comes from the core's op table.
core::ShardingArgs shardingArgs(llvm::StringRef Canon,
                                llvm::ArrayRef<IntList> L) {
  return core::sharding_args_from_ints(
      Canon, std::vector<IntList>(L.begin(), L.end()));
}

/// Factories whose first argument is the shape.
bool isShapeFactory(llvm::StringRef Canon) {
  return core::is_shape_factory(Canon);
}

/// The first operand whose rank is unknown.
std::optional<size_t> findRankless(llvm::ArrayRef<core::AxisArg> Args) {
  for (size_t I = 0; I < Args.size(); ++I)
    if (!Args[I].shape.rank_known())
      return I;
  return std::nullopt;
}

/// linear(x, w[, b]) takes a 2-D weight [out, in] and a 1-D bias [out]
/// whatever x is: an operand of unknown rank there gets it, and a shard
/// counted from the end resolves (a bias annotated S(0) without
/// spmd::rank(1) no longer hides the result's shard).
void fixLinearParamRanks(llvm::StringRef Canon,
                         std::vector<core::AxisArg> &Args) {
  if (Canon != "linear")
    return;
  for (size_t I = 1; I < Args.size() && I < 3; ++I) {
    long Rank = I == 1 ? 2 : 1;
    if (Args[I].shape.rank_known())
      continue;
    Args[I].shape = core::Shape::of_rank(Rank);
    if (Args[I].placement.is_shard() && Args[I].placement.dim < 0)
      Args[I].placement.dim += Rank;
  }
}

/// Whether every tensor operand of \p Canon has the same rank (torch's cat
/// and stack require it).
bool sameRankOperands(llvm::StringRef Canon) {
  return core::has_same_rank_operands(Canon);
}

/// The rank of an operand of \p Canon whose rank is known, for ops whose
/// operands all have one rank (sameRankOperands); else nullopt.
std::optional<long> sharedRank(llvm::StringRef Canon,
                               llvm::ArrayRef<core::Shape> Shapes) {
  if (!sameRankOperands(Canon))
    return std::nullopt;
  for (const core::Shape &Sh : Shapes)
    if (Sh.rank_known())
      return Sh.rank();
  return std::nullopt;
}

} // namespace

/// The placement of one operand on \p Axis for the core's propagation.
static core::Placement placementOf(const Value &V, AxisId Axis) {
  const AxisFact *F = V.get(Axis);
  std::optional<PerAxisType> K = F ? F->knownType() : std::nullopt;
  if (!K)
    return (!F && !V.isOpen()) ? core::Placement::replicate()
                               : core::Placement::unknown();
  switch (K->kind) {
  case TypeKind::Replicate:
  case TypeKind::Invariant:
    return core::Placement::replicate();
  case TypeKind::Partial:
    return core::Placement::partial();
  default:
    break;
  }
  if (std::optional<int> D = F->shardDim())
    return core::Placement::shard(*D);
  return core::Placement::unknown();
}

void Transfer::propagateUnmaskedRows(const CallExpr *CE, llvm::StringRef Canon,
                                     llvm::ArrayRef<const Expr *> CallArgs,
                                     const Operands &Ops, Value &Out) {
  // An op that zeroes the marked rows where a mask says (masked_fill(mask,
  // 0), a product with a 0/1 mask, where with a 0 branch: core::zero_fills)
  // zeroes the rows of indices this rank does not hold (which mask: not
  // checked, see docs/plugin.md), so its result is their pending sum, P;
  // any other op keeps the mark on a V result. The result's mask kind (a
  // comparison, a conversion of a mask,
  // ...) is core::mask_result's.
  std::vector<core::MaskOperand> Masks;
  Masks.reserve(Ops.Sources.size());
  for (const OperandSource &S : Ops.Sources)
    Masks.push_back(
        S.E ? core::MaskOperand::of_tensor(core::MaskKind(S.V.maskKind()))
            : core::MaskOperand::of_scalar(
                  S.Scalar ? numericConstant(S.Scalar, Ctx) : std::nullopt));
  Out.setMaskKind(uint8_t(core::mask_result(Canon, Masks)));
  for (size_t I = 0; I < Ops.Sources.size(); ++I) {
    const OperandSource &S = Ops.Sources[I];
    if (!S.E || !core::gives_values(Canon, I))
      continue;
    bool Zeroed = false, Checked = false;
    for (const auto &[A, F] : S.V.axes()) {
      if (F.Shard != AxisFact::UnmaskedRows || !F.knownType())
        continue;
      if (!Checked) {
        Zeroed = core::zero_fills(Canon, Masks, I);
        Checked = true;
      }
      const AxisFact *OF = Out.get(A);
      if (Zeroed) {
        // The rank's own rows, zeros elsewhere: the pending sum of the
        // lookup (core::zeroed_rows_type), typed here.
        if (OF && OF->knownType() && OF->knownType()->kind == TypeKind::Varying)
          Out.set(A, AxisFact::known(core::zeroed_rows_type(),
                                     {CE->getExprLoc(), OriginKind::Inferred}));
        continue;
      }
      std::optional<PerAxisType> K = OF ? OF->knownType() : std::nullopt;
      if (!K || K->kind != TypeKind::Varying)
        continue;
      AxisFact UF = *OF;
      UF.Shard = AxisFact::UnmaskedRows;
      Out.set(A, UF);
    }
  }
}

namespace {

/// The rank of the operand value \p V, as the core's shape, with the dims
/// known to have size 1.
core::Shape shapeOf(const Value &V) {
  std::optional<int> R = V.rank();
  if (!R)
    return core::Shape::unknown();
  core::Shape S = core::Shape::of_rank(*R);
  for (int D = 0; D < *R; ++D)
    if (V.sizeOneDims() >> D & 1)
      (*S.dims)[D] = 1;
  return S;
}

/// The dims of size 1 of \p S, as a Value's mask.
uint64_t sizeOneMask(const core::Shape &S) {
  uint64_t M = 0;
  if (S.rank_known())
    for (long D = 0; D < S.rank() && D < 64; ++D)
      if (S.size(D) == std::optional<long>(1))
        M |= 1ull << D;
  return M;
}

/// The integer and integer-list arguments among \p CallArgs, in call order.
llvm::SmallVector<IntList, 4> intLists(llvm::ArrayRef<const Expr *> CallArgs,
                                       TypeClassifier &Types,
                                       const ASTContext &Ctx) {
  llvm::SmallVector<IntList, 4> Lists;
  for (const Expr *A : CallArgs)
    if (!Types.isTensor(A->getType()) && !Types.isOptionalTensor(A->getType()))
      if (std::optional<IntList> L = intList(A, Ctx))
        Lists.push_back(std::move(*L));
  return Lists;
}

/// The result's rank: a factory's shape, else the core's shape rule run on
/// replicated operands (it answers unknown when a rank it needs is missing;
/// the first operand's is always needed).
std::optional<long> resultRank(llvm::StringRef Name, llvm::StringRef Canon,
                               llvm::ArrayRef<core::Shape> Shapes,
                               llvm::ArrayRef<IntList> Lists,
                               const core::ShardingArgs &SA) {
  if (Shapes.empty()) {
    if (isShapeFactory(Canon) && !Lists.empty())
      return long(Lists.front().size());
    return std::nullopt;
  }
  if (!Shapes.front().rank_known())
    return std::nullopt;
  std::vector<core::AxisArg> Rep;
  for (const core::Shape &Sh : Shapes)
    Rep.push_back({core::Placement::replicate(), Sh});
  core::Result<core::AxisOutcome> R = core::propagate_axis(Name, Rep, SA, "");
  if (R.ok())
    return R->out_rank;
  return std::nullopt;
}

/// Reductions whose dim and keepdim arguments reductionArgs reads.
bool readsReductionDims(llvm::StringRef Canon) {
  return core::reduction_arg_roles(Canon.str()).has_value();
}

/// The dims and keepdim of a reduction, read at the positions the core gives
/// (core::reduction_arg_roles) among the non-tensor arguments written at the
/// call: `x.var(1)` reduces dim 1, `at::norm(x, 2, {1})` dim 1 too. No dim
/// argument, or a bool or enum there (the overloads `var(unbiased)`,
/// `sum(dtype)`), reduces every dim. A dim or keepdim that is not a constant
/// (a dim list held in a variable) makes the arguments unknown, not "every
/// dim".
void reductionArgs(llvm::StringRef Canon, llvm::ArrayRef<const Expr *> CallArgs,
                   TypeClassifier &Types, const ASTContext &Ctx,
                   core::ShardingArgs &SA) {
  std::optional<core::ReductionArgRoles> Roles =
      core::reduction_arg_roles(Canon.str());
  if (!Roles)
    return;
  llvm::SmallVector<const Expr *, 4> Written; // non-tensor, not defaulted
  for (const Expr *A : CallArgs)
    if (!isa<CXXDefaultArgExpr>(A) && !Types.isTensor(A->getType()) &&
        !Types.isOptionalTensor(A->getType()))
      Written.push_back(A);
  if (Roles->dim < Written.size()) {
    const Expr *D = Written[Roles->dim];
    QualType T = D->getType();
    if (!T->isBooleanType() && !T->isEnumeralType()) {
      std::optional<IntList> L = intList(D, Ctx);
      if (!L) {
        SA.known = false;
        return;
      }
      SA.has_dims = true;
      for (const std::optional<long> &V : *L) {
        if (!V)
          SA.known = false;
        SA.dims.push_back(V.value_or(0));
      }
    }
  }
  if (Roles->keepdim && *Roles->keepdim < Written.size()) {
    std::optional<IntList> L = intList(Written[*Roles->keepdim], Ctx);
    if (L && L->size() == 1 && L->front())
      SA.keepdim = *L->front() != 0;
    else
      SA.known = false;
  }
}

/// For an op of one tensor operand \p X sharded on a dim counted from the
/// end whose rule counts every dim from the end too (a pointwise op with
/// scalars, softmax / cumsum / sort along a negative dim, a reduction over
/// negative dims or over all dims), every rank that holds the dims gives the
/// same result counted from the end: the smallest such rank. Else nullopt
/// (an op with a non-negative or implicit dim, e.g. transpose(0, 1) or t(),
/// depends on the rank).
std::optional<long> fromEndRank(llvm::StringRef Canon,
                                const core::ShardingArgs &SA,
                                const core::AxisArg &X) {
  long Rank = -X.placement.dim;
  // The triangle of the last two dims; flip / roll along dims counted from
  // the end.
  if (Canon == "triu" || Canon == "tril")
    return std::max(2L, Rank);
  if (Canon == "roll" && !SA.has_dims) // the flattened tensor: every dim
    return Rank;
  if ((Canon == "flip" || Canon == "roll") && SA.known && !SA.dims.empty()) {
    for (long D : SA.dims) {
      if (D >= 0)
        return std::nullopt;
      Rank = std::max(Rank, -D);
    }
    return Rank;
  }
  switch (core::shard_rule_of(Canon.str())) {
  case core::ShardRule::Pointwise:
    return Rank;
  case core::ShardRule::LinearReduction:
  case core::ShardRule::NonlinearReduction:
    if (!readsReductionDims(Canon))
      return std::nullopt;
    if (!SA.has_dims)
      return SA.known ? std::optional<long>(Rank) : std::nullopt;
    [[fallthrough]];
  case core::ShardRule::AlongDim:
    if (!SA.known || SA.dims.empty())
      return std::nullopt;
    for (long D : SA.dims) {
      if (D >= 0)
        return std::nullopt;
      Rank = std::max(Rank, -D);
    }
    return Rank;
  default:
    return std::nullopt;
  }
}

/// Gives the operands \p Args of \p Canon the ranks the op fixes (mm, bmm,
/// linear's parameters), resolving shards counted from the end; for
/// linear(x, ...) with x of unknown rank sharded on a negative dim (or not
/// sharded), x gets a rank that holds the dim; so does the one operand of a
/// rule that counts every dim from the end (fromEndRule). Returns whether
/// the result's shard dim is then counted from the end.
bool fixOperandRanks(llvm::StringRef Canon, const core::ShardingArgs &SA,
                     std::vector<core::AxisArg> &Args) {
  // Where the op fixes its operands' ranks, a negative dim resolves
  // without annotations.
  long FixedRank = Canon == "mm" ? 2 : Canon == "bmm" ? 3 : 0;
  for (size_t I = 0; I < Args.size() && FixedRank; ++I) {
    if (!Args[I].shape.rank_known())
      Args[I].shape = core::Shape::of_rank(FixedRank);
    if (Args[I].placement.is_shard() && Args[I].placement.dim < 0)
      Args[I].placement.dim += FixedRank;
  }
  fixLinearParamRanks(Canon, Args);
  // cat / stack: an operand of unknown rank has the rank of the others.
  std::vector<core::Shape> Shapes;
  for (const core::AxisArg &A : Args)
    Shapes.push_back(A.shape);
  if (std::optional<long> Rank = sharedRank(Canon, Shapes))
    for (core::AxisArg &A : Args) {
      if (A.shape.rank_known())
        continue;
      A.shape = core::Shape::of_rank(*Rank);
      if (A.placement.is_shard() && A.placement.dim < 0)
        A.placement.dim += *Rank;
    }
  // linear(x, w[, b]) contracts x's last dim whatever x's rank: an x of
  // unknown rank sharded on a negative dim (or not sharded) may be given
  // any rank that holds the dim, and the result's dim counted from the end
  // is exact.
  if (Args.size() == 1 && !Args[0].shape.rank_known() &&
      Args[0].placement.is_shard() && Args[0].placement.dim < 0)
    if (std::optional<long> Rank = fromEndRank(Canon, SA, Args[0])) {
      Args[0].shape = core::Shape::of_rank(*Rank);
      Args[0].placement.dim += *Rank;
      return true;
    }
  if (Canon != "linear" || Args.empty() || Args[0].shape.rank_known() ||
      (Args[0].placement.is_shard() && Args[0].placement.dim >= 0))
    return false;
  long Rank =
      std::max(2L, Args[0].placement.is_shard() ? -Args[0].placement.dim : 1);
  Args[0].shape = core::Shape::of_rank(Rank);
  if (Args[0].placement.is_shard())
    Args[0].placement.dim += Rank;
  return true;
}

/// The first operand still sharded on a dim counted from the end.
std::optional<size_t> findUnresolved(llvm::ArrayRef<core::AxisArg> Args) {
  for (size_t I = 0; I < Args.size(); ++I)
    if (Args[I].placement.is_shard() && Args[I].placement.dim < 0)
      return I;
  return std::nullopt;
}

} // namespace

void Transfer::propagateShards(const CallExpr *CE, llvm::StringRef Name,
                               llvm::ArrayRef<const Expr *> CallArgs,
                               const Operands &Ops, Value &Out) {
  if (!tracksRanks())
    return;
  std::string Canon = core::canonical_op_name(Name);
  // libtorch's embedding takes the table first; the core reads the ATen
  // order from this spelling (the bare name is torch.nn.functional's).
  std::string CoreName = shardOpName(CE, Name);
  if (Canon == "embedding" && tableFirstEmbedding(CE))
    CoreName = "at::embedding";
  Name = CoreName;
  propagateUnmaskedRows(CE, Canon, CallArgs, Ops, Out);
  llvm::SmallVector<IntList, 4> Lists = intLists(CallArgs, Types, Ctx);
  core::ShardingArgs SA = shardingArgs(Canon, Lists);
  reductionArgs(Canon, CallArgs, Types, Ctx, SA);

  // The tensor operands, with their ranks where known.
  llvm::SmallVector<const OperandSource *, 4> Tensors;
  llvm::SmallVector<core::Shape, 4> Shapes;
  for (const OperandSource &S : Ops.Sources)
    if (S.E) {
      Tensors.push_back(&S);
      Shapes.push_back(shapeOf(S.V));
    }
  if (std::optional<long> Rank = sharedRank(Canon, Shapes))
    for (core::Shape &Sh : Shapes)
      if (!Sh.rank_known())
        Sh = core::Shape::of_rank(*Rank);
  // repeat_interleave(counts, dim): after a tensor of counts, the one
  // integer list is the dim.
  if (Canon == "repeat_interleave" && Tensors.size() == 2 &&
      Lists.size() == 1 && Lists[0].size() == 1 && Lists[0][0]) {
    SA.known = SA.has_dims = true;
    SA.dims.assign(1, *Lists[0][0]);
  }
  std::optional<long> OutRank = resultRank(Name, Canon, Shapes, Lists, SA);
  Out.setRank(OutRank ? std::optional<int>(int(*OutRank)) : std::nullopt);

  // Axes some operand shards: the others need no global rule.
  llvm::SmallVector<AxisId, 4> Sharded;
  for (const OperandSource *S : Tensors)
    for (const auto &[A, F] : S->V.axes())
      if (F.shardDim() && !llvm::is_contained(Sharded, A))
        Sharded.push_back(A);
  llvm::SmallVector<AxisId, 4> Placed; // axes the result is sharded by
  for (AxisId A : Sharded)
    if (propagateShardAxis(CE, Name, Canon, Ops, Tensors, SA, A, Out))
      Placed.push_back(A);
  orderTuples(CE, Name, Ops, Tensors, Placed, Out);
  promoteFullReductions(CE, Name, Canon, Tensors, SA, Out);
  checkUnknownShardOperands(CE, Canon, Ops, Out);
  // The result's dims of size 1 (a keepdim reduction, unsqueeze, and
  // pointwise ops of such values), for the broadcasting rules of its uses.
  if (std::optional<int> R = Out.rank())
    Out.setSizeOneDims(sizeOneMask(core::result_shape(
        Name, std::vector<core::Shape>(Shapes.begin(), Shapes.end()), SA,
        long(*R))));
}

void Transfer::promoteFullReductions(
    const CallExpr *CE, llvm::StringRef Name, llvm::StringRef Canon,
    llvm::ArrayRef<const OperandSource *> Tensors, const core::ShardingArgs &SA,
    Value &Out) {
  // Asked only for a V of unknown dim (rare in global code): the rule family
  // is a lookup by name.
  std::optional<bool> Reduction;
  for (const OperandSource *S : Tensors)
    for (const auto &[A, F] : S->V.axes()) {
      // Known dims went through propagateShardAxis; unmasked rows are no
      // shard of the lookup (their sum over tp adds every rank's row).
      std::optional<PerAxisType> K = F.knownType();
      if (!K || K->kind != TypeKind::Varying ||
          F.Shard != AxisFact::UnknownShard || !globalAxis(A))
        continue;
      const AxisFact *OF = Out.get(A);
      std::optional<PerAxisType> OK = OF ? OF->knownType() : std::nullopt;
      if (!OK || OK->kind != TypeKind::Varying ||
          OF->Shard != AxisFact::UnknownShard)
        continue;
      if (!Reduction)
        Reduction =
            core::shard_rule_of(Canon) == core::ShardRule::LinearReduction;
      if (!*Reduction)
        return;
      // The core decides (the full-reduction rule: a sum over every dim of
      // a tensor sharded on any dim is a pending sum).
      std::vector<core::AxisArg> Args;
      for (const OperandSource *T : Tensors)
        Args.push_back({placementOf(T->V, A), shapeOf(T->V)});
      core::Result<core::AxisOutcome> R =
          core::propagate_axis(Name, Args, SA, TU.Axes.name(A));
      if (R.ok() && R->placement.kind == core::Placement::Kind::Partial)
        Out.set(A, AxisFact::known(types::P,
                                   {CE->getExprLoc(), OriginKind::Inferred}));
    }
}

std::optional<core::TypeError>
Transfer::shardRuleRejects(const CallExpr *CE, llvm::StringRef Name,
                           llvm::ArrayRef<const Expr *> CallArgs,
                           const Operands &Ops, AxisId A, size_t Index,
                           PerAxisType T) {
  if (!tracksRanks() || !globalAxis(A))
    return std::nullopt;
  if (T.kind != TypeKind::Replicate) {
    // A V without a dim among sharded operands: the rule cannot place it,
    // so the conversion is no repair the checker can vouch for.
    for (const OperandSource &S : Ops.Sources)
      if (S.E && placementOf(S.V, A).is_shard())
        return core::TypeError{};
    return std::nullopt;
  }
  std::string Canon = core::canonical_op_name(Name);
  std::string CoreName = shardOpName(CE, Name);
  if (Canon == "embedding" && tableFirstEmbedding(CE))
    CoreName = "at::embedding";
  // The operands as propagateShardAxis sees them, operand Index replicated.
  std::vector<core::AxisArg> Args;
  bool AnySharded = false;
  for (size_t I = 0; I < Ops.Sources.size(); ++I) {
    const OperandSource &S = Ops.Sources[I];
    if (!S.E)
      continue;
    core::AxisArg Arg{I == Index ? core::Placement::replicate()
                                 : placementOf(S.V, A),
                      shapeOf(S.V)};
    if (Arg.placement.kind == core::Placement::Kind::Unknown)
      return std::nullopt;
    if (Arg.placement.is_shard() && Arg.placement.dim < 0 &&
        Arg.shape.rank_known())
      Arg.placement.dim += Arg.shape.rank();
    AnySharded |= Arg.placement.is_shard();
    Args.push_back(std::move(Arg));
  }
  if (!AnySharded)
    return std::nullopt;
  llvm::SmallVector<IntList, 4> Lists = intLists(CallArgs, Types, Ctx);
  core::ShardingArgs SA = shardingArgs(Canon, Lists);
  reductionArgs(Canon, CallArgs, Types, Ctx, SA);
  fixOperandRanks(Canon, SA, Args);
  if (findUnresolved(Args))
    return std::nullopt;
  core::Result<core::AxisOutcome> R =
      core::propagate_axis(CoreName, Args, SA, TU.Axes.name(A));
  if (R.ok())
    return std::nullopt;
  return R.error();
}

void Transfer::loseShard(AxisId A, Origin Here, core::TypeError Why,
                         Value &Out) {
  Why.axis = TU.Axes.name(A).str();
  TU.ShardLoss[{Here.Loc.getRawEncoding(), A}] = std::move(Why);
  Out.set(A, AxisFact::known(types::V, Here));
}

bool Transfer::propagateShardAxis(const CallExpr *CE, llvm::StringRef Name,
                                  llvm::StringRef Canon, const Operands &Ops,
                                  llvm::ArrayRef<const OperandSource *> Tensors,
                                  const core::ShardingArgs &SA, AxisId A,
                                  Value &Out) {
  const AxisFact *OF = Out.get(A);
  std::optional<PerAxisType> K = OF ? OF->knownType() : std::nullopt;
  if (!K || K->kind != TypeKind::Varying)
    return false; // the local rule already decided (or nothing is known)
  Origin Here{CE->getExprLoc(), OriginKind::Inferred};
  llvm::StringRef AxisName = TU.Axes.name(A);
  using Reason = core::ShardLossReason;
  std::vector<core::AxisArg> Args;
  std::optional<size_t> UnknownShard;
  for (size_t I = 0; I < Tensors.size(); ++I) {
    const OperandSource *S = Tensors[I];
    core::AxisArg Arg{placementOf(S->V, A), shapeOf(S->V)};
    if (Arg.placement.kind == core::Placement::Kind::Unknown && !UnknownShard) {
      UnknownShard = I;
      checkUnknownShard(S->V, S->E, A);
    }
    if (Arg.placement.is_shard() && Arg.placement.dim < 0 &&
        Arg.shape.rank_known())
      Arg.placement.dim += Arg.shape.rank();
    Args.push_back(std::move(Arg));
  }
  bool FromEnd = fixOperandRanks(Canon, SA, Args);
  if (UnknownShard) {
    loseShard(A, Here,
              core::shard_loss(Reason::OperandShardUnknown, Canon, AxisName,
                               *UnknownShard),
              Out);
    return false;
  }
  if (std::optional<size_t> I = findUnresolved(Args)) {
    loseShard(A, Here,
              core::shard_loss(Reason::OperandRankUnknown, Canon, AxisName, *I,
                               Args[*I].placement.dim),
              Out);
    return false;
  }
  core::Result<core::AxisOutcome> R =
      core::propagate_axis(Name, Args, SA, AxisName);
  if (!R.ok()) {
    if (reporting(DiagKind::OpType)) {
      core::TypeError Err = R.error();
      Err.axis = AxisName.str();
      if (FromEnd && !Args.empty() && Args[0].shape.rank_known())
        Err.message +=
            " (args[0]'s rank is unknown: dims are numbered as "
            "for a rank-" +
            std::to_string(Args[0].shape.rank()) + " tensor, dim d is d - " +
            std::to_string(Args[0].shape.rank()) + " counted from the end)";
      report(Problem::opType(opTypeProblem(CE, Ops, Err), nullptr));
    }
    loseShard(A, Here, core::shard_loss(Reason::OpRejected, Canon, AxisName),
              Out);
    Out.setFromError(true); // reported: its lost shard is no news
    return false;
  }
  if (R->out_rank && !FromEnd)
    Out.setRank(int(*R->out_rank));
  return placeShard(Canon, *R, Args, FromEnd, A, Here, Out);
}

bool Transfer::placeShard(llvm::StringRef Canon, const core::AxisOutcome &R,
                          llvm::ArrayRef<core::AxisArg> Args, bool FromEnd,
                          AxisId A, Origin Here, Value &Out) {
  llvm::StringRef AxisName = TU.Axes.name(A);
  using Reason = core::ShardLossReason;
  if (R.unmasked_rows) {
    // A lookup in a table sharded by rows is a pending sum only once the
    // rows of indices outside the shard are zeroed: until then it is V,
    // marked (propagateUnmaskedRows clears the mark).
    AxisFact UF = AxisFact::known(types::V, Here);
    UF.Shard = AxisFact::UnmaskedRows;
    Out.set(A, UF);
    return false;
  }
  switch (R.placement.kind) {
  case core::Placement::Kind::Shard: {
    if (FromEnd && !R.out_rank) {
      loseShard(A, Here,
                core::shard_loss(Reason::ResultRankUnknown, Canon, AxisName),
                Out);
      return false;
    }
    AxisFact SF = *Out.get(A); // keeps the origin of the V (a declaration)
    SF.Shard =
        int8_t(FromEnd && R.placement.dim >= 0 ? R.placement.dim - *R.out_rank
                                               : R.placement.dim);
    SF.Pos = 0;
    Out.set(A, SF);
    return true;
  }
  case core::Placement::Kind::Partial: // a V that is a pending sum (§12.2)
    Out.set(A, AxisFact::known(types::P, Here));
    return false;
  case core::Placement::Kind::Replicate:
    // The local rule said V; keep it without a dim.
    Out.set(A, AxisFact::known(types::V, Here));
    return false;
  case core::Placement::Kind::Unknown:
    break;
  }
  core::TypeError Why;
  if (!R.note.empty()) {
    Why.message = R.note;
    Why.fix = R.fix;
  } else if (std::optional<size_t> I = findRankless(Args))
    Why = core::shard_loss(Reason::RuleNeedsRank, Canon, AxisName, *I);
  else
    Why = core::shard_loss(Reason::RuleUndecided, Canon, AxisName);
  loseShard(A, Here, std::move(Why), Out);
  return false;
}

std::vector<core::SpecEntry>
Transfer::operandTuples(llvm::ArrayRef<const OperandSource *> Tensors) const {
  std::vector<core::SpecEntry> Inputs;
  for (const OperandSource *S : Tensors) {
    llvm::SmallVector<int, 4> Dims;
    for (const auto &[A, F] : S->V.axes())
      if (std::optional<int> D = F.shardDim();
          D && globalAxis(A) && !llvm::is_contained(Dims, *D))
        Dims.push_back(*D);
    for (int D : Dims) {
      core::SpecEntry E;
      int Last = -1;
      bool Ordered = true;
      for (AxisId A : S->V.tupleOf(D)) {
        // Local axes keep local semantics; an axis of one rank here (a
        // size-1 guard) is normalised away (spec §12.1).
        if (!globalAxis(A) || llvm::is_contained(SizeOne, A))
          continue;
        Ordered &= S->V.get(A)->Pos > Last; // equal: no order given
        Last = S->V.get(A)->Pos;
        E.push_back(TU.Axes.name(A).str());
      }
      if (Ordered && E.size() > 1)
        Inputs.push_back(std::move(E));
    }
  }
  return Inputs;
}

void Transfer::orderTuples(const CallExpr *CE, llvm::StringRef Op,
                           const Operands &Ops,
                           llvm::ArrayRef<const OperandSource *> Tensors,
                           llvm::ArrayRef<AxisId> Placed, Value &Out) {
  // The operands' tuples (spec §12.1 entries of two or more global axes,
  // outer to inner) give the order of axes that share a dim.
  std::vector<core::SpecEntry> Inputs = operandTuples(Tensors);
  // The result's tuples: the axes propagation put on one dim, by the core's
  // order of the inputs.
  llvm::SmallVector<int, 4> OutDims;
  for (AxisId A : Placed)
    if (std::optional<int> D = Out.get(A)->shardDim();
        D && !llvm::is_contained(OutDims, *D))
      OutDims.push_back(*D);
  if (Inputs.empty() && OutDims.size() == Placed.size())
    return; // no tuple in, none out
  core::Result<core::AxisOrder> Order = core::AxisOrder::of(Op, Inputs);
  auto Reject = [&](const core::TypeError &Err, llvm::ArrayRef<AxisId> Lost) {
    if (reporting(DiagKind::OpType))
      report(Problem::opType(opTypeProblem(CE, Ops, Err), nullptr));
    Out.setFromError(true);
    for (AxisId A : Lost) {
      core::TypeError E = Err;
      E.axis = TU.Axes.name(A).str();
      TU.ShardLoss[{CE->getExprLoc().getRawEncoding(), A}] = E;
      AxisFact F = *Out.get(A);
      F.Shard = AxisFact::UnknownShard;
      F.Pos = 0;
      Out.set(A, F);
    }
  };
  if (!Order.ok())
    return Reject(Order.error(), Placed);
  for (int D : OutDims) {
    core::SpecEntry Names;
    llvm::SmallVector<AxisId, 4> Axes;
    for (AxisId A : Placed)
      if (Out.get(A)->shardDim() == D) {
        Names.push_back(TU.Axes.name(A).str());
        Axes.push_back(A);
      }
    if (Names.size() < 2)
      continue;
    // No operand orders any two of them (e.g. `dp = S(0), tp = S(0)` map
    // entries, which give no order): the result keeps them unordered.
    bool AnyOrder = false;
    for (const std::string &X : Names)
      for (const std::string &Y : Names)
        AnyOrder |= Order->outer(X, Y);
    if (!AnyOrder) {
      for (AxisId A : Axes) {
        AxisFact F = *Out.get(A);
        F.Pos = 0;
        Out.set(A, F);
      }
      continue;
    }
    core::Result<core::SpecEntry> Sorted = Order->order(Op, D, Names);
    if (!Sorted.ok()) {
      Reject(Sorted.error(), Axes);
      continue;
    }
    for (AxisId A : Axes) {
      AxisFact F = *Out.get(A);
      F.Pos =
          int8_t(llvm::find(*Sorted, TU.Axes.name(A).str()) - Sorted->begin());
      Out.set(A, F);
    }
  }
}

} // namespace spmd::plugin