//===- Divergence.cpp - collectives reached by some ranks only ------------===//
//
// Three steps, after the type dataflow of a body has converged:
//  1. Which scalar values may differ across the ranks of an axis: reads of
//     the rank ([[spmd::axis_rank]] functions, the runtime's and c10d's rank
//     accessors), reads of a tensor's data (item, equal, ...) where the
//     converged facts say it is V or P, and everything computed from those
//     (a flow-insensitive closure over the body's scalar variables).
//  2. Which branches have such a condition (if, loops, ?:, &&, ||, switch).
//  3. Which collectives are control dependent on such a branch (Clang's
//     ControlDependencyCalculator, transitively), unless every way out of
//     the branch runs the same collectives on that axis.
//
//===----------------------------------------------------------------------===//

#include "Divergence.h"

#include "clang/Analysis/Analyses/Dominators.h"

using namespace clang;

namespace spmd::plugin {

namespace {

/// Recursion bound on expressions and call chains (user input may nest
/// deeply; past it nothing more is read, which reports less, never more).
constexpr unsigned MaxDepth = 64;

/// The axes on which a scalar may differ across ranks, and the first read
/// that makes it so.
struct Variance {
  bool AllAxes = false; ///< the global rank: every axis of more than one rank
  llvm::SmallVector<AxisId, 2> Axes;
  const Expr *Source = nullptr;
  DivergenceSource Why = DivergenceSource::AxisRank;
  /// TensorData: the tensor's type on each axis in Axes.
  llvm::SmallVector<std::pair<AxisId, PerAxisType>, 2> Types;

  bool any() const { return AllAxes || !Axes.empty(); }
  bool on(AxisId A) const { return AllAxes || llvm::is_contained(Axes, A); }
  /// Adds \p O's axes; returns whether anything was new.
  bool merge(const Variance &O) {
    bool Changed = false;
    if (O.AllAxes && !AllAxes) {
      AllAxes = Changed = true;
      if (!Source || Why != DivergenceSource::GlobalRank) {
        Source = O.Source;
        Why = O.Why;
      }
    }
    for (AxisId A : O.Axes)
      if (!llvm::is_contained(Axes, A)) {
        Axes.push_back(A);
        Changed = true;
        if (!Source) {
          Source = O.Source;
          Why = O.Why;
        }
        for (const auto &[TA, T] : O.Types)
          if (TA == A)
            Types.push_back({TA, T});
      }
    return Changed;
  }
  /// The same with only the read that explains axis \p A kept.
  std::optional<PerAxisType> typeOn(AxisId A) const {
    for (const auto &[TA, T] : Types)
      if (TA == A)
        return T;
    return std::nullopt;
  }
};

bool sameSequence(llvm::ArrayRef<const CollectiveSite *> A,
                  llvm::ArrayRef<const CollectiveSite *> B) {
  return A.size() == B.size() &&
         llvm::all_of(llvm::zip(A, B), [](const auto &P) {
           const CollectiveSite &X = *std::get<0>(P), &Y = *std::get<1>(P);
           return X.Op == Y.Op && X.Axis == Y.Axis && X.Src == Y.Src &&
                  X.Dst == Y.Dst;
         });
}

bool forwardCommunicates(core::Collective C) {
  switch (C) {
  case core::Collective::AllReduce:
  case core::Collective::AllGather:
  case core::Collective::ReduceScatter:
  case core::Collective::AllToAll:
  case core::Collective::Unshard:
    return true;
  default:
    return false;
  }
}

class DivergenceCheck {
public:
  DivergenceCheck(
      TUContext &TU, const FunctionDecl *FD, const CFG &Cfg, const Transfer &T,
      ProblemHandler &Handler,
      llvm::function_ref<bool(const CFGBlock &, const CFGBlock &)> EdgeTaken,
      llvm::function_ref<bool(const CFGBlock &, AxisId)> OneRank)
      : TU(TU), FD(FD), Cfg(Cfg), T(T), Handler(Handler), EdgeTaken(EdgeTaken),
        OneRank(OneRank), Sites(Cfg.getNumBlockIDs()) {}

