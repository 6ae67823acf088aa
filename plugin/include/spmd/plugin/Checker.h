//===- Checker.h - entry points of the SPMD static checker ------*- C++ -*-===//
//
// The analysis library (spmd_analysis) behind the Clang plugin, the
// standalone spmd-check tool and spmd-clangd. Clients either add the consumer
// returned by createSPMDCheckConsumer to their frontend action (the plugin
// and the tools do), or call checkTranslationUnit on a parsed AST.
//
// The [[spmd::...]] attributes are registered with Clang by this library
// (ParsedAttrInfoRegistry); linking it is enough for them to be parsed.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_PLUGIN_CHECKER_H
#define SPMD_PLUGIN_CHECKER_H

#include "spmd/plugin/Options.h"

#include "clang/AST/ASTConsumer.h"

#include <memory>

#include <optional>
#include <string>

namespace clang {
class ASTContext;
class CompilerInstance;
class Diagnostic;
class DiagnosticsEngine;
} // namespace clang

namespace spmd::plugin {

/// Checks every function of the translation unit held by \p Ctx (after Sema:
/// templates instantiated) and reports through \p Diags, sorted by location.
/// Reads the annotations recorded for \p Ctx while parsing and releases them.
/// Returns the number of diagnostics reported (at any severity).
unsigned checkTranslationUnit(clang::ASTContext &Ctx, const Options &Opts,
                              clang::DiagnosticsEngine &Diags);

/// An ASTConsumer that runs checkTranslationUnit in HandleTranslationUnit,
/// reporting through the context's DiagnosticsEngine.
std::unique_ptr<clang::ASTConsumer> createSPMDCheckConsumer(Options Opts);

/// The same for a compiler run (the plugin): also keeps the annotations of
/// precompiled headers and modules, which Clang does not store in them. The
/// run that writes one (`-emit-pch`, `--precompile`, `-fmodule-output`)
/// writes `<file>.spmd-annotations` beside it; a run that loads one reads
/// that file back, and warns when an AST file holding namespace spmd has
/// none (built without the plugin).
std::unique_ptr<clang::ASTConsumer>
createSPMDCheckConsumer(Options Opts, clang::CompilerInstance &CI);

/// The kind of an analysis diagnostic reported by this library (the kind
/// travels as an argument of the diagnostic, not as text), or std::nullopt
/// for any other diagnostic (compiler errors, malformed annotations, notes).
std::optional<DiagKind> diagKindOf(const clang::Diagnostic &Info);

/// The message of a diagnostic without the " [spmd:<kind>]" that the text
/// output appends for an analysis diagnostic.
std::string diagMessageOf(const clang::Diagnostic &Info);

} // namespace spmd::plugin

#endif // SPMD_PLUGIN_CHECKER_H
