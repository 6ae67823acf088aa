//===- SPMDCheckPlugin.cpp - the spmd-check Clang plugin --------*- C++ -*-===//
//
// `clang++ -fplugin=build/lib/spmd-check.so`: registers the [[spmd::...]]
// attributes (through the analysis library) and adds the SPMD checker to the
// compilation, before the main action, so errors stop code generation and
// nothing the checker does reaches the generated code.
//
// Arguments: `-fplugin-arg-spmd-check-<arg>` (the driver hands these to the
// plugin named "spmd" as "check-<arg>", since a plugin name ends at the first
// '-') or `-Xclang -plugin-arg-spmd-check -Xclang <arg>`.
//
//===----------------------------------------------------------------------===//

#include "spmd/plugin/Checker.h"

#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendPluginRegistry.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

using namespace clang;

namespace {

/// Set when Clang asks an action for its type, cleared when it hands the
/// action its arguments. `-Xclang -plugin -Xclang spmd-check` (the plugin as
/// the main action, which it cannot be) does only the first, after which
/// Clang exits with status 1 and no message: this one is printed instead.
std::atomic<bool> AskedTypeOnly{false};

void reportNotMainAction() {
  if (AskedTypeOnly)
    std::fputs("error: spmd-check: the plugin runs beside the compilation, "
               "not as its main action (-plugin spmd-check); load it with "
               "-fplugin=<path>/spmd-check.so, or -Xclang -load -Xclang "
               "<path>/spmd-check.so -Xclang -add-plugin -Xclang spmd-check\n",
               stderr);
}

class SPMDCheckAction : public PluginASTAction {
public:
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI,
                                                 llvm::StringRef) override {
    return spmd::plugin::createSPMDCheckConsumer(Opts, CI);
  }

  bool ParseArgs(const CompilerInstance &CI,
                 const std::vector<std::string> &Args) override {
    AskedTypeOnly = false;
    // Args are this plugin's own (-plugin-arg-spmd-check); the driver's
    // spelling and misspellings of it are under other plugin names.
    std::vector<std::string> All;
    std::string Err;
    if (spmd::plugin::collectPluginArgs(CI.getFrontendOpts().PluginArgs, All,
                                        Err) &&
        Opts.parseArgs(All, Err))
      return true;
    DiagnosticsEngine &D = CI.getDiagnostics();
    D.Report(D.getCustomDiagID(DiagnosticsEngine::Error, "spmd-check: %0"))
        << Err;
    return false;
  }

  ActionType getActionType() override {
    static std::once_flag Registered;
    std::call_once(Registered, [] { std::atexit(reportNotMainAction); });
    AskedTypeOnly = true;
    return AddBeforeMainAction;
  }

private:
  spmd::plugin::Options Opts;
};

} // namespace

static FrontendPluginRegistry::Add<SPMDCheckAction>
    X("spmd-check", "SPMD type checking of tensor-parallel code");