  void run() {
    bool Any = false;
    for (const CFGBlock *B : Cfg)
      for (const CFGElement &E : *B)
        if (std::optional<CFGStmt> S = E.getAs<CFGStmt>())
          if (const auto *CE = dyn_cast<CallExpr>(S->getStmt()))
            Any |= addSites(*B, CE);
    if (!Any)
      return;
    variables();
    CFGPostDomTree PostDom(const_cast<CFG *>(&Cfg));
    ControlDependencyCalculator Deps(const_cast<CFG *>(&Cfg));
    for (const CFGBlock *B : Cfg)
      for (const CollectiveSite &S : Sites[B->getBlockID()])
        checkSite(*B, S, PostDom, Deps);
  }

private:
  TUContext &TU;
  const FunctionDecl *FD;
  const CFG &Cfg;
  const Transfer &T;
  ProblemHandler &Handler;
  llvm::function_ref<bool(const CFGBlock &, const CFGBlock &)> EdgeTaken;
  llvm::function_ref<bool(const CFGBlock &, AxisId)> OneRank;
  std::vector<llvm::SmallVector<CollectiveSite, 1>> Sites;
  llvm::DenseMap<const VarDecl *, Variance> Vars;
  llvm::DenseMap<const CFGBlock *, std::optional<Variance>> Conditions;

  // Step 0: the collectives of each block.

  /// The collective \p CE is, read from its constant arguments.
  std::optional<CollectiveSite> collectiveOf(const CallExpr *CE) const {
    const FunctionDecl *Callee = CE->getDirectCallee();
    if (!Callee || !isSpmdFunction(Callee) || !Callee->getIdentifier() ||
        CE->getNumArgs() < 2 || !T.types().isTensor(CE->getType()))
      return std::nullopt;
    std::optional<core::Collective> C =
        core::parse_collective(Callee->getName());
    if (!C)
      return std::nullopt;
    std::optional<std::string> Axis =
        evaluateAxis(CE->getArg(1), TU.Ctx, nullptr);
    if (!Axis)
      return std::nullopt;
    core::CollectiveCall Call;
    Call.op = *C;
    if (auto Implied = core::implied_types(*C)) {
      Call.src = Implied->first;
      Call.dst = Implied->second;
    } else {
      if (CE->getNumArgs() < 4)
        return std::nullopt;
      std::optional<PerAxisType> Src =
          evaluatePerAxisType(CE->getArg(2), TU.Ctx);
      std::optional<PerAxisType> Dst =
          evaluatePerAxisType(CE->getArg(3), TU.Ctx);
      if (!Src || !Dst)
        return std::nullopt;
      Call.src = *Src;
      Call.dst = *Dst;
    }
    bool Forward = forwardCommunicates(*C);
    if (*C == core::Collective::Redistribute &&
        Call.src.is_shard() == Call.dst.is_shard())
      if (auto Route = core::route_redistribute(Call.src, Call.dst))
        Forward = forwardCommunicates(Route->op);
    bool Backward = false;
    if (!Forward && core::check_arguments(Call).ok())
      for (const core::CollectiveCall &B : core::backward_of(Call))
        Backward |= forwardCommunicates(B.op);
    if (!Forward && !Backward)
      return std::nullopt;
    return CollectiveSite{
        CE,       CE,       nullptr, *C, TU.Axes.intern(*Axis),
        Call.src, Call.dst, !Forward};
  }

  /// The collectives that a call of \p Callee runs (its body's, and those of
  /// the functions it calls), in no particular order; cached per callee.
  const std::vector<CollectiveSite> &collectivesIn(const FunctionDecl *Callee,
                                                   unsigned Depth) {
    auto [It, New] = TU.CollectivesIn.try_emplace(Callee);
    if (!New || Depth > MaxDepth)
      return It->second;
    std::vector<CollectiveSite> Found;
    const FunctionDecl *Def = nullptr;
    if (Callee->hasBody(Def) && Def && !isSpmdFunction(Def) &&
        !isInLibraryNamespace(Def))
      collectInto(Def->getBody(), Def, Depth, Found);
    TU.CollectivesIn[Callee] = std::move(Found);
    return TU.CollectivesIn[Callee];
  }

