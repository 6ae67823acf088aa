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

#include <spmd/core/sharding_propagation.h>

using namespace clang;

namespace spmd::plugin {

namespace {

std::string dimStr(int D) { return std::to_string(D); }

/// Dim \p D of a rank-\p Rank tensor, counted from the front.
int resolve(int D, int Rank) { return D < 0 ? D + Rank : D; }

/// Whether S(A) and S(B) are provably different dims without the rank.
bool differentDims(int A, int B) { return (A < 0) == (B < 0) && A != B; }

/// "all_gather(x, tp, S(d), R)" spelled for a message.
std::string gatherFix(llvm::StringRef Axis, int D) {
  return "spmd::all_gather(x, " + Axis.str() + ", S(" + dimStr(D) + "), R)";
}

} // namespace

bool Transfer::checkShardInput(const CallExpr *CE,
                               const core::CollectiveCall &Call,
                               const Value &In, AxisId Axis) {
  if (!globalAxis(Axis))
    return false;
  const AxisFact *F = In.get(Axis);
  std::optional<int> D = F ? F->shardDim() : std::nullopt;
  if (!D || Call.expert_mode)
    return false;
  llvm::StringRef Name = TU.Axes.name(Axis);
  core::TypeError Err;
  Err.axis = Name.str();
  Err.actual = "S(" + dimStr(*D) + ")";
  std::optional<int> Rank = In.rank();
  bool Plain = Call.src.is_shard() && !Call.gather_dim && !Call.split_dim;
  bool WrongDim =
      Plain && (Rank ? resolve(Call.src.dim, *Rank) != resolve(*D, *Rank)
                     : differentDims(Call.src.dim, *D));
  if (Plain && !Rank && (Call.src.dim < 0) != (*D < 0)) {
    core::TypeError Why;
    Why.message = "src S(" + dimStr(Call.src.dim) + ") and its shard S(" +
                  dimStr(*D) +
                  ") are one dim only for some ranks, and its "
                  "rank is unknown";
    checkUnknownShard(In, CE->getArg(0), Axis, Why);
  }
  bool NotPartial = (Call.src.kind == TypeKind::Partial) ||
                    (Call.op == core::Collective::Reinterpret &&
                     Call.dst.kind == TypeKind::Partial);
  if (WrongDim) {
    Err.expected = "S(" + dimStr(Call.src.dim) + ")";
    Err.message = std::string(core::to_string(Call.op)) +
                  " expects its input sharded on dim " + dimStr(Call.src.dim) +
                  " on axis " + Name.str() + " (src = S(" +
                  dimStr(Call.src.dim) + ")), but it is sharded on dim " +
                  dimStr(*D) + " (S(" + dimStr(*D) + "))";
    Err.fix = "gather along dim " + dimStr(*D) + ", where it is sharded (" +
              gatherFix(Name, *D) + "), or use src = S(" + dimStr(*D) + ")";
  } else if (NotPartial) {
    Err.expected = "P";
    bool Reinterp = Call.op == core::Collective::Reinterpret;
    Err.message =
        std::string(Reinterp ? "reinterpret as P" : core::to_string(Call.op)) +
        (Reinterp ? " of" : " with src = P on") + " a tensor sharded on dim " +
        dimStr(*D) + " on axis " + Name.str() + " (S(" + dimStr(*D) +
        ")): a shard is not a pending sum";
    Err.fix = "gather along dim " + dimStr(*D) + " (" + gatherFix(Name, *D) +
              "); a sum of partial products needs the contraction dim "
              "sharded on both operands";
  } else {
    return false;
  }
  if (!reporting(DiagKind::CollectiveInput))
    return true;
  Problem P = collectiveInputProblem(CE, Call, Axis, types::S(*D));
  const Expr *X = CE->getArg(0);
  P.Origins.push_back({X, types::V, F->originOf(types::V)});
  P.Error = std::move(Err);
  if (WrongDim && isEditableRange(CE->getArg(2)))
    P.SrcArg = CE->getArg(2);
  report(std::move(P));
  return true;
}

void Transfer::checkUnknownShard(const Value &V, const Expr *E, AxisId Axis,
                                 std::optional<core::TypeError> Why) {
  if (!globalAxis(Axis) || !TU.Opts.Strict || !E ||
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
      Why.emplace();
      Why->message = O.Kind == OriginKind::Inferred
                         ? "the op that made it did not say where"
                         : "its type says V, not S(i)";
    }
  }
  Problem P;
  P.Kind = DiagKind::UnknownType;
  P.Code = ProblemCode::UnknownShard;
  P.Loc = E->getExprLoc();
  P.Range = E->getSourceRange();
  P.Subject = E;
  P.Axis = Axis;
  P.Origins.push_back({nullptr, types::V, O});
  P.Error = std::move(Why);
  report(std::move(P));
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
/// integer arguments \p L in call order, for the op rules that read them.
/// Known is false when an argument a rule needs is not a constant.
core::ShardingArgs shardingArgs(llvm::StringRef Canon,
                                llvm::ArrayRef<IntList> L) {
  core::ShardingArgs SA;
  auto Dims = [&](size_t From, size_t To) {
    SA.has_dims = true;
    for (size_t I = From; I < To && I < L.size(); ++I)
      for (const std::optional<long> &D : L[I]) {
        if (!D)
          SA.known = false;
        SA.dims.push_back(D.value_or(0));
      }
  };
  auto Sizes = [&](size_t From, size_t To) {
    for (size_t I = From; I < To && I < L.size(); ++I)
      SA.sizes.insert(SA.sizes.end(), L[I].begin(), L[I].end());
  };
  if (llvm::is_contained({"transpose", "swapaxes", "swapdims", "movedim",
                          "moveaxis", "permute"},
                         Canon)) {
    Dims(0, L.size());
  } else if (llvm::is_contained(
                 {"view", "reshape", "expand", "broadcast_to", "repeat"},
                 Canon)) {
    Sizes(0, L.size());
  } else if (Canon == "flatten") {
    if (!L.empty())
      Dims(0, 2);
  } else if (Canon == "unflatten") {
    Dims(0, 1);
    Sizes(1, 2);
  } else if (llvm::is_contained({"sum", "mean", "nansum", "amax", "amin", "max",
                                 "min", "argmax", "argmin", "logsumexp", "prod",
                                 "all", "any"},
                                Canon)) {
    if (!L.empty())
      Dims(0, 1);
    if (L.size() > 1 && L[1].size() == 1)
      SA.keepdim = L[1][0].value_or(0) != 0;
    else if (L.size() > 1)
      SA.known = false;
  } else if (llvm::is_contained({"softmax", "log_softmax", "cumsum", "cumprod",
                                 "sort", "argsort", "unsqueeze", "squeeze",
                                 "select", "narrow", "index_select", "unbind",
                                 "cat", "concat", "stack", "flip"},
                                Canon)) {
    if (!L.empty())
      Dims(0, 1);
    else if (Canon == "cat" || Canon == "concat" || Canon == "stack" ||
             Canon == "unbind")
      Dims(1, 1); // dim defaults to 0
    if (Canon == "cat" || Canon == "concat" || Canon == "stack" ||
        Canon == "unbind")
      if (SA.dims.empty())
        SA.dims.push_back(0);
  } else if (llvm::is_contained({"chunk", "split", "tensor_split"}, Canon)) {
    if (L.size() > 1)
      Dims(1, 2);
    else {
      SA.has_dims = true;
      SA.dims.push_back(0);
    }
  } else if (Canon == "layer_norm" || Canon == "rms_norm") {
    if (!L.empty())
      SA.normalized_ndim = long(L[0].size());
  } else if (Canon == "einsum" || Canon == "index") {
    SA.known = false; // the equation / the subscripts are not read
  }
  return SA;
}

/// Factories whose first argument is the shape.
bool isShapeFactory(llvm::StringRef Canon) {
  return llvm::is_contained({"zeros", "ones", "empty", "randn", "rand", "full"},
                            Canon);
}

/// The first operand whose rank is unknown.
std::optional<size_t> findRankless(llvm::ArrayRef<core::AxisArg> Args) {
  for (size_t I = 0; I < Args.size(); ++I)
    if (!Args[I].shape.rank_known())
      return I;
  return std::nullopt;
}

/// "args[i]" as the core's messages name operands.
std::string argName(size_t I) { return "args[" + std::to_string(I) + "]"; }

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

void Transfer::propagateShards(const CallExpr *CE, llvm::StringRef Name,
                               llvm::ArrayRef<const Expr *> CallArgs,
                               const Operands &Ops, Value &Out) {
  if (!tracksRanks())
    return;
  std::string Canon = core::canonical_op_name(Name);
  llvm::SmallVector<IntList, 4> Lists;
  for (const Expr *A : CallArgs)
    if (!Types.isTensor(A->getType()) && !Types.isOptionalTensor(A->getType()))
      if (std::optional<IntList> L = intList(A, Ctx))
        Lists.push_back(std::move(*L));
  core::ShardingArgs SA = shardingArgs(Canon, Lists);

  // The tensor operands, with their ranks where known.
  llvm::SmallVector<const OperandSource *, 4> Tensors;
  for (const OperandSource &S : Ops.Sources)
    if (S.E)
      Tensors.push_back(&S);
  auto shapeOf = [](const OperandSource *S) {
    std::optional<int> R = S->V.rank();
    return R ? core::Shape::of_rank(*R) : core::Shape::unknown();
  };

  // The result's rank: a factory's shape, else the core's shape rule run on
  // replicated operands (it answers unknown when a rank it needs is
  // missing; the first operand's is always needed).
  std::optional<long> OutRank;
  if (Tensors.empty()) {
    if (isShapeFactory(Canon) && !Lists.empty())
      OutRank = long(Lists.front().size());
  } else if (Tensors.front()->V.rank()) {
    std::vector<core::AxisArg> Rep;
    for (const OperandSource *S : Tensors)
      Rep.push_back({core::Placement::replicate(), shapeOf(S)});
    core::Result<core::AxisOutcome> R = core::propagate_axis(Name, Rep, SA, "");
    if (R.ok())
      OutRank = R->out_rank;
  }
  Out.setRank(OutRank ? std::optional<int>(int(*OutRank)) : std::nullopt);

  // Axes some operand shards: the others need no global rule.
  llvm::SmallVector<AxisId, 4> Sharded;
  for (const OperandSource *S : Tensors)
    for (const auto &[A, F] : S->V.axes())
      if (F.shardDim() && !llvm::is_contained(Sharded, A))
        Sharded.push_back(A);
  Origin Here{CE->getExprLoc(), OriginKind::Inferred};
  for (AxisId A : Sharded) {
    const AxisFact *OF = Out.get(A);
    std::optional<PerAxisType> K = OF ? OF->knownType() : std::nullopt;
    if (!K || K->kind != TypeKind::Varying)
      continue; // the local rule already decided (or nothing is known)
    AxisFact NF = AxisFact::known(types::V, Here);
    // Why the shard is unknown (kept for the strict-mode report).
    auto lost = [&](std::string Msg, std::string Fix = "") {
      core::TypeError E;
      E.axis = TU.Axes.name(A).str();
      E.message = std::move(Msg);
      E.fix = std::move(Fix);
      TU.ShardLoss[{Here.Loc.getRawEncoding(), A}] = E;
      Out.set(A, NF);
    };
    std::vector<core::AxisArg> Args;
    std::optional<size_t> UnknownShard, UnknownRank;
    for (size_t I = 0; I < Tensors.size(); ++I) {
      const OperandSource *S = Tensors[I];
      core::AxisArg Arg{placementOf(S->V, A), shapeOf(S)};
      if (Arg.placement.kind == core::Placement::Kind::Unknown &&
          !UnknownShard) {
        UnknownShard = I;
        checkUnknownShard(S->V, S->E, A);
      }
      if (Arg.placement.is_shard() && Arg.placement.dim < 0 &&
          Arg.shape.rank_known())
        Arg.placement.dim += Arg.shape.rank();
      Args.push_back(std::move(Arg));
    }
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
    // linear(x, w[, b]) contracts x's last dim whatever x's rank: an x of
    // unknown rank sharded on a negative dim (or not sharded) may be given
    // any rank that holds the dim, and the result's dim counted from the end
    // is exact.
    bool FromEnd = false;
    if (Canon == "linear" && !Args.empty() && !Args[0].shape.rank_known() &&
        (!Args[0].placement.is_shard() || Args[0].placement.dim < 0)) {
      long Rank = std::max(
          2L, Args[0].placement.is_shard() ? -Args[0].placement.dim : 1);
      Args[0].shape = core::Shape::of_rank(Rank);
      if (Args[0].placement.is_shard())
        Args[0].placement.dim += Rank;
      FromEnd = true;
    }
    for (size_t I = 0; I < Args.size() && !UnknownRank; ++I)
      if (Args[I].placement.is_shard() && Args[I].placement.dim < 0)
        UnknownRank = I;
    if (UnknownShard) {
      lost(argName(*UnknownShard) + " is V on this axis with no known shard "
                                    "dim");
      continue;
    }
    if (UnknownRank) {
      int D = int(Args[*UnknownRank].placement.dim);
      lost(argName(*UnknownRank) + " is S(" + dimStr(D) +
               ") but its rank is unknown, so " + Canon +
               " cannot place the shard",
           "annotate the operand's rank, e.g. [[spmd::type(" +
               TU.Axes.name(A).str() + " = S(" + dimStr(D) +
               "), spmd::rank(3))]]");
      continue;
    }
    core::Result<core::AxisOutcome> R =
        core::propagate_axis(Name, Args, SA, TU.Axes.name(A));
    if (!R.ok()) {
      if (reporting(DiagKind::OpType)) {
        core::TypeError Err = R.error();
        Err.axis = TU.Axes.name(A).str();
        report(opTypeProblem(CE, Ops, Err));
      }
      lost("the op is rejected on this axis");
      continue;
    }
    if (R->out_rank && !FromEnd)
      Out.setRank(int(*R->out_rank));
    switch (R->placement.kind) {
    case core::Placement::Kind::Shard:
      if (FromEnd && !R->out_rank) {
        lost("the result's rank is unknown");
        break;
      }
      {
        AxisFact SF = *OF; // keeps the origin of the V (a declaration)
        SF.Shard = int8_t(FromEnd && R->placement.dim >= 0
                              ? R->placement.dim - *R->out_rank
                              : R->placement.dim);
        Out.set(A, SF);
        break;
      }
    case core::Placement::Kind::Partial: // a V that is a pending sum (§12.2)
      Out.set(A, AxisFact::known(types::P, Here));
      break;
    case core::Placement::Kind::Replicate:
      Out.set(A, NF); // the local rule said V; keep it without a dim
      break;
    case core::Placement::Kind::Unknown:
      if (!R->note.empty())
        lost(R->note);
      else if (std::optional<size_t> I = findRankless(Args))
        lost(argName(*I) + " has no known rank, which the sharding rule of " +
                 Canon + " needs",
             "annotate its rank, e.g. [[spmd::type(" + TU.Axes.name(A).str() +
                 " = ..., spmd::rank(3))]]");
      else
        lost("the core's sharding rule for " + Canon +
             " could not decide (a size or dim argument is not a constant)");
      break;
    }
  }
}

} // namespace spmd::plugin
