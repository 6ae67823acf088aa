//===- TransferOpaque.cpp - calls the checker cannot see through ----------===//
//
// A call of a function without SPMD annotations and without a body the
// analysis runs on (a CUDA kernel declared in a header, a helper defined in
// another translation unit) checks nothing and types nothing. Strict mode
// promises that every type that matters is known or reported, so such a call
// that takes a tensor of known type and may write a tensor is reported (kind
// opaque-call), and the tensors it may write are unknown after it in every
// mode; one that only reads is an unannotated call (unannotatedResult)
// (docs/plugin.md "Calls the checker cannot see through").
//
//===----------------------------------------------------------------------===//

#include "Transfer.h"

#include <spmd/core/op_table.h>

using namespace clang;

namespace spmd::plugin {

namespace {

/// Functions of the libraries the checker models (or that cannot change a
/// tensor's SPMD type): torch/ATen/c10, the standard library, the runtime's
/// API, compiler builtins.
bool isLibraryFunction(const FunctionDecl *FD) {
  if (FD->getBuiltinID())
    return true;
  llvm::StringRef NS = topNamespaceName(FD);
  return isLibraryNamespaceName(NS) || NS == "__gnu_cxx";
}

/// Whether the callee may write the tensors bound to \p P: a non-const
/// reference to a tensor (or a container of tensors), or one passed by
/// non-const value (libtorch tensors share their storage). A const reference
/// is read-only by convention: libtorch's in-place methods are const, but a
/// kernel's outputs are non-const `Tensor&`, as ATen's out= arguments are.
bool mayWriteByType(QualType T, TypeClassifier &Types) {
  if (const auto *R = T->getAs<ReferenceType>())
    T = R->getPointeeType();
  else if (const auto *Ptr = T->getAs<PointerType>())
    T = Ptr->getPointeeType(); // `Tensor* out`: written through
  return !T.isConstQualified() && Types.isTracked(T);
}

/// Whether \p E names the parameter \p P (through casts and parentheses),
/// or what it points to (`*p`).
bool namesParam(const Expr *E, const ParmVarDecl *P) {
  E = E ? E->IgnoreParenImpCasts() : nullptr;
  if (const auto *UO = dyn_cast_or_null<UnaryOperator>(E);
      UO && UO->getOpcode() == UO_Deref)
    E = UO->getSubExpr()->IgnoreParenImpCasts();
  const auto *DRE = dyn_cast_or_null<DeclRefExpr>(E);
  return DRE && DRE->getDecl() == P;
}

/// The tensor \p A hands over to a pointer parameter: `t` of `&t`.
const Expr *addressed(const Expr *A) {
  const auto *UO = dyn_cast<UnaryOperator>(A->IgnoreParenImpCasts());
  return UO && UO->getOpcode() == UO_AddrOf ? UO->getSubExpr() : nullptr;
}

/// Whether the name of an op writes its first tensor: libtorch's in-place
/// methods and functions (`add_`, `copy_`, `index_put_`) and its out=
/// variants (`relu_out`), by the core's op table.
bool writingName(const FunctionDecl *F) {
  if (!F || !F->getIdentifier())
    return false;
  core::Aliasing A = core::aliasing_of(F->getName());
  return A == core::Aliasing::InPlace || A == core::Aliasing::Out;
}

/// Whether \p S, a visible body, may write \p P: assigns it, calls an
/// in-place op on it, passes it to a writing library op, to a parameter of a
/// user function that may write it (by its type, not followed further), or
/// binds a non-const reference to it. Anything else reads it.
bool bodyWrites(const Stmt *S, const ParmVarDecl *P, TypeClassifier &Types) {
  if (!S)
    return false;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(S)) {
    if (Op->isAssignmentOp() && Op->getNumArgs() > 0 &&
        namesParam(Op->getArg(0), P))
      return true;
  } else if (const auto *MC = dyn_cast<CXXMemberCallExpr>(S)) {
    if (namesParam(MC->getImplicitObjectArgument(), P) &&
        writingName(MC->getMethodDecl()))
      return true;
  }
  if (const auto *CE = dyn_cast<CallExpr>(S)) {
    const FunctionDecl *F = CE->getDirectCallee();
    for (unsigned I = 0; I < CE->getNumArgs(); ++I) {
      if (!namesParam(CE->getArg(I), P) || isa<CXXMemberCallExpr>(CE))
        continue;
      if (!F)
        return true; // an unknown callee: it may write
      if (isLibraryFunction(F)
              ? writingName(F)
              : (I < F->getNumParams() &&
                 mayWriteByType(F->getParamDecl(I)->getType(), Types)))
        return true;
    }
  }
  if (const auto *DS = dyn_cast<DeclStmt>(S))
    for (const Decl *D : DS->decls())
      if (const auto *VD = dyn_cast<VarDecl>(D))
        if ((VD->getType()->isReferenceType() ||
             VD->getType()->isPointerType()) &&
            !VD->getType()->getPointeeType().isConstQualified() &&
            namesParam(VD->getInit(), P))
          return true;
  for (const Stmt *C : S->children())
    if (bodyWrites(C, P, Types))
      return true;
  return false;
}

/// Whether the callee may write the tensors bound to its parameter \p P: by
/// its type (mayWriteByType), and, where its body is visible, only if that
/// body writes it (a helper that takes `Tensor x` by value and reads it
/// leaves the caller's tensor as it was).
bool mayWrite(TUContext &TU, const ParmVarDecl *P, TypeClassifier &Types) {
  if (!mayWriteByType(P->getType(), Types))
    return false;
  const auto *F = dyn_cast<FunctionDecl>(P->getDeclContext());
  const FunctionDecl *Def = nullptr;
  if (!F || !F->hasBody(Def) || !Def->getBody())
    return true;
  if (auto It = TU.WrittenParams.find(P); It != TU.WrittenParams.end())
    return It->second;
  const ParmVarDecl *DefP = Def->getParamDecl(P->getFunctionScopeIndex());
  bool W = bodyWrites(Def->getBody(), DefP, Types);
  TU.WrittenParams[P] = W;
  return W;
}

/// Whether the analysis sees through \p Callee: an annotated function or a
/// body it runs on, at the end of a chain of forwarding functions too
/// (annotated ends are evalForwarded's).
bool seenThrough(TUContext &TU, const FunctionDecl *Callee,
                 TypeClassifier &Types) {
  const FunctionDecl *F = Callee;
  for (unsigned Depth = 0; F && Depth < 5; ++Depth) {
    if (Depth > 0 && isLibraryFunction(F))
      return false;
    if (TU.isAnnotated(F) || bodyIsAnalysed(TU, F))
      return true;
    const CallExpr *Inner = forwardedCall(F, Types);
    F = Inner ? Inner->getDirectCallee() : nullptr;
  }
  return false;
}

/// The opaque-call problem: \p Typed (argument \p Index, of value \p V)
/// passed to \p Callee at \p CE, with its known type per axis (S(k) where
/// the shard dim is known) and rank for the suggested annotation, and the
/// variables \p Lost that are unknown after the call.
Problem opaqueProblem(const Expr *CE, const FunctionDecl *Callee,
                      const Expr *Callable, const Expr *Typed, unsigned Index,
                      const Value &V, llvm::ArrayRef<const Expr *> Lost) {
  ProblemSite P;
  P.Kind = DiagKind::OpaqueCall;
  P.Loc = CE->getExprLoc();
  P.Range = CE->getSourceRange();
  P.Subject = Typed;
  P.Call = dyn_cast<CallExpr>(CE); // null for a constructor
  OpaqueCallDetail D;
  D.Callee = Callee;
  D.ParamIndex = Index;
  D.Callable = Callable;
  for (const auto &[A, Fact] : V.axes()) {
    std::optional<PerAxisType> K = Fact.knownType();
    if (!K)
      continue;
    std::optional<int> Dim = Fact.shardDim();
    D.SubjectType.push_back(
        {A, K->kind == TypeKind::Varying && Dim ? types::S(*Dim) : *K});
  }
  D.SubjectRank = V.rank().value_or(-1);
  D.Written.assign(Lost.begin(), Lost.end());
  return Problem::opaqueCall(std::move(P), std::move(D));
}

} // namespace

