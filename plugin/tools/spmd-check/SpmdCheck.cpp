//===- SpmdCheck.cpp - the standalone SPMD checker ------------------------===//
//
// spmd-check [options] <files...> [-p <build-dir>]
//
// Runs the analysis of the spmd-check Clang plugin on each file with its
// command from compile_commands.json (GCC command lines are adjusted for
// Clang's frontend), like clang-tidy. Prints Clang-style text, JSON or SARIF
// 2.1.0; exits 1 when any error was reported or a file could not be checked.
//
//===----------------------------------------------------------------------===//

#include "../common/Analysis.h"
#include "../common/CompileCommands.h"
#include "../common/Diagnostics.h"
#include "../common/Rules.h"
#include "Output.h"

#include "spmd/plugin/Options.h"

#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/Tooling/CommonOptionsParser.h"
#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/VirtualFileSystem.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>

using namespace clang;
using namespace clang::tooling;
using namespace spmd::tools;
namespace cl = llvm::cl;

namespace {

cl::OptionCategory Category("spmd-check options");

enum class OutputFormat { Text, Json, Sarif };

cl::opt<OutputFormat> Format(
    "format", cl::desc("Output format"),
    cl::values(clEnumValN(OutputFormat::Text, "text",
                          "Clang-style diagnostics (default)"),
               clEnumValN(OutputFormat::Json, "json",
                          "one JSON document (see docs/tools.md)"),
               clEnumValN(OutputFormat::Sarif, "sarif",
                          "SARIF 2.1.0, as GitHub code scanning accepts")),
    cl::init(OutputFormat::Text), cl::cat(Category));

cl::opt<std::string> OutputPath("o",
                                cl::desc("Write the report to <file> instead "
                                         "of standard output"),
                                cl::value_desc("file"), cl::cat(Category));

// The analysis settings have the names and meaning of the plugin's arguments
// (-fplugin-arg-spmd-check-<arg>); they are applied in command-line order.
cl::opt<bool> Strict("strict",
                     cl::desc("Report the first use of a tensor of unknown "
                              "SPMD type, and in global mode a shard dim lost "
                              "where it matters (plugin argument 'strict')"),
                     cl::cat(Category));
cl::opt<bool> NoStrictShards(
    "no-strict-shards",
    cl::desc("With --strict: do not report lost shard dims (plugin argument "
             "'no-strict-shards')"),
    cl::cat(Category));
cl::opt<bool> Global("global",
                     cl::desc("Global SPMD mode: track which tensor dim each "
                              "mesh axis shards (plugin argument 'global')"),
                     cl::cat(Category));
cl::opt<std::string>
    LocalAxes("local-axes",
              cl::desc("In global mode, keep local semantics on these mesh "
                       "axes (plugin argument 'local-axes=<axis,...>')"),
              cl::value_desc("axis,..."), cl::cat(Category));
cl::opt<bool> SystemHeaders("system-headers",
                            cl::desc("Also analyse functions in system headers "
                                     "(plugin argument 'system-headers')"),
                            cl::cat(Category));
cl::list<std::string> Warn("warn",
                           cl::desc("Report <kind> (or all) as a warning "
                                    "(plugin argument 'warn=<kind>')"),
                           cl::value_desc("kind|all"), cl::CommaSeparated,
                           cl::cat(Category));
cl::list<std::string> Error("error",
                            cl::desc("Report <kind> (or all) as an error "
                                     "(plugin argument 'error=<kind>')"),
                            cl::value_desc("kind|all"), cl::CommaSeparated,
                            cl::cat(Category));
cl::list<std::string> Ignore("ignore",
                             cl::desc("Do not report <kind> (or all) "
                                      "(plugin argument 'ignore=<kind>')"),
                             cl::value_desc("kind|all"), cl::CommaSeparated,
                             cl::cat(Category));

cl::opt<unsigned> Parallel("j",
                           cl::desc("Check <N> files in parallel (0: one per "
                                    "hardware thread; default 1)"),
                           cl::value_desc("N"), cl::init(1), cl::cat(Category));

cl::opt<std::string>
    SourceRoot("source-root",
               cl::desc("Directory SARIF file URIs are relative to "
                        "(%SRCROOT%; default: the current directory)"),
               cl::value_desc("dir"), cl::cat(Category));

cl::opt<std::string> DependencyFile(
    "dependency-file",
    cl::desc("Write a Makefile-style depfile listing every file read "
             "(sources and headers), for build systems"),
    cl::value_desc("file"), cl::cat(Category));
cl::opt<std::string>
    DependencyTarget("dependency-target",
                     cl::desc("The target named in --dependency-file "
                              "(default: the -o file, else 'spmd-check')"),
                     cl::value_desc("name"), cl::cat(Category));

cl::extrahelp CommonHelp(CommonOptionsParser::HelpMessage);
// The list of kinds comes from DiagKinds.def.
const std::string KindsHelp =
    "\nDiagnostic kinds for --warn/--error/--ignore: " +
    spmd::plugin::diagKindList().str() + " (or 'all').\n";
cl::extrahelp KindsHelpText(KindsHelp.c_str());
cl::extrahelp MoreHelp(R"(
Exit status: 0 when no error was reported, 1 when the analysis or the compiler
reported an error, a file had no usable compile command, or an option was
invalid.
)");

/// The plugin arguments equivalent to the command line, in command-line
/// order, so that "--ignore=all --error=op-type" means what it says.
std::vector<std::string> pluginArguments() {
  std::vector<std::pair<unsigned, std::string>> Args;
  if (Strict)
    Args.push_back({Strict.getPosition(), "strict"});
  if (NoStrictShards)
    Args.push_back({NoStrictShards.getPosition(), "no-strict-shards"});
  if (Global)
    Args.push_back({Global.getPosition(), "global"});
  if (LocalAxes.getNumOccurrences())
    Args.push_back({LocalAxes.getPosition(), "local-axes=" + LocalAxes});
  if (SystemHeaders)
    Args.push_back({SystemHeaders.getPosition(), "system-headers"});
  auto Add = [&](cl::list<std::string> &L, llvm::StringRef Name) {
    for (unsigned I = 0; I < L.size(); ++I)
      Args.push_back({L.getPosition(I), (Name + "=" + L[I]).str()});
  };
  Add(Warn, "warn");
  Add(Error, "error");
  Add(Ignore, "ignore");
  // Positions are distinct, so the order is total.
  llvm::sort(Args,
             [](const auto &A, const auto &B) { return A.first < B.first; });
  std::vector<std::string> Result;
  for (auto &A : Args)
    Result.push_back(std::move(A.second));
  return Result;
}

std::string absolutePath(llvm::StringRef Path) {
  llvm::SmallString<256> Abs(Path);
  llvm::sys::fs::make_absolute(Abs);
  llvm::sys::path::remove_dots(Abs, /*remove_dot_dot=*/true);
  return std::string(Abs);
}

struct Job {
  FileReport Report;
  std::optional<CompileCommand> Command;
  std::string Text; ///< Clang-style text of the diagnostics
  std::vector<std::string> FilesRead;
};

void runJob(Job &J, llvm::ArrayRef<std::string> PluginArgs, bool UseColor) {
  llvm::raw_string_ostream TextOS(J.Text);
  auto DiagOpts = llvm::makeIntrusiveRefCnt<DiagnosticOptions>();
  DiagOpts->ShowColors = UseColor;
  TextDiagnosticPrinter Printer(TextOS, DiagOpts.get());
  DiagnosticCollector Collector(
      J.Report.Diags, Format == OutputFormat::Text ? &Printer : nullptr);
  // A physical file system per job: its working directory is the command's,
  // without touching the process's (jobs run concurrently).
  auto FS = llvm::vfs::createPhysicalFileSystem();
  runAnalysis(*J.Command, PluginArgs,
              llvm::IntrusiveRefCntPtr<llvm::vfs::FileSystem>(FS.release()),
              Collector, /*Timing=*/nullptr,
              DependencyFile.empty() ? nullptr : &J.FilesRead);
  J.Report.Checked = true;
  TextOS.flush();
}

/// The files to check, each with its command or the reason it has none.
std::vector<Job> collectJobs(const std::vector<std::string> &Sources,
                             const CompilationDatabase &DB) {
  std::vector<Job> Jobs;
  for (const std::string &Source : Sources) {
    Job J;
    J.Report.File = absolutePath(Source);
    if (!llvm::sys::fs::exists(J.Report.File)) {
      J.Report.Problem = "no such file: '" + Source + "'";
    } else {
      std::vector<CompileCommand> Commands =
          DB.getCompileCommands(J.Report.File);
      if (Commands.empty())
        J.Report.Problem =
            "no compile command for '" + Source +
            "': pass the build directory holding compile_commands.json with "
            "-p <dir>, or the compiler flags after '--'";
      else
        J.Command = std::move(Commands.front());
    }
    Jobs.push_back(std::move(J));
  }
  return Jobs;
}

/// Checks every file that has a command, -j at a time.
void runJobs(std::vector<Job> &Jobs, llvm::ArrayRef<std::string> PluginArgs) {
  initializeAnalysis();
  // Colours when the text goes to a terminal (LLVM's own --color option
  // is not consulted: the report may be redirected).
  bool UseColor = Format == OutputFormat::Text && OutputPath.empty() &&
                  llvm::sys::Process::StandardOutHasColors();
  llvm::DefaultThreadPool Pool(llvm::hardware_concurrency(Parallel));
  for (Job &J : Jobs)
    if (J.Command)
      Pool.async(
          [&J, PluginArgs, UseColor] { runJob(J, PluginArgs, UseColor); });
  Pool.wait();
}

/// Writes the report in the chosen format, in command-line order. Returns
/// false when nothing of error severity was found and every file was checked.
bool writeReport(std::vector<Job> &Jobs, llvm::raw_ostream &Out) {
  std::vector<FileReport> Reports;
  unsigned Errors = 0, Warnings = 0, Failed = 0;
  for (Job &J : Jobs) {
    if (!J.Report.Checked) {
      ++Failed;
      llvm::WithColor::error(llvm::errs(), "spmd-check")
          << J.Report.Problem << "\n";
    }
    for (const Diag &D : J.Report.Diags) {
      Errors += D.isError();
      Warnings += D.Severity == Diag::Level::Warning;
    }
    if (Format == OutputFormat::Text)
      Out << J.Text;
    Reports.push_back(std::move(J.Report));
  }
  if (Format == OutputFormat::Json) {
    Out << llvm::formatv("{0:2}", toJson(Reports)) << "\n";
  } else if (Format == OutputFormat::Sarif) {
    std::string Root = absolutePath(SourceRoot.empty() ? std::string(".")
                                                       : SourceRoot.getValue());
    Out << llvm::formatv("{0:2}", toSarif(Reports, Root)) << "\n";
  } else if (Errors || Warnings) {
    llvm::errs() << Errors << (Errors == 1 ? " error" : " errors") << " and "
                 << Warnings << (Warnings == 1 ? " warning" : " warnings")
                 << " generated by spmd-check.\n";
  }
  return Errors || Failed;
}

/// Writes --dependency-file: every file any check read. False on an I/O
/// error (reported).
bool writeDepfile(const std::vector<Job> &Jobs) {
  std::error_code EC;
  llvm::raw_fd_ostream Dep(DependencyFile, EC, llvm::sys::fs::OF_Text);
  if (EC) {
    llvm::WithColor::error(llvm::errs(), "spmd-check")
        << "cannot write '" << DependencyFile << "': " << EC.message() << "\n";
    return false;
  }
  auto Escape = [](llvm::StringRef P) {
    std::string E;
    for (char C : P) {
      if (C == ' ' || C == '#')
        E += '\\';
      else if (C == '$')
        E += '$';
      E += C;
    }
    return E;
  };
  std::string Target = !DependencyTarget.empty() ? DependencyTarget
                       : !OutputPath.empty()     ? OutputPath
                                                 : std::string("spmd-check");
  Dep << Escape(Target) << ":";
  llvm::StringSet<> Seen;
  for (const Job &J : Jobs)
    for (const std::string &F : J.FilesRead)
      if (Seen.insert(F).second)
        Dep << " \\\n  " << Escape(F);
  Dep << "\n";
  return true;
}

/// The directory of -p (`-p dir`, `-p=dir`, `--p=dir`) before any `--`, or
/// empty.
llvm::StringRef buildPathArgument(int argc, const char **argv) {
  for (int I = 1; I < argc; ++I) {
    llvm::StringRef A(argv[I]);
    if (A == "--")
      break;
    if ((A == "-p" || A == "--p") && I + 1 < argc)
      return argv[I + 1];
    if (A.consume_front("-p=") || A.consume_front("--p="))
      return A;
  }
  return "";
}

} // namespace

