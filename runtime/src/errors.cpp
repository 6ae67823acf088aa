// errors.cpp - maps core::TypeError kinds onto the runtime's exception classes.
#include <spmd/errors.h>

namespace spmd {

void throw_error(core::ErrorKind kind, std::string message, std::string fix) {
  core::TypeError e;
  e.kind = kind;
  e.message = std::move(message);
  e.fix = std::move(fix);
  throw_error(e);
}

void throw_error(const core::TypeError& error) {
  const std::string message = error.full_message();
  switch (error.kind) {
    case core::ErrorKind::SpmdTypeError:
      throw SpmdTypeError(message);
    case core::ErrorKind::InvalidArgument:
      throw InvalidArgument(message);
    case core::ErrorKind::UsageError:
      throw UsageError(message);
    case core::ErrorKind::MeshResolutionError:
      throw MeshResolutionError(message);
    case core::ErrorKind::ShapeError:
      throw ShapeError(message);
    case core::ErrorKind::NotImplemented:
      throw NotImplementedError(message);
    case core::ErrorKind::ParseError:
      throw ParseError(message);
    case core::ErrorKind::RedistributeError:
      throw RedistributeError(message);
    case core::ErrorKind::DTensorPropagationError:
      throw DTensorPropagationError(message);
  }
  throw SpmdError(error.kind, message);
}

}  // namespace spmd
