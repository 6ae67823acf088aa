//===- Reporter.cpp - the SPMD checker's words ----------------------------===//

#include "Reporter.h"

#include "clang/AST/ASTContext.h"
#include "clang/AST/ExprCXX.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/ErrorHandling.h"

#include <spmd/core/annotation_rules.h>
#include <spmd/core/propagation.h>

#include <algorithm>
#include <tuple>

using namespace clang;

namespace spmd::plugin {

namespace {

std::string typeStr(PerAxisType T) { return core::to_string(T); }

std::string spmdTypeSpelling(PerAxisType T) {
  if (T.is_shard())
    return "spmd::S(" + std::to_string(T.dim) + ")";
  return "spmd::" + typeStr(T);
}

std::string opName(core::Collective C) {
  return std::string("spmd::") + core::to_string(C);
}

const char *originText(OriginKind K) {
  switch (K) {
  case OriginKind::Declared:
    return "declared here";
  case OriginKind::Collective:
    return "set by this collective";
  case OriginKind::AssertType:
    return "set by this spmd::assert_type";
  case OriginKind::Inferred:
    return "inferred from this operation";
  case OriginKind::CallResult:
    return "returned by this call (the callee's declared result type)";
  case OriginKind::CallArgument:
    return "passed here (the local region's input types are inferred from "
           "the arguments at its calls)";
  }
  llvm_unreachable("every OriginKind has a text");
}

/// One line: a core message part never holds a newline, but a diagnostic
/// must not break the `file:line:col:` format even if one did.
std::string oneLine(std::string S) {
  std::replace(S.begin(), S.end(), '\n', ' ');
  return S;
}

/// A call's op as the user wrote it, for messages: `operator+` for an
/// operator call, the callee as spelled in the source (`torch::matmul`,
/// `x.add_`), else its qualified name (`at::Tensor::add_`) when the
/// spelling is a macro expansion or too long for one line.
std::string writtenOpName(const CallExpr *CE, const SourceManager &SM,
                          const LangOptions &LO) {
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(CE))
    return std::string("operator") + getOperatorSpelling(Op->getOperator());
  const Expr *Callee = CE->getCallee()->IgnoreParenImpCasts();
  SourceRange R = Callee->getSourceRange();
  if (R.isValid() && !R.getBegin().isMacroID() && !R.getEnd().isMacroID()) {
    llvm::StringRef Text =
        Lexer::getSourceText(CharSourceRange::getTokenRange(R), SM, LO);
    if (!Text.empty() && Text.size() <= 48 && !Text.contains('\n'))
      return Text.str();
  }
  if (const FunctionDecl *FD = CE->getDirectCallee())
    return FD->getQualifiedNameAsString();
  return "this call";
}

/// The spmd wrapper that replaces a raw c10d collective.
llvm::StringRef rawC10dWrapper(llvm::StringRef Raw) {
  if (Raw.starts_with("allreduce"))
    return "spmd::all_reduce";
  if (Raw.contains("allgather") || Raw.contains("all_gather"))
    return "spmd::all_gather";
  if (Raw.contains("reduce_scatter"))
    return "spmd::reduce_scatter";
  if (Raw.starts_with("alltoall") || Raw.starts_with("all_to_all"))
    return "spmd::all_to_all";
  return "a spmd collective";
}

} // namespace

/// The core's message for an op problem, with the op named as written. The
/// core names ops by the names the transfer gives it (`__add__` for `+`,
/// `.add_` for a method, `matmul`) or their normalized forms; the first of
/// those names standing as a word in the message is replaced.
std::string Reporter::opMessage(const Problem &P) const {
  std::string Msg = oneLine(P.Error->message);
  if (!P.Call ||
      (P.code() != ProblemCode::OpType && P.code() != ProblemCode::InPlace))
    return Msg;
  llvm::SmallVector<std::string, 3> CoreNames;
  const FunctionDecl *FD = P.Call->getDirectCallee();
  if (const auto *Op = dyn_cast<CXXOperatorCallExpr>(P.Call))
    CoreNames.push_back(core::dunder_for_operator(
        getOperatorSpelling(Op->getOperator()), P.Call->getNumArgs() == 1));
  else if (FD && FD->getIdentifier())
    CoreNames.push_back((isa<CXXMemberCallExpr>(P.Call) ? "." : "") +
                        FD->getName().str());
  if (FD && FD->getIdentifier())
    CoreNames.push_back(FD->getName().str()); // [[spmd::op]] functions
  if (!CoreNames.empty())
    CoreNames.push_back(core::classify_op(CoreNames.front()).name);
  for (const std::string &N : CoreNames) {
    if (N.empty())
      continue;
    for (size_t At = Msg.find(N); At != std::string::npos;
         At = Msg.find(N, At + 1)) {
      size_t End = At + N.size();
      bool Starts = At == 0 || Msg[At - 1] == ' ';
      bool Ends = End == Msg.size() || Msg[End] == ':' || Msg[End] == ' ';
      if (Starts && Ends)
        return Msg.substr(0, At) +
               writtenOpName(P.Call, SM, TU.Ctx.getLangOpts()) +
               Msg.substr(End);
    }
  }
  return Msg;
}

/// The core's advice on an error: its fix and notes, as one note at the
/// diagnostic (a fix-it of the plugin's own replaces it: advice once).
void Reporter::addCoreAdvice(const core::TypeError &E, Pending &D) {
  if (E.fix.empty() && E.notes.empty())
    return;
  std::string Text = "suggestion: " + E.fix;
  for (size_t I = 0; I < E.notes.size(); ++I)
    Text += (I ? "; " : (E.fix.empty() ? "" : " ")) + E.notes[I];
  D.Notes.push_back({D.Loc, oneLine(std::move(Text)), {}});
}

