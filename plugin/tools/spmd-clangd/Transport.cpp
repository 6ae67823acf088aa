//===- Transport.cpp - LSP base protocol over file descriptors ------------===//

#include "Transport.h"

#include "llvm/ADT/StringExtras.h"

#include <cerrno>
#include <unistd.h>

namespace spmd::tools {

bool MessageReader::fill(size_t N) {
  if (Pos > 0) {
    Buffer.erase(0, Pos);
    Pos = 0;
  }
  while (Buffer.size() - Pos < N) {
    char Chunk[65536];
    ssize_t Got = ::read(FD, Chunk, sizeof(Chunk));
    if (Got < 0 && errno == EINTR)
      continue;
    if (Got <= 0)
      return false;
    Buffer.append(Chunk, static_cast<size_t>(Got));
  }
  return true;
}

bool MessageReader::read(std::string &Body, std::string &Err) {
  Err.clear();
  std::optional<size_t> Length;
  while (true) {
    // Read one header line, up to "\r\n" (a bare "\n" is tolerated).
    size_t End;
    while ((End = Buffer.find('\n', Pos)) == std::string::npos)
      if (!fill(Buffer.size() - Pos + 1))
        return false;
    llvm::StringRef Line = llvm::StringRef(Buffer).slice(Pos, End).rtrim("\r");
    Pos = End + 1;
    if (Line.empty()) {
      if (Length)
        break;
      continue; // a stray blank line between messages
    }
    auto [Name, Value] = Line.split(':');
    if (Name.trim().equals_insensitive("Content-Length")) {
      size_t N;
      if (Value.trim().getAsInteger(10, N)) {
        Err = ("bad Content-Length header: '" + Line + "'").str();
        return false;
      }
      Length = N;
    }
  }
  if (!fill(*Length))
    return false;
  Body.assign(Buffer, Pos, *Length);
  Pos += *Length;
  return true;
}

bool MessageWriter::write(llvm::StringRef Body) {
  std::string Message =
      "Content-Length: " + llvm::utostr(Body.size()) + "\r\n\r\n";
  Message += Body;
  std::lock_guard<std::mutex> Lock(Mutex);
  size_t Done = 0;
  while (Done < Message.size()) {
    if (FD < 0)
      return false;
    ssize_t N = ::write(FD, Message.data() + Done, Message.size() - Done);
    if (N < 0 && errno == EINTR)
      continue;
    if (N <= 0)
      return false;
    Done += static_cast<size_t>(N);
  }
  return true;
}

void MessageWriter::close() {
  std::lock_guard<std::mutex> Lock(Mutex);
  if (FD >= 0)
    ::close(FD);
  FD = -1;
}

} // namespace spmd::tools
