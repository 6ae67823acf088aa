//===- TypeLattice.h - the SPMD type lattice of the analysis ----*- C++ -*-===//
//
// What the dataflow knows about one tensor value: per mesh axis, the set of
// SPMD types that may reach it (R, I, V, P) plus "unknown". One type is a
// known type; two or more are a conflict (paths disagree); unknown alone or
// with one type is unknown. Join is set union, so the lattice per axis is
// finite; Top (the widened value) absorbs everything and reads as unknown.
//
// Axes are interned per translation unit (AxisTable) so a value is a handful
// of small integers, cheap to copy and compare. This header knows nothing of
// the AST: it is unit tested on its own.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_LIB_TYPELATTICE_H
#define SPMD_PLUGIN_LIB_TYPELATTICE_H

#include "clang/Basic/SourceLocation.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/bit.h"
#include "llvm/Support/ErrorHandling.h"

#include <spmd/annotations.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace spmd::plugin {

/// A mesh axis, interned by AxisTable: equal ids are equal names.
using AxisId = uint16_t;

/// Interns axis names for one translation unit.
class AxisTable {
public:
  AxisId intern(llvm::StringRef Name) {
    auto [It, New] = Ids.try_emplace(Name, AxisId(Names.size()));
    if (New)
      Names.push_back(It->first());
    return It->second;
  }
  std::optional<AxisId> find(llvm::StringRef Name) const {
    auto It = Ids.find(Name);
    return It == Ids.end() ? std::nullopt : std::optional<AxisId>(It->second);
  }
  llvm::StringRef name(AxisId A) const { return Names[A]; }

private:
  llvm::StringMap<AxisId> Ids;
  std::vector<llvm::StringRef> Names; // keys of Ids (stable)
};

/// Why a value has a type on an axis (for the note pointing at the origin).
enum class OriginKind : uint8_t {
  Declared,   ///< an [[spmd::type]] annotation
  Collective, ///< the result of a collective
  AssertType, ///< spmd::assert_type
  Inferred,   ///< an ordinary tensor operation
  CallResult, ///< an annotated function's declared result
  /// an argument at a call of a local region whose input types are
  /// inferred ([[spmd::local(spmd::Infer)]])
  CallArgument,
};

/// Where a type came from.
struct Origin {
  clang::SourceLocation Loc;
  OriginKind Kind = OriginKind::Inferred;
};

/// Index of a local type in an AxisFact mask (S(i) counts as V).
inline unsigned typeIndex(TypeKind K) {
  switch (K) {
  case TypeKind::Replicate:
    return 0;
  case TypeKind::Invariant:
    return 1;
  case TypeKind::Varying:
  case TypeKind::Shard:
    return 2;
  case TypeKind::Partial:
    return 3;
  }
  llvm_unreachable("every TypeKind has a mask index");
}
/// Inverse of typeIndex.
inline PerAxisType typeAt(unsigned Index) {
  static constexpr PerAxisType Types[] = {types::R, types::I, types::V,
                                          types::P};
  return Types[Index];
}

/// What is known about one value on one axis: bits 0-3 (R, I, V, P) are the
/// types that may reach it, bit 4 is "unknown"; each present type keeps the
/// origin through which it first arrived.
struct AxisFact {
  static constexpr uint8_t UnknownBit = 16;
  /// Shard value meaning "V, shard dim not known" (global mode,
  /// docs/plugin.md).
  static constexpr int8_t UnknownShard = INT8_MIN;
  /// Shard value meaning "V: rows looked up in a table sharded by rows
  /// (vocab-parallel), whose rows for indices outside this rank's shard are
  /// not zeroed yet" (global mode, docs/plugin.md "Vocab-parallel lookups").
  /// Not a shard dim; a join with any other V keeps it (may be unmasked).
  static constexpr int8_t UnmaskedRows = INT8_MIN + 1;
  uint8_t Mask = 0;
  /// For the V bit: the tensor dim the axis shards, as written (S(-1) and
  /// S(1) are kept apart: the rank is rarely known), or UnknownShard. Only
  /// global mode sets it; join of two different dims is UnknownShard.
  int8_t Shard = UnknownShard;
  /// With a known Shard: the axis's position in the tuple of axes that shard
  /// that dim (spec §12.1's multi-axis PartitionSpec entry), 0 = outermost
  /// (major); larger is further in. Only the order of positions matters (an
  /// axis gathered off the middle leaves a gap). 0 when Shard is unknown.
  int8_t Pos = 0;
  /// A conflict between two known shard dims (Value::join: S(2) on one path,
  /// S(1) on another): the other path's dim, else UnknownShard. The V bit's
  /// origin is Shard's; Origin2 is Shard2's.
  int8_t Shard2 = UnknownShard;
  Origin Origins[4];
  Origin Origin2;