Reporter::Reporter(DiagnosticsEngine &DE, TUContext &TU)
    : DE(DE), TU(TU), SM(TU.Ctx.getSourceManager()) {}

llvm::StringRef Reporter::format() {
  static const std::string Format = [] {
    std::string S = "%0 [spmd:%select{";
    for (unsigned I = 0; I < NumDiagKinds; ++I)
      S += std::string(I ? "|" : "") +
           diagKindName(static_cast<DiagKind>(I)).str();
    return S + "}1]";
  }();
  return Format;
}

void Reporter::beginFunction(const FunctionDecl *) {
  ReportedConflicts.clear();
  ReportedUnknown.clear();
}

std::string Reporter::describe(const Expr *E) const {
  if (const VarDecl *VD = namedVar(E, TU.Types))
    return "'" + VD->getNameAsString() + "'";
  if (const FieldDecl *FD = namedField(E, TU.Types))
    return "'" + FD->getNameAsString() + "'";
  if (const BindingDecl *BD = namedBinding(E, TU.Types))
    return "'" + BD->getNameAsString() + "'";
  return "this value";
}

std::string Reporter::axisSpelling(AxisId A) const {
  auto It = TU.AxisSpelling.find(A);
  return It == TU.AxisSpelling.end() ? axisName(A) : It->second;
}

/// A value is reported once per function: a variable by its declaration,
/// anything else by its expression.
const void *Reporter::useKey(const Expr *E) const {
  if (const VarDecl *VD = namedVar(E, TU.Types))
    return VD;
  if (const BindingDecl *BD = namedBinding(E, TU.Types))
    return BD;
  return E;
}

Reporter::Note Reporter::originNote(const TypeOrigin &O, AxisId Axis) const {
  return {O.From.Loc,
          "type " + typeStr(O.Type) + " on axis '" + axisName(Axis) + "' " +
              originText(O.From.Kind),
          {}};
}

std::optional<Reporter::Note> Reporter::fixItNote(const SuggestedCollective &S,
                                                  AxisId Axis) const {
  SourceRange R = S.Target->getSourceRange();
  SourceLocation After =
      Lexer::getLocForEndOfToken(R.getEnd(), 0, SM, TU.Ctx.getLangOpts());
  if (After.isInvalid())
    return std::nullopt;
  std::string Op = opName(S.Call.op);
  std::string Tail = ", " + axisSpelling(Axis) + ", " +
                     spmdTypeSpelling(S.Call.src) + ", " +
                     spmdTypeSpelling(S.Call.dst) + ")";
  Note N;
  N.Loc = S.Target->getExprLoc();
  N.Text = "insert " + Op + "(..." + Tail + " to make " + describe(S.Target) +
           " " + typeStr(S.Result) + " on axis '" + axisName(Axis) + "'";
  N.FixIts.push_back(FixItHint::CreateInsertion(R.getBegin(), Op + "("));
  N.FixIts.push_back(FixItHint::CreateInsertion(After, Tail));
  return N;
}

void Reporter::handle(Problem P) {
  if (!isEnabled(P.Kind) || P.Loc.isInvalid())
    return;
  Pending D{P.Kind, P.Loc, P.Range, {}, {}};
  switch (P.code()) {
  case ProblemCode::NonConstantAxis:
  case ProblemCode::NonConstantSrc:
  case ProblemCode::NonConstantDst:
  case ProblemCode::IllegalCollective:
  case ProblemCode::CollectiveInput:
  case ProblemCode::AlreadyReduced:
  case ProblemCode::NoOpCollective:
  case ProblemCode::ReduceAxis:
  case ProblemCode::InPlace:
  case ProblemCode::MissingMeshAxis:
    renderCollective(P, D);
    break;
  case ProblemCode::OpType:
    renderOpType(P, D);
    break;
  case ProblemCode::Mismatch:
    renderMismatch(P, D);
    break;
  case ProblemCode::AssertMismatch:
  case ProblemCode::AssertShardDim:
  case ProblemCode::AssertPartial:
    renderAssert(P, D);
    break;
  case ProblemCode::RawC10d:
    renderRawC10d(P, D);
    break;
  case ProblemCode::OpaqueCall:
    renderOpaqueCall(P, D);
    break;
  case ProblemCode::PathConflict:
  case ProblemCode::UnknownUse:
  case ProblemCode::UnknownShard:
  case ProblemCode::UnknownLayout:
  case ProblemCode::UnannotatedCall:
    if (!renderUse(P, D))
      return;
    break;
  case ProblemCode::DivergentCollective:
    renderDivergent(P, D);
    break;
  }
  resultLayoutNotes(P, D);
  // A problem of one layout of a layer's flags ([[spmd::when]]).
  if (!P.Layout.empty()) {
    std::string Text = "in the layout where ";
    for (size_t I = 0; I < P.Layout.size(); ++I)
      Text += (I ? " and '" : "'") + P.Layout[I].first->getNameAsString() +
              "' is " + (P.Layout[I].second ? "true" : "false");
    D.Notes.push_back({P.Layout.front().first->getLocation(),
                       Text + " (the body is checked once per layout of "
                              "[[spmd::when]] / [[spmd::unless]])",
                       {}});
  }
  Buffer.push_back(std::move(D));
}

std::string Reporter::sourceText(const Expr *E) const {
  if (!E)
    return "";
  StringRef Text =
      Lexer::getSourceText(CharSourceRange::getTokenRange(E->getSourceRange()),
                           SM, TU.Ctx.getLangOpts());
  std::string Line = Text.split('\n').first.trim().str();
  if (Line.size() > 60 || Line.size() != Text.trim().size())
    Line = Line.substr(0, std::min<size_t>(Line.size(), 57)) + "...";
  return Line;
}

