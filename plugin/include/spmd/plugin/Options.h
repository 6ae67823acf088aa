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
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace spmd::plugin {

/// What a diagnostic of some kind becomes.
enum class Severity { Ignored, Warning, Error };

/// The kinds of analysis diagnostic (listed in DiagKinds.def). Each kind has a
/// stable name (printed at the end of every message as "[spmd:<name>]") and
/// an adjustable severity. Attribute errors are not in this list: a malformed
/// annotation is always an error, like any other ill-formed declaration.
enum class DiagKind : unsigned {
#define SPMD_DIAG_KIND(Enum, Name, Sev, Short, Full) Enum,
#include "spmd/plugin/DiagKinds.def"
};
/// The number of DiagKinds.
inline constexpr unsigned NumDiagKinds = 0
#define SPMD_DIAG_KIND(Enum, Name, Sev, Short, Full) +1
#include "spmd/plugin/DiagKinds.def"
    ;

/// Stable name of a kind ("collective-input", ...).
llvm::StringRef diagKindName(DiagKind K);
/// Inverse of diagKindName; std::nullopt for an unknown name.
std::optional<DiagKind> parseDiagKind(llvm::StringRef Name);
/// The severity of \p K when no argument changes it.
Severity defaultSeverity(DiagKind K);
/// One line describing \p K (a SARIF rule's shortDescription).
llvm::StringRef diagKindSummary(DiagKind K);
/// A few sentences describing \p K (a SARIF rule's fullDescription).
llvm::StringRef diagKindDescription(DiagKind K);
/// "collective-argument, collective-input, ..." (every name, in order), for
/// --help texts and error messages.
llvm::StringRef diagKindList();

/// Settings of one checker run.
struct Options {
  /// Strict mode: the first use of a tensor of unknown SPMD type in a checked
  /// function is reported (kind unknown-type). Off by default: unknown flows
  /// silently.
  bool Strict = false;
  /// With Strict in global mode: a shard dim that an op lost (a view, a
  /// missing rank) is also reported where the dim matters (an op with a dim
  /// argument, a contraction, a parameter, return or variable declared S(k)).
  /// Set by parseArgs: part of strict (plugin argument strict; strict-shards
  /// is an alias) unless no-strict-shards opts out; docs/plugin.md "Strict
  /// mode".
  bool StrictShards = false;
  /// The plugin argument no-strict-shards: strict without StrictShards (for
  /// code that does not give every rank yet).
  bool NoStrictShards = false;
  /// Global mode (docs/plugin.md "Global mode"): S(i) keeps its shard dim,
  /// collectives check it, ops propagate it (core sharding_propagation.h),
  /// and a known shard is not accepted where a pending sum P is expected.
  bool Global = false;
  /// With Global: the mesh axes that keep local semantics (spec §12.5's
  /// local_axes; S(i) on them reads as V, nothing is propagated).
  std::vector<std::string> LocalAxes;
  /// Whether \p Axis is checked globally.
  bool isGlobalAxis(llvm::StringRef Axis) const {
    return Global && llvm::none_of(LocalAxes, [&](const std::string &L) {
             return Axis == L;
           });
  }
  /// Analyse functions declared in system headers too (off: they are skipped,
  /// which keeps the cost on libtorch-including files near zero).
  bool AnalyzeSystemHeaders = false;
  /// Print one line of statistics (functions analysed, time) to stderr.
  bool Stats = false;
  /// Severity per DiagKind (defaults: DiagKinds.def).
  std::array<Severity, NumDiagKinds> Severities;

  Options();
  Severity severity(DiagKind K) const {
    return Severities[static_cast<unsigned>(K)];
  }

  /// Applies plugin arguments, in order:
  ///   strict                  enable strict mode (in global mode with the
  ///                           lost shard dims: StrictShards)
  ///   strict-shards           the same (an alias kept from when it was
  ///                           opt-in)
  ///   no-strict-shards        strict mode without the lost shard dims
  ///   system-headers          analyse functions in system headers
  ///   stats                   print analysis statistics to stderr
  ///   warn=<kind>|all         report <kind> as a warning
  ///   error=<kind>|all        report <kind> as an error
  ///   ignore=<kind>|all       do not report <kind>
  /// Returns false and sets \p Err (naming the bad argument and listing the
  /// accepted ones) on an unknown argument or kind.
  bool parseArgs(llvm::ArrayRef<std::string> Args, std::string &Err);

private:
  /// parseArgs's loop over \p Args (StrictShards is set after it).
  bool parseEach(llvm::ArrayRef<std::string> Args, std::string &Err);
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
