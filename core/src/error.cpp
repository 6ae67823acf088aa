// Error kinds and message assembly.
#include <spmd/core/error.h>

namespace spmd::core {

const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::SpmdTypeError:
      return "SpmdTypeError";
    case ErrorKind::InvalidArgument:
      return "InvalidArgument";
    case ErrorKind::UsageError:
      return "UsageError";
    case ErrorKind::MeshResolutionError:
      return "MeshResolutionError";
    case ErrorKind::ShapeError:
      return "ShapeError";
    case ErrorKind::NotImplemented:
      return "NotImplemented";
    case ErrorKind::ParseError:
      return "ParseError";
    case ErrorKind::RedistributeError:
      return "RedistributeError";
    case ErrorKind::DTensorPropagationError:
      return "DTensorPropagationError";
  }
  return "UnknownError";
}

std::string TypeError::full_message() const {
  std::string text = message;
  if (!fix.empty()) text += "\n" + fix;
  for (const std::string& note : notes) text += "\n  " + note;
  return text;
}

}  // namespace spmd::core