void Reporter::renderDivergent(const Problem &P, Pending &D) {
  const Divergence &B = P.divergentInfo().Branch;
  std::string Axis = axisName(*P.Axis);
  std::string Op = core::to_string(P.Op);
  std::string What =
      P.divergentInfo().Via && P.divergentInfo().Via->getIdentifier()
          ? "this call of '" + P.divergentInfo().Via->getNameAsString() +
                "' runs " + Op + " over axis '" + Axis + "'"
          : "'" + Op + "' over axis '" + Axis + "'" +
                (B.BackwardOnly ? " (a collective in its backward)" : "");
  D.Text = What + " may run on some ranks of '" + Axis + "' only: " +
           (B.Loop ? "the trip count of a loop around it"
                   : "a branch on the way to it") +
           " depends on a value that differs across '" + Axis +
           "'; every rank of '" + Axis +
           "' must call it, or the others wait for it forever (branch on a "
           "value that is the same on every rank of '" +
           Axis + "', or call it on every path)";
  if (B.Condition) {
    std::string Read;
    switch (B.Source) {
    case DivergenceSource::AxisRank:
      Read = "'" + sourceText(P.Subject) + "', this rank's index on '" + Axis +
             "'";
      break;
    case DivergenceSource::GlobalRank:
      Read = "'" + sourceText(P.Subject) +
             "', the global rank (it differs on every axis)";
      break;
    case DivergenceSource::TensorData:
      Read = "the values of a tensor that is " +
             (P.Actual ? typeStr(*P.Actual) : std::string("V")) + " on axis '" +
             Axis + "' ('" + sourceText(P.Subject) + "')";
      break;
    }
    D.Notes.push_back(
        {B.Condition->getExprLoc(), "this condition reads " + Read, {}});
  }
  if (P.divergentInfo().Via && P.Call)
    D.Notes.push_back({P.Call->getExprLoc(), "the collective is here", {}});
}

/// Problems whose text is a fixed sentence or the core's verdict.
void Reporter::renderCollective(const Problem &P, Pending &D) {
  switch (P.code()) {
  case ProblemCode::NonConstantAxis:
    D.Text = "the axis of " + opName(P.Op) +
             " must be a constant spmd::Axis (declared with SPMD_AXIS) for "
             "the static checker to follow the collective";
    return;
  case ProblemCode::NonConstantSrc:
  case ProblemCode::NonConstantDst:
    D.Text =
        std::string(P.code() == ProblemCode::NonConstantSrc ? "src" : "dst") +
        " of " + opName(P.Op) +
        " must be a constant expression (R, I, V, P or S(k)) for the "
        "static checker";
    return;
  case ProblemCode::MissingMeshAxis: {
    // The core writes the sentence, given the operand and the mesh as the
    // plugin names them.
    std::vector<std::string> Mesh(P.missingMeshAxisInfo().Mesh->Axes.begin(),
                                  P.missingMeshAxisInfo().Mesh->Axes.end());
    core::Status S = core::check_mesh_complete(
        P.missingMeshAxisInfo().Type, Mesh, describe(P.Subject),
        "the function's mesh [[spmd::mesh]]");
    // Transfer::checkMesh reported the problem because this same check
    // failed on the same type and mesh.
    if (S.ok())
      llvm_unreachable("MissingMeshAxis reported for a complete type");
    D.Text = oneLine(S.error().message);
    D.Notes.push_back(
        {P.missingMeshAxisInfo().Mesh->Loc, "mesh declared here", {}});
    addCoreAdvice(S.error(), D);
    return;
  }
  default:
    break;
  }
  if (P.code() == ProblemCode::AlreadyReduced)
    return renderAlreadyReduced(P, D);
  if (P.code() == ProblemCode::NoOpCollective)
    return renderNoOpCollective(P, D);
  if (P.code() == ProblemCode::ReduceAxis)
    return renderReduceAxis(P, D);
  D.Text = opMessage(P);
  if (P.code() != ProblemCode::CollectiveInput)
    return addCoreAdvice(*P.Error, D);
  D.Notes.push_back(originNote(P.Origins.front(), *P.Axis));
  if (!P.srcRepair().SrcArg)
    return addCoreAdvice(*P.Error, D);
  D.Notes.push_back({P.srcRepair().SrcArg->getExprLoc(),
                     "did you mean src = " + typeStr(*P.Actual) + "?",
                     {FixItHint::CreateReplacement(
                         CharSourceRange::getTokenRange(
                             P.srcRepair().SrcArg->getSourceRange()),
                         spmdTypeSpelling(*P.Actual))}});
}

