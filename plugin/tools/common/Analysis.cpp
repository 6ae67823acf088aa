//===- Analysis.cpp - run the SPMD analysis on one compile command --------===//

#include "Analysis.h"

#include "spmd/plugin/Annotations.h"
#include "spmd/plugin/Checker.h"

#include "clang/AST/ASTConsumer.h"
#include "clang/Basic/ParsedAttrInfo.h"
#include "clang/Driver/Options.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/FrontendAction.h"
#include "clang/Frontend/PrecompiledPreamble.h"
#include "clang/Frontend/Utils.h"
#include "clang/Serialization/PCHContainerOperations.h"
#include "clang/Tooling/Tooling.h"
#include "llvm/Option/ArgList.h"
#include "llvm/Option/OptTable.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <ctime>

#ifndef SPMD_CLANG_RESOURCE_DIR
#error "SPMD_CLANG_RESOURCE_DIR must name the builtin headers of Clang"
#endif

using namespace clang;
using namespace clang::tooling;

namespace spmd::tools {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point Start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - Start)
      .count();
}

bool isSet(const std::atomic<bool> *Flag) {
  return Flag && Flag->load(std::memory_order_relaxed);
}

/// Forwards to the analysis library's consumer and adds up the time spent
/// in it. When the run is cancelled, parsing stops at the next top-level
/// declaration (ParseAST returns when HandleTopLevelDecl says false) and the
/// checker does not run.
class TimedConsumer : public ASTConsumer {
public:
  TimedConsumer(std::unique_ptr<ASTConsumer> Inner, double *Ms,
                const std::atomic<bool> *Cancelled)
      : Inner(std::move(Inner)), Ms(Ms), Cancelled(Cancelled) {}

  void Initialize(ASTContext &Ctx) override {
    this->Ctx = &Ctx;
    Timed T(*this);
    Inner->Initialize(Ctx);
  }
  bool HandleTopLevelDecl(DeclGroupRef D) override {
    if (isSet(Cancelled)) {
      // HandleTranslationUnit will not come, and with it the checker's
      // release of its annotation table: release it now.
      if (Ctx)
        plugin::AnnotationTable::release(*Ctx);
      return false;
    }
    Timed T(*this);
    return Inner->HandleTopLevelDecl(D);
  }
  void HandleInlineFunctionDefinition(FunctionDecl *D) override {
    Timed T(*this);
    Inner->HandleInlineFunctionDefinition(D);
  }
  void HandleTagDeclDefinition(TagDecl *D) override {
    Timed T(*this);
    Inner->HandleTagDeclDefinition(D);
  }
  void HandleCXXImplicitFunctionInstantiation(FunctionDecl *D) override {
    Timed T(*this);
    Inner->HandleCXXImplicitFunctionInstantiation(D);
  }
  void HandleTranslationUnit(ASTContext &Ctx) override {
    if (isSet(Cancelled)) {
      plugin::AnnotationTable::release(Ctx); // the checker would have
      return;
    }
    Timed T(*this);
    Inner->HandleTranslationUnit(Ctx);
  }

private:
  struct Timed {
    explicit Timed(TimedConsumer &C) : C(C), Start(Clock::now()) {}
    ~Timed() {
      if (C.Ms)
        *C.Ms += msSince(Start);
    }
    TimedConsumer &C;
    Clock::time_point Start;
  };
  std::unique_ptr<ASTConsumer> Inner;
  double *Ms;
  const std::atomic<bool> *Cancelled;
  ASTContext *Ctx = nullptr;
};

