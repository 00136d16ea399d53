#include "base/status.h"

namespace ember {

std::string Status::to_string() const {
  switch (code_) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "invalid argument: " + message_;
    case StatusCode::kInvalidModel: return "invalid model: " + message_;
    case StatusCode::kNotImplemented: return "not implemented: " + message_;
    case StatusCode::kNotFound: return "not found: " + message_;
    case StatusCode::kIoError: return "I/O error: " + message_;
    case StatusCode::kInternal: return "internal error: " + message_;
    case StatusCode::kNeedsValue: return "value needed: " + message_;
  }
  return message_;
}

}  // namespace ember