/// A reduce (src P) of a value that is R or I: it holds no pending sum, so
/// the advice is to drop this reduce (a note at the first one when the
/// value came from one), not to make the value P again.
void Reporter::renderAlreadyReduced(const Problem &P, Pending &D) {
  PerAxisType Have = *P.Actual;
  std::string Ax = axisName(*P.Axis), Op = opName(P.Op);
  std::string What = describe(P.Subject);
  std::string Bare = core::to_string(P.Op);
  D.Text =
      opMessage(P) + ": " + What +
      (P.redundant().ReducedBefore ? " is already reduced (reducing it again"
                                   : " is no pending sum (reducing it") +
      " would add up " + Ax + "-size copies of it); remove this " + Bare;
  const TypeOrigin &O = P.Origins.front();
  if (P.redundant().ReducedBefore)
    D.Notes.push_back({O.From.Loc,
                       "reduced on axis '" + Ax + "' here already (type " +
                           typeStr(Have) + ")",
                       {}});
  else
    D.Notes.push_back(originNote(O, *P.Axis));
  // The repair: the input itself when it already has the result type
  // (all_reduce(x, tp, P, R) of an R x), else the conversion that gives
  // the result type without reducing (I -> R, R -> S(k)).
  std::optional<PerAxisType> Result = P.redundant().Dst;
  if (!Result)
    return;
  if (*Result == Have)
    return removeCallNote(P, D);
  llvm::StringRef XText = inputText(P);
  if (!isEditableRange(P.Call) || XText.empty())
    return;
  std::optional<core::CollectiveCall> Route =
      core::route_redistribute(Have, *Result);
  if (!Route)
    return;
  Route->expert_mode = false;
  if (!core::check_arguments(*Route).ok())
    return;
  std::string Replacement = opName(Route->op) + "(" + XText.str() + ", " +
                            axisSpelling(*P.Axis) + ", " +
                            spmdTypeSpelling(Route->src) + ", " +
                            spmdTypeSpelling(Route->dst) + ")";
  std::string NoteText = "replace this " + Op + " by " + opName(Route->op) +
                         "(..., " + axisSpelling(*P.Axis) + ", " +
                         spmdTypeSpelling(Route->src) + ", " +
                         spmdTypeSpelling(Route->dst) + "), which makes " +
                         What + " " + typeStr(*Result) + " without reducing it";
  D.Notes.push_back(
      {P.Call->getBeginLoc(),
       NoteText,
       {FixItHint::CreateReplacement(
           CharSourceRange::getTokenRange(P.Call->getSourceRange()),
           Replacement)}});
}

llvm::StringRef Reporter::inputText(const Problem &P) const {
  const Expr *X = P.Call->getArg(0);
  return Lexer::getSourceText(
      CharSourceRange::getTokenRange(X->getSourceRange()), SM,
      TU.Ctx.getLangOpts());
}

void Reporter::removeCallNote(const Problem &P, Pending &D) const {
  llvm::StringRef XText = inputText(P);
  if (!isEditableRange(P.Call) || XText.empty())
    return;
  D.Notes.push_back(
      {P.Call->getBeginLoc(),
       "remove this " + opName(P.Op) + " (" + describe(P.Subject) + " is " +
           typeStr(*P.Actual) + " already)",
       {FixItHint::CreateReplacement(
           CharSourceRange::getTokenRange(P.Call->getSourceRange()),
           XText.str())}});
}

/// A collective whose input already has its dst type: the src that would
/// accept the input makes it a no-op (reinterpret(x, tp, P, P)), so the
/// advice is to remove it, not to change src.
void Reporter::renderNoOpCollective(const Problem &P, Pending &D) {
  D.Text = opMessage(P) + ": " + describe(P.Subject) + " is " +
           typeStr(*P.Actual) + " already; remove this " +
           core::to_string(P.Op);
  D.Notes.push_back(originNote(P.Origins.front(), *P.Axis));
  removeCallNote(P, D);
}

/// A reduce over an axis where the value is no pending sum, of a value that
/// is P on one other axis: the axis is wrong (a dp gradient reduced over
/// tp), so the advice is that axis -- not the gather or the removal the
/// reduce's own axis would suggest.
void Reporter::renderReduceAxis(const Problem &P, Pending &D) {
  std::string Ax = axisName(*P.Axis),
              Want = axisName(P.reduceAxisInfo().PendingAxis);
  std::string What = describe(P.Subject), Bare = core::to_string(P.Op);
  D.Text = Bare + " over axis '" + Ax + "' of " + What + ", which is " +
           typeStr(*P.Actual) + " there (no pending sum): " + What +
           " is P on axis '" + Want + "', not '" + Ax + "'; reduce over '" +
           Want + "'";
  D.Notes.push_back(originNote(P.Origins[0], P.reduceAxisInfo().PendingAxis));
  D.Notes.push_back(originNote(P.Origins[1], *P.Axis));
  const Expr *AxisArg = P.Call->getNumArgs() > 1 ? P.Call->getArg(1) : nullptr;
  if (!AxisArg || !isEditableRange(AxisArg))
    return;
  std::string Spelled = axisSpelling(P.reduceAxisInfo().PendingAxis);
  D.Notes.push_back(
      {AxisArg->getExprLoc(),
       "reduce over '" + Want + "': pass " + Spelled + " as the axis",
       {FixItHint::CreateReplacement(
           CharSourceRange::getTokenRange(AxisArg->getSourceRange()),
           Spelled)}});
}

void Reporter::renderOpType(const Problem &P, Pending &D) {
  const core::TypeError &Err = *P.Error;
  D.Text = opMessage(P);
  for (const TypeOrigin &O : P.Origins) {
    Note N = originNote(O, *P.Axis);
    N.Text = describe(O.Operand) + " has " + N.Text;
    D.Notes.push_back(std::move(N));
  }
  std::optional<Note> Fix;
  if (P.Fix)
    Fix = fixItNote(*P.Fix, *P.Axis);
  if (Fix && P.Fix->Call.src.kind == TypeKind::Partial) {
    // Reducing an operand: say that it comes first, before the op (a
    // non-linear op, or an affine term, needs the full sum).
    std::string Op = writtenOpName(P.Call, SM, TU.Ctx.getLangOpts());
    std::string What = describe(P.Fix->Target);
    if (P.opTypeInfo().MovedReduce) {
      moveReduce(*P.Fix, P.opTypeInfo().MovedReduce, *Fix);
      Fix->Text = "reduce " + What + " before " + Op +
                  ", not after it: move the enclosing spmd::all_reduce onto " +
                  What;
    } else {
      Fix->Text = "reduce " + What + " before " + Op + ": " + Fix->Text;
    }
  }
  if (Fix)
    D.Notes.push_back(std::move(*Fix));
  else
    addCoreAdvice(Err, D);
}

