//===- AnnotationFiles.cpp - annotations of PCHs and modules ----*- C++ -*-===//
//
// Clang keeps nothing of a plugin attribute in a precompiled header or a
// module file, so the annotations parsed while one is built would be lost to
// the compilations that load it. The compilation that writes an AST file
// writes its AnnotationTable beside it (`<file>.spmd-annotations`, one line
// per entry), and the compilations that load the AST file read it back;
// a declaration loaded from the AST file finds its entries by kind, file,
// line and column on first lookup.
//
// Line format (tab-separated): kind, file, line, column, then one of
//   T <axis>=<type>[,<axis>=<type>...]   [[spmd::type]] (core's spelling)
//   M <axis>[,<axis>...]                 [[spmd::mesh]]
//   O <nonlinear|linear|multilinear>     [[spmd::op]]
//   U                                    [[spmd::unchecked]]
//   A <axis>                             [[spmd::axis_size]]
//   K <axis>                             [[spmd::axis_rank]]
//   L                                    [[spmd::local]]
//
//===----------------------------------------------------------------------===//

#include "spmd/plugin/Annotations.h"
#include "spmd/plugin/Checker.h"

#include "clang/AST/ASTContext.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Serialization/ASTReader.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace clang;

namespace spmd::plugin {

namespace {

/// "kind:file:line:col" of a location, or "" when it is not in a file.
std::string stableKey(unsigned Kind, SourceLocation Loc,
                      const SourceManager &SM) {
  if (Loc.isInvalid())
    return {};
  PresumedLoc P = SM.getPresumedLoc(SM.getFileLoc(Loc),
                                    /*UseLineDirectives=*/false);
  if (P.isInvalid())
    return {};
  return std::to_string(Kind) + ":" + P.getFilename() + ":" +
         std::to_string(P.getLine()) + ":" + std::to_string(P.getColumn());
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
    if (Where.empty())
      return;
    // stableKey's ':' separators become tabs; a file name may hold ':'.
    size_t Kind = Where.find(':');
    size_t Col = Where.rfind(':');
    size_t Line = Where.rfind(':', Col - 1);
    Lines.push_back(Where.substr(0, Kind) + "\t" +
                    Where.substr(Kind + 1, Line - Kind - 1) + "\t" +
                    Where.substr(Line + 1, Col - Line - 1) + "\t" +
                    Where.substr(Col + 1) + "\t" + Payload);
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
  for (const std::string &L : Lines)
    OS << L << "\n";
}

bool AnnotationTable::read(llvm::StringRef Text, const SourceManager &SM,
                           std::string &Err) {
  ImportSM = &SM;
  unsigned LineNo = 0;
  while (!Text.empty()) {
    auto [Line, Rest] = Text.split('\n');
    Text = Rest;
    ++LineNo;
    if (Line.empty())
      continue;
    llvm::SmallVector<llvm::StringRef, 5> F;
    Line.split(F, '\t');
    unsigned Dummy;
    if (F.size() != 5 || F[0].getAsInteger(10, Dummy) ||
        F[2].getAsInteger(10, Dummy) || F[3].getAsInteger(10, Dummy) ||
        F[4].empty() || !llvm::StringRef("TMOUAL").contains(F[4].front())) {
      Err = "line " + std::to_string(LineNo) + " is malformed";
      return false;
    }
    Imported[(F[0] + ":" + F[1] + ":" + F[2] + ":" + F[3]).str()].push_back(
        F[4].str());
  }
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
      std::string Err;
      if (!Table.read((*Buf)->getBuffer(), Ctx.getSourceManager(), Err))
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

  void writeFor(ASTContext &Ctx, const AnnotationTable &Table) {
    std::error_code EC;
    llvm::raw_fd_ostream OS(AnnotationTable::annotationsFileFor(WriteTo), EC,
                            llvm::sys::fs::OF_Text);
    if (EC) {
      warn(Ctx, "cannot write the SPMD annotations of '" + WriteTo +
                    "': " + EC.message() +
                    "; compilations that load it will not see them");
      return;
    }
    Table.write(OS, Ctx.getSourceManager());
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
