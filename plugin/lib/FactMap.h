//===- FactMap.h - persistent per-block facts of the dataflow ---*- C++ -*-===//
//
// The state at a program point: variable -> Value. Each CFG block has its own
// state, and most of them differ from their neighbours in a variable or two,
// so states are persistent and share structure: a radix-16 trie over dense
// variable numbers, updated by path copying. A join or a comparison skips the
// subtrees two states share (pointer equality), so it costs in proportion to
// their differences rather than to the number of variables: functions with
// thousands of variables across as many branches stay near-linear.
//
// Why not llvm::ImmutableMap (an AVL tree)? Its shape depends on the order of
// insertions, so two states that hold mostly the same entries need not share
// subtrees and a join has to visit every entry. The trie's shape depends only
// on the variable numbers, so shared facts are shared nodes.
//
// Nodes and values live in a FactArena owned by one function's analysis and
// are freed together with it; states are two words and copy freely.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_LIB_FACTMAP_H
#define SPMD_PLUGIN_LIB_FACTMAP_H

#include "TypeLattice.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Allocator.h"

namespace spmd::plugin {

/// Allocation of FactMap nodes and values (freed all at once).
class FactArena {
public:
  struct Node {
    const void *Child[16] = {}; // Node* above the last level, Value* on it
  };
  Node *node(const Node *Copy = nullptr) {
    Node *N = new (Nodes.Allocate<Node>()) Node();
    if (Copy)
      *N = *Copy;
    return N;
  }
  const Value *value(Value &&V) {
    return new (Values.Allocate()) Value(std::move(V));
  }
  const Value *value(const Value &V) {
    return new (Values.Allocate()) Value(V);
  }

private:
  llvm::BumpPtrAllocator Nodes;
  llvm::SpecificBumpPtrAllocator<Value> Values; // runs the destructors
};

/// A persistent map from variable number to Value. A missing entry is
/// "no information yet" (bottom), not unknown: join takes the other side.
class FactMap {
public:
  /// The value of variable \p Index, or null.
  const Value *get(unsigned Index) const;
  /// This map with variable \p Index set to \p V.
  FactMap set(unsigned Index, const Value &V, FactArena &A) const;
  /// The same, holding \p V itself instead of a copy: \p V must live as
  /// long as \p A and never change (a value in \p A, such as the
  /// expression values Transfer::eval hands out, or a static one).
  FactMap setShared(unsigned Index, const Value *V, FactArena &A) const;
  /// The least upper bound of two maps (shares whatever it can).
  static FactMap join(const FactMap &X, const FactMap &Y, FactArena &A);
  /// Widening: \p New where it equals \p Old, Top where it differs.
  static FactMap widen(const FactMap &Old, const FactMap &New, FactArena &A);
  /// This map with every value replaced by \p F of it (unchanged values and
  /// subtrees stay shared).
  FactMap map(llvm::function_ref<Value(const Value &)> F, FactArena &A) const;
  /// Same entries with equal facts (operator== of Value).
  friend bool operator==(const FactMap &X, const FactMap &Y);
  friend bool operator!=(const FactMap &X, const FactMap &Y) {
    return !(X == Y);
  }

private:
  using Node = FactArena::Node;
  /// The same map with Depth levels at least \p D (a taller trie holds the
  /// old one as its child 0).
  FactMap grown(unsigned D, FactArena &A) const;

  const Node *Root = nullptr;
  unsigned Depth = 1; // levels of nodes; indices below 16^Depth fit
};

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_LIB_FACTMAP_H