/// Turns the fix-it note \p N (wrap the fix's target in the reduce) into a
/// move of \p Outer, the reduce that takes the op's result: its call is
/// removed around its input, and the target is wrapped in the same call.
void Reporter::moveReduce(const SuggestedCollective &S, const CallExpr *Outer,
                          Note &N) const {
  const LangOptions &LO = TU.Ctx.getLangOpts();
  const Expr *In = Outer->getArg(0);
  SourceLocation InEnd = Lexer::getLocForEndOfToken(In->getEndLoc(), 0, SM, LO);
  SourceLocation OuterEnd =
      Lexer::getLocForEndOfToken(Outer->getEndLoc(), 0, SM, LO);
  if (InEnd.isInvalid() || OuterEnd.isInvalid())
    return;
  // The outer call's own text after its input: ", tp, P, R)" as written.
  llvm::StringRef Tail = Lexer::getSourceText(
      CharSourceRange::getCharRange(InEnd, OuterEnd), SM, LO);
  llvm::StringRef Head = Lexer::getSourceText(
      CharSourceRange::getCharRange(Outer->getBeginLoc(), In->getBeginLoc()),
      SM, LO);
  if (Tail.empty() || Head.empty())
    return;
  N.FixIts.clear();
  N.FixIts.push_back(FixItHint::CreateRemoval(
      CharSourceRange::getCharRange(Outer->getBeginLoc(), In->getBeginLoc())));
  SourceRange R = S.Target->getSourceRange();
  N.FixIts.push_back(FixItHint::CreateInsertion(R.getBegin(), Head.str()));
  N.FixIts.push_back(FixItHint::CreateInsertion(
      Lexer::getLocForEndOfToken(R.getEnd(), 0, SM, LO), Tail.str()));
  N.FixIts.push_back(
      FixItHint::CreateRemoval(CharSourceRange::getCharRange(InEnd, OuterEnd)));
}

void Reporter::renderMismatch(const Problem &P, Pending &D) {
  const Destination &Dest = P.mismatchInfo().Dest;
  auto Quoted = [](const NamedDecl *ND) {
    return "'" + ND->getNameAsString() + "'";
  };
  std::string Subject, Target;
  switch (Dest.Kind) {
  case Destination::VarInit:
  case Destination::FieldInit:
    Subject = "initializer of " + Quoted(Dest.Decl);
    Target = Quoted(Dest.Decl) + " is declared";
    break;
  case Destination::VarAssign:
  case Destination::FieldAssign:
    Subject = "value assigned to " + Quoted(Dest.Decl);
    Target = Quoted(Dest.Decl) + " is declared";
    break;
  case Destination::Push:
    Subject = "value pushed into " + Quoted(Dest.Decl);
    Target = "the elements of " + Quoted(Dest.Decl) + " are declared";
    break;
  case Destination::Argument: {
    const ParmVarDecl *Param = Dest.Callee->getParamDecl(Dest.ParamIndex);
    // An unnamed argument (`k.contiguous()`) is named by its position.
    std::string Arg = describe(P.Subject);
    if (Arg == "this value")
      Arg = "#" + std::to_string(Dest.ParamIndex + 1);
    Subject = "argument " + Arg + " of " + Quoted(Dest.Callee);
    Target =
        "parameter " +
        (Param->getIdentifier() ? Quoted(Param)
                                : "#" + std::to_string(Dest.ParamIndex + 1)) +
        " is declared";
    break;
  }
  case Destination::Return:
    Subject = "returned value";
    Target = Quoted(Dest.Decl) + " is declared to return";
    break;
  case Destination::InPlaceResult:
    Subject = "result of the in-place operation";
    Target = describe(Dest.Mutated) + " is declared";
    break;
  }
  // S(k) of a tuple entry (spmd::spec({dp, tp}, ...)): say where in the
  // tuple, outer to inner, since the order is part of the type.
  std::string Where;
  if (P.Expected->is_shard()) {
    llvm::SmallVector<const AxisEntry *, 3> Tuple;
    for (const AxisEntry &E : Dest.Declared->Entries)
      if (E.Type.is_shard() && E.Type.dim == P.Expected->dim)
        Tuple.push_back(&E);
    llvm::stable_sort(Tuple, [](const AxisEntry *X, const AxisEntry *Y) {
      return X->Pos < Y->Pos;
    });
    if (Tuple.size() > 1) {
      Where = " (dim " + std::to_string(P.Expected->dim) + " split by (";
      for (size_t I = 0; I < Tuple.size(); ++I)
        Where += (I ? ", " : "") + Tuple[I]->Axis;
      Where += "), outer to inner)";
    }
  }
  std::string Actual = typeStr(*P.Actual);
  if (!P.mismatchInfo().ActualOrder.empty()) {
    Actual += " (dim " + std::to_string(P.Actual->dim) + " split by (";
    for (size_t I = 0; I < P.mismatchInfo().ActualOrder.size(); ++I)
      Actual += (I ? ", " : "") + axisName(P.mismatchInfo().ActualOrder[I]);
    Actual += "), outer to inner)";
  }
  D.Text = Subject + " has type " + Actual + " on axis '" + axisName(*P.Axis) +
           "', but " + Target + " " + typeStr(*P.Expected) + Where + " there";
  D.Notes.push_back(originNote(P.Origins.front(), *P.Axis));
  D.Notes.push_back(
      {Dest.Declared->Loc, "declared type is " + Dest.Declared->str(), {}});
  if (Dest.LayoutLoc.isValid() || Dest.Layout.Instance)
    layoutNotes(Dest.Layout, "the declared type of the parameter", D);
  if (P.Fix)
    if (std::optional<Note> Fix = fixItNote(*P.Fix, *P.Axis))
      D.Notes.push_back(std::move(*Fix));
}

