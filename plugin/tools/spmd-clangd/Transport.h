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
  /// The largest message body accepted (clangd's own limit is lower for
  /// files, but a didOpen of a generated source can be large). A longer one
  /// is read and dropped.
  static constexpr size_t MaxMessageBytes = size_t(256) << 20;

  explicit MessageReader(int FD) : FD(FD) {}

  enum class Result {
    Message,   ///< \p Body holds the next message
    Malformed, ///< a header block without a usable Content-Length, or a
               ///< message over MaxMessageBytes, was skipped (\p Err says
               ///< which); reading can go on
    End,       ///< end of input
  };
  /// Reads the next message body into \p Body.
  Result read(std::string &Body, std::string &Err);

private:
  /// Makes sure Buffer holds at least \p N unread bytes; false at EOF.
  bool fill(size_t N);
  /// Reads and drops \p N bytes; false at EOF.
  bool skip(size_t N);
  int FD;
  std::string Buffer;
  size_t Pos = 0;
};

/// Whether JSON text nests arrays and objects deeper than \p Limit (a
/// linear scan; strings are skipped). llvm::json::parse recurses once per
/// level, so a message nested tens of thousands deep would overflow the
/// stack: such messages are relayed without being parsed.
bool jsonNestsDeeperThan(llvm::StringRef Text, unsigned Limit);

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
