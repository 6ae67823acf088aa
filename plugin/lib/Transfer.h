//===- Transfer.h - transfer functions of the SPMD dataflow -----*- C++ -*-===//
//
// Interprets the statements of one CFG block on a FactMap: declarations,
// assignments, the runtime's collectives, spmd::assert_type, ordinary tensor
// ops and calls of annotated functions. Legality and result types come from
// the core (spmd::core), so each rule lives in one place; problems go to a
// ProblemHandler as data (Problems.h). The driver (Analysis.cpp) runs the
// blocks to a fixed point without a handler, then once more with one.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_LIB_TRANSFER_H
#define SPMD_PLUGIN_LIB_TRANSFER_H

#include "AstHelpers.h"
#include "FactMap.h"
#include "Layouts.h"
#include "Problems.h"

#include "spmd/plugin/Annotations.h"
#include "spmd/plugin/Options.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Analysis/CFG.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <spmd/core/global_collectives.h>
#include <spmd/core/propagation.h>
#include <spmd/core/sharding_propagation.h>

#include <map>
#include <set>

namespace spmd::plugin {

/// The core's verdict on one op applied to operands of given types: the
/// result's known axes, or the error.
struct InferVerdict {
  llvm::SmallVector<std::pair<AxisId, PerAxisType>, 4> Axes;
  std::optional<core::TypeError> Error;
};

/// A collective that a function body runs (Divergence.cpp): the call, where
/// the body reaches it (the call itself, or a call of the function Via whose
/// body runs it), its axis and types, and whether only its backward
/// communicates.
struct CollectiveSite {
  const clang::CallExpr *Collective = nullptr;
  const clang::Expr *At = nullptr;
  const clang::FunctionDecl *Via = nullptr;
  core::Collective Op = core::Collective::AllReduce;
  AxisId Axis = 0;
  PerAxisType Src, Dst;
  bool BackwardOnly = false;
};

/// What the analyses of one translation unit share.
struct TUContext {
  TUContext(clang::ASTContext &Ctx, const AnnotationTable &Table,
            const Options &Opts)
      : Ctx(Ctx), Table(Table), Opts(Opts) {}

  clang::ASTContext &Ctx;
  const AnnotationTable &Table;
  const Options &Opts;
  TypeClassifier Types;
  /// Layout flags ([[spmd::when]] / [[spmd::unless]]).
  LayoutTable Layouts{Ctx, Table, Types};
  AxisTable Axes;
  /// How to spell each axis in a fix-it (its spmd::Axis constant), by AxisId.
  llvm::DenseMap<AxisId, std::string> AxisSpelling;
  /// The core's answers, memoized: classify_op by op name, and infer by op
  /// and operand types (a translation unit repeats the same few ops on the
  /// same few types; the core's rules are pure functions).
  llvm::StringMap<core::OpInfo> OpInfos;
  llvm::StringMap<InferVerdict> Verdicts;
  /// Whether a function has any SPMD annotation, by declaration.
  llvm::DenseMap<const clang::FunctionDecl *, bool> Annotated;
  /// Callees whose chain of forwarding calls (Transfer::evalForwarded)
  /// reaches no annotated function: the chain depends on the callee alone.
  llvm::DenseSet<const clang::FunctionDecl *> NotForwarding;
  /// Global mode: why an op left a shard dim unknown, by (op location,
  /// axis): the reason the strict-mode report gives (TransferShards.cpp).
  std::map<std::pair<unsigned, AxisId>, core::TypeError> ShardLoss;
  /// The collectives that reduce a pending sum (all_reduce, reduce_scatter
  /// with src P), by (location, axis): a second reduce of their result is
  /// reported as a double reduce with a note at the first.
  std::set<std::pair<unsigned, AxisId>> Reductions;
  /// Calls whose declared result type a layout of their instance chose, by
  /// location: which (for the notes of a problem with such an origin).
  llvm::DenseMap<unsigned, LayoutChoice> LayoutResults;
  /// [[spmd::local(spmd::Infer)]] regions (by canonical declaration): per
  /// parameter, the join of the arguments' local types at the calls
  /// analysed so far (the regions themselves are analysed last).
  llvm::DenseMap<const clang::FunctionDecl *, std::vector<Value>>
      InferredInputs;
  /// Whether the checker analyses a function's body, by declaration
  /// (bodyIsAnalysed, cached).
  llvm::DenseMap<const clang::FunctionDecl *, bool> AnalysedBodies;
  /// Whether a visible body may write a parameter (TransferOpaque.cpp).
  llvm::DenseMap<const clang::ParmVarDecl *, bool> WrittenParams;
  /// The collectives a call of a function runs (its body's and its callees'),
  /// by callee (Divergence.cpp).
  llvm::DenseMap<const clang::FunctionDecl *, std::vector<CollectiveSite>>
      CollectivesIn;
  /// Statistics: function bodies seen, analysed, CFG blocks, block visits.
  unsigned FunctionsSeen = 0, FunctionsAnalyzed = 0, Blocks = 0, Visits = 0;