int main(int argc, const char **argv) {
  // A compile_commands.json that is there but unusable is an error naming it
  // and the problem (CommonOptionsParser would say none was found, or print
  // the JSON reader's "YAML:" error, and go on without flags).
  llvm::StringRef BuildDir = buildPathArgument(argc, argv);
  if (!BuildDir.empty()) {
    llvm::SmallString<256> DBFile(BuildDir);
    if (llvm::sys::fs::is_directory(DBFile))
      llvm::sys::path::append(DBFile, "compile_commands.json");
    std::string Err;
    if (llvm::sys::fs::exists(DBFile) &&
        !spmd::tools::checkDatabaseFile(DBFile, Err)) {
      llvm::WithColor::error(llvm::errs(), "spmd-check")
          << "cannot use the compilation database: " << Err << "\n";
      return 1;
    }
  }
  llvm::Expected<CommonOptionsParser> Parser =
      CommonOptionsParser::create(argc, argv, Category, cl::OneOrMore,
                                  "spmd-check: SPMD type checking of C++ "
                                  "tensor code, outside the compiler\n");
  if (!Parser) {
    llvm::WithColor::error(llvm::errs(), "spmd-check")
        << llvm::toString(Parser.takeError()) << "\n";
    return 1;
  }
  // Validated here once; applied per file after the file's own
  // -fplugin-arg-spmd-check-* arguments.
  std::vector<std::string> PluginArgs = pluginArguments();
  spmd::plugin::Options Opts;
  std::string OptErr;
  if (!Opts.parseArgs(PluginArgs, OptErr)) {
    llvm::WithColor::error(llvm::errs(), "spmd-check") << OptErr << "\n";
    return 1;
  }
  // Files missing from the database (headers, new files) get the command of
  // the most similar file, as in clangd.
  std::unique_ptr<CompilationDatabase> DB =
      withInferredCommands(Parser->getCompilations());
  std::vector<Job> Jobs = collectJobs(Parser->getSourcePathList(), *DB);
  runJobs(Jobs, PluginArgs);

  std::error_code EC;
  llvm::ToolOutputFile Out(OutputPath.empty() ? std::string("-")
                                              : OutputPath.getValue(),
                           EC, llvm::sys::fs::OF_TextWithCRLF);
  if (EC) {
    llvm::WithColor::error(llvm::errs(), "spmd-check")
        << "cannot write '" << OutputPath << "': " << EC.message() << "\n";
    return 1;
  }
  bool Failed = writeReport(Jobs, Out.os());
  Out.keep();
  if (!DependencyFile.empty() && !writeDepfile(Jobs))
    return 1;
  return Failed ? 1 : 0;
}
