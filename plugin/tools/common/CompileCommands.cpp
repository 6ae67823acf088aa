//===- CompileCommands.cpp - finding a file's compile command -------------===//

#include "CompileCommands.h"

#include "clang/Tooling/JSONCompilationDatabase.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
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

bool checkDatabaseFile(llvm::StringRef File, std::string &Err) {
  auto Buffer = llvm::MemoryBuffer::getFile(File);
  if (!Buffer) {
    Err = "cannot read '" + File.str() + "': " + Buffer.getError().message();
    return false;
  }
  const std::string Shape =
      "a compilation database is a JSON array of {\"directory\", \"file\", "
      "\"command\" or \"arguments\"} objects (CMake writes one with "
      "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON)";
  if ((*Buffer)->getBuffer().trim().empty()) {
    Err = File.str() + ": the file is empty; " + Shape;
    return false;
  }
  llvm::Expected<llvm::json::Value> JSON =
      llvm::json::parse((*Buffer)->getBuffer());
  if (!JSON) {
    // "[3:1, byte=64]: Expected , or ]" as "<file>:3:1: Expected , or ]".
    std::string Msg = llvm::toString(JSON.takeError());
    llvm::StringRef M(Msg), Where;
    if (M.consume_front("[")) {
      std::tie(Where, M) = M.split("]: ");
      Where = Where.split(',').first;
    }
    Err = File.str() + (Where.empty() ? "" : ":" + Where.str()) +
          ": not valid JSON: " + M.str();
    return false;
  }
  const llvm::json::Array *Entries = JSON->getAsArray();
  if (!Entries) {
    Err = File.str() + ": not an array; " + Shape;
    return false;
  }
  if (Entries->empty()) {
    Err = File.str() + ": no compile commands (an empty array); " + Shape;
    return false;
  }
  for (size_t I = 0; I < Entries->size(); ++I) {
    const llvm::json::Object *E = (*Entries)[I].getAsObject();
    const char *Missing =
        !E                           ? "is not an object"
        : !E->getString("directory") ? "has no \"directory\" string"
        : !E->getString("file")      ? "has no \"file\" string"
        : !E->getString("command") && !E->getArray("arguments")
            ? "has neither a \"command\" string nor an \"arguments\" array"
            : nullptr;
    if (const llvm::json::Array *Args = E ? E->getArray("arguments") : nullptr)
      for (const llvm::json::Value &A : *Args)
        if (!A.getAsString())
          Missing = "has an \"arguments\" entry that is not a string";
    if (Missing) {
      Err = File.str() + ": entry " + std::to_string(I + 1) + " " + Missing +
            "; " + Shape;
      return false;
    }
  }
  return true;
}

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
    // Checked first: the JSON reader prints its own errors to stderr.
    std::unique_ptr<JSONCompilationDatabase> JSON;
    if (checkDatabaseFile(File, Err))
      JSON = JSONCompilationDatabase::loadFromFile(
          File, Err, JSONCommandLineSyntax::AutoDetect);
    else
      Err = "cannot use it: " + Err;
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
