//===- Analysis.h - run the SPMD analysis on one compile command -*- C++
//-*-===//
//
// The one place where the tools call the analysis library: a libTooling
// frontend action whose consumer is spmd::plugin::createSPMDCheckConsumer,
// run on a compile command taken from a compilation database (GCC command
// lines included) over a virtual file system (the editor's unsaved text).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TOOLS_ANALYSIS_H
#define SPMD_TOOLS_ANALYSIS_H

#include "spmd/plugin/Options.h"

#include "clang/Basic/Diagnostic.h"
#include "clang/Tooling/ArgumentsAdjusters.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/Support/VirtualFileSystem.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace spmd::tools {

/// Removes the arguments that Clang's driver does not know (GCC-only flags
/// such as -fconcepts-diagnostics-depth=N), which would otherwise stop the
/// compile with "unknown argument".
clang::tooling::ArgumentsAdjuster getStripUnknownArgumentsAdjuster();

/// The adjustments applied to every compile command from a database: strip
/// outputs, dependency files, compiler plugins (the analysis is linked in)
/// and unknown (GCC-only) flags, check syntax only,
/// silence warnings about GCC's warning options, and point the frontend at
/// the builtin headers of the Clang the tools are linked with (a tool outside
/// the LLVM tree cannot find them next to its own binary).
clang::tooling::ArgumentsAdjuster getSpmdArgumentsAdjuster();

/// Where the time of one analysis went.
struct AnalysisTiming {
  /// Wall time of the whole frontend run (preprocess, parse, Sema, analysis).
  double TotalMs = 0;
  /// CPU time of the calling thread for the same run: unlike wall time, it
  /// does not grow when other processes share the cores.
  double TotalCpuMs = 0;
  /// Wall time inside the analysis library's ASTConsumer (the checker
  /// proper, after parsing).
  double AnalysisMs = 0;
  /// With a PreambleCache: what happened to the preamble.
  enum class PreambleUse { None, Built, Reused } Preamble = PreambleUse::None;
  /// The run was cancelled (its diagnostics are incomplete).
  bool Cancelled = false;
};

/// The parsed preamble of one document (the #include block at its top,
/// precompiled in memory), reused across re-checks while it stays valid, as
/// clangd does. Used only when sound: the annotations live outside the AST
/// (spmd::plugin::AnnotationTable), so a precompiled preamble cannot carry
/// them; a preamble in which any [[spmd::...]] attribute was parsed is not
/// used and the document is parsed whole instead.
///
/// Not thread-safe: one cache per document, used by one thread at a time.
class PreambleCache {
public:
  PreambleCache();
  ~PreambleCache();
  struct State;

private:
  friend bool runAnalysis(const clang::tooling::CompileCommand &,
                          llvm::ArrayRef<std::string>,
                          llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>,
                          clang::DiagnosticConsumer &, AnalysisTiming *,
                          std::vector<std::string> *, PreambleCache *,
                          const std::atomic<bool> *);
  std::unique_ptr<State> S;
};

/// The spmd-check plugin arguments in a compile command
/// (-fplugin-arg-spmd-check-<arg>), in order: a build that loads the plugin
/// configures it there, and the tools follow that configuration.
std::vector<std::string>
pluginArgumentsOf(const clang::tooling::CommandLineArguments &Args);

/// Runs the SPMD analysis for \p Command (adjusted by
/// getSpmdArgumentsAdjuster) with the options given by the command's own
/// plugin arguments followed by \p PluginArgs (the tool's, which therefore
/// win), reading files through \p FS
/// (whose working directory is set to the command's directory), and reports
/// every diagnostic to \p Consumer. Returns false when the compile could not
/// run or Clang reported errors. Invalid plugin arguments in the command are
/// skipped (the build's compiler reports them); \p PluginArgs must be valid.
///
/// With \p Preamble, the document's preamble is precompiled once and
/// reused while its text, its headers and the command are unchanged.
/// When \p FilesRead is given, the absolute paths of every file the frontend
/// read (the source and its headers) are appended to it, for a depfile.
///
/// When \p Cancelled is given and becomes true (from another thread), the
/// run stops early: the frontend stops reading files (a missing header is a
/// fatal error, after which Clang includes nothing more and instantiates no
/// template), stops parsing at the next top-level declaration and skips the
/// checker; a preamble built meanwhile is dropped. The diagnostics reported
/// so far are incomplete; Timing->Cancelled says so and the result is false.
///
/// Thread-safe: concurrent calls must use distinct file systems.
bool runAnalysis(const clang::tooling::CompileCommand &Command,
                 llvm::ArrayRef<std::string> PluginArgs,
                 llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS,
                 clang::DiagnosticConsumer &Consumer,
                 AnalysisTiming *Timing = nullptr,
                 std::vector<std::string> *FilesRead = nullptr,
                 PreambleCache *Preamble = nullptr,
                 const std::atomic<bool> *Cancelled = nullptr);

/// Makes sure the analysis library's attribute handlers are instantiated;
/// call once before running analyses on several threads.
void initializeAnalysis();

} // namespace spmd::tools

#endif // SPMD_TOOLS_ANALYSIS_H
