//===- FactMap.cpp - persistent per-block facts of the dataflow -----------===//

#include "FactMap.h"

namespace spmd::plugin {

namespace {

using Node = FactArena::Node;

unsigned slotOf(unsigned Index, unsigned Level) {
  return (Index >> (4 * Level)) & 15;
}

bool fits(unsigned Index, unsigned Depth) {
  return Depth >= 8 || (Index >> (4 * Depth)) == 0;
}

/// Path copy of \p N with the leaf \p V (already in the arena) at \p Index.
const Node *setIn(const Node *N, unsigned Level, unsigned Index, const Value *V,
                  FactArena &A) {
  Node *Copy = A.node(N);
  unsigned S = slotOf(Index, Level);
  if (Level == 0)
    Copy->Child[S] = V;
  else
    Copy->Child[S] = setIn(static_cast<const Node *>(Copy->Child[S]), Level - 1,
                           Index, V, A);
  return Copy;
}

/// Combines two subtrees at \p Level slot by slot with \p Leaf (for two
/// different non-null values); returns X or Y itself when the result equals
/// it, so unchanged parts stay shared.
template <typename LeafFn>
const void *combine(const void *X, const void *Y, unsigned Level, FactArena &A,
                    LeafFn &Leaf) {
  if (X == Y || !Y)
    return X;
  if (!X)
    return Y;
  if (Level == ~0u)
    return Leaf(static_cast<const Value *>(X), static_cast<const Value *>(Y));
  const auto *NX = static_cast<const Node *>(X);
  const auto *NY = static_cast<const Node *>(Y);
  const void *Out[16];
  bool SameAsX = true, SameAsY = true;
  for (unsigned S = 0; S < 16; ++S) {
    Out[S] = combine(NX->Child[S], NY->Child[S], Level - 1, A, Leaf);
    SameAsX &= Out[S] == NX->Child[S];
    SameAsY &= Out[S] == NY->Child[S];
  }
  if (SameAsX)
    return NX;
  if (SameAsY)
    return NY;
  Node *N = A.node();
  std::copy(std::begin(Out), std::end(Out), N->Child);
  return N;
}

bool equalIn(const void *X, const void *Y, unsigned Level) {
  if (X == Y)
    return true;
  if (!X || !Y)
    return false;
  if (Level == ~0u)
    return *static_cast<const Value *>(X) == *static_cast<const Value *>(Y);
  const auto *NX = static_cast<const Node *>(X);
  const auto *NY = static_cast<const Node *>(Y);
  for (unsigned S = 0; S < 16; ++S)
    if (!equalIn(NX->Child[S], NY->Child[S], Level - 1))
      return false;
  return true;
}

const void *mapIn(const void *P, unsigned Level, FactArena &A,
                  llvm::function_ref<Value(const Value &)> F) {
  if (!P)
    return nullptr;
  if (Level == ~0u) {
    const auto *V = static_cast<const Value *>(P);
    Value N = F(*V);
    if (N == *V)
      return V;
    return A.value(std::move(N));
  }
  const auto *NP = static_cast<const Node *>(P);
  Node *Copy = nullptr;
  for (unsigned S = 0; S < 16; ++S) {
    const void *C = mapIn(NP->Child[S], Level - 1, A, F);
    if (C == NP->Child[S])
      continue;
    if (!Copy)
      Copy = A.node(NP);
    Copy->Child[S] = C;
  }
  return Copy ? Copy : NP;
}

} // namespace

FactMap FactMap::map(llvm::function_ref<Value(const Value &)> F,
                     FactArena &A) const {
  FactMap M = *this;
  M.Root = static_cast<const Node *>(mapIn(Root, Depth - 1, A, F));
  return M;
}

const Value *FactMap::get(unsigned Index) const {
  if (!fits(Index, Depth))
    return nullptr;
  const void *P = Root;
  for (unsigned L = Depth; L-- > 0 && P;)
    P = static_cast<const Node *>(P)->Child[slotOf(Index, L)];
  return static_cast<const Value *>(P);
}

FactMap FactMap::grown(unsigned D, FactArena &A) const {
  FactMap M = *this;
  while (M.Depth < D) {
    if (M.Root) {
      Node *N = A.node();
      N->Child[0] = M.Root;
      M.Root = N;
    }
    ++M.Depth;
  }
  return M;
}

FactMap FactMap::set(unsigned Index, const Value &V, FactArena &A) const {
  return setShared(Index, A.value(V), A);
}

FactMap FactMap::setShared(unsigned Index, const Value *V, FactArena &A) const {
  unsigned D = Depth;
  while (!fits(Index, D))
    ++D;
  FactMap M = grown(D, A);
  M.Root = setIn(M.Root ? M.Root : A.node(), M.Depth - 1, Index, V, A);
  return M;
}

FactMap FactMap::join(const FactMap &X, const FactMap &Y, FactArena &A) {
  unsigned D = std::max(X.Depth, Y.Depth);
  FactMap GX = X.grown(D, A), GY = Y.grown(D, A);
  auto Leaf = [&](const Value *VX, const Value *VY) -> const void * {
    Value J = *VX;
    J.join(*VY);
    if (J == *VX)
      return VX; // equal facts imply equal origins: join adds only new types
    if (J == *VY)
      return VY;
    return A.value(std::move(J));
  };
  GX.Root =
      static_cast<const Node *>(combine(GX.Root, GY.Root, D - 1, A, Leaf));
  return GX;
}

FactMap FactMap::widen(const FactMap &Old, const FactMap &New, FactArena &A) {
  unsigned D = std::max(Old.Depth, New.Depth);
  FactMap GO = Old.grown(D, A), GN = New.grown(D, A);
  const Value *Top = nullptr;
  auto Leaf = [&](const Value *VO, const Value *VN) -> const void * {
    if (*VO == *VN)
      return VN;
    if (!Top)
      Top = A.value(Value::top());
    return Top;
  };
  // Entries on one side only are kept as they are (the facts only grow, so
  // an entry only in New is new information, not a change).
  GN.Root =
      static_cast<const Node *>(combine(GN.Root, GO.Root, D - 1, A, Leaf));
  return GN;
}

bool operator==(const FactMap &X, const FactMap &Y) {
  if (X.Root == Y.Root)
    return true;
  // A shorter trie equals a taller one whose extra levels hold it at child 0
  // and nothing else: descend the taller one without allocating.
  const void *PX = X.Root, *PY = Y.Root;
  unsigned DX = X.Depth, DY = Y.Depth;
  while (DX < DY) {
    const auto *N = static_cast<const Node *>(PY);
    if (!N)
      return !PX;
    for (unsigned S = 1; S < 16; ++S)
      if (N->Child[S])
        return false;
    PY = N->Child[0];
    --DY;
  }
  while (DY < DX) {
    const auto *N = static_cast<const Node *>(PX);
    if (!N)
      return !PY;
    for (unsigned S = 1; S < 16; ++S)
      if (N->Child[S])
        return false;
    PX = N->Child[0];
    --DX;
  }
  return equalIn(PX, PY, DX - 1);
}

} // namespace spmd::plugin