  /// A fact of one type; S(i) keeps its dim (callers outside global mode
  /// pass T.local()), and \p Pos its position within that dim's tuple.
  static AxisFact known(PerAxisType T, Origin O, int Pos = 0) {
    AxisFact F;
    unsigned I = typeIndex(T.kind);
    F.Mask = uint8_t(1u << I);
    F.Origins[I] = O;
    if (T.is_shard() && T.dim >= -64 && T.dim < 64) {
      F.Shard = int8_t(T.dim);
      F.Pos = int8_t(Pos < 0 ? 0 : Pos > 64 ? 64 : Pos);
    }
    return F;
  }
  /// The position within the shard dim's tuple when the type is S(d).
  std::optional<int> shardPos() const {
    return shardDim() ? std::optional<int>(Pos) : std::nullopt;
  }
  /// The shard dim when the type is known to be S(d).
  std::optional<int> shardDim() const {
    std::optional<PerAxisType> K = knownType();
    if (!K || Shard == UnknownShard || Shard == UnmaskedRows ||
        K->kind != TypeKind::Varying)
      return std::nullopt;
    return Shard;
  }
  /// How a message names \p T, one of this fact's types: S(d) for the V
  /// bit when its shard dim d is known (global mode; also on one side of a
  /// conflict), else \p T itself.
  PerAxisType shown(PerAxisType T) const {
    if (T.kind == TypeKind::Varying && (Mask & 4) && Shard != UnknownShard &&
        Shard != UnmaskedRows)
      return types::S(Shard);
    return T;
  }
  static AxisFact unknown() {
    AxisFact F;
    F.Mask = UnknownBit;
    return F;
  }
  unsigned numTypes() const { return llvm::popcount(unsigned(Mask & 15)); }
  bool isConflict() const { return numTypes() >= 2 || isShardConflict(); }
  /// Two paths gave two known, different shard dims (Shard and Shard2).
  bool isShardConflict() const { return Shard2 != UnknownShard && (Mask & 4); }
  std::optional<PerAxisType> knownType() const {
    // One type bit and no unknown bit (no population count: asked per
    // operand, axis and op).
    unsigned Types = Mask & 15;
    if ((Mask & UnknownBit) || Types == 0 || (Types & (Types - 1)) ||
        Shard2 != UnknownShard)
      return std::nullopt;
    return typeAt(llvm::countr_zero(Types));
  }
  const Origin &originOf(PerAxisType T) const {
    return Origins[typeIndex(T.kind)];
  }
  /// Set union; a type new to this fact brings its origin along.
  void join(const AxisFact &O) {
    if (O.Mask & 4) {
      if (isShardConflict()) {
        // A conflict of two dims stays one through later merges.
      } else if (O.isShardConflict()) {
        Shard = O.Shard;
        Shard2 = O.Shard2;
        Pos = 0;
        Origins[2] = O.Origins[2];
        Origin2 = O.Origin2;
      } else if ((Mask & 4) && Shard == UnmaskedRows) {
        // Unmasked rows stay marked through any merge: only masking clears
        // them.
      } else if (O.Shard == UnmaskedRows) {
        Shard = UnmaskedRows;
        Pos = 0;
      } else {
        // Another dim, or the same dim at another place in its tuple
        // (another order of the axes): the shard is unknown.
        bool Differ = (Mask & 4) && (Shard != O.Shard || Pos != O.Pos);
        Shard = Differ ? UnknownShard : O.Shard;
        Pos = Differ ? 0 : O.Pos;
      }
    }
    for (unsigned I = 0; I < 4; ++I)
      if ((O.Mask & (1u << I)) && !(Mask & (1u << I)))
        Origins[I] = O.Origins[I];
    Mask |= O.Mask;
  }
  /// The first two types of a conflict, in R, I, V, P order.
  std::pair<PerAxisType, PerAxisType> conflictPair() const {
    unsigned First = llvm::countr_zero(unsigned(Mask & 15));
    unsigned Second = llvm::countr_zero(unsigned(Mask & 15) >> (First + 1));
    return {typeAt(First), typeAt(First + 1 + Second)};
  }
};

/// The abstract SPMD type of one tensor value. Axes not listed are unknown
/// when the value is Open, and absent (not part of the type) when it is
/// closed, i.e. its axis set is exactly known (from an annotation). Top is the
/// widened value of a loop that did not settle: nothing is known and it stays
/// so (join absorbs into it).
class Value {
public:
  using Entry = std::pair<AxisId, AxisFact>;

  static Value unknown() { return Value(); }
  /// A container with no elements yet (`std::vector<Tensor> v;`): the bottom
  /// of join, so a container filled by pushes gets the join of what was
  /// pushed. Read as a tensor it is unknown.
  static Value empty() {
    Value V;
    V.IsEmpty = true;
    return V;
  }
  bool isEmpty() const { return IsEmpty; }
  static Value top() {
    Value V;
    V.IsTop = true;
    return V;
  }
  /// A value with exactly the axes set afterwards (a declared type).
  static Value closed() {
    Value V;
    V.Open = false;
    return V;
  }

