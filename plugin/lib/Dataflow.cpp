//===- Dataflow.cpp - the per-function driver of the SPMD analysis --------===//

#include "Dataflow.h"

#include "clang/Analysis/Analyses/PostOrderCFGView.h"
#include "clang/Analysis/FlowSensitive/DataflowWorklist.h"

using namespace clang;

namespace spmd::plugin {

namespace {

std::unique_ptr<CFG> buildCFG(const FunctionDecl *FD, ASTContext &Ctx) {
  CFG::BuildOptions BO;
  BO.setAllAlwaysAdd();
  BO.PruneTriviallyFalseEdges = true;
  BO.AddImplicitDtors = false;
  BO.AddTemporaryDtors = false;
  BO.AddInitializers = true; // member initializers of constructors
  BO.AddLifetime = false;
  BO.AddScopes = false;
  return CFG::buildCFG(FD, FD->getBody(), &Ctx, BO);
}

using AxisSet = llvm::SmallVector<AxisId, 2>;

/// Size-1 guards: the axes that have one rank on every path to each block.
/// A must-analysis over the CFG: a branch on `size == 1` (Transfer::
/// sizeOneEdge) adds the axis along one edge; merges intersect.
class SizeOneAxes {
public:
  SizeOneAxes(const CFG &Cfg, Transfer &T, const PostOrderCFGView &Order)
      : Edge(Cfg.getNumBlockIDs()), In(Cfg.getNumBlockIDs()) {
    for (const CFGBlock *B : Cfg)
      if (B->succ_size() == 2)
        Edge[B->getBlockID()] = T.sizeOneEdge(B->getLastCondition());
    In[Cfg.getEntry().getBlockID()] = AxisSet();
    for (bool Changed = true; Changed;) {
      Changed = false;
      for (const CFGBlock *B : Order) {
        if (B == &Cfg.getEntry())
          continue;
        std::optional<AxisSet> New;
        for (const CFGBlock::AdjacentBlock &P : B->preds()) {
          const CFGBlock *PB = P.getReachableBlock();
          if (!PB || !In[PB->getBlockID()])
            continue;
          AxisSet S = along(*PB, *B);
          if (!New)
            New = S;
          else
            llvm::erase_if(*New,
                           [&](AxisId A) { return !llvm::is_contained(S, A); });
        }
        if (New && New != In[B->getBlockID()]) {
          In[B->getBlockID()] = New;
          Changed = true;
        }
      }
    }
  }
  /// The axes with one rank on every path to \p B.
  llvm::ArrayRef<AxisId> at(const CFGBlock &B) const {
    const std::optional<AxisSet> &S = In[B.getBlockID()];
    return S ? llvm::ArrayRef<AxisId>(*S) : llvm::ArrayRef<AxisId>();
  }
  /// The axes with one rank along the edge \p From -> \p To.
  AxisSet along(const CFGBlock &From, const CFGBlock &To) const {
    llvm::ArrayRef<AxisId> Before = at(From);
    AxisSet S(Before.begin(), Before.end());
    if (const auto &E = Edge[From.getBlockID()]) {
      const CFGBlock *Taken = From.succ_begin()[E->second].getReachableBlock();
      const CFGBlock *Other =
          From.succ_begin()[1 - E->second].getReachableBlock();
      if (Taken == &To && Other != &To && !llvm::is_contained(S, E->first))
        S.push_back(E->first);
    }
    llvm::sort(S);
    return S;
  }

private:
  std::vector<std::optional<std::pair<AxisId, unsigned>>> Edge;
  std::vector<std::optional<AxisSet>> In;
};

/// The facts of one function: the out-state of each block.
class BlockStates {
public:
  BlockStates(const CFG &Cfg, FactMap Entry, FactArena &Arena,
              const SizeOneAxes &SizeOne)
      : Cfg(Cfg), Entry(Entry), Arena(Arena), SizeOne(SizeOne),
        Out(Cfg.getNumBlockIDs()) {}

  /// The join of the predecessors' out-states; nullopt while none has been
  /// reached. Along an edge on which an axis has one rank (but not on every
  /// path to \p B), the values bring no type on that axis to the merge: there
  /// any type is every other.
  std::optional<FactMap> in(const CFGBlock &B) const {
    if (&B == &Cfg.getEntry())
      return Entry;
    std::optional<FactMap> In;
    llvm::ArrayRef<AxisId> Here = SizeOne.at(B);
    for (const CFGBlock::AdjacentBlock &P : B.preds()) {
      const CFGBlock *PB = P.getReachableBlock();
      if (!PB || !Out[PB->getBlockID()])
        continue;
      FactMap O = *Out[PB->getBlockID()];
      for (AxisId A : SizeOne.along(*PB, B))
        if (!llvm::is_contained(Here, A))
          O = O.map(
              [A](const Value &V) {
                Value N = V;
                N.forEachFact([A](AxisId X, AxisFact &F) {
                  if (X == A)
                    F = AxisFact(); // no type: the join takes the others'
                });
                return N;
              },
              Arena);
      In = In ? FactMap::join(*In, O, Arena) : O;
    }
    return In;
  }
  /// Records \p New as the out-state of \p B; returns whether it changed.
  bool update(const CFGBlock &B, const FactMap &New) {
    std::optional<FactMap> &O = Out[B.getBlockID()];
    if (O && *O == New)
      return false;
    O = New;
    return true;
  }
  const std::optional<FactMap> &out(const CFGBlock &B) const {
    return Out[B.getBlockID()];
  }

private:
  const CFG &Cfg;
  FactMap Entry;
  FactArena &Arena;
  const SizeOneAxes &SizeOne;
  std::vector<std::optional<FactMap>> Out;
};

} // namespace

void analyzeFunction(TUContext &TU, const FunctionDecl *FD,
                     ProblemHandler &Handler) {
  std::unique_ptr<CFG> Cfg = buildCFG(FD, TU.Ctx);
  if (!Cfg)
    return; // e.g. unsupported statements: say nothing rather than guess.
  TU.Blocks += Cfg->getNumBlockIDs();

  FactArena Arena;
  Transfer T(TU, FD, Arena);
  PostOrderCFGView Order(Cfg.get());
  SizeOneAxes SizeOne(*Cfg, T, Order);
  BlockStates States(*Cfg, T.entryState(), Arena, SizeOne);

  // To a fixed point. The lattice is finite, and a block visited more than
  // WidenAfterVisits times widens whatever still changes to Top, so each
  // further visit that changes anything adds a Top: this terminates within
  // a few rounds plus the number of variables, with no cap that would drop
  // the function's diagnostics.
  ForwardDataflowWorklist Worklist(*Cfg, &Order);
  std::vector<unsigned> Visits(Cfg->getNumBlockIDs(), 0);
  Worklist.enqueueBlock(&Cfg->getEntry());
  while (const CFGBlock *B = Worklist.dequeue()) {
    std::optional<FactMap> In = States.in(*B);
    if (!In)
      continue;
    ++TU.Visits;
    FactMap New = T.block(*B, *In, /*Handler=*/nullptr, SizeOne.at(*B));
    if (++Visits[B->getBlockID()] > WidenAfterVisits && States.out(*B))
      New = FactMap::widen(*States.out(*B), New, Arena);
    if (States.update(*B, New))
      Worklist.enqueueSuccessors(B);
  }

  // Report with the converged facts.
  Handler.beginFunction(FD);
  for (const CFGBlock *B : Order)
    if (std::optional<FactMap> In = States.in(*B))
      T.block(*B, *In, &Handler, SizeOne.at(*B));
}

} // namespace spmd::plugin
