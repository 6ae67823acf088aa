//===- CompileCommands.cpp - finding a file's compile command -------------===//

#include "CompileCommands.h"

#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace clang::tooling;

namespace spmd::tools {

namespace {

/// Forwards to a database it does not own, so that one owned elsewhere
/// (CommonOptionsParser's) can be wrapped by inferMissingCompileCommands.
class BorrowedDatabase : public CompilationDatabase {
public:
  explicit BorrowedDatabase(const CompilationDatabase &DB) : DB(DB) {}
  std::vector<CompileCommand>
  getCompileCommands(llvm::StringRef File) const override {
    return DB.getCompileCommands(File);
  }
  std::vector<std::string> getAllFiles() const override {
    return DB.getAllFiles();
  }
  std::vector<CompileCommand> getAllCompileCommands() const override {
    return DB.getAllCompileCommands();
  }

private:
  const CompilationDatabase &DB;
};

} // namespace

std::unique_ptr<CompilationDatabase>
withInferredCommands(const CompilationDatabase &DB) {
  return inferMissingCompileCommands(std::make_unique<BorrowedDatabase>(DB));
}

CommandLookup::CommandLookup(std::string FixedDir, Logger Log)
    : FixedDir(std::move(FixedDir)), Log(std::move(Log)) {}

CompileCommand CommandLookup::get(llvm::StringRef Path) {
  if (CompilationDatabase *DB = find(Path)) {
    std::vector<CompileCommand> Commands = DB->getCompileCommands(Path);
    if (!Commands.empty())
      return Commands.front();
  }
  llvm::StringRef Dir = llvm::sys::path::parent_path(Path);
  return CompileCommand(Dir, Path, {"clang++", "-std=c++17", Path.str()}, "");
}

CompilationDatabase *CommandLookup::find(llvm::StringRef Path) {
  std::lock_guard<std::mutex> Lock(Mutex);
  if (!FixedDir.empty())
    return load(FixedDir);
  for (llvm::StringRef Dir = llvm::sys::path::parent_path(Path); !Dir.empty();
       Dir = llvm::sys::path::parent_path(Dir)) {
    if (CompilationDatabase *DB = load(Dir))
      return DB;
    llvm::SmallString<256> Build(Dir);
    llvm::sys::path::append(Build, "build");
    if (CompilationDatabase *DB = load(Build))
      return DB;
  }
  return nullptr;
}

CompilationDatabase *CommandLookup::load(llvm::StringRef Dir) {
  auto It = ByDir.find(Dir);
  if (It != ByDir.end())
    return It->second.get();
  llvm::SmallString<256> File(Dir);
  llvm::sys::path::append(File, "compile_commands.json");
  std::unique_ptr<CompilationDatabase> DB;
  if (llvm::sys::fs::exists(File)) {
    std::string Err;
    auto JSON = JSONCompilationDatabase::loadFromFile(
        File, Err, JSONCommandLineSyntax::AutoDetect);
    if (JSON) {
      DB = inferMissingCompileCommands(std::move(JSON));
      Log("using " + File);
    } else {
      Log("cannot read " + File + ": " + Err);
    }
  }
  return (ByDir[Dir] = std::move(DB)).get();
}

} // namespace spmd::tools
