//===- Transport.cpp - LSP base protocol over file descriptors ------------===//

#include "Transport.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>
#include <cerrno>
#include <optional>
#include <unistd.h>

namespace spmd::tools {

/// Header lines are short ("Content-Length: 123"); anything longer is junk.
static constexpr size_t MaxHeaderLine = 64 * 1024;

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

bool MessageReader::skip(size_t N) {
  while (N > 0) {
    size_t Have = std::min(N, Buffer.size() - Pos);
    Pos += Have;
    N -= Have;
    if (N > 0 && !fill(std::min<size_t>(N, 1 << 20)))
      return false;
  }
  return true;
}

MessageReader::Result MessageReader::read(std::string &Body, std::string &Err) {
  Err.clear();
  std::optional<size_t> Length;
  bool BadLength = false, AnyHeader = false;
  while (true) {
    // Read one header line, up to "\r\n" (a bare "\n" is tolerated).
    size_t End;
    while ((End = Buffer.find('\n', Pos)) == std::string::npos) {
      if (Buffer.size() - Pos > MaxHeaderLine) {
        // Not a header (raw JSON without framing, binary junk): drop it.
        Pos = Buffer.size();
        Err = "a header line longer than " + std::to_string(MaxHeaderLine) +
              " bytes was dropped";
        return Result::Malformed;
      }
      if (!fill(Buffer.size() - Pos + 1))
        return Result::End;
    }
    llvm::StringRef Line = llvm::StringRef(Buffer).slice(Pos, End).rtrim("\r");
    Pos = End + 1;
    if (Line.empty()) {
      if (Length)
        break;
      if (!AnyHeader)
        continue; // a stray blank line between messages
      // A header block without a usable length: the body cannot be found;
      // skip the block and look for the next header.
      Err = BadLength ? "bad Content-Length header"
                      : "a message header without Content-Length";
      return Result::Malformed;
    }
    AnyHeader = true;
    auto [Name, Value] = Line.split(':');
    if (Name.trim().equals_insensitive("Content-Length")) {
      size_t N;
      if (Value.trim().getAsInteger(10, N))
        BadLength = true;
      else
        Length = N;
    }
  }
  if (*Length > MaxMessageBytes) {
    Err = "a message of " + std::to_string(*Length) +
          " bytes (more than the limit of " + std::to_string(MaxMessageBytes) +
          ") was dropped";
    return skip(*Length) ? Result::Malformed : Result::End;
  }
  if (!fill(*Length))
    return Result::End;
  Body.assign(Buffer, Pos, *Length);
  Pos += *Length;
  return Result::Message;
}

bool jsonNestsDeeperThan(llvm::StringRef Text, unsigned Limit) {
  unsigned Depth = 0;
  bool InString = false;
  for (size_t I = 0; I < Text.size(); ++I) {
    char C = Text[I];
    if (InString) {
      if (C == '\\')
        ++I;
      else if (C == '"')
        InString = false;
    } else if (C == '"') {
      InString = true;
    } else if (C == '[' || C == '{') {
      if (++Depth > Limit)
        return true;
    } else if ((C == ']' || C == '}') && Depth > 0) {
      --Depth;
    }
  }
  return false;
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