/// Gives the checker the annotations parsed while the preamble was built
/// (Clang keeps nothing of a plugin attribute in a precompiled preamble, as
/// in any AST file): the preamble's declarations find their entries by
/// location on first lookup, as with a PCH's annotations file.
class PreambleAnnotationsConsumer : public ASTConsumer {
public:
  PreambleAnnotationsConsumer(std::unique_ptr<ASTConsumer> Inner,
                              const std::string &Annotations)
      : Inner(std::move(Inner)), Annotations(Annotations) {}
  void Initialize(ASTContext &Ctx) override { Inner->Initialize(Ctx); }
  bool HandleTopLevelDecl(DeclGroupRef D) override {
    return Inner->HandleTopLevelDecl(D);
  }
  void HandleTranslationUnit(ASTContext &Ctx) override {
    std::string Err;
    // Written by this process from the same preamble, so it reads back; if
    // the writer and the reader ever disagree, say so rather than check
    // without the header's annotations.
    if (!plugin::AnnotationTable::get(Ctx).read(
            Annotations, Ctx.getSourceManager(), /*ExpectedSource=*/"", Err)) {
      DiagnosticsEngine &D = Ctx.getDiagnostics();
      const SourceManager &SM = Ctx.getSourceManager();
      D.Report(SM.getLocForStartOfFile(SM.getMainFileID()),
               D.getCustomDiagID(DiagnosticsEngine::Warning,
                                 "spmd-check: cannot read back the SPMD "
                                 "annotations of the preamble: %0"))
          << Err;
    }
    Inner->HandleTranslationUnit(Ctx);
  }

private:
  std::unique_ptr<ASTConsumer> Inner;
  const std::string &Annotations;
};

class SpmdAction : public ASTFrontendAction {
public:
  /// \p PreambleAnnotations: the annotations file text of the preamble this
  /// parse uses, if any.
  SpmdAction(plugin::Options Opts, double *AnalysisMs,
             const std::atomic<bool> *Cancelled,
             const std::string *PreambleAnnotations = nullptr)
      : Opts(std::move(Opts)), AnalysisMs(AnalysisMs), Cancelled(Cancelled),
        PreambleAnnotations(PreambleAnnotations) {}

protected:
  std::unique_ptr<ASTConsumer> CreateASTConsumer(CompilerInstance &,
                                                 llvm::StringRef) override {
    std::unique_ptr<ASTConsumer> Check = plugin::createSPMDCheckConsumer(Opts);
    if (PreambleAnnotations && !PreambleAnnotations->empty())
      Check = std::make_unique<PreambleAnnotationsConsumer>(
          std::move(Check), *PreambleAnnotations);
    return std::make_unique<TimedConsumer>(std::move(Check), AnalysisMs,
                                           Cancelled);
  }

private:
  plugin::Options Opts;
  double *AnalysisMs;
  const std::atomic<bool> *Cancelled;
  const std::string *PreambleAnnotations;
};

/// A file system that stops serving files once the run is cancelled: the
/// next #include fails, which is a fatal error, after which Clang enters no
/// further header and instantiates no template. The cheapest way to stop a
/// frontend from outside: Clang has no cancellation of its own.
class CancellableFS : public llvm::vfs::ProxyFileSystem {
public:
  CancellableFS(llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS,
                const std::atomic<bool> *Cancelled)
      : ProxyFileSystem(std::move(FS)), Cancelled(Cancelled) {}

  llvm::ErrorOr<llvm::vfs::Status> status(const llvm::Twine &Path) override {
    if (isSet(Cancelled))
      return std::make_error_code(std::errc::operation_canceled);
    return ProxyFileSystem::status(Path);
  }
  llvm::ErrorOr<std::unique_ptr<llvm::vfs::File>>
  openFileForRead(const llvm::Twine &Path) override {
    if (isSet(Cancelled))
      return std::make_error_code(std::errc::operation_canceled);
    return ProxyFileSystem::openFileForRead(Path);
  }

private:
  const std::atomic<bool> *Cancelled;
};

bool hasArgument(const CommandLineArguments &Args, llvm::StringRef Name) {
  for (const std::string &A : Args)
    if (A == Name || llvm::StringRef(A).starts_with((Name + "=").str()))
      return true;
  return false;
}