  /// Records the constant that names \p Axis (the first one seen wins).
  void noteAxis(AxisId Axis, const clang::VarDecl *AxisDecl) {
    if (AxisDecl && !AxisSpelling.count(Axis))
      AxisSpelling[Axis] = AxisDecl->getQualifiedNameAsString();
  }
  /// The axes of \p A, interned, with their spellings noted.
  void noteAxes(const TypeAnnotation &A);
  /// AnnotationTable::isAnnotatedFunction, cached.
  bool isAnnotated(const clang::FunctionDecl *FD) {
    auto [It, New] = Annotated.try_emplace(FD, false);
    if (New)
      It->second = Table.isAnnotatedFunction(FD);
    return It->second;
  }
  /// core::classify_op, cached: the op's entry in OpInfos (its name is the
  /// key).
  const llvm::StringMapEntry<core::OpInfo> &opEntry(llvm::StringRef Name) {
    auto [It, New] = OpInfos.try_emplace(Name);
    if (New)
      It->second =
          core::classify_op(std::string_view(Name.data(), Name.size()));
    return *It;
  }
  const core::OpInfo &opInfo(llvm::StringRef Name) {
    return opEntry(Name).getValue();
  }
  /// The op an ordinary call of a function is (Transfer::calleeOp), by
  /// callee and call form: its entry in OpInfos, or null when it is none.
  llvm::DenseMap<std::pair<const clang::FunctionDecl *, unsigned>,
                 const llvm::StringMapEntry<core::OpInfo> *>
      CalleeOps;
};

/// Whether the analysis runs on \p FD's body: it has one in this
/// translation unit, and the body touches SPMD (annotations, the runtime's
/// API), is not [[spmd::unchecked]] and does more than pass its parameters
/// on (Checker.cpp; cached in TUContext::AnalysedBodies).
bool bodyIsAnalysed(TUContext &TU, const clang::FunctionDecl *FD);

/// The transfer functions for one function body.
class Transfer {
public:
  Transfer(TUContext &TU, const clang::FunctionDecl *FD, FactArena &Arena);

  /// Analyse the body in layout \p L of its flags (null: no layout); the
  /// parameters and the result take that layout's types.
  void setLayout(const Layout *L);
  /// The value of a branch condition in the current layout (a flag read).
  std::optional<bool> layoutCondition(const clang::Expr *Cond);
  /// The facts at entry: the declared types of the parameters.
  FactMap entryState();
  /// Makes room in the expression memo for \p N expressions (the CFG's
  /// elements), so that it does not grow step by step while it fills.
  void reserveMemo(unsigned N) { Memo.reserve(N); }
  /// Interprets block \p B from \p In; problems go to \p H when it is not
  /// null (the reporting pass). \p SizeOne: the axes that have one rank on
  /// every path to the block (nothing is reported on them there).
  FactMap block(const clang::CFGBlock &B, FactMap In, ProblemHandler *H,
                llvm::ArrayRef<AxisId> SizeOne = {});
  /// The axis whose size \p E is: a call of an [[spmd::axis_size(axis)]]
  /// function, or a local variable initialised with one.
  std::optional<AxisId> axisSizeOf(const clang::Expr *E, unsigned Depth = 0);
  /// For a path conflict between the origins \p A and \p B: the number
  /// that a branch between them compares as a size-1 guard does, when it is
  /// no declared axis size (the note says how to declare it); else null.
  const clang::Expr *undeclaredSizeGuard(const clang::Stmt *Body,
                                         clang::SourceLocation A,
                                         clang::SourceLocation B,
                                         unsigned Depth = 0);
  /// For a branch condition: the axis that has one rank on one of its edges,
  /// and which edge (0: true, 1: false).
  std::optional<std::pair<AxisId, unsigned>>
  sizeOneEdge(const clang::Expr *Cond);
  /// After the fixed point: the value \p E had in the latest visit of its
  /// block (the converged one), or null when it was never evaluated.
  const Value *lastValue(const clang::Expr *E) const;
  /// The translation unit's type classifier.
  TypeClassifier &types() const { return Types; }

private:
  // Statements.
  /// Whether the block element \p S, evaluated, gives unknown whatever the
  /// facts, with no effects: a literal, a function name (and its decay to a
  /// pointer), a builtin operator on numbers. Such elements are not
  /// evaluated on their own (an expression that uses one still is).
  static bool isInertElement(const clang::Stmt *S);
  void stmt(const clang::Stmt *S);
  void declStmt(const clang::DeclStmt *DS);
  void memberInitializer(const clang::CXXCtorInitializer *Init);

