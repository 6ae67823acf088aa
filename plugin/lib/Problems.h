//===- Problems.h - what the transfer functions report, as data -*- C++ -*-===//
//
// The transfer functions (Transfer.h) find problems; the reporter
// (Reporter.h) turns them into words. Between the two is this interface, cut
// like Clang's ThreadSafetyHandler: a Problem names the kind, where it is, the
// axis, the expected and actual types, where those types came from, the core's
// verdict and a suggested repair as a collective call -- never text. Tests
// implement ProblemHandler to check what the analysis found without reading
// messages.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_LIB_PROBLEMS_H
#define SPMD_PLUGIN_LIB_PROBLEMS_H

#include "TypeLattice.h"

#include "spmd/plugin/Annotations.h"
#include "spmd/plugin/Options.h"

#include "clang/AST/Expr.h"

#include <spmd/core/collectives.h>
#include <spmd/core/error.h>

#include <cassert>
#include <optional>
#include <variant>

namespace spmd::plugin {

/// What went wrong (finer than DiagKind, which decides severity).
enum class ProblemCode : uint8_t {
  NonConstantAxis,     ///< a collective's axis is not a constant spmd::Axis
  NonConstantSrc,      ///< a collective's src is not a constant type
  NonConstantDst,      ///< a collective's dst is not a constant type
  IllegalCollective,   ///< core::check_arguments rejected src/dst/options
  CollectiveInput,     ///< the input's type on the axis is not src
  AlreadyReduced,      ///< all_reduce / reduce_scatter (src P) of a value that
                       ///< is R or I: it is reduced already (Origins: where;
                       ///< ReducedBefore: by a reducing collective there)
  NoOpCollective,      ///< a collective's input is not src but has its dst
                       ///< type already (Dst): the src that accepts it would
                       ///< make the call a no-op; the repair removes it
  OpType,              ///< core::infer rejected an ordinary tensor op
  InPlace,             ///< core::apply_inplace rejected an in-place op
  MissingMeshAxis,     ///< an operand's declared type lacks a mesh axis
  Mismatch,            ///< a value differs from a declared type
  AssertMismatch,      ///< spmd::assert_type contradicts the known type
  AssertShardDim,      ///< global mode: assert_type names another shard dim
                       ///< (Expected S(k)) than the known one (Actual S(j))
  AssertPartial,       ///< global mode: assert_type says P of a V known to
                       ///< be sharded (Actual S(d)): a shard is no pending
                       ///< sum (SrcArg: the asserted type, as written)
  ReduceAxis,          ///< a reduce (src P) on Axis of a value that is no
                       ///< pending sum there (Actual) but is P on PendingAxis:
                       ///< the wrong axis (Origins: P's, then Actual's)
  RawC10d,             ///< a raw c10d collective (Call) on a typed tensor
                       ///< (Subject): the group's axis is unknown
  PathConflict,        ///< paths disagree on a value's type
  UnknownUse,          ///< strict mode: a value of unknown type is used
  UnknownShard,        ///< strict global mode: a V whose shard dim (or rank)
                       ///< is unknown is used where the dim matters
  OpaqueCall,          ///< strict mode: a tensor of known type (Subject) passed
                       ///< to a function the checker cannot see through
                       ///< (Dest.Callee, parameter Dest.ParamIndex)
  UnannotatedCall,     ///< strict mode: a call (Subject) of a function with
                       ///< no declared result type (CalleeDecl): its result,
                       ///< and what is computed from it, is unknown
  UnknownLayout,       ///< strict mode: a call (Call) of a method whose result
                       ///< type depends on layout flags that are unknown for
                       ///< its instance (UnknownFlags, LayoutTypes)
  DivergentCollective, ///< a collective (Call, Op, Axis; in CalleeDecl when
                       ///< it is reached through a call at Loc) runs under a
                       ///< branch (Divergence) that may go different ways on
                       ///< the ranks of Axis
};

/// Why a branch condition may differ across the ranks of an axis.
enum class DivergenceSource : uint8_t {
  AxisRank,   ///< it reads this rank's index on the axis (Subject)
  GlobalRank, ///< it reads the global rank (Subject)
  TensorData, ///< it reads the values of a tensor (Subject) that is V or P
              ///< on the axis (Actual)
};

/// DivergentCollective: the branch and what in its condition differs.
struct Divergence {
  const clang::Expr *Condition = nullptr;
  DivergenceSource Source = DivergenceSource::AxisRank;
  /// The branch is a loop's: its trip count may differ across ranks.
  bool Loop = false;
  /// The collective's forward is local; its backward communicates.
  bool BackwardOnly = false;
};

/// A type on an axis and where it came from; Operand is the expression
/// holding it when that matters (an operand of an op), else null.
struct TypeOrigin {
  const clang::Expr *Operand = nullptr;
  PerAxisType Type;
  Origin From;
};

/// A repair: wrap Target in `Call.op(Target, <axis>, Call.src, Call.dst)`,
/// which makes it Result on the problem's axis.
struct SuggestedCollective {
  const clang::Expr *Target = nullptr;
  core::CollectiveCall Call;
  PerAxisType Result;
};

/// A declared type chosen by the layout of a layer instance
/// ([[spmd::when]]): the instance's member or local variable, the flag that
/// chose it and the flag's value.
struct LayoutChoice {
  const clang::ValueDecl *Instance = nullptr;
  const clang::FieldDecl *Flag = nullptr;
  bool Value = false;
  clang::SourceLocation Where; ///< the constructor argument that set it
};

/// What a value was checked against, for Mismatch.
struct Destination {
  enum Kinds : uint8_t {
    VarInit,       ///< Decl: the variable
    FieldInit,     ///< Decl: the field (a constructor's member initializer)
    VarAssign,     ///< Decl: the variable
    FieldAssign,   ///< Decl: the field
    Argument,      ///< Callee's parameter ParamIndex
    Return,        ///< Decl: the function
    InPlaceResult, ///< Mutated: the tensor an in-place op writes
    Push,          ///< Decl: the container (variable or field) pushed into
  } Kind = VarInit;
  const clang::NamedDecl *Decl = nullptr;
  const clang::FunctionDecl *Callee = nullptr;
  unsigned ParamIndex = 0;
  const clang::Expr *Mutated = nullptr;
  const TypeAnnotation *Declared = nullptr; ///< the declared type
  /// Argument: where the callee's instance was constructed with the layout
  /// flag that chose the declared type ([[spmd::when]]), if it did.
  clang::SourceLocation LayoutLoc;
  /// Argument: the member (or local) the callee runs on, that flag and its
  /// value, when a layout chose the declared type.
  LayoutChoice Layout;
};

/// What every problem has: its severity, where it points, the axis, the
/// expected and actual types, where those came from, the core's verdict and
/// a repair. What only some kinds have is in their Problem payload.
struct ProblemSite {
  DiagKind Kind = DiagKind::OpType;
  /// Where the diagnostic points, and what it highlights.
  clang::SourceLocation Loc;
  clang::SourceRange Range;
  /// The expression the problem is about (an argument, an operand, the
  /// value checked), or null.
  const clang::Expr *Subject = nullptr;
  /// The call involved (a collective, an op, assert_type), or null.
  const clang::CallExpr *Call = nullptr;
  core::Collective Op = core::Collective::AllReduce; ///< for collectives
  std::optional<AxisId> Axis;
  std::optional<PerAxisType> Expected; ///< as written (S(i) kept)
  std::optional<PerAxisType> Actual;
  /// Where the types involved came from (notes).
  llvm::SmallVector<TypeOrigin, 2> Origins;
  /// The core's verdict, when a core rule decided.
  std::optional<core::TypeError> Error;
  /// A collective call that would repair it.
  std::optional<SuggestedCollective> Fix;
  /// Found while analysing a body in one layout of its flags only
  /// ([[spmd::when]]): each flag and its value there.
  llvm::SmallVector<std::pair<const clang::FieldDecl *, bool>, 2> Layout;
};

/// OpType: the reduce (all_reduce, src P) that takes the op's result
/// directly, when Fix reduces an operand of the op: the repair moves that
/// reduce onto the operand instead of adding a second one (or null).
struct OpTypeDetail {
  const clang::CallExpr *MovedReduce = nullptr;
};

/// CollectiveInput: the src argument, to be replaced by Actual (null when
/// no other src would be legal). AssertPartial: the asserted type, to be
/// replaced by Actual (null when it is not editable).
struct SrcRepairDetail {
  const clang::Expr *SrcArg = nullptr;
};

/// AlreadyReduced, NoOpCollective: the collective's dst, as written;
/// AlreadyReduced: whether the origin of the input's type is a collective
/// that reduced a pending sum (the first reduce).
struct RedundantCollectiveDetail {
  PerAxisType Dst;
  bool ReducedBefore = false;
};

/// ReduceAxis: the one other axis on which the value is P.
struct ReduceAxisDetail {
  AxisId PendingAxis = 0;
};

/// Mismatch: what the value was checked against and, for a tuple entry's
/// order (global mode, spec §12.1), the value's axes on the dim, outer to
/// inner (empty otherwise).
struct MismatchDetail {
  Destination Dest;
  llvm::SmallVector<AxisId, 3> ActualOrder;
};

/// MissingMeshAxis: the mesh and the axes the operand has.
struct MissingMeshAxisDetail {
  const MeshAnnotation *Mesh = nullptr;
  core::TensorType Type;
};

/// OpaqueCall: the callee (null for a function pointer or std::function
/// whose target is unknown; then Callable is the callable expression) and
/// the parameter the tensor goes to; Subject's known type per axis (S(k)
/// with its dim where known) and rank (-1: unknown), for the annotation the
/// note suggests; the undeclared variables the callee may write (non-const
/// references, by value), unknown after the call.
struct OpaqueCallDetail {
  const clang::FunctionDecl *Callee = nullptr;
  unsigned ParamIndex = 0;
  const clang::Expr *Callable = nullptr;
  llvm::SmallVector<std::pair<AxisId, PerAxisType>, 2> SubjectType;
  int SubjectRank = -1;
  llvm::SmallVector<const clang::Expr *, 2> Written;
};

/// UnknownLayout: each flag whose value is unknown at the call, with the
/// constructor argument that sets it when that is not a constant (else an
/// invalid location); the member or local the call runs on; the method
/// called; with one unknown flag, each axis whose declared result type
/// differs between its values, with the type when it is false, true.
struct UnknownLayoutDetail {
  llvm::SmallVector<std::pair<const clang::FieldDecl *, clang::SourceLocation>,
                    2>
      UnknownFlags;
  const clang::ValueDecl *Instance = nullptr;
  const clang::FunctionDecl *CalleeDecl = nullptr;
  llvm::SmallVector<std::tuple<AxisId, PerAxisType, PerAxisType>, 2>
      LayoutTypes;
};

/// PathConflict: the number a branch between the two paths compares with 1
/// as a size-1 guard does (`world_size_ == 1`), when it is not declared to be
/// an axis's size; null otherwise.
struct PathConflictDetail {
  const clang::Expr *UndeclaredSize = nullptr;
};

/// DivergentCollective: the branch, and the function through whose call (at
/// Loc) the collective is reached, or null when it is in the body itself.
struct DivergentCollectiveDetail {
  Divergence Branch;
  const clang::FunctionDecl *Via = nullptr;
};

/// One problem found by the transfer functions. Each ProblemCode has one
/// factory, which takes what that kind carries beyond the common site; what
/// a kind does not carry cannot be set for it, and reading another kind's
/// payload is an assertion failure.
class Problem : public ProblemSite {
public:
  /// \name Factories, one per ProblemCode (see ProblemCode for each).
  /// @{
  static Problem nonConstantAxis(ProblemSite S) {
    return {ProblemCode::NonConstantAxis, std::move(S)};
  }
  static Problem nonConstantSrc(ProblemSite S) {
    return {ProblemCode::NonConstantSrc, std::move(S)};
  }
  static Problem nonConstantDst(ProblemSite S) {
    return {ProblemCode::NonConstantDst, std::move(S)};
  }
  static Problem illegalCollective(ProblemSite S) {
    return {ProblemCode::IllegalCollective, std::move(S)};
  }
  static Problem collectiveInput(ProblemSite S, const clang::Expr *SrcArg) {
    return {ProblemCode::CollectiveInput, std::move(S),
            SrcRepairDetail{SrcArg}};
  }
  static Problem alreadyReduced(ProblemSite S, PerAxisType Dst,
                                bool ReducedBefore) {
    return {ProblemCode::AlreadyReduced, std::move(S),
            RedundantCollectiveDetail{Dst, ReducedBefore}};
  }
  static Problem noOpCollective(ProblemSite S, PerAxisType Dst) {
    return {ProblemCode::NoOpCollective, std::move(S),
            RedundantCollectiveDetail{Dst, false}};
  }
  static Problem opType(ProblemSite S, const clang::CallExpr *MovedReduce) {
    return {ProblemCode::OpType, std::move(S), OpTypeDetail{MovedReduce}};
  }
  static Problem inPlace(ProblemSite S) {
    return {ProblemCode::InPlace, std::move(S)};
  }
  static Problem missingMeshAxis(ProblemSite S, MissingMeshAxisDetail D) {
    return {ProblemCode::MissingMeshAxis, std::move(S), std::move(D)};
  }
  static Problem mismatch(ProblemSite S, MismatchDetail D) {
    return {ProblemCode::Mismatch, std::move(S), std::move(D)};
  }
  static Problem assertMismatch(ProblemSite S) {
    return {ProblemCode::AssertMismatch, std::move(S)};
  }
  static Problem assertShardDim(ProblemSite S) {
    return {ProblemCode::AssertShardDim, std::move(S)};
  }
  static Problem assertPartial(ProblemSite S, const clang::Expr *TypeArg) {
    return {ProblemCode::AssertPartial, std::move(S), SrcRepairDetail{TypeArg}};
  }
  static Problem reduceAxis(ProblemSite S, AxisId PendingAxis) {
    return {ProblemCode::ReduceAxis, std::move(S),
            ReduceAxisDetail{PendingAxis}};
  }
  static Problem rawC10d(ProblemSite S) {
    return {ProblemCode::RawC10d, std::move(S)};
  }
  static Problem pathConflict(ProblemSite S,
                              const clang::Expr *UndeclaredSize = nullptr) {
    return {ProblemCode::PathConflict, std::move(S),
            PathConflictDetail{UndeclaredSize}};
  }
  static Problem unknownUse(ProblemSite S) {
    return {ProblemCode::UnknownUse, std::move(S)};
  }
  static Problem unknownShard(ProblemSite S) {
    return {ProblemCode::UnknownShard, std::move(S)};
  }
  static Problem opaqueCall(ProblemSite S, OpaqueCallDetail D) {
    return {ProblemCode::OpaqueCall, std::move(S), std::move(D)};
  }
  static Problem unannotatedCall(ProblemSite S,
                                 const clang::FunctionDecl *Callee) {
    UnknownLayoutDetail D;
    D.CalleeDecl = Callee;
    return {ProblemCode::UnannotatedCall, std::move(S), std::move(D)};
  }
  static Problem unknownLayout(ProblemSite S, UnknownLayoutDetail D) {
    return {ProblemCode::UnknownLayout, std::move(S), std::move(D)};
  }
  static Problem divergentCollective(ProblemSite S,
                                     DivergentCollectiveDetail D) {
    return {ProblemCode::DivergentCollective, std::move(S), std::move(D)};
  }
  /// @}