std::optional<Value> Transfer::evalOpaqueCall(const CallExpr *CE,
                                              const FunctionDecl *Callee) {
  if (isLibraryFunction(Callee))
    return std::nullopt;
  // A method of a tensor (or of a container of tensors) is an ordinary op.
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE))
    if (const Expr *Obj = MC->getImplicitObjectArgument()) {
      QualType T = Obj->getType();
      if (T->isPointerType())
        T = T->getPointeeType();
      if (Types.isTracked(T))
        return std::nullopt;
    }
  llvm::SmallVector<const Expr *, 4> Args;
  argumentsByParameter(CE, Callee, Args);
  return opaqueCall(CE, Callee, Args, Types.isTracked(CE->getType()));
}

void Transfer::evalOpaqueConstruct(const CXXConstructExpr *CE) {
  const CXXConstructorDecl *Ctor = CE->getConstructor();
  if (!Ctor || isLibraryFunction(Ctor) || Types.isTracked(CE->getType()))
    return;
  llvm::SmallVector<const Expr *, 4> Args;
  argumentsByParameter(CE, Ctor, Args);
  (void)opaqueCall(CE, Ctor, Args, /*Returns=*/false);
}

std::optional<Value>
Transfer::opaqueCall(const Expr *CE, const FunctionDecl *Callee,
                     llvm::ArrayRef<const Expr *> Args, bool Returns,
                     const FunctionProtoType *Proto, const Expr *Callable) {
  if (Callee && isLibraryFunction(Callee))
    return std::nullopt;
  const Expr *Typed = nullptr;
  unsigned TypedIndex = 0;
  llvm::SmallVector<const Expr *, 2> Written;
  for (unsigned I = 0; I < Args.size(); ++I) {
    const Expr *A = Args[I];
    if (!A || isa<CXXDefaultArgExpr>(A) || isEmptyOptional(A, Types))
      continue;
    A = seeThroughOptional(A, Types);
    // `kernel(&out)`: the pointer parameter reaches `out`.
    if (const Expr *T = addressed(A))
      A = T;
    if (!Types.isTracked(A->getType()))
      continue;
    if (!Typed && eval(A).hasKnownAxis()) {
      Typed = A;
      TypedIndex = I;
    }
    // An indirect call has no body to look into: its parameter's type says
    // what it may write.
    if (Callee ? mayWrite(TU, Callee->getParamDecl(I), Types)
               : mayWriteByType(Proto->getParamType(I), Types))
      Written.push_back(A);
  }
  // Nothing typed goes in (what it writes is unknown already), or it only
  // reads: its result, if any, is an unannotated call's (unannotatedResult
  // reports it where it is first used, unless its type is stated first).
  if (!Typed || Written.empty())
    return std::nullopt;
  if (Callee && seenThrough(TU, Callee, Types))
    return std::nullopt;

  // What strict mode reports here is not reported again where it is used.
  bool Reported = TU.Opts.Strict &&
                  TU.Opts.severity(DiagKind::OpaqueCall) != Severity::Ignored;
  Value Out = Reported ? Value::error() : Value::unknown();
  llvm::SmallVector<const Expr *, 2> Lost;
  for (const Expr *W : Written) {
    LValue L = lvalueOf(W);
    // A declared variable keeps its declared type, as on any assignment.
    if (L.Var && !declaredType(L.Var) && Types.isTracked(L.Var->getType())) {
      setVar(L.Var, Out);
      Lost.push_back(W);
    }
  }
  if (Reported && reporting(DiagKind::OpaqueCall)) {
    report(opaqueProblem(CE, Callee, Callable, Typed, TypedIndex, eval(Typed),
                         Lost));
  }
  return Returns ? Out : Value::unknown();
}