  // Expressions.
  /// The value of \p E in the current block visit, memoized (the reference
  /// stays valid for the whole analysis of the function).
  const Value &eval(const clang::Expr *E);
  Value evalUncached(const clang::Expr *E);
  /// For a variable without a declared type (not a binding or an alias):
  /// its fact on this path as the FactMap holds it (what evalDeclRef would
  /// copy), or null for every other expression and a variable with none.
  const Value *heldFact(const clang::Expr *E);
  Value evalDeclRef(const clang::DeclRefExpr *DRE);
  Value evalConstruct(const clang::CXXConstructExpr *CE);
  Value evalCall(const clang::CallExpr *CE);
  Value evalAssignment(const clang::CXXOperatorCallExpr *CE);
  Value evalOrdinaryOp(const clang::CallExpr *CE,
                       const clang::FunctionDecl *Callee);
  Value evalCollective(const clang::CallExpr *CE, core::Collective C);
  Value collectiveResult(const clang::CallExpr *CE,
                         const core::CollectiveCall &Call, const Value &In,
                         AxisId To);
  std::optional<core::CollectiveCall>
  readCollectiveCall(const clang::CallExpr *CE, core::Collective C);
  /// Global mode: a known shard S(d) against src S(i) / P and reinterpret
  /// as P (TransferShards.cpp). True when it found (and reported) a problem.
  bool checkShardInput(const clang::CallExpr *CE,
                       const core::CollectiveCall &Call, const Value &In,
                       AxisId Axis);
  /// Global mode: spec §12.4's innermost-axis rule (core::check_innermost)
  /// for a collective on \p Axis whose input shards a dim by a tuple of
  /// axes (TransferShards.cpp). True when it found (and reported) a problem.
  bool checkInnermost(const clang::CallExpr *CE,
                      const core::CollectiveCall &Call, const Value &In,
                      AxisId Axis);
  /// The tuple of global axes that shard dim \p Dim of \p V, outer to
  /// inner, normalised by the core (§12.1: axes with one rank here, from a
  /// size-1 guard, dropped); nullopt when \p Axis is not on it or its order
  /// is not known (two axes at one position).
  std::optional<std::vector<std::string>> tupleEntry(const Value &V, int Dim,
                                                     AxisId Axis) const;
  /// A collective-input problem at \p CE's tensor argument: the fields every
  /// such report shares (location, call, op, axis, expected src, actual).
  ProblemSite collectiveInputProblem(const clang::CallExpr *CE,
                                     const core::CollectiveCall &Call,
                                     AxisId Axis, PerAxisType Actual) const;
  /// A reduce (src P) on \p Axis of a value that is no pending sum there
  /// (R, I, or a known shard S(d) in global mode) but is P on exactly one
  /// other axis: reported as a reduce over the wrong axis. Returns that
  /// other axis when it found (and reported) this.
  std::optional<AxisId> checkReduceAxis(const clang::CallExpr *CE,
                                        const core::CollectiveCall &Call,
                                        const Value &In, AxisId Axis);
  void checkCollectiveInput(const clang::CallExpr *CE,
                            const core::CollectiveCall &Call, const Value &In,
                            AxisId Axis);
  Value evalAssertType(const clang::CallExpr *CE);
  /// One `axis = type` of an assert_type (\p TypeArg: the written type):
  /// checks it against what is known and sets the result's type in \p Out.
  void assertOnAxis(const clang::CallExpr *CE, const AxisEntry &E,
                    const clang::Expr *TypeArg, const Value &In, Value &Out);
  /// Global mode: an assert_type of P on \p A of a V known to be sharded
  /// there (no pending sum, spec §12.2); reports it and returns true.
  bool checkAssertedPartial(const clang::CallExpr *CE, const AxisEntry &E,
                            const clang::Expr *TypeArg, const Value &In,
                            AxisId A, Value &Out);
  Value evalUserCall(const clang::CallExpr *CE,
                     const clang::FunctionDecl *Callee);
  /// Custom autograd functions' apply, raw c10d collectives and
  /// loss.backward() (TransferAutograd.cpp); nullopt for other calls.
  std::optional<Value> evalAutograd(const clang::CallExpr *CE,
                                    const clang::FunctionDecl *Callee);
  /// A call of a function the checker cannot see through: no annotation,
  /// no body it analyses, not torch/ATen/c10/std or the runtime's API (a
  /// kernel declared in a header), passed a tensor of known type. The
  /// tensors it may write (non-const references, by value: tensors share
  /// storage, pointers `&t`) are unknown after it; in strict mode, when it
  /// returns or may write a tensor, the call is reported once (opaque-call),
  /// and what it leaves unknown is not reported again. Nullopt for other
  /// calls (TransferOpaque.cpp).
  std::optional<Value> evalOpaqueCall(const clang::CallExpr *CE,
                                      const clang::FunctionDecl *Callee);
  /// The same for a constructor of a class the checker does not model
  /// (`Writer w(out);` with a `Tensor&` parameter): no result to type.
  void evalOpaqueConstruct(const clang::CXXConstructExpr *CE);
  /// The same for a call through a function pointer or a std::function
  /// whose target evalIndirectCall cannot tell: what it may write is read
  /// from the prototype's parameter types.
  std::optional<Value> evalOpaqueIndirect(const clang::CallExpr *CE);
  /// The shared part: \p Call (a call or a construction) of \p Callee with
  /// the arguments \p Args by parameter index; \p Returns: whether it
  /// returns a tracked value. An indirect call has no \p Callee: \p Proto
  /// gives its parameter types and \p Callable is what it calls through.
  std::optional<Value>
  opaqueCall(const clang::Expr *Call, const clang::FunctionDecl *Callee,
             llvm::ArrayRef<const clang::Expr *> Args, bool Returns,
             const clang::FunctionProtoType *Proto = nullptr,
             const clang::Expr *Callable = nullptr);
  /// A call (a CallExpr or a constructor's CXXConstructExpr) checked and
  /// typed against \p Callee's annotations, with the tensor arguments \p Args
  /// by parameter index (null: not a tracked value, or nothing to check).
  Value callAnnotated(const clang::Expr *Call,
                      const clang::FunctionDecl *Callee,
                      llvm::ArrayRef<const clang::Expr *> Args);
  Value evalOpClassCall(const clang::CallExpr *CE,
                        const clang::FunctionDecl *Callee, core::OpClass C);
  /// A call of an [[spmd::local(spmd::Infer)]] region: joins the local
  /// types of the tensor arguments \p Args (by parameter index) into
  /// TUContext::InferredInputs, with origins at the arguments (\p CallLoc
  /// for a missing one).
  void recordInferredInputs(const clang::FunctionDecl *Callee,
                            llvm::ArrayRef<const clang::Expr *> Args,
                            clang::SourceLocation CallLoc);
  /// A call of a function that only forwards its parameters to another call
  /// (a module holder's operator(), an engine's wrapper), followed to an
  /// annotated callee; nullopt when it does not get there.
  std::optional<Value> evalForwarded(const clang::CallExpr *CE,
                                     const clang::FunctionDecl *Callee);
  /// Records that \p Callee forwards to no annotated function; nullopt.
  std::optional<Value> notForwarding(const clang::FunctionDecl *Callee) {
    TU.NotForwarding.insert(Callee);
    return std::nullopt;
  }
  // Containers of tensors (one value for all elements).
  std::optional<Value> evalContainerCall(const clang::CallExpr *CE,
                                         const clang::FunctionDecl *Callee);
  Value elementsOf(llvm::ArrayRef<const clang::Expr *> Elems);
  Value elementOf(const Value &Container);
  bool pushInto(const clang::Expr *Obj, const clang::CXXMemberCallExpr *MC,
                llvm::StringRef Name);
  Value derefIterator(const clang::Expr *It);
  // References: the variable or field a reference variable is bound to.
  struct LValue {
    /// A variable or an element binding (elementBinding).
    const clang::ValueDecl *Var = nullptr;
    const clang::FieldDecl *Field = nullptr;
  };
  LValue lvalueOf(const clang::Expr *E);
  /// Op \p Name (\p Known: its classify_op, when the caller has it) applied
  /// to \p Receiver and \p Args; \p Class: its declared [[spmd::op]] class.
  Value evalTensorOp(const clang::CallExpr *CE, llvm::StringRef Name,
                     const clang::Expr *Receiver,
                     llvm::ArrayRef<const clang::Expr *> Args,
                     std::optional<core::OpClass> Class = std::nullopt,
                     const core::OpInfo *Known = nullptr);
  /// The op that a call of \p Callee in call form \p Form is (its entry in
  /// TUContext::OpInfos), or null for none: \p Name gives its name (empty:
  /// none) the first time, after which the answer is cached per callee and
  /// form (no name built and hashed per call).
  const llvm::StringMapEntry<core::OpInfo> *
  calleeOp(const clang::FunctionDecl *Callee, unsigned Form,
           llvm::function_ref<std::string()> Name);
  void assign(const clang::Expr *LHS, const Value &V, const clang::Expr *RHS);