  ProblemCode code() const { return Code; }

  /// \name Payloads; each asserts that this problem's kind carries it.
  /// @{
  const OpTypeDetail &opTypeInfo() const { return get<OpTypeDetail>(); }
  /// CollectiveInput, AssertPartial.
  const SrcRepairDetail &srcRepair() const { return get<SrcRepairDetail>(); }
  /// AlreadyReduced, NoOpCollective.
  const RedundantCollectiveDetail &redundant() const {
    return get<RedundantCollectiveDetail>();
  }
  const ReduceAxisDetail &reduceAxisInfo() const {
    return get<ReduceAxisDetail>();
  }
  const MismatchDetail &mismatchInfo() const { return get<MismatchDetail>(); }
  const MissingMeshAxisDetail &missingMeshAxisInfo() const {
    return get<MissingMeshAxisDetail>();
  }
  const OpaqueCallDetail &opaqueCallInfo() const {
    return get<OpaqueCallDetail>();
  }
  /// UnknownLayout, UnannotatedCall (CalleeDecl only).
  const UnknownLayoutDetail &unknownLayoutInfo() const {
    return get<UnknownLayoutDetail>();
  }
  const PathConflictDetail &pathConflictInfo() const {
    return get<PathConflictDetail>();
  }
  const DivergentCollectiveDetail &divergentInfo() const {
    return get<DivergentCollectiveDetail>();
  }
  /// @}

private:
  using Payload =
      std::variant<std::monostate, OpTypeDetail, SrcRepairDetail,
                   RedundantCollectiveDetail, ReduceAxisDetail, MismatchDetail,
                   MissingMeshAxisDetail, OpaqueCallDetail, UnknownLayoutDetail,
                   PathConflictDetail, DivergentCollectiveDetail>;

  Problem(ProblemCode C, ProblemSite S, Payload D = std::monostate())
      : ProblemSite(std::move(S)), Code(C), Detail(std::move(D)) {}

  template <typename T> const T &get() const {
    const T *D = std::get_if<T>(&Detail);
    assert(D && "this problem's kind does not carry that payload");
    return *D;
  }

  ProblemCode Code;
  Payload Detail;
};

/// Receives the problems of the functions analysed.
class ProblemHandler {
public:
  virtual ~ProblemHandler() = default;
  /// Whether problems of kind \p K are wanted (lets the analysis skip work).
  virtual bool isEnabled(DiagKind K) const = 0;
  /// A new function's problems follow (repeats are judged per function).
  virtual void beginFunction(const clang::FunctionDecl *FD) {}
  virtual void handle(Problem P) = 0;
};

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_LIB_PROBLEMS_H
