//===- AnnotationFiles.cpp - annotations of PCHs and modules ----*- C++ -*-===//
//
// Clang keeps nothing of a plugin attribute in a precompiled header or a
// module file, so the annotations parsed while one is built would be lost to
// the compilations that load it. The compilation that writes an AST file
// writes its AnnotationTable beside it (`<file>.spmd-annotations`, one line
// per entry, written to a temporary file and renamed), and the compilations
// that load the AST file read it back; a declaration loaded from the AST file
// finds its entries by its key on first lookup.
//
// File format: the line "spmd-check-annotations 2", the line
// "source<TAB><canonical path of the AST file's source>", the entries, and
// the line "end <number of entries>" (a file without it was cut short).
// Entry format (tab-separated): kind, canonical file, line, column of the
// expansion position; for a declaration a macro generated, then "m", file,
// line, column of the spelling position at each macro level; then one of
//   T <axis>=<type>[,<axis>=<type>...]   [[spmd::type]] (core's spelling)
//   M <axis>[,<axis>...]                 [[spmd::mesh]]
//   O <nonlinear|linear|multilinear>     [[spmd::op]]
//   U                                    [[spmd::unchecked]]
//   A <axis>                             [[spmd::axis_size]]
//   K <axis>                             [[spmd::axis_rank]]
//   G <axis>                             [[spmd::axis_group]]
//   L                                    [[spmd::local]]
//
//===----------------------------------------------------------------------===//

#include "spmd/plugin/Annotations.h"
#include "spmd/plugin/Checker.h"

#include "clang/AST/ASTContext.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Serialization/ASTReader.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace clang;

