// GoogleTest for the analysis lattice (plugin/lib/TypeLattice.h) and the
// persistent per-block states (plugin/lib/FactMap.h), without any AST.
#include <gtest/gtest.h>

#include "FactMap.h"
#include "TypeLattice.h"

namespace spmd::plugin {
namespace {

Origin at(unsigned Raw, OriginKind K = OriginKind::Declared) {
  return {clang::SourceLocation::getFromRawEncoding(Raw), K};
}

Value of(std::initializer_list<std::pair<AxisId, PerAxisType>> Axes,
         bool Open = false, unsigned Loc = 1) {
  Value V = Open ? Value::unknown() : Value::closed();
  for (auto [A, T] : Axes) V.set(A, AxisFact::known(T, at(Loc)));
  return V;
}

TEST(AxisFact, ShardDims) {
  // Global mode keeps S(i)'s dim; a plain V has none.
  AxisFact S1 = AxisFact::known(types::S(-1), at(1));
  EXPECT_EQ(S1.shardDim(), -1);
  EXPECT_FALSE(AxisFact::known(types::V, at(1)).shardDim());
  EXPECT_FALSE(AxisFact::known(types::R, at(1)).shardDim());
  // Joining the same dim keeps it; different dims give an unknown shard
  // (still a known V), and the fact changes (the dataflow sees it).
  AxisFact J = S1;
  J.join(AxisFact::known(types::S(-1), at(2)));
  EXPECT_EQ(J.shardDim(), -1);
  J.join(AxisFact::known(types::S(0), at(2)));
  EXPECT_EQ(J.knownType(), types::V);
  EXPECT_FALSE(J.shardDim());
  // A V arriving on a fact without V brings its dim.
  AxisFact U = AxisFact::unknown();
  U.join(S1);
  EXPECT_FALSE(U.shardDim());  // unknown bit: not known
  EXPECT_EQ(U.Shard, -1);
  Value A = of({{0, types::S(0)}}), B = of({{0, types::S(1)}});
  EXPECT_NE(A, B);
  EXPECT_EQ(A, of({{0, types::S(0)}}));
}

TEST(AxisFact, TuplePositions) {
  // spmd::spec({dp, tp}): both S(0), dp outer (0), tp inner (1).
  AxisFact Dp = AxisFact::known(types::S(0), at(1), 0);
  AxisFact Tp = AxisFact::known(types::S(0), at(1), 1);
  EXPECT_EQ(Dp.shardPos(), 0);
  EXPECT_EQ(Tp.shardPos(), 1);
  // No position without a known shard.
  EXPECT_FALSE(AxisFact::known(types::V, at(1), 3).shardPos());
  EXPECT_EQ(AxisFact::known(types::V, at(1), 3).Pos, 0);
  // Join: the same dim and position keeps both; the same dim at another
  // position (another order) makes the shard unknown.
  AxisFact J = Tp;
  J.join(AxisFact::known(types::S(0), at(2), 1));
  EXPECT_EQ(J.shardDim(), 0);
  EXPECT_EQ(J.shardPos(), 1);
  J.join(AxisFact::known(types::S(0), at(2), 0));
  EXPECT_EQ(J.knownType(), types::V);
  EXPECT_FALSE(J.shardDim());
  EXPECT_FALSE(J.shardPos());
  EXPECT_EQ(J.Pos, 0);
  // Equality sees the position.
  Value A, B;
  A.set(0, Dp);
  B.set(0, AxisFact::known(types::S(0), at(1), 1));
  EXPECT_NE(A, B);
  B.set(0, AxisFact::known(types::S(0), at(9), 0));
  EXPECT_EQ(A, B);
}

TEST(Value, TupleOfADim) {
  // ({ep, tp}, dp) on a rank-2 value: dim 0 is (ep, tp), whatever the ids.
  Value V = Value::closed();
  AxisId Dp = 0, Tp = 1, Ep = 2;
  V.set(Tp, AxisFact::known(types::S(0), at(1), 1));
  V.set(Ep, AxisFact::known(types::S(0), at(1), 0));
  V.set(Dp, AxisFact::known(types::S(-1), at(1), 0));
  EXPECT_EQ(V.tupleOf(0), (llvm::SmallVector<AxisId, 4>{Ep, Tp}));
  EXPECT_EQ(V.tupleOf(-1), (llvm::SmallVector<AxisId, 4>{Dp}));
  EXPECT_TRUE(V.tupleOf(1).empty());  // rank unknown: S(-1) is not S(1)
  V.setRank(2);
  EXPECT_EQ(V.tupleOf(1), (llvm::SmallVector<AxisId, 4>{Dp}));
  // Appending innermost: after tp; tp itself not counted.
  EXPECT_EQ(V.innermostPos(0), 2);
  EXPECT_EQ(V.innermostPos(0, Tp), 1);
  EXPECT_EQ(V.innermostPos(1), 1);
  EXPECT_EQ(V.innermostPos(2), 0);
  // A gap left by an axis gathered off the middle keeps the order.
  V.set(Ep, AxisFact::known(types::R, at(1)));
  V.set(3, AxisFact::known(types::S(0), at(1), 0));
  EXPECT_EQ(V.tupleOf(0), (llvm::SmallVector<AxisId, 4>{3, Tp}));
}

TEST(AxisFact, KnownUnknownConflict) {
  AxisFact R = AxisFact::known(types::R, at(1));
  EXPECT_EQ(R.knownType(), types::R);
  EXPECT_FALSE(R.isConflict());
  // S(i) is recorded as V.
  EXPECT_EQ(AxisFact::known(types::S(1), at(1)).knownType(), types::V);

  AxisFact U = AxisFact::unknown();
  EXPECT_FALSE(U.knownType());
  EXPECT_FALSE(U.isConflict());

  AxisFact J = R;
  J.join(AxisFact::known(types::P, at(2)));
  EXPECT_TRUE(J.isConflict());
  EXPECT_FALSE(J.knownType());
  auto [A, B] = J.conflictPair();
  EXPECT_EQ(A, types::R);
  EXPECT_EQ(B, types::P);
  // Each type keeps the origin it arrived with.
  EXPECT_EQ(J.originOf(types::R).Loc, at(1).Loc);
  EXPECT_EQ(J.originOf(types::P).Loc, at(2).Loc);

  // One type joined with unknown is unknown, not a conflict.
  AxisFact RU = R;
  RU.join(U);
  EXPECT_FALSE(RU.knownType());
  EXPECT_FALSE(RU.isConflict());
}

TEST(AxisFact, JoinKeepsTheFirstOrigin) {
  AxisFact F = AxisFact::known(types::V, at(1));
  F.join(AxisFact::known(types::V, at(7)));
  EXPECT_EQ(F.knownType(), types::V);
  EXPECT_EQ(F.originOf(types::V).Loc, at(1).Loc);
}

TEST(AxisFact, ConflictPairOfThreeTypes) {
  AxisFact F = AxisFact::known(types::P, at(1));
  F.join(AxisFact::known(types::I, at(2)));
  F.join(AxisFact::known(types::V, at(3)));
  auto [A, B] = F.conflictPair();
  EXPECT_EQ(A, types::I);
  EXPECT_EQ(B, types::V);
}

TEST(Value, JoinOfDisjointAxesMakesThemUnknown) {
  Value X = of({{0, types::R}});
  Value Y = of({{1, types::V}});
  X.join(Y);
  ASSERT_TRUE(X.get(0) && X.get(1));
  EXPECT_FALSE(X.knownOn(0));
  EXPECT_FALSE(X.knownOn(1));
  EXPECT_FALSE(X.isOpen());
  EXPECT_FALSE(X.isUnknown());
  EXPECT_FALSE(X.hasKnownAxis());
}

TEST(Value, JoinAgreeingAndOpen) {
  Value X = of({{0, types::R}, {1, types::V}});
  X.join(of({{0, types::R}, {1, types::V}}, /*Open=*/true));
  EXPECT_EQ(X.knownOn(0), types::R);
  EXPECT_EQ(X.knownOn(1), types::V);
  EXPECT_TRUE(X.isOpen());
}

TEST(Value, EqualityComparesFactsNotOrigins) {
  EXPECT_EQ(of({{0, types::R}}, false, 1), of({{0, types::R}}, false, 9));
  EXPECT_NE(of({{0, types::R}}), of({{0, types::P}}));
  EXPECT_NE(of({{0, types::R}}), of({{0, types::R}}, /*Open=*/true));
  EXPECT_NE(of({{0, types::R}}), of({{0, types::R}, {1, types::R}}));
  EXPECT_EQ(Value::unknown(), Value::unknown());
  EXPECT_NE(Value::unknown(), Value::top());
}

TEST(Value, UnknownAndTop) {
  EXPECT_TRUE(Value::unknown().isUnknown());
  EXPECT_TRUE(Value::top().isUnknown());
  // Top absorbs: joining anything into it, or it into anything, is Top.
  Value T = Value::top();
  T.join(of({{0, types::R}}));
  EXPECT_TRUE(T.isTop());
  Value X = of({{0, types::R}});
  X.join(Value::top());
  EXPECT_TRUE(X.isTop());
  EXPECT_FALSE(X.knownOn(0));
}

TEST(Value, EmptyIsTheBottomOfJoin) {
  // A container with no elements yet: joining it changes nothing, and
  // joining into it gives the other side (pushes into an empty vector).
  Value E = Value::empty();
  EXPECT_TRUE(E.isEmpty());
  EXPECT_TRUE(E.isUnknown());
  EXPECT_NE(E, Value::unknown());
  E.join(of({{0, types::V}}));
  EXPECT_FALSE(E.isEmpty());
  EXPECT_EQ(E, of({{0, types::V}}));
  Value X = of({{0, types::P}});
  X.join(Value::empty());
  EXPECT_EQ(X, of({{0, types::P}}));
  Value T = Value::empty();
  T.join(Value::top());
  EXPECT_TRUE(T.isTop());
}

TEST(Value, SetKeepsAxesSorted) {
  Value V = Value::closed();
  V.set(3, AxisFact::known(types::P, at(1)));
  V.set(1, AxisFact::known(types::R, at(1)));
  V.set(3, AxisFact::known(types::I, at(1)));
  ASSERT_EQ(V.axes().size(), 2u);
  EXPECT_EQ(V.axes()[0].first, 1);
  EXPECT_EQ(V.knownOn(3), types::I);
}

TEST(AxisTable, InternsNames) {
  AxisTable T;
  AxisId Tp = T.intern("tp");
  AxisId Dp = T.intern("dp");
  EXPECT_NE(Tp, Dp);
  EXPECT_EQ(T.intern("tp"), Tp);
  EXPECT_EQ(T.name(Dp), "dp");
  EXPECT_EQ(T.find("dp"), Dp);
  EXPECT_FALSE(T.find("cp"));
}

TEST(FactMap, SetGetAcrossDepths) {
  FactArena A;
  FactMap M;
  for (unsigned I : {0u, 5u, 15u, 16u, 300u, 70000u})
    M = M.set(I, of({{0, types::R}}), A);
  for (unsigned I : {0u, 5u, 15u, 16u, 300u, 70000u})
    EXPECT_TRUE(M.get(I)) << I;
  EXPECT_FALSE(M.get(1));
  EXPECT_FALSE(M.get(1u << 30));
}

TEST(FactMap, PersistentUpdates) {
  FactArena A;
  FactMap M0 = FactMap().set(3, of({{0, types::R}}), A);
  FactMap M1 = M0.set(3, of({{0, types::P}}), A);
  EXPECT_EQ(M0.get(3)->knownOn(0), types::R);
  EXPECT_EQ(M1.get(3)->knownOn(0), types::P);
  EXPECT_NE(M0, M1);
}

TEST(FactMap, JoinTakesTheOtherSideForMissingEntries) {
  FactArena A;
  FactMap X = FactMap().set(1, of({{0, types::R}}), A);
  FactMap Y = FactMap().set(2, of({{0, types::V}}), A);
  FactMap J = FactMap::join(X, Y, A);
  EXPECT_EQ(J.get(1)->knownOn(0), types::R);
  EXPECT_EQ(J.get(2)->knownOn(0), types::V);
}

TEST(FactMap, JoinOfConflictingEntries) {
  FactArena A;
  FactMap Base = FactMap().set(7, of({{0, types::R}}), A);
  FactMap Other = Base.set(7, of({{0, types::P}}), A);
  FactMap J = FactMap::join(Base, Other, A);
  EXPECT_TRUE(J.get(7)->get(0)->isConflict());
  // Joining with itself or a subset changes nothing (and shares the map).
  EXPECT_EQ(FactMap::join(J, Base, A), J);
  EXPECT_EQ(FactMap::join(Base, Base, A), Base);
}

TEST(FactMap, EqualityIgnoresDepthAndSharing) {
  FactArena A;
  FactMap X = FactMap().set(1, of({{0, types::R}}), A);
  // Grow Y's trie, then give it the same single entry.
  FactMap Y = FactMap().set(1000, of({{0, types::R}}), A);
  FactMap Z = FactMap().set(1, of({{0, types::R}}), A);
  EXPECT_EQ(X, Z);
  EXPECT_NE(X, Y);
  FactMap W =
      FactMap::join(FactMap().set(1000, Value::unknown(), A), FactMap(), A);
  EXPECT_NE(X, W);
}

TEST(FactMap, WidenMakesChangedEntriesTop) {
  FactArena A;
  FactMap Old = FactMap().set(1, of({{0, types::R}}), A);
  Old = Old.set(2, of({{0, types::V}}), A);
  FactMap New = Old.set(2, of({{0, types::P}}), A);
  New = New.set(3, of({{0, types::I}}), A);
  FactMap W = FactMap::widen(Old, New, A);
  EXPECT_EQ(W.get(1)->knownOn(0), types::R);  // unchanged
  EXPECT_TRUE(W.get(2)->isTop());             // still changing
  EXPECT_EQ(W.get(3)->knownOn(0), types::I);  // new: kept
  // Widening again with the same input is stable.
  FactMap W2 = FactMap::widen(W, FactMap::join(W, New, A), A);
  EXPECT_EQ(W, W2);
}

// Many variables, one changed per branch: the join of two states that share
// all but one entry must not depend on the number of variables. Checked by
// node sharing: the result is one of the inputs when nothing changes.
TEST(FactMap, JoinSharesUnchangedStructure) {
  FactArena A;
  FactMap M;
  for (unsigned I = 0; I < 5000; ++I) M = M.set(I, of({{0, types::R}}), A);
  FactMap Changed = M.set(4321, of({{0, types::R}}, false, 99), A);
  // Equal facts (only the origin differs): the join is M itself.
  EXPECT_EQ(FactMap::join(M, Changed, A), M);
  FactMap Other = M.set(17, of({{0, types::P}}), A);
  FactMap J = FactMap::join(M, Other, A);
  EXPECT_TRUE(J.get(17)->get(0)->isConflict());
  EXPECT_EQ(J.get(4999)->knownOn(0), types::R);
}

TEST(Value, FromErrorJoinsAndCompares) {
  Value E = Value::error();
  EXPECT_TRUE(E.fromError());
  EXPECT_TRUE(E.isUnknown());
  Value U = Value::unknown();
  EXPECT_FALSE(U.fromError());
  EXPECT_NE(E, U);  // the dataflow sees the mark change
  // Merged with a clean value, the mark stays (the error was reported).
  Value J = U;
  J.join(E);
  EXPECT_TRUE(J.fromError());
  Value T = Value::top();
  T.join(E);
  EXPECT_TRUE(T.isTop());
  EXPECT_TRUE(T.fromError());
}

TEST(Value, MaskKindIsAMaskOnEveryPath) {
  // core::MaskKind: 0 none, 1 every element 0 or 1, 2 bool.
  Value B = of({{0, types::R}});
  B.setMaskKind(2);
  Value Z = of({{0, types::R}});
  Z.setMaskKind(1);
  EXPECT_NE(B, Z);  // the dataflow sees the kind change
  Value J = B;
  J.join(B);
  EXPECT_EQ(J.maskKind(), 2);
  J.join(Z);  // bool on one path, float 0/1 on the other
  EXPECT_EQ(J.maskKind(), 1);
  J.join(of({{0, types::R}}));  // not a mask on a third path
  EXPECT_EQ(J.maskKind(), 0);
  // A container with no elements yet is the bottom: the join is the other.
  Value E = Value::empty();
  E.join(B);
  EXPECT_EQ(E.maskKind(), 2);
}

}  // namespace
}  // namespace spmd::plugin
