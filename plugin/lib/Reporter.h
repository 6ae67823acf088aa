//===- Reporter.h - the SPMD checker's words ---------------------*- C++
//-*-===//
//
// The only place that writes English: turns each Problem into a diagnostic
// with its notes and fix-its, buffers them, and at the end of the translation
// unit sorts them by location, drops repeats (template instantiations report
// the same problem at the same place) and emits them -- as Clang's
// AnalysisBasedWarnings does for ThreadSafety.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_LIB_REPORTER_H
#define SPMD_PLUGIN_LIB_REPORTER_H

#include "Problems.h"
#include "Transfer.h"

#include "clang/Basic/Diagnostic.h"
#include "llvm/ADT/DenseSet.h"

#include <set>
#include <string>
#include <vector>

namespace spmd::plugin {

/// Renders problems and emits them through a DiagnosticsEngine.
class Reporter : public ProblemHandler {
public:
  Reporter(clang::DiagnosticsEngine &DE, TUContext &TU);

  bool isEnabled(DiagKind K) const override {
    return TU.Opts.severity(K) != Severity::Ignored;
  }
  void beginFunction(const clang::FunctionDecl *FD) override;
  void handle(Problem P) override;

  /// Emits the buffered diagnostics in source order; returns how many.
  unsigned flush();

  /// The custom diagnostic format of every analysis diagnostic:
  /// "%0 [spmd:%select{<kind names>}1]" -- the kind travels as argument 1.
  static llvm::StringRef format();

private:
  struct Note {
    clang::SourceLocation Loc;
    std::string Text;
    llvm::SmallVector<clang::FixItHint, 2> FixIts;
  };
  struct Pending {
    DiagKind Kind;
    clang::SourceLocation Loc;
    clang::SourceRange Range;
    std::string Text;
    llvm::SmallVector<Note, 3> Notes;
  };

  // One renderer per family of problems.
  void renderCollective(const Problem &P, Pending &D);
  void renderAlreadyReduced(const Problem &P, Pending &D);
  /// A collective whose input has its dst type already: remove it.
  void renderNoOpCollective(const Problem &P, Pending &D);
  /// The source text of the input (first argument) of \p P's call.
  llvm::StringRef inputText(const Problem &P) const;
  /// A note with a fix-it replacing \p P's call by its input (the input
  /// is its result type already); none when the call is not editable.
  void removeCallNote(const Problem &P, Pending &D) const;
  void renderReduceAxis(const Problem &P, Pending &D);
  void renderOpType(const Problem &P, Pending &D);
  void renderMismatch(const Problem &P, Pending &D);
  void renderAssert(const Problem &P, Pending &D);
  void renderRawC10d(const Problem &P, Pending &D);
  void renderOpaqueCall(const Problem &P, Pending &D);
  bool renderUse(const Problem &P, Pending &D);
  void renderUnknownLayout(const Problem &P, Pending &D);
  void renderUnknownShard(const Problem &P, Pending &D);
  void renderUnannotatedCall(const Problem &P, Pending &D);
  void renderUnknownUse(const Problem &P, Pending &D);
  void renderDivergent(const Problem &P, Pending &D);
  /// The source text of \p E, shortened to one line.
  std::string sourceText(const clang::Expr *E) const;

  void addCoreAdvice(const core::TypeError &E, Pending &D);
  std::string opMessage(const Problem &P) const;
  Note originNote(const TypeOrigin &O, AxisId Axis) const;
  std::optional<Note> fixItNote(const SuggestedCollective &S,
                                AxisId Axis) const;
  void layoutNotes(const LayoutChoice &C, llvm::StringRef Chosen,
                   Pending &D) const;
  void resultLayoutNotes(const Problem &P, Pending &D) const;
  void moveReduce(const SuggestedCollective &S, const clang::CallExpr *Outer,
                  Note &N) const;
  std::string describe(const clang::Expr *E) const;
  std::string axisName(AxisId A) const { return TU.Axes.name(A).str(); }
  std::string axisSpelling(AxisId A) const;
  const void *useKey(const clang::Expr *E) const;

  clang::DiagnosticsEngine &DE;
  TUContext &TU;
  const clang::SourceManager &SM;
  std::vector<Pending> Buffer;
  /// Per function: the conflicts and unknown values already reported (the
  /// first use of a value is enough).
  std::set<std::pair<const void *, AxisId>> ReportedConflicts;
  llvm::DenseSet<const void *> ReportedUnknown;
  std::set<std::pair<const void *, AxisId>> ReportedUnknownShards;
};

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_LIB_REPORTER_H