namespace spmd::plugin {

namespace {

/// The first line of an annotations file: its format and version.
constexpr llvm::StringLiteral FileHeader = "spmd-check-annotations 2";
/// The last line is FileTrailer followed by the number of entries: a file
/// without it was cut short.
constexpr llvm::StringLiteral FileTrailer = "end ";

/// "file<TAB>line<TAB>col" of a file location; the file is named by its
/// canonical (absolute, symlink-free) path, so that a header compiled by a
/// relative path and read back through the AST file's absolute one agree.
void appendFilePosition(std::string &Out, SourceLocation Loc,
                        const SourceManager &SM) {
  PresumedLoc P = SM.getPresumedLoc(Loc, /*UseLineDirectives=*/false);
  if (P.isInvalid())
    return;
  llvm::StringRef Name = P.getFilename();
  if (OptionalFileEntryRef F = SM.getFileEntryRefForID(SM.getFileID(Loc)))
    Name = SM.getFileManager().getCanonicalName(*F);
  Out += Name;
  Out +=
      "\t" + std::to_string(P.getLine()) + "\t" + std::to_string(P.getColumn());
}

/// The key of a declaration in an annotations file: its kind and the file
/// position it was expanded at, then, for a declaration a macro generated,
/// the spelling position of each macro level down to the name's own
/// spelling. Declarations one macro expansion generates thereby get keys of
/// their own. "" when the location is not in a file.
std::string stableKey(unsigned Kind, SourceLocation Loc,
                      const SourceManager &SM) {
  if (Loc.isInvalid())
    return {};
  std::string Key = std::to_string(Kind) + "\t";
  size_t Before = Key.size();
  appendFilePosition(Key, SM.getFileLoc(Loc), SM);
  if (Key.size() == Before)
    return {};
  // Bounded by the macro nesting depth (Clang limits it).
  for (SourceLocation L = Loc; L.isMacroID();
       L = SM.getImmediateMacroCallerLoc(L)) {
    Key += "\tm\t";
    appendFilePosition(Key, SM.getSpellingLoc(L), SM);
  }
  return Key;
}

} // namespace

std::string AnnotationTable::annotationsFileFor(llvm::StringRef ASTFile) {
  return (ASTFile + ".spmd-annotations").str();
}

void AnnotationTable::write(llvm::raw_ostream &OS,
                            const SourceManager &SM) const {
  // Sorted, so that the file is the same for the same input.
  std::vector<std::string> Lines;
  auto Add = [&](const Key &K, const std::string &Payload) {
    std::string Where =
        stableKey(K.first, SourceLocation::getFromRawEncoding(K.second), SM);
    if (!Where.empty())
      Lines.push_back(Where + "\t" + Payload);
  };
  for (const auto &[K, A] : Types) {
    std::string P = "T ";
    for (const AxisEntry &E : A.Entries)
      P += (&E == &A.Entries.front() ? "" : ",") + E.Axis + "=" +
           core::to_string(E.Type) + (E.Pos ? "@" + std::to_string(E.Pos) : "");
    Add(K, P);
  }
  for (const auto &[K, M] : Meshes)
    Add(K, "M " + llvm::join(M.Axes, ","));
  for (const auto &[K, C] : Ops)
    Add(K, std::string("O ") + core::to_string(C));
  for (const auto &[K, U] : Unchecked)
    if (U)
      Add(K, "U");
  for (const auto &[K, Axis] : AxisSizes)
    Add(K, "A " + Axis);
  for (const auto &[K, Axis] : AxisRanks)
    Add(K, "K " + Axis);
  for (const auto &[K, Axis] : AxisGroups)
    Add(K, "G " + Axis);
  for (const auto &[K, L] : Local)
    if (L)
      Add(K, LocalInfer.lookup(K) ? "L infer" : "L");
  llvm::sort(Lines);
  Lines.erase(std::unique(Lines.begin(), Lines.end()), Lines.end());
  OS << FileHeader << "\n";
  std::string Source;
  if (OptionalFileEntryRef Main = SM.getFileEntryRefForID(SM.getMainFileID()))
    Source = SM.getFileManager().getCanonicalName(*Main).str();
  OS << "source\t" << Source << "\n";
  for (const std::string &L : Lines)
    OS << L << "\n";
  OS << FileTrailer << Lines.size() << "\n";
}

bool AnnotationTable::read(llvm::StringRef Text, const SourceManager &SM,
                           llvm::StringRef ExpectedSource, std::string &Err) {
  if (Text.empty()) {
    Err = "the file is empty";
    return false;
  }
  auto [First, Body] = Text.split('\n');
  if (First != FileHeader) {
    Err = "it is not an annotations file of this version of spmd-check "
          "(its first line is '" +
          First.take_front(60).str() + "', expected '" + FileHeader.str() +
          "')";
    return false;
  }
  // The trailer: the last line, "end <entries>".
  llvm::StringRef Trimmed = Body;
  if (!Trimmed.consume_back("\n")) {
    Err = "the file is cut short (no final line)";
    return false;
  }
  size_t LastNL = Trimmed.rfind('\n');
  llvm::StringRef Last = LastNL == llvm::StringRef::npos
                             ? Trimmed
                             : Trimmed.drop_front(LastNL + 1);
  unsigned Count = 0;
  if (!Last.consume_front(FileTrailer) || Last.getAsInteger(10, Count)) {
    Err = "the file is cut short (no 'end' line)";
    return false;
  }
  Body = LastNL == llvm::StringRef::npos ? llvm::StringRef()
                                         : Trimmed.take_front(LastNL);
  llvm::StringMap<llvm::SmallVector<std::string, 1>> Read;
  unsigned LineNo = 1, Entries = 0;
  while (!Body.empty()) {
    auto [Line, Rest] = Body.split('\n');
    Body = Rest;
    ++LineNo;
    if (LineNo == 2) {
      llvm::StringRef Source = Line;
      if (!Source.consume_front("source\t")) {
        Err = "line 2 is not the 'source' line";
        return false;
      }
      if (!ExpectedSource.empty() && !Source.empty() &&
          Source != ExpectedSource) {
        Err = "it was written for '" + Source.str() +
              "', not for this AST file's '" + ExpectedSource.str() +
              "' (two builds wrote the same output?)";
        return false;
      }
      continue;
    }
    // kind, file, line, col, then "m", file, line, col per macro level,
    // then the payload.
    llvm::SmallVector<llvm::StringRef, 8> F;
    Line.split(F, '\t');
    unsigned Dummy;
    bool Ok = F.size() >= 5 && (F.size() - 5) % 4 == 0 &&
              !F[0].getAsInteger(10, Dummy) && !F.back().empty() &&
              llvm::StringRef("TMOUAKLG").contains(F.back().front());
    for (size_t I = 1; Ok && I + 1 < F.size(); I += 4)
      Ok = (I == 1 || F[I - 1] == "m") && !F[I + 1].getAsInteger(10, Dummy) &&
           !F[I + 2].getAsInteger(10, Dummy);
    if (!Ok) {
      Err = "line " + std::to_string(LineNo) + " is malformed";
      return false;
    }
    Read[Line.take_front(Line.size() - F.back().size() - 1)].push_back(
        F.back().str());
    ++Entries;
  }
  if (LineNo < 2 || Entries != Count) {
    Err = "the file is cut short (" + std::to_string(Entries) + " of " +
          std::to_string(Count) + " entries)";
    return false;
  }
  ImportSM = &SM;
  for (auto &E : Read)
    for (std::string &Payload : E.getValue())
      Imported[E.getKey()].push_back(std::move(Payload));
  return true;
}

void AnnotationTable::resolveImported(const Decl *D) const {
  Key K = key(D);
  if (!ImportSM || !ImportSM->isLoadedSourceLocation(D->getLocation()) ||
      !Resolved.insert(K).second)
    return;
  auto It = Imported.find(stableKey(K.first, D->getLocation(), *ImportSM));
  if (It == Imported.end())
    return;
  // Notes point at the declaration (the attribute's own location is not
  // kept); axes are named by their names (no spmd::Axis constant).
  SourceLocation Loc = D->getLocation();
  for (llvm::StringRef Entry : It->second) {
    char What = Entry.front();
    llvm::StringRef Payload = Entry.drop_front(1).trim();
    llvm::SmallVector<llvm::StringRef, 4> Parts;
    Payload.split(Parts, ',', -1, /*KeepEmpty=*/false);
    switch (What) {
    case 'T': {
      TypeAnnotation A;
      A.Loc = Loc;
      for (llvm::StringRef P : Parts) {
        auto [Axis, TypePos] = P.split('=');
        auto [Type, PosText] = TypePos.split('@'); // "S(0)@1": tuple position
        unsigned Pos = 0;
        if (!PosText.empty() && PosText.getAsInteger(10, Pos))
          continue;
        if (core::Result<PerAxisType> T =
                core::parse_per_axis_type(std::string_view(Type));
            T.ok())
          A.Entries.push_back({Axis.str(), *T, nullptr, Loc, int(Pos)});
      }
      if (!A.Entries.empty())
        Types[K] = std::move(A);
      break;
    }
    case 'M': {
      MeshAnnotation M;
      M.Loc = Loc;
      for (llvm::StringRef P : Parts)
        M.Axes.push_back(P.str());
      Meshes[K] = std::move(M);
      break;
    }
    case 'O':
      if (core::Result<core::OpClass> C =
              core::parse_op_class(std::string(Payload));
          C.ok())
        Ops[K] = *C;
      break;
    case 'L':
      Local[K] = true;
      if (Payload == "infer")
        LocalInfer[K] = true;
      break;
    case 'U':
      Unchecked[K] = true;
      break;
    case 'A':
      AxisSizes[K] = Payload.str();
      break;
    case 'K':
      AxisRanks[K] = Payload.str();
      break;
    case 'G':
      AxisGroups[K] = Payload.str();
      break;
    }
  }
}

namespace {

/// The checker of a compiler run: reads the annotations files of the AST
/// files the run loaded, writes one for the AST file it produces, then
/// checks the translation unit.
class CompilerRunConsumer : public ASTConsumer {
public:
  CompilerRunConsumer(Options Opts, CompilerInstance &CI)
      : Opts(std::move(Opts)), CI(CI) {
    const FrontendOptions &FO = CI.getFrontendOpts();
    switch (FO.ProgramAction) {
    case frontend::GeneratePCH:
    case frontend::GenerateModule:
    case frontend::GenerateModuleInterface:
    case frontend::GenerateHeaderUnit:
      WriteTo = FO.OutputFile;
      break;
    default:
      break;
    }
    if (!FO.ModuleOutputPath.empty()) // -fmodule-output
      WriteTo = FO.ModuleOutputPath;
    if (WriteTo == "-")
      WriteTo.clear();
  }