  bool isOpen() const { return Open; }
  void setOpen(bool O) { Open = O; }
  /// The tensor's rank when known (global mode: from an spmd::rank
  /// annotation, a factory's shape or a shape op), else nullopt.
  std::optional<int> rank() const {
    return Rank < 0 ? std::nullopt : std::optional<int>(Rank);
  }
  void setRank(std::optional<int> R) {
    int8_t New = R && *R >= 0 && *R < 64 ? int8_t(*R) : int8_t(-1);
    if (New != Rank)
      Ones = 0;
    Rank = New;
  }
  /// The dims known to have local size 1 (bit d: dim d), with the rank
  /// known: a dim reduced with keepdim or inserted by unsqueeze
  /// (core::result_shape). It tells the core that such a dim broadcasts.
  uint64_t sizeOneDims() const { return Rank < 0 ? 0 : Ones; }
  void setSizeOneDims(uint64_t M) {
    Ones = Rank < 0 ? 0 : M & (Rank >= 64 ? ~0ull : (1ull << Rank) - 1);
  }
  bool isTop() const { return IsTop; }
  /// What is known about the elements' values, as core::MaskKind (0: none,
  /// 1: every element is 0 or 1, 2: a bool tensor); global mode reads masks
  /// with it (core/include/spmd/core/masks.h).
  uint8_t maskKind() const { return MaskK; }
  void setMaskKind(uint8_t K) { MaskK = K; }
  /// An unknown value that an error already reported produced (an op the
  /// core rejected, a collective whose arguments cannot be read), or a value
  /// computed from one: like Clang's expressions that contain errors, it
  /// gets no follow-on unknown-type report.
  static Value error() {
    Value V;
    V.FromError = true;
    return V;
  }
  bool fromError() const { return FromError; }
  void setFromError(bool E) { FromError = E; }
  llvm::ArrayRef<Entry> axes() const { return Axes; }

  const AxisFact *get(AxisId A) const {
    for (const Entry &E : Axes)
      if (E.first == A)
        return &E.second;
    return nullptr;
  }
  std::optional<PerAxisType> knownOn(AxisId A) const {
    const AxisFact *F = get(A);
    return F ? F->knownType() : std::nullopt;
  }
  /// Sets the fact of axis \p A (kept sorted by id).
  void set(AxisId A, const AxisFact &F) {
    if (Axes.empty() || Axes.back().first < A) {
      Axes.push_back({A, F}); // the usual order: appended
      return;
    }
    auto It = llvm::lower_bound(
        Axes, A, [](const Entry &E, AxisId X) { return E.first < X; });
    if (It != Axes.end() && It->first == A)
      It->second = F;
    else
      Axes.insert(It, {A, F});
  }
  /// Applies \p Fn to every axis fact (for rewriting them in place).
  template <typename Fn> void forEachFact(Fn F) {
    for (Entry &E : Axes)
      F(E.first, E.second);
  }
  /// Whether shard dim \p D is dim \p Dim (resolved against the rank when
  /// it is known: S(-1) of a rank-2 tensor is S(1)).
  bool sameDim(std::optional<int> D, int Dim) const {
    if (!D)
      return false;
    if (Rank >= 0)
      return (*D < 0 ? *D + Rank : *D) == (Dim < 0 ? Dim + Rank : Dim);
    return *D == Dim;
  }
  /// The axes known to shard dim \p Dim (as written, or resolved with the
  /// rank), outer to inner: spec §12.1's tuple of that dim. Axes with equal
  /// positions (two `axis = S(d)` map entries: no order given) keep AxisId
  /// order.
  llvm::SmallVector<AxisId, 4> tupleOf(int Dim) const {
    llvm::SmallVector<std::pair<int, AxisId>, 4> T;
    for (const Entry &E : Axes)
      if (sameDim(E.second.shardDim(), Dim))
        T.push_back({E.second.Pos, E.first});
    llvm::stable_sort(
        T, [](const auto &X, const auto &Y) { return X.first < Y.first; });
    llvm::SmallVector<AxisId, 4> Out;
    for (const auto &P : T)
      Out.push_back(P.second);
    return Out;
  }
  /// The position that makes an axis the innermost of dim \p Dim's tuple
  /// (a reduce_scatter or all_to_all onto \p Dim appends there, spec
  /// §12.4); \p Except (the collective's own axis) is not counted.
  int innermostPos(int Dim, std::optional<AxisId> Except = {}) const {
    int P = 0;
    for (const Entry &E : Axes)
      if (E.first != Except && sameDim(E.second.shardDim(), Dim))
        P = std::max(P, E.second.Pos + 1);
    return P;
  }
  bool hasKnownAxis() const {
    return llvm::any_of(Axes,
                        [](const Entry &E) { return E.second.knownType(); });
  }
  /// Nothing at all is known (an opaque value).
  bool isUnknown() const { return Open && !hasKnownAxis(); }