/// Where a layout chose a declared type ([[spmd::when]]): at the member (or
/// local) the layer instance is, and at the constructor argument that set
/// its flag.
void Reporter::layoutNotes(const LayoutChoice &C, llvm::StringRef Chosen,
                           Pending &D) const {
  std::string Layout;
  if (C.Flag)
    Layout =
        "'" + C.Flag->getNameAsString() + "' = " + (C.Value ? "true" : "false");
  std::string Name =
      C.Instance ? "'" + C.Instance->getNameAsString() + "'" : "this instance";
  if (C.Instance)
    D.Notes.push_back({C.Instance->getLocation(),
                       Name + " is declared here; its layout" +
                           (Layout.empty() ? "" : " (" + Layout + ")") +
                           " chooses " + Chosen.str(),
                       {}});
  if (C.Where.isValid())
    D.Notes.push_back({C.Where,
                       "the layout of " + Name +
                           (Layout.empty() ? "" : " (" + Layout + ")") +
                           " is chosen by this constructor argument",
                       {}});
}

/// A note for each origin whose type is a call's result chosen by the
/// layout of the call's instance.
void Reporter::resultLayoutNotes(const Problem &P, Pending &D) const {
  for (const TypeOrigin &O : P.Origins) {
    if (O.From.Kind != OriginKind::CallResult)
      continue;
    auto It = TU.LayoutResults.find(O.From.Loc.getRawEncoding());
    if (It != TU.LayoutResults.end())
      layoutNotes(It->second, "the declared result type of this call", D);
  }
}

void Reporter::renderAssert(const Problem &P, Pending &D) {
  // The core's reason (for AssertShardDim: which dim it is sharded on).
  std::string Why = oneLine(P.Error->message);
  // The core compares local maps (V); the value is S(d) here (global mode).
  if (P.code() == ProblemCode::AssertMismatch && P.Actual->is_shard() &&
      P.Error->actual == "V") {
    size_t At = Why.find("has V");
    if (At != std::string::npos)
      Why.replace(At, 5, "has " + typeStr(*P.Actual));
  }
  D.Text = "spmd::assert_type: " + describe(P.Subject) + " has type " +
           typeStr(*P.Actual) + " on axis '" + axisName(*P.Axis) +
           "', but the assertion says " + typeStr(*P.Expected) + " (" + Why +
           ")";
  D.Notes.push_back(originNote(P.Origins.front(), *P.Axis));
  if (P.code() == ProblemCode::AssertPartial) {
    // The core's advice; with the asserted type as a fix-it when editable.
    addCoreAdvice(*P.Error, D);
    if (P.srcRepair().SrcArg)
      D.Notes.back().FixIts.push_back(FixItHint::CreateReplacement(
          CharSourceRange::getTokenRange(
              P.srcRepair().SrcArg->getSourceRange()),
          spmdTypeSpelling(*P.Actual)));
    return;
  }
  if (P.Fix)
    if (std::optional<Note> Fix = fixItNote(*P.Fix, *P.Axis))
      D.Notes.push_back(std::move(*Fix));
}

void Reporter::renderRawC10d(const Problem &P, Pending &D) {
  const FunctionDecl *FD = P.Call->getDirectCallee();
  std::string Raw = FD && FD->getIdentifier() ? FD->getName().str() : "?";
  D.Text = "raw c10d call ProcessGroup::" + Raw +
           " on a tensor with an SPMD type: the checker cannot tell which mesh "
           "axis the process group is";
  D.Notes.push_back({D.Loc,
                     "suggestion: call " + rawC10dWrapper(Raw).str() +
                         "(x, <axis>, src, dst), which states the axis and "
                         "the types",
                     {}});
}

