//===- Diagnostics.h - diagnostics collected by the SPMD tools --*- C++ -*-===//
//
// spmd-check and spmd-clangd run the analysis library (spmd_analysis) inside a
// libTooling frontend and need its diagnostics as data, after the
// SourceManager is gone: to print JSON and SARIF, and to translate them into
// LSP diagnostics. DiagnosticCollector turns Clang diagnostics into Diag
// records, keeping the SPMD diagnostics (and the compiler's errors, without
// which a file cannot be checked) and dropping the compiler's other warnings.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TOOLS_DIAGNOSTICS_H
#define SPMD_TOOLS_DIAGNOSTICS_H

#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/LangOptions.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace spmd::tools {

/// A position in a source file. Lines and columns are 1-based; Column counts
/// bytes (Clang's columns), Utf16Column and Utf32Column count UTF-16 code
/// units and code points on the same line (LSP and SARIF columns).
struct Position {
  unsigned Line = 0;
  unsigned Column = 0;
  unsigned Utf16Column = 0;
  unsigned Utf32Column = 0;
  bool isValid() const { return Line != 0; }
};

/// A half-open range [Begin, End) within one file.
struct Range {
  Position Begin;
  Position End;
};

/// A fix-it: replace Where (in File) by Replacement.
struct FixIt {
  std::string File;
  Range Where;
  std::string Replacement;
};

/// One diagnostic with its notes.
struct Diag {
  enum class Level { Note, Remark, Warning, Error, Fatal };
  Level Severity = Level::Error;
  /// The message (for an analysis diagnostic, without the "[spmd:<kind>]"
  /// that text output appends).
  std::string Message;
  /// "spmd:<kind>" for an analysis diagnostic with a kind,
  /// "spmd:annotation" for other diagnostics of the analysis library
  /// (malformed annotations), "clang-diagnostic-error" for compiler errors;
  /// empty for notes.
  std::string Rule;
  /// Absolute path of the file; empty for a diagnostic without a location
  /// (e.g. the driver's).
  std::string File;
  Position Loc;
  /// Highlighted ranges, in File.
  std::vector<Range> Ranges;
  std::vector<FixIt> FixIts;
  /// Notes attached to this diagnostic (empty for a note).
  std::vector<Diag> Notes;
  /// Whether Loc is in the main file of the translation unit. When it is
  /// not, MainFileLoc is the #include directive through which File was
  /// reached (what an editor showing the main file can point at).
  bool InMainFile = false;
  Position MainFileLoc;

  bool isError() const {
    return Severity == Level::Error || Severity == Level::Fatal;
  }
};

/// "error", "warning", "note", "remark" ("error" for fatal).
llvm::StringRef levelName(Diag::Level L);

/// Collects diagnostics into Diag records; optionally forwards the kept ones
/// to another consumer (a TextDiagnosticPrinter for Clang-style text).
///
/// Kept: the analysis diagnostics (plugin::diagKindOf), any custom diagnostic
/// (the analysis library registers its own IDs), compiler errors, and the notes
/// that follow a kept diagnostic. Dropped: the compiler's warnings and remarks,
/// which belong to the build, not to this checker.
class DiagnosticCollector : public clang::DiagnosticConsumer {
public:
  explicit DiagnosticCollector(std::vector<Diag> &Out,
                               clang::DiagnosticConsumer *Forward = nullptr)
      : Out(Out), Forward(Forward) {}

  void BeginSourceFile(const clang::LangOptions &LangOpts,
                       const clang::Preprocessor *PP) override;
  void EndSourceFile() override;
  void finish() override;
  void HandleDiagnostic(clang::DiagnosticsEngine::Level Level,
                        const clang::Diagnostic &Info) override;

  /// The number of kept errors (fatal included) and warnings so far.
  unsigned errors() const { return KeptErrors; }
  unsigned warnings() const { return KeptWarnings; }

private:
  std::vector<Diag> &Out;
  clang::DiagnosticConsumer *Forward;
  clang::LangOptions LangOpts;
  bool LastKept = false;
  unsigned KeptErrors = 0;
  unsigned KeptWarnings = 0;
};

} // namespace spmd::tools

#endif // SPMD_TOOLS_DIAGNOSTICS_H