/// Keeps the SPMD annotations parsed while building a preamble, in the
/// annotations file format (keyed by file, line and column).
class AnnotationProbe : public PreambleCallbacks {
public:
  void AfterExecute(CompilerInstance &CI) override {
    if (!CI.hasASTContext())
      return;
    const plugin::AnnotationTable &Table =
        plugin::AnnotationTable::get(CI.getASTContext());
    if (!Table.empty()) {
      llvm::raw_string_ostream OS(Annotations);
      Table.write(OS, CI.getSourceManager());
    }
    plugin::AnnotationTable::release(CI.getASTContext());
  }
  AnnotationProbe(bool SkipSystemBodies, const std::atomic<bool> *Cancelled)
      : SkipSystemBodies(SkipSystemBodies), Cancelled(Cancelled) {}
  // Bodies in user headers are kept: the checker analyses them. Bodies in
  // system headers (libtorch, the standard library) are skipped, as clangd
  // does, when the checker skips those functions anyway: most of a
  // re-check's time would otherwise go to instantiating templates they use.
  // (A cancelled build skips every body: it is thrown away.)
  bool shouldSkipFunctionBody(Decl *D) override {
    return isSet(Cancelled) ||
           (SkipSystemBodies &&
            D->getASTContext().getSourceManager().isInSystemHeader(
                D->getLocation()));
  }
  std::string Annotations;

private:
  bool SkipSystemBodies;
  const std::atomic<bool> *Cancelled;
};

double threadCpuMs() {
  timespec T;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &T))
    return 0;
  return T.tv_sec * 1e3 + T.tv_nsec / 1e6;
}

} // namespace

ArgumentsAdjuster getStripUnknownArgumentsAdjuster() {
  return [](const CommandLineArguments &Args, llvm::StringRef) {
    if (Args.size() < 2)
      return Args;
    const llvm::opt::OptTable &Table = driver::getDriverOptTable();
    llvm::SmallVector<const char *, 32> Argv;
    for (size_t I = 1; I < Args.size(); ++I)
      Argv.push_back(Args[I].c_str());
    unsigned MissingIndex = 0, MissingCount = 0;
    llvm::opt::InputArgList Parsed =
        Table.ParseArgs(Argv, MissingIndex, MissingCount,
                        llvm::opt::Visibility(driver::options::ClangOption));
    std::vector<bool> Drop(Args.size(), false);
    for (const llvm::opt::Arg *A :
         Parsed.filtered(driver::options::OPT_UNKNOWN))
      Drop[A->getIndex() + 1] = true;
    CommandLineArguments Result;
    for (size_t I = 0; I < Args.size(); ++I)
      if (!Drop[I])
        Result.push_back(Args[I]);
    return Result;
  };
}

std::vector<std::string> pluginArgumentsOf(const CommandLineArguments &Args) {
  std::vector<std::string> Result;
  for (llvm::StringRef A : Args)
    if (A.consume_front("-fplugin-arg-spmd-check-"))
      Result.push_back(A.str());
  return Result;
}

/// Drops compiler plugins and their arguments: the tools run the analysis
/// themselves, and loading the plugin as well would register the
/// attributes twice.
static ArgumentsAdjuster getStripPluginsAdjuster() {
  return [](const CommandLineArguments &Args, llvm::StringRef) {
    CommandLineArguments Result;
    for (size_t I = 0; I < Args.size(); ++I) {
      llvm::StringRef A = Args[I];
      if (A.starts_with("-fplugin=") || A.starts_with("-fplugin-arg-") ||
          A.starts_with("-fpass-plugin="))
        continue;
      // -Xclang -load -Xclang <lib>, -Xclang -plugin-arg-<name> -Xclang <a>,
      // -Xclang -add-plugin -Xclang <name>
      if (A == "-Xclang" && I + 3 < Args.size() && Args[I + 2] == "-Xclang" &&
          (Args[I + 1] == "-load" || Args[I + 1] == "-add-plugin" ||
           llvm::StringRef(Args[I + 1]).starts_with("-plugin-arg-"))) {
        I += 3;
        continue;
      }
      Result.push_back(Args[I]);
    }
    return Result;
  };
}

ArgumentsAdjuster getSpmdArgumentsAdjuster() {
  ArgumentsAdjuster ResourceDir = [](const CommandLineArguments &Args,
                                     llvm::StringRef) {
    CommandLineArguments Result = Args;
    if (!hasArgument(Args, "-resource-dir"))
      Result.insert(Result.begin() + std::min<size_t>(1, Result.size()),
                    "-resource-dir=" SPMD_CLANG_RESOURCE_DIR);
    return Result;
  };
  ArgumentsAdjuster A = combineAdjusters(getClangStripOutputAdjuster(),
                                         getClangStripDependencyFileAdjuster());
  A = combineAdjusters(A, getStripPluginsAdjuster());
  A = combineAdjusters(A, getStripUnknownArgumentsAdjuster());
  A = combineAdjusters(A, getClangSyntaxOnlyAdjuster());
  A = combineAdjusters(
      A, getInsertArgumentAdjuster({"-Wno-unknown-warning-option",
                                    "-Wno-unused-command-line-argument"},
                                   ArgumentInsertPosition::END));
  return combineAdjusters(A, ResourceDir);
}