  /// Least upper bound: an axis present on one side only becomes unknown
  /// (with its types kept, so a conflict is still seen).
  void join(const Value &O) {
    if (O.IsEmpty)
      return;
    if (IsEmpty) {
      *this = O;
      return;
    }
    if (IsTop || O.IsTop) {
      bool E = FromError || O.FromError;
      *this = top();
      FromError = E;
      return;
    }
    FromError = FromError || O.FromError;
    MaskK = std::min(MaskK, O.MaskK); // a mask on every path
    llvm::SmallVector<Entry, 4> Out;
    auto A = Axes.begin(), AE = Axes.end();
    auto B = O.Axes.begin(), BE = O.Axes.end();
    while (A != AE || B != BE) {
      if (B == BE || (A != AE && A->first < B->first)) {
        Out.push_back(*A++);
        Out.back().second.Mask |= AxisFact::UnknownBit;
      } else if (A == AE || B->first < A->first) {
        Out.push_back(*B++);
        Out.back().second.Mask |= AxisFact::UnknownBit;
      } else {
        const AxisFact &X = A->second, &Y = B->second;
        Out.push_back(*A++);
        if (std::optional<int> D = differentShards(X, Y, O.Rank)) {
          // Two known shard dims meet: a conflict, not an unknown dim.
          AxisFact &F = Out.back().second;
          F.Shard2 = int8_t(*D);
          F.Origin2 = Y.Origins[2];
          F.Mask |= Y.Mask;
          ++B;
        } else {
          Out.back().second.join((B++)->second);
        }
      }
    }
    Axes = std::move(Out);
    Open = Open || O.Open;
    if (Rank != O.Rank) {
      Rank = -1;
      Ones = 0;
    } else {
      Ones &= O.Ones;
    }
  }
  /// \p Y's shard dim when \p X (of this value's rank) and \p Y (of rank
  /// \p YRank) are both exactly a known shard, S(a) and S(b), that are
  /// different dims for certain: resolved with the rank when both ranks are
  /// known and equal, else only when both are written from the same end.
  /// Ranks known to differ say nothing (a dim was inserted on one path).
  std::optional<int> differentShards(const AxisFact &X, const AxisFact &Y,
                                     int8_t YRank) const {
    if (X.Mask != 4 || Y.Mask != 4 || X.Shard2 != AxisFact::UnknownShard ||
        Y.Shard2 != AxisFact::UnknownShard)
      return std::nullopt;
    std::optional<int> A = X.shardDim(), B = Y.shardDim();
    if (!A || !B)
      return std::nullopt;
    if (Rank >= 0 && YRank >= 0) {
      if (Rank != YRank)
        return std::nullopt;
      int NA = *A < 0 ? *A + Rank : *A, NB = *B < 0 ? *B + Rank : *B;
      return NA != NB ? B : std::nullopt;
    }
    return (*A < 0) == (*B < 0) && *A != *B ? B : std::nullopt;
  }
  /// Equality of the facts (the type sets, not their origins): what decides
  /// whether the dataflow has converged.
  friend bool operator==(const Value &X, const Value &Y) {
    if (X.Open != Y.Open || X.IsTop != Y.IsTop || X.IsEmpty != Y.IsEmpty ||
        X.FromError != Y.FromError || X.Rank != Y.Rank || X.Ones != Y.Ones ||
        X.MaskK != Y.MaskK || X.Axes.size() != Y.Axes.size())
      return false;
    for (size_t I = 0; I < X.Axes.size(); ++I)
      if (X.Axes[I].first != Y.Axes[I].first ||
          X.Axes[I].second.Mask != Y.Axes[I].second.Mask ||
          X.Axes[I].second.Shard != Y.Axes[I].second.Shard ||
          X.Axes[I].second.Shard2 != Y.Axes[I].second.Shard2 ||
          X.Axes[I].second.Pos != Y.Axes[I].second.Pos)
        return false;
    return true;
  }
  friend bool operator!=(const Value &X, const Value &Y) { return !(X == Y); }

private:
  llvm::SmallVector<Entry, 2> Axes; // sorted by AxisId
  bool Open = true;
  bool IsTop = false;
  bool IsEmpty = false;
  bool FromError = false;
  uint8_t MaskK = 0; // core::MaskKind (see maskKind)
  int8_t Rank = -1;  // -1: unknown
  uint64_t Ones = 0; // dims of local size 1 (see sizeOneDims)
};

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_LIB_TYPELATTICE_H
