//===- Documents.cpp - editor documents and LSP positions -----------------===//

#include "Documents.h"

#include "llvm/ADT/StringExtras.h"

namespace spmd::tools {

std::optional<OffsetEncoding> parseOffsetEncoding(llvm::StringRef Name) {
  if (Name == "utf-8")
    return OffsetEncoding::UTF8;
  if (Name == "utf-16")
    return OffsetEncoding::UTF16;
  if (Name == "utf-32")
    return OffsetEncoding::UTF32;
  return std::nullopt;
}

size_t offsetOf(llvm::StringRef Text, int64_t Line, int64_t Character,
                OffsetEncoding Enc) {
  size_t Start = 0;
  for (int64_t L = 0; L < Line; ++L) {
    size_t NL = Text.find('\n', Start);
    if (NL == llvm::StringRef::npos)
      return Text.size();
    Start = NL + 1;
  }
  size_t End = Text.find('\n', Start);
  if (End == llvm::StringRef::npos)
    End = Text.size();
  size_t I = Start;
  int64_t Units = 0;
  while (I < End && Units < Character) {
    unsigned char C = Text[I];
    size_t Len = C < 0x80    ? 1
                 : C >= 0xF0 ? 4
                 : C >= 0xE0 ? 3
                 : C >= 0xC0 ? 2
                             : 1;
    if (Enc == OffsetEncoding::UTF8)
      Units += Len;
    else if (Enc == OffsetEncoding::UTF16)
      Units += Len == 4 ? 2 : 1;
    else
      Units += 1;
    I = std::min(I + Len, End);
  }
  return I;
}

int64_t characterOf(const Position &P, OffsetEncoding Enc) {
  unsigned Col = Enc == OffsetEncoding::UTF8    ? P.Column
                 : Enc == OffsetEncoding::UTF16 ? P.Utf16Column
                                                : P.Utf32Column;
  return Col == 0 ? 0 : Col - 1;
}

bool applyContentChange(std::string &Text, const llvm::json::Object &Change,
                        OffsetEncoding Enc, std::string &Err) {
  std::optional<llvm::StringRef> NewText = Change.getString("text");
  if (!NewText) {
    Err = "content change without 'text'";
    return false;
  }
  const llvm::json::Object *R = Change.getObject("range");
  if (!R) {
    Text = NewText->str();
    return true;
  }
  auto Offset = [&](llvm::StringRef Key) -> std::optional<size_t> {
    const llvm::json::Object *P = R->getObject(Key);
    if (!P)
      return std::nullopt;
    std::optional<int64_t> Line = P->getInteger("line");
    std::optional<int64_t> Char = P->getInteger("character");
    if (!Line || !Char)
      return std::nullopt;
    return offsetOf(Text, *Line, *Char, Enc);
  };
  std::optional<size_t> Begin = Offset("start"), End = Offset("end");
  if (!Begin || !End || *Begin > *End) {
    Err = "content change with a malformed range";
    return false;
  }
  Text.replace(*Begin, *End - *Begin, NewText->str());
  return true;
}

} // namespace spmd::tools