  // Operands of an ordinary op.
  struct OperandSource {
    const clang::Expr *E; ///< null for a scalar
    /// eval's value of E (in the function's arena: not copied per op), or
    /// an unknown value for a scalar.
    const Value &V;
    /// For a scalar: the argument (its constant value, if any, matters to
    /// the mask rules of core/masks.h).
    const clang::Expr *Scalar = nullptr;
  };
  /// The operands of one op: on the stack for the usual few (no allocation
  /// per op).
  struct Operands {
    /// Types left empty: see coreOperands.
    llvm::SmallVector<core::Operand, 4> Core;
    llvm::SmallVector<OperandSource, 4> Sources; ///< parallel to Core
  };
  /// Global mode: keeps the "unmasked rows" mark of a vocab-parallel
  /// lookup (AxisFact::UnmaskedRows) on an op's V result, unless the op
  /// zeroes the marked rows where a mask says (core::zero_fills:
  /// masked_fill(mask, 0), a product with a 0/1 mask, where with a 0
  /// branch); sets the result's core::MaskKind (core::mask_result).
  void propagateUnmaskedRows(const clang::CallExpr *CE, llvm::StringRef Canon,
                             llvm::ArrayRef<const clang::Expr *> CallArgs,
                             const Operands &Ops, Value &Out);
  /// A collective with src = P (or reinterpret as P) of unmasked rows:
  /// reports the core's \p Err; returns true.
  bool checkUnmaskedRows(const clang::CallExpr *CE,
                         const core::CollectiveCall &Call, const Value &In,
                         AxisId Axis, core::TypeError Err);
  /// Global mode: the rank of \p Out and its shard dims on the axes some
  /// operand shards, by the core's sharding propagation with the constant
  /// dim and size arguments among \p Args; its errors are reported as
  /// op-type, a shard it cannot decide becomes unknown with a reason.
  void propagateShards(const clang::CallExpr *CE, llvm::StringRef Name,
                       llvm::ArrayRef<const clang::Expr *> Args,
                       const Operands &Ops, Value &Out);
  /// propagateShards on one axis \p A some operand shards (\p Tensors: the
  /// tensor operands; \p SA: the op's structural arguments); returns whether
  /// the result is sharded by \p A.
  bool propagateShardAxis(const clang::CallExpr *CE, llvm::StringRef Name,
                          llvm::StringRef Canon, const Operands &Ops,
                          llvm::ArrayRef<const OperandSource *> Tensors,
                          const core::ShardingArgs &SA, AxisId A, Value &Out);
  /// Global mode, after propagateShardAxis: the full-reduction rule. A V
  /// result on an axis whose operand is V with an unknown shard dim becomes
  /// P where the core says the op is a sum over every dim (whichever dim is
  /// sharded, each rank's sum is a partial of the global sum); a mean or a
  /// sum over some dims is left as it is.
  void promoteFullReductions(const clang::CallExpr *CE, llvm::StringRef Name,
                             llvm::StringRef Canon,
                             llvm::ArrayRef<const OperandSource *> Tensors,
                             const core::ShardingArgs &SA, Value &Out);
  /// Sets the core's placement \p R of the result on axis \p A in \p Out
  /// (\p Args: the operands it was computed from; \p FromEnd: the shard is
  /// counted from the end); returns whether the result is sharded by \p A.
  bool placeShard(llvm::StringRef Canon, const core::AxisOutcome &R,
                  llvm::ArrayRef<core::AxisArg> Args, bool FromEnd, AxisId A,
                  Origin Here, Value &Out);
  /// The result's shard on \p A is unknown: \p Out gets a V made \p Here,
  /// and the core's reason \p Why is kept for the strict-mode report.
  void loseShard(AxisId A, Origin Here, core::TypeError Why, Value &Out);
  /// The ordered tuples (spec §12.1 entries of two or more global axes, outer
  /// to inner) that shard a dim of one of \p Tensors; size-1 guarded axes
  /// are normalised away, and a tuple whose order nobody gave is left out.
  std::vector<core::SpecEntry>
  operandTuples(llvm::ArrayRef<const OperandSource *> Tensors) const;
  /// Global mode, after propagateShards: the positions of the axes \p
  /// Placed that share a dim of \p Out, ordered by the operands' tuples
  /// (core::AxisOrder, spec §12.2); conflicting orders are an op-type error
  /// and leave those shards unknown.
  void orderTuples(const clang::CallExpr *CE, llvm::StringRef Op,
                   const Operands &Ops,
                   llvm::ArrayRef<const OperandSource *> Tensors,
                   llvm::ArrayRef<AxisId> Placed, Value &Out);
  /// Why \p E, a V on \p Axis with no known shard dim, has none:
  /// DeclaredV when \p E names a parameter, variable or field whose own
  /// declaration says V (not S(i)) on \p Axis and still holds it (the value
  /// as declared); OpDidNotSay otherwise (computed by ops, whose dim strict
  /// mode asks for).
  core::ShardLossReason shardLossOf(const clang::Expr *E, AxisId Axis);
  /// Strict global mode: reports \p E when it is V on \p Axis with an
  /// unknown shard dim (\p Why: the reason, when the caller knows it).
  void checkUnknownShard(const Value &V, const clang::Expr *E, AxisId Axis,
                         std::optional<core::TypeError> Why = std::nullopt);
  /// The op's name for the core's sharding rules and their messages: an
  /// operator call as written (`operator|`), else \p Name.
  std::string shardOpName(const clang::CallExpr *CE,
                          llvm::StringRef Name) const;
  /// Strict global mode, after propagateShards: reports an operand that is V
  /// with an unknown shard dim when the op \p Canon needs the dim (a dim
  /// argument, a contraction, a reduction); a result left unknown by it
  /// keeps the reason the dim was lost.
  void checkUnknownShardOperands(const clang::CallExpr *CE,
                                 llvm::StringRef Canon, const Operands &Ops,
                                 Value &Out);
  /// Strict global mode: \p E, checked against a declared \p Want on \p
  /// Axis, is V with an unknown shard dim, or a shard that is S(Want) only
  /// for some ranks (its rank unknown): reports it when Want is S(k).
  void checkShardAgainst(const Value &V, const clang::Expr *E, AxisId Axis,
                         PerAxisType Want);
  /// Whether \p F is V with a shard dim the checker lost (an op that could
  /// not place it), not one declared V without a dim.
  bool lostShard(const AxisFact *F, AxisId Axis) const;
  void addTensorOperand(Operands &Ops, const clang::Expr *E, int Pos);
  std::vector<core::Operand> coreOperands(const Operands &Ops) const;
  void addArgument(Operands &Ops, const clang::Expr *A, int Pos);
  /// An op-type problem at \p CE for the core's error \p Err: location,
  /// call, axis and where the operands' types on that axis came from (the
  /// local rule's and the sharding rule's reports share it).
  ProblemSite opTypeProblem(const clang::CallExpr *CE, const Operands &Ops,
                            const core::TypeError &Err);
  /// Reports the core's error \p Err on op \p Name at \p CE, with a fix-it
  /// when converting one operand makes the op legal under the local rule
  /// and, in global mode, the sharding rule (\p CallArgs: the call's
  /// arguments, for the sharding rule's dims).
  void reportOpType(const clang::CallExpr *CE, llvm::StringRef Name,
                    llvm::ArrayRef<const clang::Expr *> CallArgs,
                    const core::OpInfo &Info, const Operands &Ops,
                    const core::TypeError &Err);
  /// The all_reduce that takes op call \p CE directly, when the repair
  /// \p Fix (reducing an operand) should move it (see TransferOps.cpp).
  const clang::CallExpr *enclosingReduce(const clang::CallExpr *CE, AxisId A,
                                         const core::OpInfo &Info,
                                         const std::vector<core::Operand> &Core,
                                         const SuggestedCollective &Fix,
                                         const core::InferenceContext &IC);
  /// Global mode: \p V's order of dim \p D's axes when \p Want declares
  /// them as a tuple in another order (spec §12.1), else nullopt.
  std::optional<llvm::SmallVector<AxisId, 3>>
  tupleOrderDiffers(const Value &V, int D, const TypeAnnotation &Want,
                    const AxisEntry &Entry) const;
  /// Global mode: the sharding rule's error for op \p Name on axis \p A
  /// when operand \p Index (of Ops.Sources) had type \p T there instead of
  /// its own; nullopt when the rule accepts it or cannot decide (a shard or
  /// rank unknown).
  std::optional<core::TypeError>
  shardRuleRejects(const clang::CallExpr *CE, llvm::StringRef Name,
                   llvm::ArrayRef<const clang::Expr *> CallArgs,
                   const Operands &Ops, AxisId A, size_t Index, PerAxisType T);
  const InferVerdict &infer(llvm::StringRef Name, const core::OpInfo &Info,
                            const Operands &Ops);
  Value resultOf(const InferVerdict &R, const Operands &Ops,
                 clang::SourceLocation Loc);
  Value applyInPlace(const clang::CallExpr *CE, llvm::StringRef Name,
                     const clang::Expr *Mutated, const Value &Out);

