//===- Uri.cpp - file:// URIs of paths ------------------------------------===//

#include "Uri.h"

#include "llvm/ADT/StringExtras.h"

namespace spmd::tools {

std::string fileUri(llvm::StringRef Path) {
  std::string Uri = "file://";
  for (char C : Path) {
    if (llvm::isAlnum(C) || llvm::StringRef("/-._~").contains(C))
      Uri += C;
    else
      Uri += "%" + llvm::utohexstr(static_cast<unsigned char>(C), false, 2);
  }
  return Uri;
}

std::optional<std::string> uriToPath(llvm::StringRef Uri) {
  if (!Uri.consume_front("file://"))
    return std::nullopt;
  std::string Path;
  for (size_t I = 0; I < Uri.size(); ++I) {
    unsigned Byte;
    if (Uri[I] == '%' && I + 2 < Uri.size() &&
        !Uri.substr(I + 1, 2).getAsInteger(16, Byte)) {
      Path += static_cast<char>(Byte);
      I += 2;
    } else {
      Path += Uri[I];
    }
  }
  return Path;
}

} // namespace spmd::tools