void Reporter::renderOpaqueCall(const Problem &P, Pending &D) {
  const FunctionDecl *Callee =
      P.opaqueCallInfo().Callee; // null: an indirect call
  std::string Name = Callee ? "'" + Callee->getQualifiedNameAsString() + "'"
                            : describe(P.opaqueCallInfo().Callable);
  std::string Type, Annotation;
  for (const auto &[A, T] : P.opaqueCallInfo().SubjectType) {
    Type += (Type.empty() ? "" : ", ") + axisName(A) + ": " + typeStr(T);
    Annotation +=
        (Annotation.empty() ? "" : ", ") + axisName(A) + " = " + typeStr(T);
  }
  if (P.opaqueCallInfo().SubjectRank >= 0)
    Annotation +=
        ", spmd::rank(" + std::to_string(P.opaqueCallInfo().SubjectRank) + ")";
  // What is unknown after the call: its result, the tensors it may write.
  std::vector<std::string> Out;
  if (P.Call && TU.Types.isTracked(P.Call->getType()))
    Out.push_back("its result");
  std::vector<std::string> Written;
  for (const Expr *W : P.opaqueCallInfo().Written)
    if (std::string N = describe(W); !llvm::is_contained(Written, N))
      Written.push_back(N);
  if (!Written.empty()) {
    std::string W;
    for (size_t I = 0; I < Written.size(); ++I)
      W += (I == 0                    ? ""
            : I + 1 == Written.size() ? " and "
                                      : ", ") +
           Written[I];
    Out.push_back(W + " (which it may write)");
  }
  std::string Lost;
  if (!Out.empty())
    Lost = ", and " + (Out.size() == 2 ? Out[0] + " and " + Out[1] : Out[0]) +
           (Out.size() == 2 || Written.size() > 1 ? " are" : " is") +
           " unknown after the call";
  D.Text = (Callee ? "call of " + Name +
                         ", which has no SPMD annotation and no body the "
                         "checker analyses, "
                   : "call through " + Name +
                         ", whose target the checker cannot tell, ") +
           "with " + describe(P.Subject) + " of type {" + Type +
           "}: the types it expects are not checked" + Lost +
           (Callee ? "; annotate its declaration with [[spmd::type(...)]]"
                   : "; let it hold one annotated function (a local never "
                     "reassigned, or a member every constructor sets to the "
                     "same function), or annotate the member with "
                     "[[spmd::op(kind)]]");
  if (!Callee)
    return; // no declaration to show the annotation at
  const ParmVarDecl *Param =
      P.opaqueCallInfo().ParamIndex < Callee->getNumParams()
          ? Callee->getParamDecl(P.opaqueCallInfo().ParamIndex)
          : nullptr;
  std::string ParamText = "SPMD_TYPE(" + Annotation + ")";
  if (Param && Param->getIdentifier())
    ParamText += " on parameter '" + Param->getNameAsString() + "'";
  D.Notes.push_back(
      {Param ? Param->getLocation() : Callee->getLocation(),
       "annotate the tensor parameters (and the result) of " + Name +
           " with the types it expects, e.g. " + ParamText +
           " for the type passed here; or call it from a wrapper marked "
           "SPMD_UNCHECKED whose parameters and result carry SPMD_TYPE(...)",
       {}});
}

/// A call whose result type depends on layout flags that are not known for
/// its instance: which flags, why (an argument that is not a constant), the
/// types each value would give, and the two ways out.
void Reporter::renderUnknownLayout(const Problem &P, Pending &D) {
  std::string Flags;
  for (size_t I = 0; I < P.unknownLayoutInfo().UnknownFlags.size(); ++I)
    Flags += (I ? ", '" : "'") +
             P.unknownLayoutInfo().UnknownFlags[I].first->getNameAsString() +
             "'";
  bool One = P.unknownLayoutInfo().UnknownFlags.size() == 1;
  std::string Inst =
      P.unknownLayoutInfo().Instance
          ? "'" + P.unknownLayoutInfo().Instance->getNameAsString() + "'"
          : std::string("the instance");
  std::string Axes, Types;
  for (size_t I = 0; I < P.unknownLayoutInfo().LayoutTypes.size(); ++I) {
    auto [A, Off, On] = P.unknownLayoutInfo().LayoutTypes[I];
    Axes += (I ? ", '" : "'") + axisName(A) + "'";
    Types += (I ? "; " : "") + axisName(A) + " = " + typeStr(Off) +
             " if false, " + typeStr(On) + " if true";
  }
  std::string Callee =
      P.unknownLayoutInfo().CalleeDecl
          ? "'" + P.unknownLayoutInfo().CalleeDecl->getNameAsString() + "'"
          : std::string("this call");
  D.Text = "the result of " + Callee + " has an unknown SPMD type" +
           (Axes.empty() ? "" : " on axis " + Axes) +
           ": it depends on the layout flag" + (One ? " " : "s ") + Flags +
           " of " + Inst + ", which " + (One ? "is" : "are") +
           " not a compile-time constant here" +
           (Types.empty() ? "" : " (" + Types + ")") + "; construct " + Inst +
           " with a constant (a literal, a constexpr variable or a template "
           "parameter), or state the result's type with spmd::assert_type or "
           "[[spmd::type(...)]] on the variable that holds it";
  for (const auto &[Flag, Where] : P.unknownLayoutInfo().UnknownFlags) {
    if (Where.isValid())
      D.Notes.push_back({Where,
                         "'" + Flag->getNameAsString() +
                             "' is set from this argument, which is not a "
                             "compile-time constant",
                         {}});
    else if (P.unknownLayoutInfo().Instance)
      D.Notes.push_back({P.unknownLayoutInfo().Instance->getLocation(),
                         Inst +
                             " is declared here; its constructions do not "
                             "give '" +
                             Flag->getNameAsString() +
                             "' one constant value (or it is not constructed "
                             "where the checker can see it)",
                         {}});
  }
}

/// Global mode: the V is known, where it is sharded is not (the core's
/// sharding propagation could not decide, or the rank is missing).
void Reporter::renderUnknownShard(const Problem &P, Pending &D) {
  std::string Ax = axisName(*P.Axis);
  // The core's repair (an operand to declare S(k) or to give a rank) is
  // the advice when it has one; else: state the dim of the value.
  std::string Advice =
      P.Error && !P.Error->fix.empty()
          ? oneLine(P.Error->fix)
          : "annotate it with [[spmd::type(" + Ax +
                " = S(i))]] or spmd::assert_type, or give its rank with "
                "spmd::rank(n)";
  D.Text = describe(P.Subject) + " is sharded on axis '" + Ax +
           "' on an unknown dim (global mode): " +
           (P.Error ? oneLine(P.Error->message) : std::string("")) + "; " +
           Advice;
  if (!P.Origins.empty() && P.Origins.front().From.Loc.isValid())
    D.Notes.push_back(originNote(P.Origins.front(), *P.Axis));
}