  // Checks.
  void checkUse(const Value &V, const clang::Expr *E, AxisId Axis);
  void checkUnknownUse(const Value &V, const clang::Expr *E);
  /// Strict mode: a call whose result type depends on layout flags unknown
  /// for its instance \p Instance (layout \p L of \p Callee).
  /// The unknown result of a call of \p Callee, which declares no result
  /// type: strict mode reports it once, at the call (the boundary), and
  /// what is computed from it is not reported again.
  Value unannotatedResult(const clang::Expr *Call,
                          const clang::FunctionDecl *Callee);
  bool consumedAsNonTensor(const clang::Expr *E);
  /// Whether the code states the type of \p E right where it is: the
  /// argument of spmd::assert_type, the initializer of a typed variable (of
  /// any variable with \p AnyVariable: its type may be asserted later, and
  /// its first use is reported), a value assigned to a typed variable or
  /// field.
  bool typeStated(const clang::Expr *E, bool AnyVariable = false);
  void checkUnknownLayout(const clang::Expr *Call,
                          const clang::FunctionDecl *Callee, const Layout &L,
                          const clang::Expr *Instance);
  void checkMesh(const Value &V, const clang::Expr *E);
  void checkAgainst(const Value &V, const TypeAnnotation &Want,
                    const Destination &Dest, const clang::Expr *E);
  std::optional<SuggestedCollective>
  conversion(const clang::Expr *E, PerAxisType From, PerAxisType To) const;
  /// \p Shown (the type a message names, S(d) or another) as conversion()'s
  /// source: S(d) only where a gather along d is legal (global mode, \p Axis
  /// innermost in d's tuple), else its local type.
  PerAxisType gatherable(const Value &V, AxisId Axis, PerAxisType Shown) const {
    if (!Shown.is_shard() || !globalAxis(Axis))
      return Shown.local();
    llvm::SmallVector<AxisId, 4> Tuple = V.tupleOf(Shown.dim);
    return !Tuple.empty() && Tuple.back() == Axis ? Shown : Shown.local();
  }
  bool reporting(DiagKind K) const { return H && H->isEnabled(K); }
  /// Whether \p Axis is checked globally here: global mode, not one of the
  /// local axes, and not inside an [[spmd::local]] region.
  bool globalAxis(llvm::StringRef Axis) const {
    return !LocalRegion && TU.Opts.isGlobalAxis(Axis);
  }
  bool globalAxis(AxisId A) const { return globalAxis(TU.Axes.name(A)); }
  /// Whether ranks are tracked (global mode outside a local region).
  bool tracksRanks() const { return TU.Opts.Global && !LocalRegion; }
  void report(Problem P);

