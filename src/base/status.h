#pragma once
// Status/Result: the error type at every boundary that can see bad input.
#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace ember {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kInvalidModel,
  kNotImplemented,
  kNotFound,
  kIoError,
  kInternal,
  kNeedsValue,  // kernels::needs_value(): a shape depends on a value not known yet
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok() { return {}; }
  bool is_ok() const { return code_ == StatusCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string to_string() const;

  // Prefixes context ("node 'x' (Add): ") to the message of an error.
  Status with_context(const std::string& context) const {
    if (is_ok()) return *this;
    return Status(code_, context + message_);
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

template <typename... Args>
Status invalid_argument(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInvalidArgument, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status invalid_model(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInvalidModel, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status not_implemented(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kNotImplemented, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status io_error(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kIoError, fmt::format(f, std::forward<Args>(args)...));
}
template <typename... Args>
Status internal_error(fmt::format_string<Args...> f, Args&&... args) {
  return Status(StatusCode::kInternal, fmt::format(f, std::forward<Args>(args)...));
}

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}
  Result(Status status) : v_(std::move(status)) { assert(!std::get<Status>(v_).is_ok()); }

  bool is_ok() const { return v_.index() == 0; }
  explicit operator bool() const { return is_ok(); }
  const Status& status() const {
    static const Status kOk;
    return is_ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { assert(is_ok()); return std::get<T>(v_); }
  const T& value() const& { assert(is_ok()); return std::get<T>(v_); }
  T&& value() && { assert(is_ok()); return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ember

#define EMBER_CONCAT_INNER(a, b) a##b
#define EMBER_CONCAT(a, b) EMBER_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is an error.
#define EMBER_RETURN_IF_ERROR(expr)                  \
  do {                                               \
    ::ember::Status ember_status_ = (expr);          \
    if (!ember_status_.is_ok()) return ember_status_; \
  } while (0)

// `EMBER_ASSIGN_OR_RETURN(auto x, f())`: unwraps a Result or returns its Status.
#define EMBER_ASSIGN_OR_RETURN(lhs, expr) \
  EMBER_ASSIGN_OR_RETURN_IMPL(EMBER_CONCAT(ember_result_, __LINE__), lhs, expr)
#define EMBER_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.is_ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
