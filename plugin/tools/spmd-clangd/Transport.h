//===- Transport.h - LSP base protocol over file descriptors ----*- C++ -*-===//
//
// The LSP base protocol: each message is a header ("Content-Length: N",
// optionally "Content-Type: ...") and a blank line, then N bytes of JSON.
// spmd-clangd relays messages between the editor (stdin/stdout) and clangd
// (a pipe each way) with one reader per direction.
//
//===----------------------------------------------------------------------===//

#ifndef SPMD_TOOLS_SPMD_CLANGD_TRANSPORT_H
#define SPMD_TOOLS_SPMD_CLANGD_TRANSPORT_H

#include "llvm/ADT/StringRef.h"

#include <mutex>
#include <string>

namespace spmd::tools {

/// Reads framed messages from a file descriptor.
class MessageReader {
public:
  explicit MessageReader(int FD) : FD(FD) {}
  /// Reads the next message body into \p Body. Returns false at end of
  /// input; on a malformed header sets \p Err and returns false.
  bool read(std::string &Body, std::string &Err);

private:
  /// Makes sure Buffer holds at least \p N unread bytes; false at EOF.
  bool fill(size_t N);
  int FD;
  std::string Buffer;
  size_t Pos = 0;
};

/// Writes framed messages to a file descriptor; safe to call from several
/// threads (one message is never interleaved with another).
class MessageWriter {
public:
  explicit MessageWriter(int FD) : FD(FD) {}
  /// Returns false when the descriptor is closed or broken.
  bool write(llvm::StringRef Body);
  /// Closes the descriptor (further writes fail).
  void close();

private:
  std::mutex Mutex;
  int FD;
};

} // namespace spmd::tools

#endif // SPMD_TOOLS_SPMD_CLANGD_TRANSPORT_H