  // The lattice <-> the core's types.
  Value declared(const TypeAnnotation &A, Origin O);
  core::TensorType knownPart(const Value &V) const;
  AxisId axis(llvm::StringRef Name) { return TU.Axes.intern(Name); }

  /// The declared type of a variable, parameter or field; a parameter of
  /// the analysed function has the current layout's type.
  const TypeAnnotation *declaredType(const clang::ValueDecl *D);
  /// A call through a function pointer, std::function or a callable member
  /// (nullopt: not one the analysis can follow).
  std::optional<Value> evalIndirectCall(const clang::CallExpr *CE);

  // Variables.
  /// The fact slot of a local: a variable or parameter, or a structured
  /// binding of an array element or a struct member (elementBinding).
  unsigned varIndex(const clang::ValueDecl *VD);
  void setVar(const clang::ValueDecl *VD, const Value &V);
  /// A structured binding of an array element or of a struct member without
  /// a declared type (`auto& [q, k] = arr;`): a local that an assignment, an
  /// in-place update or an assert_type updates, starting from the element's
  /// type. Null for anything else (a tuple-like binding is its holding
  /// variable; a binding of a typed member is that member).
  const clang::BindingDecl *elementBinding(const clang::Expr *E);
  /// Whether \p BD is such a binding.
  bool isElementBinding(const clang::BindingDecl *BD);
  /// A by-value parameter of the analysed function (not a reference): its
  /// declared type is the callers' contract at entry; in the body it is a
  /// variable that `=` rebinds, flow-sensitively (docs/plugin.md, "What is
  /// checked"). A reference parameter is the caller's variable: it keeps its
  /// declared type like a declared local.
  bool isRebindable(const clang::ValueDecl *VD);
  /// Whether the parameter \p VD still has its declared type \p A (and rank)
  /// on this path: an in-place update of it reaches the caller's tensor and
  /// is checked against \p A.
  bool holdsDeclared(const clang::ValueDecl *VD, const TypeAnnotation &A);
  /// The effect of an in-place collective on its input variable.
  void collectiveInPlace(const clang::CallExpr *CE,
                         const core::CollectiveCall &Call, AxisId Axis,
                         const Value &In, const Value &Out);
  /// `VD = e` on a rebindable parameter: VD takes e's type and rank; an axis
  /// e leaves unknown keeps the declared type (strict mode reports it here,
  /// as for a declared variable).
  void rebindParameter(const clang::VarDecl *VD, const TypeAnnotation &A,
                       const Value &V, const clang::Expr *RHS);

