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
#include "Problems.h"

#include "spmd/plugin/Annotations.h"
#include "spmd/plugin/Options.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Analysis/CFG.h"
#include "llvm/ADT/DenseMap.h"

#include <spmd/core/propagation.h>

namespace spmd::plugin {

/// What the analyses of one translation unit share.
struct TUContext {
  TUContext(clang::ASTContext &Ctx, const AnnotationTable &Table,
            const Options &Opts)
      : Ctx(Ctx), Table(Table), Opts(Opts) {}

  clang::ASTContext &Ctx;
  const AnnotationTable &Table;
  const Options &Opts;
  TypeClassifier Types;
  AxisTable Axes;
  /// How to spell each axis in a fix-it (its spmd::Axis constant), by AxisId.
  llvm::DenseMap<AxisId, std::string> AxisSpelling;
  /// Statistics: function bodies seen, analysed, CFG blocks, block visits.
  unsigned FunctionsSeen = 0, FunctionsAnalyzed = 0, Blocks = 0, Visits = 0;

  /// Records the constant that names \p Axis (the first one seen wins).
  void noteAxis(AxisId Axis, const clang::VarDecl *AxisDecl) {
    if (AxisDecl && !AxisSpelling.count(Axis))
      AxisSpelling[Axis] = AxisDecl->getQualifiedNameAsString();
  }
  /// The axes of \p A, interned, with their spellings noted.
  void noteAxes(const TypeAnnotation &A);
};

/// The transfer functions for one function body.
class Transfer {
public:
  Transfer(TUContext &TU, const clang::FunctionDecl *FD, FactArena &Arena);

  /// The facts at entry: the declared types of the parameters.
  FactMap entryState();
  /// Interprets block \p B from \p In; problems go to \p H when it is not
  /// null (the reporting pass).
  FactMap block(const clang::CFGBlock &B, FactMap In, ProblemHandler *H);

private:
  // Statements.
  void stmt(const clang::Stmt *S);
  void declStmt(const clang::DeclStmt *DS);
  void memberInitializer(const clang::CXXCtorInitializer *Init);

  // Expressions.
  Value eval(const clang::Expr *E);
  Value evalUncached(const clang::Expr *E);
  Value evalCall(const clang::CallExpr *CE);
  Value evalAssignment(const clang::CXXOperatorCallExpr *CE);
  Value evalOrdinaryOp(const clang::CallExpr *CE,
                       const clang::FunctionDecl *Callee);
  Value evalCollective(const clang::CallExpr *CE, core::Collective C);
  std::optional<core::CollectiveCall>
  readCollectiveCall(const clang::CallExpr *CE, core::Collective C);
  /// Global mode: a known shard S(d) against src S(i) / P and reinterpret
  /// as P (TransferShards.cpp). True when it found (and reported) a problem.
  bool checkShardInput(const clang::CallExpr *CE,
                       const core::CollectiveCall &Call, const Value &In,
                       AxisId Axis);
  void checkCollectiveInput(const clang::CallExpr *CE,
                            const core::CollectiveCall &Call, const Value &In,
                            AxisId Axis);
  Value evalAssertType(const clang::CallExpr *CE);
  void assertOnAxis(const clang::CallExpr *CE, const AxisEntry &E,
                    const Value &In, Value &Out);
  Value evalUserCall(const clang::CallExpr *CE,
                     const clang::FunctionDecl *Callee);
  Value evalTensorOp(const clang::CallExpr *CE, std::string Name,
                     const clang::Expr *Receiver,
                     llvm::ArrayRef<const clang::Expr *> Args,
                     std::optional<core::OpClass> Class = std::nullopt);
  void assign(const clang::Expr *LHS, const Value &V, const clang::Expr *RHS);

  // Operands of an ordinary op.
  struct OperandSource {
    const clang::Expr *E; ///< null for a scalar
    Value V;
  };
  struct Operands {
    std::vector<core::Operand> Core;
    std::vector<OperandSource> Sources; // parallel to Core
  };
  /// Global mode: shard dims of \p Out on the axes some operand shards, by
  /// the core's sharding propagation; its errors are reported as op-type.
  void propagateShards(const clang::CallExpr *CE, llvm::StringRef Name,
                       const Operands &Ops, bool OnlyTensorArgs, Value &Out);
  void addTensorOperand(Operands &Ops, const clang::Expr *E, int Pos);
  void addArgument(Operands &Ops, const clang::Expr *A, int Pos);
  void reportOpType(const clang::CallExpr *CE, const core::OpInfo &Info,
                    const Operands &Ops, const core::TypeError &Err);
  Value resultOf(const core::TensorType &R, const Operands &Ops,
                 clang::SourceLocation Loc);
  Value applyInPlace(const clang::CallExpr *CE, llvm::StringRef Name,
                     const clang::Expr *Mutated, const Value &Out);

  // Checks.
  void checkUse(const Value &V, const clang::Expr *E, AxisId Axis);
  void checkUnknownUse(const Value &V, const clang::Expr *E);
  void checkMesh(const Value &V, const clang::Expr *E);
  void checkAgainst(const Value &V, const TypeAnnotation &Want,
                    const Destination &Dest, const clang::Expr *E);
  std::optional<SuggestedCollective>
  conversion(const clang::Expr *E, PerAxisType From, PerAxisType To) const;
  bool reporting(DiagKind K) const { return H && H->isEnabled(K); }
  void report(Problem P);

  // The lattice <-> the core's types.
  Value declared(const TypeAnnotation &A, Origin O);
  Value fromCore(const core::TensorType &T, Origin O, bool Open);
  core::TensorType knownPart(const Value &V) const;
  AxisId axis(llvm::StringRef Name) { return TU.Axes.intern(Name); }

  // Variables.
  unsigned varIndex(const clang::VarDecl *VD);
  void setVar(const clang::VarDecl *VD, const Value &V);

  core::InferenceContext inferenceContext() const;

  TUContext &TU;
  clang::ASTContext &Ctx;
  TypeClassifier &Types;
  const clang::FunctionDecl *FD;
  const TypeAnnotation *Result;
  const MeshAnnotation *Mesh;
  FactArena &Arena;

  FactMap Cur;
  ProblemHandler *H = nullptr;
  llvm::DenseMap<const clang::Expr *, Value> Memo; // per block
  llvm::DenseMap<const clang::VarDecl *, unsigned> VarIndex;
};

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_LIB_TRANSFER_H