void initializeAnalysis() {
  // Instantiates the registered ParsedAttrInfo objects once; Clang does it
  // lazily and without a lock on first use.
  (void)getAttributePluginInstances();
}

struct PreambleCache::State {
  std::optional<PrecompiledPreamble> Preamble;
  CommandLineArguments Args; ///< the command it was built for
  /// The SPMD annotations parsed in it (annotations file format).
  std::string Annotations;
};

PreambleCache::PreambleCache() : S(std::make_unique<State>()) {}
PreambleCache::~PreambleCache() = default;

/// Parses with \p Cache's preamble, (re)building it when needed. Returns
/// std::nullopt when the preamble cannot be used (the caller parses the
/// whole file instead).
static std::optional<bool>
runWithPreamble(const CommandLineArguments &Args, const plugin::Options &Opts,
                llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS,
                DiagnosticConsumer &Consumer, double *AnalysisMs,
                PreambleCache::State &Cache, AnalysisTiming::PreambleUse &Use,
                const std::atomic<bool> *Cancelled) {
  std::vector<const char *> Argv;
  for (const std::string &A : Args)
    Argv.push_back(A.c_str());
  IntrusiveRefCntPtr<DiagnosticsEngine> Diags =
      CompilerInstance::createDiagnostics(new DiagnosticOptions, &Consumer,
                                          /*ShouldOwnClient=*/false);
  CreateInvocationOptions CIOpts;
  CIOpts.Diags = Diags;
  CIOpts.VFS = FS;
  std::shared_ptr<CompilerInvocation> CI = createInvocation(Argv, CIOpts);
  if (!CI || CI->getFrontendOpts().Inputs.size() != 1)
    return std::nullopt;
  // The driver asks cc1 to leak the AST, Sema and the preprocessor at the
  // end (-disable-free: a compiler process exits anyway). A long-lived
  // process must free them, or every re-check leaks a whole parse (and
  // every preamble build all of its headers' AST), as ToolInvocation and
  // clangd also ensure.
  CI->getFrontendOpts().DisableFree = false;
  // Instantiate the preamble's templates once, in the preamble, rather than
  // at the end of every re-check (benign: the main parse ignores it).
  CI->getLangOpts().PCHInstantiateTemplates = true;
  llvm::StringRef MainPath = CI->getFrontendOpts().Inputs[0].getFile();
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Main =
      FS->getBufferForFile(MainPath);
  if (!Main)
    return std::nullopt;
  PreambleBounds Bounds = ComputePreambleBounds(
      CI->getLangOpts(), (*Main)->getMemBufferRef(), /*MaxLines=*/0);
  auto PCHOps = std::make_shared<PCHContainerOperations>();

  if (Cache.Preamble && Cache.Args == Args &&
      Cache.Preamble->CanReuse(*CI, (*Main)->getMemBufferRef(), Bounds, *FS)) {
    Use = AnalysisTiming::PreambleUse::Reused;
  } else {
    // Problems inside the preamble are clangd's to show; the SPMD analysis
    // runs on the main parse.
    IgnoringDiagConsumer Ignore;
    IntrusiveRefCntPtr<DiagnosticsEngine> PreambleDiags =
        CompilerInstance::createDiagnostics(new DiagnosticOptions, &Ignore,
                                            /*ShouldOwnClient=*/false);
    AnnotationProbe Probe(/*SkipSystemBodies=*/!Opts.AnalyzeSystemHeaders,
                          Cancelled);
    // Drop the old preamble first: two in memory at once would double the
    // peak (a libtorch preamble is tens of MB).
    Cache.Preamble.reset();
    llvm::ErrorOr<PrecompiledPreamble> Built = PrecompiledPreamble::Build(
        *CI, Main->get(), Bounds, *PreambleDiags, FS, PCHOps,
        /*StoreInMemory=*/true, /*StoragePath=*/"", Probe);
    if (isSet(Cancelled))
      return false; // built from a partial read: never reuse it
    if (!Built)
      return std::nullopt;
    Cache.Preamble.emplace(std::move(*Built));
    Cache.Args = Args;
    Cache.Annotations = std::move(Probe.Annotations);
    Use = AnalysisTiming::PreambleUse::Built;
  }

  llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> VFS = FS;
  // The invocation's remapped-file list owns the buffer from here on.
  Cache.Preamble->AddImplicitPreamble(*CI, VFS, Main->release());
  CompilerInstance Clang(PCHOps);
  Clang.setInvocation(CI);
  Clang.createDiagnostics(&Consumer, /*ShouldOwnClient=*/false);
  Clang.createFileManager(VFS);
  Clang.createSourceManager(Clang.getFileManager());
  SpmdAction Action(Opts, AnalysisMs, Cancelled, &Cache.Annotations);
  return Clang.ExecuteAction(Action);
}