  core::InferenceContext inferenceContext() const;

  TUContext &TU;
  clang::ASTContext &Ctx;
  TypeClassifier &Types;
  const clang::FunctionDecl *FD;
  const TypeAnnotation *Result;
  const MeshAnnotation *Mesh;
  /// The function is an [[spmd::local]] region (local semantics inside).
  bool LocalRegion;
  FactArena &Arena;
  const Layout *CurLayout = nullptr;

  FactMap Cur;
  ProblemHandler *H = nullptr;
  llvm::ArrayRef<AxisId> SizeOne;
  /// Per expression evaluated: its skipTransparent (which depends on the AST
  /// only, so it is kept across block visits) and, for an expression that is
  /// its own skipTransparent, its value in the block visit numbered Visit (an
  /// entry of an older visit is stale). Values live in the function's arena,
  /// so entries are three words and eval hands out references. Not cleared
  /// per visit, so the map does not shrink and grow again from block to
  /// block.
  struct MemoEntry {
    const clang::Expr *Skipped = nullptr;
    unsigned Visit = 0;
    const Value *V = nullptr;
  };
  llvm::DenseMap<const clang::Expr *, MemoEntry> Memo;
  unsigned MemoVisit = 0;
  llvm::DenseMap<const clang::ValueDecl *, unsigned> VarIndex;
  /// declaredType's answers (for the current layout; setLayout clears it).
  llvm::DenseMap<const clang::ValueDecl *, const TypeAnnotation *>
      DeclaredTypes;
  /// declared()'s values, by annotation and origin (location and kind).
  llvm::DenseMap<std::pair<const TypeAnnotation *, uint64_t>, Value>
      DeclaredValues;
  /// Reference variables bound to a variable or a field (never rebound).
  llvm::DenseMap<const clang::VarDecl *, const clang::ValueDecl *> Aliases;
  /// Variables initialised with a view of another variable or field
  /// (`auto v = x.view(-1);`, never reassigned), mapped to the root of the
  /// storage they view (spec §6.11.1).
  llvm::DenseMap<const clang::VarDecl *, const clang::ValueDecl *> ViewBases;

  /// Records \p VD as a view of a variable when \p Init is a chain of view
  /// ops (core::is_view_op) on a variable or a field (TransferOps.cpp).
  void noteViewBinding(const clang::VarDecl *VD, const clang::Expr *Init);
  /// The in-place op \p CE wrote a value of type \p Out into \p Written:
  /// retypes its view base and sibling views, or reports the write when one
  /// of them cannot take it (core::apply_alias_write, spec §6.11.1).
  void writeThroughAliases(const clang::CallExpr *CE, llvm::StringRef Name,
                           const clang::ValueDecl *Written,
                           const clang::Expr *Mutated, const Value &Out);
};

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_LIB_TRANSFER_H
