//===- Diagnostics.cpp - diagnostics collected by the SPMD tools ----------===//
//
// Converts Clang diagnostics into Diag records while the SourceManager is
// alive: file paths are made absolute, columns are counted in bytes, UTF-16
// code units and code points, and token ranges become character ranges.
//
//===----------------------------------------------------------------------===//

#include "Diagnostics.h"

#include "spmd/plugin/Checker.h"

#include "clang/Basic/DiagnosticIDs.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Lex/Lexer.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace clang;

namespace spmd::tools {

llvm::StringRef levelName(Diag::Level L) {
  switch (L) {
  case Diag::Level::Note:
    return "note";
  case Diag::Level::Remark:
    return "remark";
  case Diag::Level::Warning:
    return "warning";
  case Diag::Level::Error:
  case Diag::Level::Fatal:
    return "error";
  }
  llvm_unreachable("unknown level");
}

namespace {

/// Columns of \p Offset within its line of \p Buffer, in bytes, UTF-16 code
/// units and code points (all 1-based).
void countColumns(llvm::StringRef Buffer, unsigned Offset, Position &P) {
  Offset = std::min<unsigned>(Offset, Buffer.size());
  // rfind looks at the characters before Offset only.
  size_t LineStart = Buffer.rfind('\n', Offset);
  LineStart = LineStart == llvm::StringRef::npos ? 0 : LineStart + 1;
  unsigned U16 = 0, U32 = 0;
  for (size_t I = LineStart; I < Offset; ++I) {
    unsigned char C = Buffer[I];
    if ((C & 0xC0) == 0x80)
      continue; // continuation byte
    ++U32;
    U16 += C >= 0xF0 ? 2 : 1; // 4-byte sequences are surrogate pairs
  }
  P.Column = Offset - LineStart + 1;
  P.Utf16Column = U16 + 1;
  P.Utf32Column = U32 + 1;
}

Position positionOf(const SourceManager &SM, SourceLocation Loc) {
  Position P;
  if (Loc.isInvalid())
    return P;
  std::pair<FileID, unsigned> Dec = SM.getDecomposedLoc(Loc);
  bool Invalid = false;
  llvm::StringRef Buffer = SM.getBufferData(Dec.first, &Invalid);
  if (Invalid)
    return P;
  P.Line = SM.getLineNumber(Dec.first, Dec.second);
  countColumns(Buffer, Dec.second, P);
  return P;
}

std::string fileNameOf(const SourceManager &SM, SourceLocation Loc) {
  OptionalFileEntryRef FE = SM.getFileEntryRefForID(SM.getFileID(Loc));
  if (!FE)
    return {};
  llvm::SmallString<256> Path(FE->getName());
  if (!llvm::sys::path::is_absolute(Path)) {
    // Relative to the compilation's working directory, which the tools set
    // on the virtual file system.
    SM.getFileManager().makeAbsolutePath(Path);
  }
  llvm::sys::path::remove_dots(Path, /*remove_dot_dot=*/true);
  return std::string(Path);
}

bool toRange(const SourceManager &SM, const LangOptions &LO, CharSourceRange R,
             std::string &File, Range &Out) {
  CharSourceRange FR = Lexer::makeFileCharRange(R, SM, LO);
  if (FR.isInvalid())
    return false;
  File = fileNameOf(SM, FR.getBegin());
  Out.Begin = positionOf(SM, FR.getBegin());
  Out.End = positionOf(SM, FR.getEnd());
  return Out.Begin.isValid() && Out.End.isValid();
}

Diag::Level levelOf(DiagnosticsEngine::Level L) {
  switch (L) {
  case DiagnosticsEngine::Note:
    return Diag::Level::Note;
  case DiagnosticsEngine::Remark:
    return Diag::Level::Remark;
  case DiagnosticsEngine::Warning:
    return Diag::Level::Warning;
  case DiagnosticsEngine::Error:
    return Diag::Level::Error;
  case DiagnosticsEngine::Fatal:
    return Diag::Level::Fatal;
  case DiagnosticsEngine::Ignored:
    break;
  }
  return Diag::Level::Note;
}

} // namespace

void DiagnosticCollector::BeginSourceFile(const LangOptions &LO,
                                          const Preprocessor *PP) {
  LangOpts = LO;
  if (Forward)
    Forward->BeginSourceFile(LO, PP);
}

void DiagnosticCollector::EndSourceFile() {
  if (Forward)
    Forward->EndSourceFile();
}

void DiagnosticCollector::finish() {
  if (Forward)
    Forward->finish();
}

void DiagnosticCollector::HandleDiagnostic(DiagnosticsEngine::Level Level,
                                           const Diagnostic &Info) {
  llvm::SmallString<256> Text;
  Info.FormatDiagnostic(Text);
  Diag D;
  D.Severity = levelOf(Level);
  D.Message = std::string(Text);

  if (Level == DiagnosticsEngine::Note) {
    if (!LastKept || Out.empty())
      return;
  } else {
    // The analysis hands over the kind as data (an argument of its
    // diagnostic), and the message without the "[spmd:<kind>]" tag.
    std::optional<plugin::DiagKind> Kind = plugin::diagKindOf(Info);
    bool Custom = Info.getID() >= diag::DIAG_UPPER_LIMIT;
    LastKept = Kind || Custom || Level >= DiagnosticsEngine::Error;
    if (!LastKept)
      return;
    if (Kind) {
      D.Rule = ("spmd:" + plugin::diagKindName(*Kind)).str();
      D.Message = plugin::diagMessageOf(Info);
    } else if (Custom)
      D.Rule = "spmd:annotation";
    else
      D.Rule = "clang-diagnostic-error";
    if (D.isError())
      ++KeptErrors;
    else if (D.Severity == Diag::Level::Warning)
      ++KeptWarnings;
  }

  if (Info.hasSourceManager() && Info.getLocation().isValid()) {
    const SourceManager &SM = Info.getSourceManager();
    SourceLocation Loc = SM.getFileLoc(Info.getLocation());
    D.File = fileNameOf(SM, Loc);
    D.Loc = positionOf(SM, Loc);
    D.InMainFile = SM.isWrittenInMainFile(Loc);
    SourceLocation Inc = Loc;
    while (Inc.isValid() && !SM.isWrittenInMainFile(Inc))
      Inc = SM.getIncludeLoc(SM.getFileID(Inc));
    D.MainFileLoc = D.InMainFile ? D.Loc : positionOf(SM, Inc);
    for (const CharSourceRange &R : Info.getRanges()) {
      std::string File;
      Range Out;
      if (toRange(SM, LangOpts, R, File, Out) && File == D.File)
        D.Ranges.push_back(Out);
    }
    for (const FixItHint &F : Info.getFixItHints()) {
      FixIt Fix;
      if (!toRange(SM, LangOpts, F.RemoveRange, Fix.File, Fix.Where))
        continue;
      Fix.Replacement = F.CodeToInsert;
      D.FixIts.push_back(std::move(Fix));
    }
  }

  // Count only what is kept: the frontend's "N errors generated" and the
  // tools' exit status are about the SPMD report, not the build's warnings.
  DiagnosticConsumer::HandleDiagnostic(Level, Info);
  if (D.Severity == Diag::Level::Note)
    Out.back().Notes.push_back(std::move(D));
  else
    Out.push_back(std::move(D));
  if (Forward)
    Forward->HandleDiagnostic(Level, Info);
}

} // namespace spmd::tools
