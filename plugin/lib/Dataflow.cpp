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

/// The facts of one function: the out-state of each block.
class BlockStates {
public:
  BlockStates(const CFG &Cfg, FactMap Entry, FactArena &Arena)
      : Cfg(Cfg), Entry(Entry), Arena(Arena), Out(Cfg.getNumBlockIDs()) {}

  /// The join of the predecessors' out-states; nullopt while none has been
  /// reached.
  std::optional<FactMap> in(const CFGBlock &B) const {
    if (&B == &Cfg.getEntry())
      return Entry;
    std::optional<FactMap> In;
    for (const CFGBlock::AdjacentBlock &P : B.preds()) {
      const CFGBlock *PB = P.getReachableBlock();
      if (!PB || !Out[PB->getBlockID()])
        continue;
      const FactMap &O = *Out[PB->getBlockID()];
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
  BlockStates States(*Cfg, T.entryState(), Arena);
  PostOrderCFGView Order(Cfg.get());

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
    FactMap New = T.block(*B, *In, /*Handler=*/nullptr);
    if (++Visits[B->getBlockID()] > WidenAfterVisits && States.out(*B))
      New = FactMap::widen(*States.out(*B), New, Arena);
    if (States.update(*B, New))
      Worklist.enqueueSuccessors(B);
  }

  // Report with the converged facts.
  Handler.beginFunction(FD);
  for (const CFGBlock *B : Order)
    if (std::optional<FactMap> In = States.in(*B))
      T.block(*B, *In, &Handler);
}

} // namespace spmd::plugin