  void HandleTranslationUnit(ASTContext &Ctx) override {
    AnnotationTable &Table = AnnotationTable::get(Ctx);
    readLoaded(Ctx, Table);
    if (!WriteTo.empty() && !Ctx.getDiagnostics().hasErrorOccurred())
      writeFor(Ctx, Table);
    checkTranslationUnit(Ctx, Opts, Ctx.getDiagnostics());
  }

private:
  void warn(ASTContext &Ctx, const std::string &Text) {
    DiagnosticsEngine &D = Ctx.getDiagnostics();
    const SourceManager &SM = Ctx.getSourceManager();
    D.Report(SM.getLocForStartOfFile(SM.getMainFileID()),
             D.getCustomDiagID(DiagnosticsEngine::Warning, "spmd-check: %0"))
        << Text;
  }

  /// Whether namespace spmd, hence the annotations' vocabulary, came in
  /// through an AST file.
  static bool spmdFromASTFile(ASTContext &Ctx) {
    for (const NamedDecl *ND :
         Ctx.getTranslationUnitDecl()->lookup(&Ctx.Idents.get("spmd")))
      for (const Decl *R : ND->redecls())
        if (R->isFromASTFile())
          return true;
    return false;
  }

  void readLoaded(ASTContext &Ctx, AnnotationTable &Table) {
    IntrusiveRefCntPtr<ASTReader> Reader = CI.getASTReader();
    if (!Reader)
      return;
    std::vector<std::string> Missing;
    for (serialization::ModuleFile &MF : Reader->getModuleManager()) {
      std::string Path = AnnotationTable::annotationsFileFor(MF.FileName);
      llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> Buf =
          llvm::MemoryBuffer::getFile(Path);
      if (!Buf) {
        Missing.push_back(MF.FileName);
        continue;
      }
      std::string Expected;
      if (!MF.OriginalSourceFileName.empty()) {
        FileManager &FM = Ctx.getSourceManager().getFileManager();
        if (llvm::Expected<FileEntryRef> F =
                FM.getFileRef(MF.OriginalSourceFileName))
          Expected = FM.getCanonicalName(*F).str();
        else
          llvm::consumeError(F.takeError());
      }
      std::string Err;
      if (!Table.read((*Buf)->getBuffer(), Ctx.getSourceManager(), Expected,
                      Err))
        warn(Ctx, "cannot read the SPMD annotations of '" + MF.FileName +
                      "' from '" + Path + "': " + Err +
                      "; rebuild it with the spmd-check plugin loaded");
    }
    if (!Missing.empty() && spmdFromASTFile(Ctx))
      warn(Ctx, "'" + Missing.front() +
                    "' (a precompiled header or module) was built without "
                    "the spmd-check plugin: the [[spmd::...]] annotations "
                    "in it are not seen; rebuild it with the plugin loaded "
                    "(-fplugin=spmd-check.so)");
  }

