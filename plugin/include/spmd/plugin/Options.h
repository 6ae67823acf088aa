//===- Options.h - spmd-check options and diagnostic kinds ------*- C++ -*-===//
//
// The settings of one run of the SPMD checker: strict mode and the severity of
// each diagnostic kind. Shared by the Clang plugin (plugin arguments), the
// standalone spmd-check tool and spmd-clangd (command-line flags).
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_OPTIONS_H
#define SPMD_PLUGIN_OPTIONS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace spmd::plugin {

/// The kinds of analysis diagnostic. Each kind has a stable name (printed at
/// the end of every message as "[spmd:<name>]") and an adjustable severity.
/// Attribute errors are not in this list: a malformed annotation is always an
/// error, like any other ill-formed declaration.
enum class DiagKind : unsigned {
  CollectiveArgument, ///< "collective-argument": illegal src/dst or options.
  CollectiveInput,    ///< "collective-input": input type differs from src.
  OpType,             ///< "op-type": an ordinary tensor op mixes types.
  InPlace,            ///< "inplace": an in-place op changes a tensor's type.
  MeshCompleteness,   ///< "mesh": an operand lacks an axis of [[spmd::mesh]].
  Assignment,         ///< "assignment": value differs from a declared type.
  CallArgument,       ///< "call-argument": argument differs from a parameter.
  ReturnType,         ///< "return": returned value differs from the result.
  AssertType,         ///< "assert-type": spmd::assert_type contradicts.
  PathConflict,       ///< "path-conflict": paths disagree at a merge.
  UnknownType,        ///< "unknown-type": strict mode, unknown tensor used.
};
inline constexpr unsigned NumDiagKinds = 11;

/// Stable name of a kind ("collective-input", ...).
llvm::StringRef diagKindName(DiagKind K);
/// Inverse of diagKindName; std::nullopt for an unknown name.
std::optional<DiagKind> parseDiagKind(llvm::StringRef Name);

/// What a diagnostic of some kind becomes.
enum class Severity { Ignored, Warning, Error };

/// Settings of one checker run.
struct Options {
  /// Strict mode: the first use of a tensor of unknown SPMD type in a checked
  /// function is reported (kind unknown-type). Off by default: unknown flows
  /// silently.
  bool Strict = false;
  /// Analyse functions declared in system headers too (off: they are skipped,
  /// which keeps the cost on libtorch-including files near zero).
  bool AnalyzeSystemHeaders = false;
  /// Print one line of statistics (functions analysed, time) to stderr.
  bool Stats = false;
  /// Severity per DiagKind; unknown-type defaults to a warning, everything
  /// else to an error.
  std::array<Severity, NumDiagKinds> Severities;

  Options();
  Severity severity(DiagKind K) const {
    return Severities[static_cast<unsigned>(K)];
  }

  /// Applies plugin arguments, in order:
  ///   strict                  enable strict mode
  ///   system-headers          analyse functions in system headers
  ///   stats                   print analysis statistics to stderr
  ///   warn=<kind>|all         report <kind> as a warning
  ///   error=<kind>|all        report <kind> as an error
  ///   ignore=<kind>|all       do not report <kind>
  /// Returns false and sets \p Err (naming the bad argument and listing the
  /// accepted ones) on an unknown argument or kind.
  bool parseArgs(llvm::ArrayRef<std::string> Args, std::string &Err);
};

/// The spmd-check arguments in Clang's plugin-argument map
/// (FrontendOptions::PluginArgs, plugin name -> arguments), appended to
/// \p Out in order. The driver turns `-fplugin-arg-spmd-check-<arg>` into
/// plugin "spmd", argument "check-<arg>" (a plugin name ends at the first
/// '-'), and `-Xclang -plugin-arg-spmd-check -Xclang <arg>` into plugin
/// "spmd-check", argument "<arg>". Any other argument of plugin "spmd" (e.g.
/// `-fplugin-arg-spmd-strict`) and any plugin name that starts with "spmd"
/// (`-fplugin-arg-spmdcheck-strict`) is a misspelling that Clang would
/// silently drop: returns false with \p Err naming it, its right spelling
/// and the accepted arguments.
bool collectPluginArgs(
    const std::map<std::string, std::vector<std::string>> &PluginArgs,
    std::vector<std::string> &Out, std::string &Err);

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_OPTIONS_H