/// The prototype an indirect call goes through, with the index of its first
/// argument (1 for `fn(x)` on a std::function, whose argument 0 is `fn`), or
/// null when \p CE is not an indirect call.
static const FunctionProtoType *indirectPrototype(const CallExpr *CE,
                                                  unsigned &First) {
  First = 0;
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(CE)) {
    const CXXRecordDecl *RD =
        Op->getOperator() == OO_Call && Op->getNumArgs() > 0
            ? Op->getArg(0)->getType()->getAsCXXRecordDecl()
            : nullptr;
    const auto *M = dyn_cast_or_null<CXXMethodDecl>(CE->getDirectCallee());
    if (!RD || !M || !RD->isInStdNamespace() || !RD->getIdentifier() ||
        RD->getName() != "function")
      return nullptr;
    First = 1;
    return M->getType()->getAs<FunctionProtoType>();
  }
  if (CE->getDirectCallee())
    return nullptr;
  QualType T = CE->getCallee()->IgnoreParenImpCasts()->getType();
  if (const auto *P = T->getAs<PointerType>())
    T = P->getPointeeType();
  else if (const auto *R = T->getAs<ReferenceType>())
    T = R->getPointeeType();
  return T->getAs<FunctionProtoType>();
}

std::optional<Value> Transfer::evalOpaqueIndirect(const CallExpr *CE) {
  unsigned First = 0;
  const FunctionProtoType *Proto = indirectPrototype(CE, First);
  if (!Proto)
    return std::nullopt;
  llvm::SmallVector<const Expr *, 4> Args;
  for (unsigned I = 0; I < Proto->getNumParams(); ++I)
    Args.push_back(I + First < CE->getNumArgs() ? CE->getArg(I + First)
                                                : nullptr);
  return opaqueCall(CE, nullptr, Args, Types.isTracked(CE->getType()), Proto,
                    First ? CE->getArg(0) : CE->getCallee());
}

} // namespace spmd::plugin
