//===- Dataflow.cpp - the per-function driver of the SPMD analysis --------===//

#include "Dataflow.h"
#include "Divergence.h"

#include "clang/Analysis/Analyses/PostOrderCFGView.h"
#include "clang/Analysis/FlowSensitive/DataflowWorklist.h"

#include <map>
#include <tuple>

using namespace clang;

namespace spmd::plugin {

namespace {

std::unique_ptr<CFG> buildCFG(const FunctionDecl *FD, ASTContext &Ctx) {
  CFG::BuildOptions BO;
  BO.setAllAlwaysAdd();
  // Wrappers that skipTransparent strips are not elements of their own: the
  // wrapped expression is one (it comes first), and evaluating the wrapper
  // would only look its value up again. A condition read by
  // CFGBlock::getLastCondition is then the wrapped expression, which every
  // reader of a condition strips to anyway (IgnoreParenImpCasts).
  for (Stmt::StmtClass C :
       {Stmt::ImplicitCastExprClass, Stmt::ParenExprClass,
        Stmt::MaterializeTemporaryExprClass, Stmt::CXXBindTemporaryExprClass,
        Stmt::ExprWithCleanupsClass, Stmt::ConstantExprClass})
    BO.setAlwaysAdd(C, false);
  BO.PruneTriviallyFalseEdges = true;
  BO.AddImplicitDtors = false;
  BO.AddTemporaryDtors = false;
  BO.AddInitializers = true; // member initializers of constructors
  BO.AddLifetime = false;
  BO.AddScopes = false;
  return CFG::buildCFG(FD, FD->getBody(), &Ctx, BO);
}

using AxisSet = llvm::SmallVector<AxisId, 2>;

/// Per block: the successor a layout flag never takes (a branch on
/// `gather_output_` in the layout where it is false), or nullopt.
using DeadEdges = std::vector<std::optional<unsigned>>;

/// Whether the edge \p From -> \p To is never taken.
bool isDead(const DeadEdges &Dead, const CFGBlock &From, const CFGBlock &To) {
  const std::optional<unsigned> &D = Dead[From.getBlockID()];
  if (!D)
    return false;
  return From.succ_begin()[*D].getReachableBlock() == &To &&
         From.succ_begin()[1 - *D].getReachableBlock() != &To;
}

/// Size-1 guards: the axes that have one rank on every path to each block.
/// A must-analysis over the CFG: a branch on `size == 1` (Transfer::
/// sizeOneEdge) adds the axis along one edge; merges intersect.
class SizeOneAxes {
public:
  SizeOneAxes(const CFG &Cfg, Transfer &T, const PostOrderCFGView &Order,
              const DeadEdges &Dead)
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
          if (!PB || !In[PB->getBlockID()] || isDead(Dead, *PB, *B))
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
              const SizeOneAxes &SizeOne, const DeadEdges &Dead)
      : Cfg(Cfg), Entry(Entry), Arena(Arena), SizeOne(SizeOne), Dead(Dead),
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
      if (!PB || !Out[PB->getBlockID()] || isDead(Dead, *PB, B))
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
  const DeadEdges &Dead;
  std::vector<std::optional<FactMap>> Out;
};

/// Collects the problems of each layout of a body and passes them on once
/// all layouts are done: a problem found in every layout as it is, one found
/// in some layouts only with the first such layout (the reporter says which).
class LayoutProblems : public ProblemHandler {
public:
  LayoutProblems(ProblemHandler &Next, const LayoutFlags &Flags)
      : Next(Next), Flags(Flags) {}
  bool isEnabled(DiagKind K) const override { return Next.isEnabled(K); }
  void startLayout(uint32_t Values) {
    Current = Values;
    ++Layouts;
  }
  void handle(Problem P) override {
    Key K{unsigned(P.code()), P.Loc.getRawEncoding(), P.Axis ? *P.Axis + 1 : 0};
    auto &Seen = Count[K];
    if (Seen.second == Layouts)
      return; // the same problem twice in one layout (not counted twice)
    Seen = {Seen.first + 1, Layouts};
    Found.push_back({K, Current, std::move(P)});
  }
  void flush(const clang::FunctionDecl *FD) {
    Next.beginFunction(FD);
    for (Entry &E : Found) {
      if (Count[E.K].first < Layouts)
        for (unsigned I = 0; I < Flags.Flags.size(); ++I)
          E.P.Layout.push_back({Flags.Flags[I], bool(E.Values >> I & 1)});
      Next.handle(std::move(E.P));
    }
  }

private:
  using Key = std::tuple<unsigned, unsigned, unsigned>;
  struct Entry {
    Key K;
    uint32_t Values;
    Problem P;
  };
  ProblemHandler &Next;
  const LayoutFlags &Flags;
  uint32_t Current = 0;
  unsigned Layouts = 0;
  std::map<Key, std::pair<unsigned, unsigned>> Count; // layouts, last layout
  std::vector<Entry> Found;
};

/// Keeps the problems of each block's latest visit during the fixed point
/// and passes them on once the facts have converged. At the fixed point the
/// latest visit of every reached block started from its converged in-state
/// (a predecessor whose out-state changes afterwards enqueues the block
/// again), so its problems are those a separate reporting pass over the
/// converged facts would find, without interpreting every block once more.
class BlockProblems : public ProblemHandler {
public:
  BlockProblems(ProblemHandler &Next, unsigned NumBlocks)
      : Next(Next), PerBlock(NumBlocks) {}
  bool isEnabled(DiagKind K) const override { return Next.isEnabled(K); }
  void handle(Problem P) override { Current->push_back(std::move(P)); }
  /// A visit of \p B starts: the problems of its earlier visits are stale.
  void startBlock(const CFGBlock &B) {
    Current = &PerBlock[B.getBlockID()];
    Current->clear();
  }
  /// Passes on the problems of \p B's latest visit.
  void flush(const CFGBlock &B) {
    for (Problem &P : PerBlock[B.getBlockID()])
      Next.handle(std::move(P));
    PerBlock[B.getBlockID()].clear();
  }

private:
  ProblemHandler &Next;
  std::vector<std::vector<Problem>> PerBlock;
  std::vector<Problem> *Current = nullptr;
};

void analyzeOnce(TUContext &TU, const FunctionDecl *FD, const CFG &Cfg,
                 ProblemHandler &Handler, const Layout *L) {
  FactArena Arena;
  Transfer T(TU, FD, Arena);
  T.setLayout(L);
  unsigned Elements = 0;
  for (const CFGBlock *B : Cfg)
    Elements += B->size();
  T.reserveMemo(Elements);
  DeadEdges Dead(Cfg.getNumBlockIDs());
  if (L)
    for (const CFGBlock *B : Cfg)
      if (B->succ_size() == 2)
        if (std::optional<bool> V = T.layoutCondition(B->getLastCondition()))
          Dead[B->getBlockID()] = *V ? 1u : 0u;
  PostOrderCFGView Order(&Cfg);
  SizeOneAxes SizeOne(Cfg, T, Order, Dead);
  BlockStates States(Cfg, T.entryState(), Arena, SizeOne, Dead);

  // To a fixed point. The lattice is finite, and a block visited more than
  // WidenAfterVisits times widens whatever still changes to Top, so each
  // further visit that changes anything adds a Top: this terminates within
  // a few rounds plus the number of variables, with no cap that would drop
  // the function's diagnostics.
  //
  // Each visit records its problems (BlockProblems), and those of the latest
  // visit are the block's. The one exception: strict global mode explains an
  // unknown shard dim by the reason its op recorded last (TU.ShardLoss),
  // which an op in a later block may still rewrite during the fixed point;
  // there the blocks are interpreted once more with the converged facts.
  bool Record = !(TU.Opts.Global && TU.Opts.Strict);
  BlockProblems Recorded(Handler, Record ? Cfg.getNumBlockIDs() : 0);
  ForwardDataflowWorklist Worklist(Cfg, &Order);
  std::vector<unsigned> Visits(Cfg.getNumBlockIDs(), 0);
  Worklist.enqueueBlock(&Cfg.getEntry());
  while (const CFGBlock *B = Worklist.dequeue()) {
    std::optional<FactMap> In = States.in(*B);
    if (!In)
      continue;
    ++TU.Visits;
    if (Record)
      Recorded.startBlock(*B);
    FactMap New =
        T.block(*B, *In, Record ? &Recorded : nullptr, SizeOne.at(*B));
    if (++Visits[B->getBlockID()] > WidenAfterVisits && States.out(*B))
      New = FactMap::widen(*States.out(*B), New, Arena);
    if (States.update(*B, New))
      Worklist.enqueueSuccessors(B);
  }

  // Report with the converged facts, block by block in reverse post-order.
  if (!L)
    Handler.beginFunction(FD);
  for (const CFGBlock *B : Order) {
    if (Record)
      Recorded.flush(*B);
    else if (std::optional<FactMap> In = States.in(*B))
      T.block(*B, *In, &Handler, SizeOne.at(*B));
  }
  // Collectives that some ranks of their axis may skip, read off the
  // converged facts (the memo holds each expression's latest value).
  checkDivergentCollectives(
      TU, FD, Cfg, T, Handler,
      [&](const CFGBlock &From, const CFGBlock &To) {
        return !isDead(Dead, From, To) && States.out(From);
      },
      [&](const CFGBlock &B, AxisId A) {
        return llvm::is_contained(SizeOne.at(B), A);
      });
}

} // namespace

void analyzeFunction(TUContext &TU, const FunctionDecl *FD,
                     ProblemHandler &Handler) {
  std::unique_ptr<CFG> Cfg = buildCFG(FD, TU.Ctx);
  if (!Cfg)
    return; // e.g. unsupported statements: say nothing rather than guess.
  TU.Blocks += Cfg->getNumBlockIDs();
  const LayoutFlags &Flags = TU.Layouts.flagsOf(FD);
  if (Flags.Flags.empty())
    return analyzeOnce(TU, FD, *Cfg, Handler, nullptr);
  // A layer whose types depend on its flags: once per layout.
  LayoutProblems Per(Handler, Flags);
  unsigned N = Flags.Flags.size();
  for (uint32_t V = 0; V < (1u << N); ++V) {
    Layout L;
    L.Known = (1u << N) - 1;
    L.Values = V;
    Per.startLayout(V);
    analyzeOnce(TU, FD, *Cfg, Per, &L);
  }
  Per.flush(FD);
}

} // namespace spmd::plugin