bool runAnalysis(const CompileCommand &Command,
                 llvm::ArrayRef<std::string> PluginArgs,
                 llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem> FS,
                 DiagnosticConsumer &Consumer, AnalysisTiming *Timing,
                 std::vector<std::string> *FilesRead, PreambleCache *Preamble,
                 const std::atomic<bool> *Cancelled) {
  plugin::Options Opts;
  std::string Err;
  for (const std::string &A : pluginArgumentsOf(Command.CommandLine))
    if (!Opts.parseArgs({A}, Err))
      Err.clear(); // the build's compiler reports its own bad arguments
  Opts.parseArgs(PluginArgs, Err);
  Clock::time_point Start = Clock::now();
  double StartCpu = threadCpuMs();
  // The callers render diagnostics themselves; -fno-caret-diagnostics only
  // stops the frontend from printing "N errors generated." on its own.
  // -ferror-limit=0: a report lists every error, not Clang's first 20 (last,
  // so it wins over the command's own limit).
  CommandLineArguments Args = combineAdjusters(
      getSpmdArgumentsAdjuster(),
      getInsertArgumentAdjuster({"-fno-caret-diagnostics", "-ferror-limit=0"},
                                ArgumentInsertPosition::END))(
      Command.CommandLine, Command.Filename);
  if (!Command.Directory.empty())
    FS->setCurrentWorkingDirectory(Command.Directory);
  if (Cancelled)
    FS = llvm::makeIntrusiveRefCnt<CancellableFS>(FS, Cancelled);
  double AnalysisMs = 0;
  AnalysisTiming::PreambleUse Use = AnalysisTiming::PreambleUse::None;
  std::optional<bool> WithPreamble;
  if (Preamble)
    WithPreamble = runWithPreamble(Args, Opts, FS, Consumer, &AnalysisMs,
                                   *Preamble->S, Use, Cancelled);
  bool Ok;
  if (WithPreamble) {
    Ok = *WithPreamble;
  } else if (isSet(Cancelled)) {
    Ok = false;
  } else {
    llvm::IntrusiveRefCntPtr<FileManager> Files(
        new FileManager(FileSystemOptions(), FS));
    ToolInvocation Invocation(
        std::move(Args),
        std::make_unique<SpmdAction>(Opts, &AnalysisMs, Cancelled),
        Files.get());
    Invocation.setDiagnosticConsumer(&Consumer);
    Ok = Invocation.run();
    if (FilesRead) {
      llvm::SmallVector<OptionalFileEntryRef, 64> Read;
      Files->GetUniqueIDMapping(Read);
      for (OptionalFileEntryRef F : Read) {
        if (!F)
          continue;
        llvm::SmallString<256> Path(F->getName());
        Files->makeAbsolutePath(Path);
        llvm::sys::path::remove_dots(Path, /*remove_dot_dot=*/true);
        FilesRead->push_back(std::string(Path));
      }
    }
  }
  if (Timing) {
    Timing->TotalMs = msSince(Start);
    Timing->TotalCpuMs = threadCpuMs() - StartCpu;
    Timing->AnalysisMs = AnalysisMs;
    Timing->Preamble = Use;
    Timing->Cancelled = isSet(Cancelled);
  }
  return Ok && !isSet(Cancelled);
}

} // namespace spmd::tools
