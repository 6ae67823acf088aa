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

using namespace clang;

namespace {

class SPMDCheckAction : public PluginASTAction {
public:
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &CI,
                                                 llvm::StringRef) override {
    return spmd::plugin::createSPMDCheckConsumer(Opts, CI);
  }

  bool ParseArgs(const CompilerInstance &CI,
                 const std::vector<std::string> &Args) override {
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

  ActionType getActionType() override { return AddBeforeMainAction; }

private:
  spmd::plugin::Options Opts;
};

} // namespace

static FrontendPluginRegistry::Add<SPMDCheckAction>
    X("spmd-check", "SPMD type checking of tensor-parallel code");
