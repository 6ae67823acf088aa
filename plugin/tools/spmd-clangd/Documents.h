//===- Documents.h - editor documents and LSP positions ---------*- C++ -*-===//
//
// The text of each open document as the editor sees it (didOpen, then
// didChange edits applied in order), LSP positions in the negotiated
// encoding. (File URIs: ../common/Uri.h.)
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TOOLS_SPMD_CLANGD_DOCUMENTS_H
#define SPMD_TOOLS_SPMD_CLANGD_DOCUMENTS_H

#include "../common/Diagnostics.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace spmd::tools {

/// How LSP counts the `character` of a position (LSP 3.17
/// PositionEncodingKind; clangd also offers it as "offsetEncoding").
enum class OffsetEncoding { UTF8, UTF16, UTF32 };

/// Parses "utf-8", "utf-16", "utf-32".
std::optional<OffsetEncoding> parseOffsetEncoding(llvm::StringRef Name);

/// The byte offset of LSP position (\p Line, \p Character), both 0-based, in
/// \p Text; positions past the end of a line clamp to its end, past the end
/// of the text to the text's end.
size_t offsetOf(llvm::StringRef Text, int64_t Line, int64_t Character,
                OffsetEncoding Enc);

/// The 0-based LSP character of \p P in encoding \p Enc.
int64_t characterOf(const Position &P, OffsetEncoding Enc);

/// Applies one TextDocumentContentChangeEvent ({text} replaces everything,
/// {range, text} replaces the range). Returns false with \p Err on a
/// malformed event.
bool applyContentChange(std::string &Text, const llvm::json::Object &Change,
                        OffsetEncoding Enc, std::string &Err);

} // namespace spmd::tools

#endif // SPMD_TOOLS_SPMD_CLANGD_DOCUMENTS_H