  /// Writes the annotations file atomically: into a temporary file in the
  /// same directory, renamed over the old one once complete, so that a
  /// reader sees the old file or the new one, never a part, and concurrent
  /// writers leave one whole file. Any failure (a full disk included) is a
  /// warning; the old file is then removed rather than left stale.
  void writeFor(ASTContext &Ctx, const AnnotationTable &Table) {
    std::string Path = AnnotationTable::annotationsFileFor(WriteTo);
    auto Fail = [&](const std::string &Why) {
      llvm::sys::fs::remove(Path);
      warn(Ctx, "cannot write the SPMD annotations of '" + WriteTo + "' to '" +
                    Path + "': " + Why +
                    "; compilations that load it will not see them");
    };
    int FD = -1;
    llvm::SmallString<256> Tmp;
    if (std::error_code EC = llvm::sys::fs::createUniqueFile(
            Path + "-%%%%%%%%.tmp", FD, Tmp, llvm::sys::fs::OF_Text)) {
      Fail(EC.message());
      return;
    }
    {
      llvm::raw_fd_ostream OS(FD, /*shouldClose=*/true);
      Table.write(OS, Ctx.getSourceManager());
      OS.close();
      if (std::error_code EC = OS.error()) {
        OS.clear_error(); // reported here, not as a fatal error
        llvm::sys::fs::remove(Tmp);
        Fail(EC.message());
        return;
      }
    }
    if (std::error_code EC = llvm::sys::fs::rename(Tmp, Path)) {
      llvm::sys::fs::remove(Tmp);
      Fail(EC.message());
    }
  }

  Options Opts;
  CompilerInstance &CI;
  std::string WriteTo;
};

} // namespace

std::unique_ptr<ASTConsumer> createSPMDCheckConsumer(Options Opts,
                                                     CompilerInstance &CI) {
  return std::make_unique<CompilerRunConsumer>(std::move(Opts), CI);
}

} // namespace spmd::plugin