/// The result of a function that declares no result type, used at the call.
void Reporter::renderUnannotatedCall(const Problem &P, Pending &D) {
  std::string Name =
      "'" + P.unknownLayoutInfo().CalleeDecl->getNameAsString() + "'";
  D.Text = "the result of " + Name + " has an unknown SPMD type: " + Name +
           " declares no [[spmd::type]] for its result, so neither this "
           "value nor what is computed from it is checked; annotate " +
           Name + " or state the type here with spmd::assert_type";
  D.Notes.push_back({P.unknownLayoutInfo().CalleeDecl->getLocation(),
                     Name + " is declared here without a result type",
                     {}});
}

/// A value of unknown type used; a variable holding the result of a
/// function that declares no result type names the function (the
/// boundary), with a note at it.
void Reporter::renderUnknownUse(const Problem &P, Pending &D) {
  const VarDecl *VD = namedVar(P.Subject, TU.Types);
  const Expr *Init =
      VD && VD->getInit() ? skipTransparent(VD->getInit(), TU.Types) : nullptr;
  const auto *CE = dyn_cast_or_null<CallExpr>(Init);
  const FunctionDecl *F = CE ? CE->getDirectCallee() : nullptr;
  if (F && F->getIdentifier() && !TU.isAnnotated(F) &&
      !isInLibraryNamespace(F) && !SM.isInSystemHeader(F->getLocation())) {
    std::string Name = "'" + F->getNameAsString() + "'";
    D.Text = describe(P.Subject) + " has an unknown SPMD type: it holds " +
             "the result of " + Name +
             ", which declares no [[spmd::type]] for its result; annotate " +
             Name + " or state the type with spmd::assert_type";
    D.Notes.push_back({F->getLocation(),
                       Name + " is declared here without a result type",
                       {}});
    return;
  }
  D.Text = describe(P.Subject) +
           " has an unknown SPMD type; annotate it with [[spmd::type(...)]] "
           "or spmd::assert_type";
}

/// Path conflicts and unknown values: the first use in a function only.
bool Reporter::renderUse(const Problem &P, Pending &D) {
  const void *Key = useKey(P.Subject);
  switch (P.code()) {
  case ProblemCode::UnknownShard:
    if (!ReportedUnknownShards.insert({Key, *P.Axis}).second)
      return false;
    renderUnknownShard(P, D);
    return true;
  case ProblemCode::UnannotatedCall:
  case ProblemCode::UnknownLayout:
  case ProblemCode::UnknownUse:
    if (!ReportedUnknown.insert(Key).second)
      return false;
    if (P.code() == ProblemCode::UnannotatedCall)
      renderUnannotatedCall(P, D);
    else if (P.code() == ProblemCode::UnknownLayout)
      renderUnknownLayout(P, D);
    else
      renderUnknownUse(P, D);
    return true;
  default:
    break;
  }
  if (!ReportedConflicts.insert({Key, *P.Axis}).second)
    return false;
  const TypeOrigin &A = P.Origins[0], &B = P.Origins[1];
  D.Text = describe(P.Subject) + " has type " + typeStr(A.Type) + " on axis '" +
           axisName(*P.Axis) + "' on one path and " + typeStr(B.Type) +
           " on another; make every path (branch or loop iteration) leave it "
           "with the same type";
  D.Notes.push_back(originNote(A, *P.Axis));
  D.Notes.push_back(originNote(B, *P.Axis));
  if (const Expr *Size = P.pathConflictInfo().UndeclaredSize)
    D.Notes.push_back(
        {Size->getExprLoc(),
         "if '" + sourceText(Size) +
             "' is the number of ranks of an axis, declare it: "
             "SPMD_AXIS_SIZE(axis) on the accessor, variable or data member "
             "it comes from, or SPMD_AXIS_GROUP(axis) on the process group "
             "it is read from; a branch taken only on one rank then "
             "conflicts with no other path",
         {}});
  return true;
}

unsigned Reporter::flush() {
  std::sort(Buffer.begin(), Buffer.end(),
            [&](const Pending &A, const Pending &B) {
              if (A.Loc == B.Loc)
                return A.Text < B.Text;
              return SM.isBeforeInTranslationUnit(A.Loc, B.Loc);
            });
  unsigned Count = 0;
  std::set<std::tuple<unsigned, unsigned, std::string>> Seen;
  unsigned NoteID = DE.getCustomDiagID(DiagnosticsEngine::Note, "%0");
  for (const Pending &D : Buffer) {
    // Instantiations of one template report the same problem at the same
    // place; say it once, in the template's terms.
    if (!Seen.insert({unsigned(D.Kind), D.Loc.getRawEncoding(), D.Text}).second)
      continue;
    DiagnosticsEngine::Level L = DiagnosticsEngine::Error;
    if (TU.Opts.severity(D.Kind) == Severity::Warning) {
      // Custom diagnostics cannot be remapped by -W flags in Clang 19, so
      // -w and -Werror are applied here.
      if (DE.getIgnoreAllWarnings())
        continue;
      L = DE.getWarningsAsErrors() ? DiagnosticsEngine::Error
                                   : DiagnosticsEngine::Warning;
    }
    unsigned ID = DE.getDiagnosticIDs()->getCustomDiagID(
        static_cast<DiagnosticIDs::Level>(L), format());
    DE.Report(D.Loc, ID) << D.Text << unsigned(D.Kind) << D.Range;
    for (const Note &N : D.Notes) {
      if (N.Loc.isInvalid())
        continue;
      auto B = DE.Report(N.Loc, NoteID);
      B << N.Text;
      for (const FixItHint &F : N.FixIts)
        B << F;
    }
    ++Count;
  }
  Buffer.clear();
  return Count;
}

} // namespace spmd::plugin
