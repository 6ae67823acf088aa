//===- CompileCommands.h - finding a file's compile command -----*- C++ -*-===//
//
// How both tools find the command a file is compiled with: from a
// compile_commands.json, with commands inferred (from the most similar listed
// file, as clangd does) for files it does not list, such as headers.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TOOLS_COMPILE_COMMANDS_H
#define SPMD_TOOLS_COMPILE_COMMANDS_H

#include "clang/Tooling/CompilationDatabase.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/Twine.h"

#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace spmd::tools {

/// Checks that \p File is a compilation database: a JSON array of objects
/// with a "directory" and a "file" string and a "command" string or an
/// "arguments" array of strings, at least one. False with \p Err naming the
/// file and what is wrong (and where, for bad JSON) otherwise.
bool checkDatabaseFile(llvm::StringRef File, std::string &Err);

/// \p DB (not owned; it must outlive the result) with commands inferred for
/// the files it does not list.
std::unique_ptr<clang::tooling::CompilationDatabase>
withInferredCommands(const clang::tooling::CompilationDatabase &DB);

/// Finds a file's compile command the way clangd does: the nearest
/// compile_commands.json in the file's directory, a parent, or their build/
/// subdirectory (or only in a fixed directory), with inferred commands for
/// files it does not list; a plain `clang++ -std=c++17 <file>` otherwise.
/// Databases are loaded once per directory. Thread-safe.
class CommandLookup {
public:
  using Logger = std::function<void(const llvm::Twine &)>;
  /// \p FixedDir: the only directory searched (clangd's
  /// --compile-commands-dir), or empty. \p Log receives "using <file>" and
  /// read errors.
  CommandLookup(std::string FixedDir, Logger Log);

  clang::tooling::CompileCommand get(llvm::StringRef Path);

private:
  clang::tooling::CompilationDatabase *find(llvm::StringRef Path);
  clang::tooling::CompilationDatabase *load(llvm::StringRef Dir);

  std::string FixedDir;
  Logger Log;
  std::mutex Mutex;
  llvm::StringMap<std::unique_ptr<clang::tooling::CompilationDatabase>> ByDir;
};

} // namespace spmd::tools

#endif // SPMD_TOOLS_COMPILE_COMMANDS_H
