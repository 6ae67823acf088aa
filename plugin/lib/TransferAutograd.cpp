//===- TransferAutograd.cpp - autograd functions, raw c10d, backward() ----===//
//
// Three kinds of calls the checker types outside the ordinary-op path:
//  * `T::apply(args...)` of a custom autograd function (spec 13.1): checked
//    and typed from the annotations on `T::forward` (its first parameter,
//    the AutogradContext, takes no argument);
//  * a raw c10d collective (a method of c10d::ProcessGroup or c10d::Backend)
//    on a tensor of known SPMD type: the static checker cannot tell the
//    group's axis, so it reports the call and names the spmd wrapper
//    (spec 14; the runtime checker types the call itself);
//  * `loss.backward()` without a gradient: the loss check of spec 6.15 on
//    the loss's known axes.
//
//===----------------------------------------------------------------------===//

#include "Transfer.h"

#include "clang/AST/DeclTemplate.h"
#include "llvm/ADT/StringSet.h"

#include <spmd/core/annotation_rules.h>

using namespace clang;

namespace spmd::plugin {
namespace {

/// T of `torch::autograd::Function<T>::apply`, of the runtime's
/// `spmd::autograd::Function<T>::apply`, or of `spmd::autograd::apply<T>`.
const CXXRecordDecl *autogradClass(const FunctionDecl *Callee) {
  if (!Callee->getIdentifier() || Callee->getName() != "apply")
    return nullptr;
  const TemplateArgumentList *Args = nullptr;
  if (const auto *MD = dyn_cast<CXXMethodDecl>(Callee)) {
    if (!MD->isStatic())
      return nullptr;
    const auto *Spec =
        dyn_cast<ClassTemplateSpecializationDecl>(MD->getParent());
    if (!Spec || Spec->getName() != "Function")
      return nullptr;
    std::string NS = Spec->getQualifiedNameAsString();
    if (NS != "torch::autograd::Function" && NS != "spmd::autograd::Function")
      return nullptr;
    Args = &Spec->getTemplateArgs();
  } else {
    if (Callee->getQualifiedNameAsString() != "spmd::autograd::apply")
      return nullptr;
    Args = Callee->getTemplateSpecializationArgs();
  }
  if (!Args || Args->size() == 0 ||
      Args->get(0).getKind() != TemplateArgument::Type)
    return nullptr;
  return Args->get(0).getAsType()->getAsCXXRecordDecl();
}

/// The static `forward` of \p T.
const FunctionDecl *forwardOf(const CXXRecordDecl *T, ASTContext &Ctx) {
  if (!T || !T->hasDefinition())
    return nullptr;
  for (const NamedDecl *ND :
       T->getDefinition()->lookup(&Ctx.Idents.get("forward"))) {
    if (const auto *MD = dyn_cast<CXXMethodDecl>(ND))
      if (MD->isStatic())
        return MD;
  }
  return nullptr;
}

/// The c10d collective \p Callee is, or "".
llvm::StringRef rawCollective(const FunctionDecl *Callee) {
  static const llvm::StringSet<> Names = {"allreduce",
                                          "allreduce_coalesced",
                                          "allgather",
                                          "_allgather_base",
                                          "allgather_coalesced",
                                          "allgather_into_tensor_coalesced",
                                          "reduce_scatter",
                                          "_reduce_scatter_base",
                                          "reduce_scatter_tensor_coalesced",
                                          "alltoall_base",
                                          "alltoall",
                                          "broadcast",
                                          "reduce",
                                          "gather",
                                          "scatter",
                                          "send",
                                          "recv",
                                          "all_gather_single",
                                          "reduce_scatter_single",
                                          "all_to_all_single",
                                          "all_gather_single_coalesced"};
  const auto *MD = dyn_cast<CXXMethodDecl>(Callee);
  if (!MD || !MD->getIdentifier() || !Names.contains(MD->getName()))
    return "";
  std::string Class = MD->getParent()->getQualifiedNameAsString();
  if (!llvm::StringRef(Class).starts_with("c10d::"))
    return "";
  return MD->getName();
}

} // namespace

std::optional<Value> Transfer::evalAutograd(const CallExpr *CE,
                                            const FunctionDecl *Callee) {
  // T::apply(args...): typed as T::forward(ctx, args...).
  if (const CXXRecordDecl *T = autogradClass(Callee)) {
    const FunctionDecl *Forward = forwardOf(T, TU.Ctx);
    if (!Forward || !TU.isAnnotated(Forward))
      return std::nullopt;
    llvm::SmallVector<const Expr *, 4> Args{nullptr}; // the context
    for (const Expr *A : CE->arguments())
      Args.push_back(A);
    return callAnnotated(CE, Forward, Args);
  }

  // A raw c10d collective on a typed tensor.
  if (llvm::StringRef Raw = rawCollective(Callee); !Raw.empty()) {
    for (const Expr *A : CE->arguments()) {
      if (!Types.isTracked(A->getType()) || !eval(A).hasKnownAxis())
        continue;
      ProblemSite P;
      P.Kind = DiagKind::OpType;
      P.Loc = CE->getExprLoc();
      P.Range = A->getSourceRange();
      P.Subject = A;
      P.Call = CE;
      report(Problem::rawC10d(std::move(P)));
      break;
    }
    return Value::unknown();
  }

  // loss.backward() with no gradient (spec 6.15).
  if (const auto *MC = dyn_cast<CXXMemberCallExpr>(CE)) {
    const CXXMethodDecl *MD = MC->getMethodDecl();
    const Expr *Loss = MC->getImplicitObjectArgument();
    if (!MD || !MD->getIdentifier() || MD->getName() != "backward" || !Loss ||
        !Types.isTensor(Loss->getType()))
      return std::nullopt;
    // An explicit gradient carries its own meaning: no check.
    if (MC->getNumArgs() > 0 && !isa<CXXDefaultArgExpr>(MC->getArg(0)))
      return Value::unknown();
    Value L = eval(Loss);
    checkUnknownUse(L, Loss);
    core::Status S = core::check_loss(knownPart(L), /*strict=*/false);
    if (!S.ok()) {
      ProblemSite P;
      P.Kind = DiagKind::OpType;
      P.Loc = Loss->getExprLoc();
      P.Range = Loss->getSourceRange();
      P.Subject = Loss;
      P.Call = CE;
      P.Error = S.error();
      if (!S.error().axis.empty())
        P.Axis = TU.Axes.find(S.error().axis);
      report(Problem::opType(std::move(P), nullptr));
    }
    return Value::unknown();
  }
  return std::nullopt;
}

} // namespace spmd::plugin
