//===- TransferShards.cpp - global mode: shard dims
//------------------------===//
//
// Global mode (Options::Global, docs/plugin.md "Global mode"): a V that is
// known to be S(d) keeps d. A collective whose src is S(i) needs its input
// sharded on dim i; a known shard is not a pending sum, so it is not accepted
// where src is P nor reinterpreted as P (outside expert mode); ordinary ops
// move the shard by the core's sharding propagation (sharding_propagation.h).
// Tensor ranks are not tracked: S(-1) and S(1) are compared only when both
// dims have the same sign, and a rule that needs a rank answers "unknown
// shard", never a guess.
//
//===----------------------------------------------------------------------===//

#include "Transfer.h"

#include <spmd/core/sharding_propagation.h>

using namespace clang;

namespace spmd::plugin {

namespace {

std::string dimStr(int D) { return std::to_string(D); }

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
  if (!TU.Opts.Global)
    return false;
  const AxisFact *F = In.get(Axis);
  std::optional<int> D = F ? F->shardDim() : std::nullopt;
  if (!D || Call.expert_mode)
    return false;
  llvm::StringRef Name = TU.Axes.name(Axis);
  core::TypeError Err;
  Err.axis = Name.str();
  Err.actual = "S(" + dimStr(*D) + ")";
  bool WrongDim = Call.src.is_shard() && !Call.gather_dim && !Call.split_dim &&
                  differentDims(Call.src.dim, *D);
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
                               const Operands &Ops, bool OnlyTensorArgs,
                               Value &Out) {
  if (!TU.Opts.Global)
    return;
  // Axes some operand shards: the others need no global rule.
  llvm::SmallVector<AxisId, 4> Sharded;
  for (const OperandSource &S : Ops.Sources)
    if (S.E)
      for (const auto &[A, F] : S.V.axes())
        if (F.shardDim() && !llvm::is_contained(Sharded, A))
          Sharded.push_back(A);
  for (AxisId A : Sharded) {
    const AxisFact *OF = Out.get(A);
    std::optional<PerAxisType> K = OF ? OF->knownType() : std::nullopt;
    if (!K || K->kind != TypeKind::Varying)
      continue; // the local rule already decided (or nothing is known)
    std::vector<core::AxisArg> Args;
    bool AnyUnknown = false;
    for (const OperandSource &S : Ops.Sources)
      if (S.E) {
        core::Placement Pl = placementOf(S.V, A);
        AnyUnknown |= Pl.kind == core::Placement::Kind::Unknown;
        Args.push_back({Pl, core::Shape::unknown()});
      }
    // The core takes resolved (non-negative) dims: resolve a negative one
    // only where the op fixes the rank, else the shard is unknown.
    std::string Canon = core::canonical_op_name(Name);
    long FixedRank = Canon == "mm" ? 2 : Canon == "bmm" ? 3 : 0;
    for (size_t I = 0; I < Args.size() && FixedRank; ++I) {
      Args[I].shape = core::Shape::of_rank(FixedRank);
      if (Args[I].placement.is_shard() && Args[I].placement.dim < 0)
        Args[I].placement.dim += FixedRank;
    }
    // linear(x, w[, b]) contracts x's last dim whatever x's rank: an x
    // sharded on a negative dim (or not sharded) may be given any rank that
    // holds the dim, and a result dim counted from the end is exact.
    bool FromEnd = false;
    if (Canon == "linear" && !Args.empty() &&
        (!Args[0].placement.is_shard() || Args[0].placement.dim < 0)) {
      long Rank = std::max(
          2L, Args[0].placement.is_shard() ? -Args[0].placement.dim : 1);
      Args[0].shape = core::Shape::of_rank(Rank);
      if (Args[0].placement.is_shard())
        Args[0].placement.dim += Rank;
      FromEnd = true;
    }
    for (const core::AxisArg &Arg : Args)
      if (Arg.placement.is_shard() && Arg.placement.dim < 0)
        AnyUnknown = true; // rank unknown: no guess
    AxisFact NF = *OF;
    NF.Shard = AxisFact::UnknownShard;
    if (AnyUnknown) {
      Out.set(A, NF);
      continue;
    }
    core::ShardingArgs SA;
    SA.known = OnlyTensorArgs;
    core::Result<core::AxisOutcome> R =
        core::propagate_axis(Name, Args, SA, TU.Axes.name(A));
    if (!R.ok()) {
      if (reporting(DiagKind::OpType)) {
        Problem P;
        P.Kind = DiagKind::OpType;
        P.Code = ProblemCode::OpType;
        P.Loc = CE->getExprLoc();
        P.Range = CE->getSourceRange();
        P.Call = CE;
        P.Axis = A;
        P.Error = R.error();
        for (const OperandSource &S : Ops.Sources)
          if (S.E && P.Origins.size() < 2)
            if (std::optional<PerAxisType> T = S.V.knownOn(A))
              P.Origins.push_back({S.E, *T, S.V.get(A)->originOf(*T)});
        report(std::move(P));
      }
      Out.set(A, NF);
      continue;
    }
    Origin O{CE->getExprLoc(), OriginKind::Inferred};
    switch (R->placement.kind) {
    case core::Placement::Kind::Shard:
      if (FromEnd && !R->out_rank)
        break;
      NF.Shard = int8_t(FromEnd && R->placement.dim >= 0
                            ? R->placement.dim - *R->out_rank
                            : R->placement.dim);
      Out.set(A, NF);
      break;
    case core::Placement::Kind::Partial: // a V that is a pending sum (§12.2)
      Out.set(A, AxisFact::known(types::P, O));
      break;
    default:
      Out.set(A, NF);
      break;
    }
  }
}

} // namespace spmd::plugin