  void collectInto(const Stmt *S, const FunctionDecl *Owner, unsigned Depth,
                   std::vector<CollectiveSite> &Out) {
    if (!S)
      return;
    if (const auto *CE = dyn_cast<CallExpr>(S)) {
      if (std::optional<CollectiveSite> Site = collectiveOf(CE)) {
        Site->Via = Owner;
        Out.push_back(*Site);
      } else if (const FunctionDecl *Callee = CE->getDirectCallee()) {
        if (Callee != Owner)
          for (CollectiveSite Site : collectivesIn(Callee, Depth + 1)) {
            Site.Via = Owner;
            Out.push_back(Site);
          }
      }
    }
    if (isa<LambdaExpr>(S))
      return; // its body runs where it is called
    for (const Stmt *C : S->children())
      collectInto(C, Owner, Depth, Out);
  }

  bool addSites(const CFGBlock &B, const CallExpr *CE) {
    auto &Here = Sites[B.getBlockID()];
    if (std::optional<CollectiveSite> Site = collectiveOf(CE)) {
      Here.push_back(*Site);
      return true;
    }
    const FunctionDecl *Callee = CE->getDirectCallee();
    if (!Callee || Callee == FD || isSpmdFunction(Callee))
      return false;
    const std::vector<CollectiveSite> &In = collectivesIn(Callee, 0);
    // One site per axis: the first collective the callee runs on it.
    llvm::SmallVector<AxisId, 2> Seen;
    for (const CollectiveSite &S : In) {
      if (llvm::is_contained(Seen, S.Axis))
        continue;
      Seen.push_back(S.Axis);
      CollectiveSite Site = S;
      Site.At = CE;
      Site.Via = Callee;
      Here.push_back(Site);
    }
    return !In.empty();
  }

  // Step 1: what may differ across ranks.

  static bool isRecordIn(const CXXMethodDecl *MD,
                         std::initializer_list<llvm::StringRef> Names) {
    const CXXRecordDecl *RD = MD->getParent();
    if (!RD)
      return false;
    std::string Q = RD->getQualifiedNameAsString();
    return llvm::is_contained(Names, Q);
  }

  Variance axisRank(const Expr *Source, llvm::StringRef Axis) const {
    Variance V;
    V.Axes.push_back(TU.Axes.intern(Axis));
    V.Source = Source;
    V.Why = DivergenceSource::AxisRank;
    return V;
  }
  static Variance globalRank(const Expr *Source) {
    Variance V;
    V.AllAxes = true;
    V.Source = Source;
    V.Why = DivergenceSource::GlobalRank;
    return V;
  }

  /// A tensor whose data a condition reads: the axes where it is V or P.
  Variance tensorData(const Expr *Read, const Expr *Tensor) const {
    Variance V;
    const Value *Val = T.lastValue(Tensor);
    if (!Val || Val->isTop())
      return V;
    for (const auto &[A, F] : Val->axes()) {
      std::optional<PerAxisType> K = F.knownType();
      if (!K || (K->kind != TypeKind::Varying && K->kind != TypeKind::Partial))
        continue;
      V.Axes.push_back(A);
      V.Types.push_back({A, F.shown(*K)});
    }
    if (!V.Axes.empty()) {
      V.Source = Read;
      V.Why = DivergenceSource::TensorData;
    }
    return V;
  }

  /// The methods and functions that read a tensor's values into a scalar.
  static bool readsData(llvm::StringRef Name) {
    return Name == "item" || Name == "is_nonzero" || Name == "equal" ||
           Name == "allclose" || Name == "_local_scalar_dense";
  }

