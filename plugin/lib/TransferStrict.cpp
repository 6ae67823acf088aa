//===- TransferStrict.cpp - strict global mode: where an unknown shard matters
//===//
//
// Strict global mode (docs/plugin.md "Strict mode") reports every place where
// a V's shard dim is unknown and the dim matters: an op whose result depends
// on which dim is sharded (a dim argument, a contraction, a reduction), and a
// destination declared S(k) (a parameter, a return, a variable). Pointwise
// ops and dim permutations do not need the dim: their result is unknown too,
// and its later uses are reported.
//
//===----------------------------------------------------------------------===//

#include "Transfer.h"

#include <spmd/core/sharding_propagation.h>

using namespace clang;

namespace spmd::plugin {

namespace {

/// Whether the result of \p Canon depends on which dim its operands are
/// sharded on (so an unknown shard there is reported in strict mode).
bool shardDimMatters(llvm::StringRef Canon) {
  switch (core::shard_rule_of(Canon.str())) {
  case core::ShardRule::Pointwise:
  case core::ShardRule::Unknown:
    return false;
  case core::ShardRule::Shape:
    // These move every dim as it is, whichever is sharded.
    return !llvm::is_contained({"transpose", "swapaxes", "swapdims", "t", "T",
                                "mT", "permute", "movedim", "moveaxis",
                                "unsqueeze", "clone", "contiguous"},
                               Canon);
  default:
    return true;
  }
}

/// Whether \p F is V with an unknown shard dim.
bool unknownShard(const AxisFact *F) {
  std::optional<PerAxisType> K = F ? F->knownType() : std::nullopt;
  return K && K->kind == TypeKind::Varying &&
         F->Shard == AxisFact::UnknownShard;
}

} // namespace

bool Transfer::lostShard(const AxisFact *F, AxisId Axis) const {
  if (!unknownShard(F))
    return false;
  const Origin &O = F->originOf(types::V);
  return O.Kind == OriginKind::Inferred ||
         TU.ShardLoss.count({O.Loc.getRawEncoding(), Axis});
}

std::string Transfer::shardOpName(const CallExpr *CE,
                                  llvm::StringRef Name) const {
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(CE))
    if (const char *S = getOperatorSpelling(Op->getOperator()))
      return std::string("operator") + S;
  return Name.str();
}

void Transfer::checkUnknownShardOperands(const CallExpr *CE,
                                         llvm::StringRef Canon,
                                         const Operands &Ops, Value &Out) {
  if (!TU.Opts.StrictShards || !tracksRanks())
    return;
  bool Matters = shardDimMatters(Canon);
  for (const OperandSource &S : Ops.Sources) {
    if (!S.E)
      continue;
    for (const auto &[A, F] : S.V.axes()) {
      if (!unknownShard(&F) || !globalAxis(A))
        continue;
      // A V operand with a P result: the full-reduction rule
      // (promoteFullReductions), whichever dim was sharded.
      const AxisFact *OF = Out.get(A);
      std::optional<PerAxisType> OK = OF ? OF->knownType() : std::nullopt;
      bool Pending = OK && OK->kind == TypeKind::Partial;
      if (Matters && !Pending && lostShard(&F, A))
        checkUnknownShard(S.V, S.E, A);
      // A result whose shard is unknown because this operand's is: its
      // report names the place the dim was lost.
      std::pair<unsigned, AxisId> Here{CE->getExprLoc().getRawEncoding(), A};
      if (!unknownShard(OF) || OF->originOf(types::V).Loc != CE->getExprLoc() ||
          TU.ShardLoss.count(Here))
        continue;
      auto It =
          TU.ShardLoss.find({F.originOf(types::V).Loc.getRawEncoding(), A});
      if (It == TU.ShardLoss.end())
        continue;
      core::TypeError E = It->second;
      E.message = "an operand's shard is unknown: " + E.message;
      TU.ShardLoss[Here] = std::move(E);
    }
  }
}

void Transfer::checkShardAgainst(const Value &V, const Expr *E, AxisId Axis,
                                 PerAxisType Want) {
  if (!Want.is_shard() || !globalAxis(Axis))
    return;
  const AxisFact *F = V.get(Axis);
  if (unknownShard(F)) {
    if (lostShard(F, Axis))
      checkUnknownShard(V, E, Axis);
    return;
  }
  // S(-1) against S(k >= 0) (or the reverse) without a rank: the same dim
  // only for one rank.
  std::optional<int> D = F ? F->shardDim() : std::nullopt;
  if (!D || V.rank() || (*D < 0) == (Want.dim < 0))
    return;
  core::TypeError Why;
  Why.message = "its shard S(" + std::to_string(*D) + ") and the declared S(" +
                std::to_string(Want.dim) +
                ") are one dim only for some ranks, and its rank is unknown";
  checkUnknownShard(V, E, Axis, Why);
}

} // namespace spmd::plugin