  Variance callVariance(const CallExpr *CE, unsigned Depth) {
    const FunctionDecl *Callee = CE->getDirectCallee();
    if (Callee) {
      if (const std::string *A = TU.Table.axisRankOf(Callee))
        return axisRank(CE, *A);
      // A bound process group's rank (`pg->getRank()`, `group.rank()`):
      // its axis only, not the global rank.
      if (const std::string *A = groupQueryAxis(CE, TU.Table, GroupQuery::Rank))
        return axisRank(CE, *A);
      const auto *MD = dyn_cast<CXXMethodDecl>(Callee);
      llvm::StringRef Name =
          Callee->getIdentifier() ? Callee->getName() : llvm::StringRef();
      if (MD && Name == "rank" &&
          isRecordIn(
              MD, {"spmd::DeviceMesh", "spmd::World", "spmd::testing::Rank"}))
        return globalRank(CE);
      if (MD && Name == "getRank" &&
          isRecordIn(MD, {"c10d::ProcessGroup", "c10d::Backend"}))
        return globalRank(CE);
      if (MD && Name == "coordinate" && CE->getNumArgs() == 1 &&
          isRecordIn(MD, {"spmd::testing::Rank"}))
        if (std::optional<std::string> A =
                evaluateAxis(CE->getArg(0), TU.Ctx, nullptr))
          return axisRank(CE, *A);
      const auto *MC = dyn_cast<CXXMemberCallExpr>(CE);
      const Expr *Obj = MC ? MC->getImplicitObjectArgument() : nullptr;
      if (readsData(Name) && (isInTorchNamespace(Callee) ||
                              (Obj && T.types().isTensor(Obj->getType())))) {
        Variance V;
        if (Obj)
          V.merge(tensorData(CE, Obj));
        for (const Expr *Arg : CE->arguments())
          if (T.types().isTensor(Arg->getType()))
            V.merge(tensorData(CE, Arg));
        return V;
      }
    }
    // Anything else computed from scalars that differ differs.
    Variance V;
    if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE))
      if (const Expr *Obj = MC->getImplicitObjectArgument())
        if (!T.types().isTracked(Obj->getType()))
          V.merge(exprVariance(Obj, Depth + 1));
    for (const Expr *Arg : CE->arguments())
      if (!T.types().isTracked(Arg->getType()))
        V.merge(exprVariance(Arg, Depth + 1));
    return V;
  }

  Variance exprVariance(const Expr *E, unsigned Depth) {
    if (!E || Depth > MaxDepth || E->isValueDependent())
      return {};
    E = E->IgnoreParenImpCasts();
    // A variable, parameter or data member declared to hold the rank.
    if (const std::string *A = groupQueryAxis(E, TU.Table, GroupQuery::Rank))
      return axisRank(E, *A);
    if (const auto *DRE = dyn_cast<DeclRefExpr>(E)) {
      if (const auto *VD = dyn_cast<VarDecl>(DRE->getDecl()))
        if (auto It = Vars.find(VD); It != Vars.end())
          return It->second;
      return {};
    }
    if (const auto *ME = dyn_cast<MemberExpr>(E)) {
      const auto *Field = dyn_cast<FieldDecl>(ME->getMemberDecl());
      if (Field && Field->getName() == "local_rank" &&
          Field->getParent()->getQualifiedNameAsString() ==
              "spmd::MeshAxisGroup") {
        const Expr *Base = ME->getBase()->IgnoreParenImpCasts();
        if (const auto *Get = dyn_cast<CallExpr>(Base))
          if (Get->getNumArgs() == 1)
            if (std::optional<std::string> A =
                    evaluateAxis(Get->getArg(0), TU.Ctx, nullptr))
              return axisRank(E, *A);
        return globalRank(E);
      }
      // A member of a local struct differs where the struct does; a field
      // of the object itself is configuration, the same on every rank.
      if (!T.types().isTracked(ME->getBase()->getType()))
        return exprVariance(ME->getBase(), Depth + 1);
      return {};
    }
    if (const auto *CE = dyn_cast<CallExpr>(E))
      return callVariance(CE, Depth);
    if (isa<LambdaExpr>(E) || isa<CXXThisExpr>(E))
      return {};
    Variance V;
    for (const Stmt *C : E->children())
      if (const auto *CE = dyn_cast_or_null<Expr>(C))
        if (!T.types().isTracked(CE->getType()) || isa<CallExpr>(CE))
          V.merge(exprVariance(CE, Depth + 1));
    return V;
  }

  /// The scalar local variables and what may differ in them: the join of
  /// every value assigned to them anywhere in the body (flow-insensitive,
  /// to a fixed point).
  void variables() {
    llvm::SmallVector<std::pair<const VarDecl *, const Expr *>, 16> Defs;
    for (const CFGBlock *B : Cfg)
      for (const CFGElement &E : *B) {
        std::optional<CFGStmt> S = E.getAs<CFGStmt>();
        if (!S)
          continue;
        if (const auto *DS = dyn_cast<DeclStmt>(S->getStmt())) {
          for (const Decl *D : DS->decls())
            if (const auto *VD = dyn_cast<VarDecl>(D))
              if (VD->getInit() && !T.types().isTracked(VD->getType()))
                Defs.push_back({VD, VD->getInit()});
        } else if (const auto *BO = dyn_cast<BinaryOperator>(S->getStmt())) {
          if (BO->isAssignmentOp())
            if (const auto *DRE =
                    dyn_cast<DeclRefExpr>(BO->getLHS()->IgnoreParenImpCasts()))
              if (const auto *VD = dyn_cast<VarDecl>(DRE->getDecl()))
                Defs.push_back({VD, BO->getRHS()});
        }
      }
    for (unsigned Round = 0; Round <= Defs.size(); ++Round) {
      bool Changed = false;
      for (const auto &[VD, Init] : Defs) {
        Variance V = exprVariance(Init, 0);
        if (V.any())
          Changed |= Vars[VD].merge(V);
      }
      if (!Changed)
        break;
    }
  }

  // Steps 2 and 3.

  /// What may differ across ranks in \p B's branch condition (null: none).
  const Variance *conditionOf(const CFGBlock &B) {
    auto [It, New] = Conditions.try_emplace(&B);
    if (New) {
      unsigned Taken = 0;
      for (const CFGBlock::AdjacentBlock &S : B.succs())
        if (S.getReachableBlock() && EdgeTaken(B, *S.getReachableBlock()))
          ++Taken;
      const Expr *Cond = Taken >= 2 ? B.getLastCondition() : nullptr;
      if (Cond) {
        Variance V = exprVariance(Cond, 0);
        if (V.any())
          Conditions[&B] = std::move(V);
      }
    }
    const std::optional<Variance> &V = Conditions[&B];
    return V ? &*V : nullptr;
  }

  /// The collectives on \p Axis that the straight-line blocks from \p From
  /// to \p Stop (or back to \p Branch) run; nullopt when the way branches
  /// again (then it is not compared).
  std::optional<llvm::SmallVector<const CollectiveSite *, 4>>
  straightLine(const CFGBlock *From, const CFGBlock *Branch,
               const CFGBlock *Stop, AxisId Axis) const {
    llvm::SmallVector<const CollectiveSite *, 4> Seq;
    for (unsigned Steps = 0; From && From != Stop && From != Branch; ++Steps) {
      if (Steps > 256)
        return std::nullopt;
      for (const CollectiveSite &S : Sites[From->getBlockID()])
        if (S.Axis == Axis)
          Seq.push_back(&S);
      const CFGBlock *Next = nullptr;
      unsigned N = 0;
      for (const CFGBlock::AdjacentBlock &S : From->succs())
        if (const CFGBlock *SB = S.getReachableBlock())
          if (EdgeTaken(*From, *SB)) {
            Next = SB;
            ++N;
          }
      if (N > 1)
        return std::nullopt;
      From = Next;
    }
    return Seq;
  }

  /// Whether every way out of \p Branch runs the same collectives on \p Axis
  /// before the ways meet again (then the ranks stay matched).
  bool matched(const CFGBlock &Branch, AxisId Axis,
               CFGPostDomTree &PostDom) const {
    auto *Node = PostDom.getBase().getNode(const_cast<CFGBlock *>(&Branch));
    const CFGBlock *Join =
        Node && Node->getIDom() ? Node->getIDom()->getBlock() : nullptr;
    std::optional<llvm::SmallVector<const CollectiveSite *, 4>> First;
    for (const CFGBlock::AdjacentBlock &S : Branch.succs()) {
      const CFGBlock *SB = S.getReachableBlock();
      if (!SB || !EdgeTaken(Branch, *SB))
        continue;
      auto Seq = straightLine(SB, &Branch, Join, Axis);
      if (!Seq)
        return false;
      if (!First)
        First = std::move(Seq);
      else if (!sameSequence(*First, *Seq))
        return false;
    }
    return true;
  }

  static bool isLoop(const CFGBlock &B) {
    const Stmt *Term = B.getTerminatorStmt();
    return Term && (isa<ForStmt>(Term) || isa<WhileStmt>(Term) ||
                    isa<DoStmt>(Term) || isa<CXXForRangeStmt>(Term));
  }

  void checkSite(const CFGBlock &B, const CollectiveSite &S,
                 CFGPostDomTree &PostDom, ControlDependencyCalculator &Deps) {
    // The branches B depends on, nearest first, transitively.
    llvm::SmallVector<CFGBlock *, 8> Work;
    llvm::SmallPtrSet<CFGBlock *, 8> Seen;
    for (CFGBlock *D : Deps.getControlDependencies(const_cast<CFGBlock *>(&B)))
      if (Seen.insert(D).second)
        Work.push_back(D);
    for (unsigned I = 0; I < Work.size(); ++I) {
      CFGBlock *D = Work[I];
      const Variance *V = conditionOf(*D);
      if (V && V->on(S.Axis) && !OneRank(*D, S.Axis) &&
          !matched(*D, S.Axis, PostDom)) {
        report(S, *D, *V);
        return;
      }
      for (CFGBlock *Up : Deps.getControlDependencies(D))
        if (Seen.insert(Up).second)
          Work.push_back(Up);
    }
  }

  void report(const CollectiveSite &S, const CFGBlock &Branch,
              const Variance &V) {
    if (!Handler.isEnabled(DiagKind::DivergentCollective))
      return;
    ProblemSite P;
    P.Kind = DiagKind::DivergentCollective;
    P.Loc = S.At->getExprLoc();
    P.Range = S.At->getSourceRange();
    P.Call = S.Collective;
    P.Op = S.Op;
    P.Axis = S.Axis;
    P.Subject = V.Source;
    P.Actual = V.typeOn(S.Axis);
    DivergentCollectiveDetail D;
    D.Via = S.Via;
    D.Branch.Condition = Branch.getLastCondition();
    D.Branch.Source = V.Why;
    D.Branch.Loop = isLoop(Branch);
    D.Branch.BackwardOnly = S.BackwardOnly;
    if (V.Why == DivergenceSource::TensorData && !P.Actual)
      D.Branch.Source = DivergenceSource::GlobalRank; // not reached
    Handler.handle(Problem::divergentCollective(std::move(P), std::move(D)));
  }
};

} // namespace

void checkDivergentCollectives(
    TUContext &TU, const FunctionDecl *FD, const CFG &Cfg, const Transfer &T,
    ProblemHandler &Handler,
    llvm::function_ref<bool(const CFGBlock &, const CFGBlock &)> EdgeTaken,
    llvm::function_ref<bool(const CFGBlock &, AxisId)> OneRank) {
  if (!Handler.isEnabled(DiagKind::DivergentCollective))
    return;
  DivergenceCheck(TU, FD, Cfg, T, Handler, EdgeTaken, OneRank).run();
}

} // namespace spmd::plugin
