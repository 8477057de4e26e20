#pragma once
// Status and StatusOr<T>: errors as values, shaped like abseil's API, with codes that mirror
// Kubernetes' metav1.StatusReason (NotFound, AlreadyExists, Conflict, Gone, ...) because
// controllers branch on exactly those. No exceptions cross our APIs; see style.md section 4.

#include <cassert>
#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tfjob {

enum class StatusCode {
  kOk = 0,
  kCancelled,
  kInvalidArgument,  // local bad input (a file, a flag, a spec)
  kDeadlineExceeded,
  kNotFound,
  kAlreadyExists,
  kConflict,  // 409 on a stale resourceVersion
  kGone,      // 410: resourceVersion too old, relist
  kInvalid,   // 422 from the server
  kUnauthorized,
  kForbidden,
  kTooManyRequests,  // 429, may carry retry_after
  kUnavailable,      // connect / TLS / 5xx
  kInternal,
  kDataLoss,       // undecodable body or file
  kNotAcceptable,  // 406: the server cannot answer in the version or media type asked for
};

std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Set only for kTooManyRequests when the server sent Retry-After.
  std::optional<std::chrono::seconds> retry_after() const { return retry_after_; }
  Status& set_retry_after(std::chrono::seconds s) {
    retry_after_ = s;
    return *this;
  }

  // "CODE: message", or "OK".
  std::string ToString() const;
  // Returns a copy whose message is "context: message" (absl StatusBuilder-like).
  Status WithContext(std::string_view context) const;

  friend bool operator==(const Status& a, const Status& b) { return a.code_ == b.code_ && a.message_ == b.message_; }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
  std::optional<std::chrono::seconds> retry_after_;
};

inline Status OkStatus() {
  return Status();
}
inline Status InvalidArgumentError(std::string m) {
  return {StatusCode::kInvalidArgument, std::move(m)};
}
inline Status NotFoundError(std::string m) {
  return {StatusCode::kNotFound, std::move(m)};
}
inline Status AlreadyExistsError(std::string m) {
  return {StatusCode::kAlreadyExists, std::move(m)};
}
inline Status ConflictError(std::string m) {
  return {StatusCode::kConflict, std::move(m)};
}
inline Status GoneError(std::string m) {
  return {StatusCode::kGone, std::move(m)};
}
inline Status InvalidError(std::string m) {
  return {StatusCode::kInvalid, std::move(m)};
}
inline Status UnavailableError(std::string m) {
  return {StatusCode::kUnavailable, std::move(m)};
}
inline Status InternalError(std::string m) {
  return {StatusCode::kInternal, std::move(m)};
}
inline Status DataLossError(std::string m) {
  return {StatusCode::kDataLoss, std::move(m)};
}
inline Status DeadlineExceededError(std::string m) {
  return {StatusCode::kDeadlineExceeded, std::move(m)};
}
inline Status CancelledError(std::string m) {
  return {StatusCode::kCancelled, std::move(m)};
}

// Predicates mirroring k8s.io/apimachinery/pkg/api/errors.
inline bool IsNotFound(const Status& s) {
  return s.code() == StatusCode::kNotFound;
}
inline bool IsAlreadyExists(const Status& s) {
  return s.code() == StatusCode::kAlreadyExists;
}
inline bool IsConflict(const Status& s) {
  return s.code() == StatusCode::kConflict;
}
inline bool IsNotAcceptable(const Status& s) {
  return s.code() == StatusCode::kNotAcceptable;
}
inline bool IsGone(const Status& s) {
  return s.code() == StatusCode::kGone;
}
// Worth retrying later without any change on our side.
bool IsRetryable(const Status& s);

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  // REQUIRES: !status.ok() (an OK StatusOr must hold a value).
  StatusOr(Status status) : value_(std::move(status)) {  // NOLINT: implicit by design
    assert(!std::get<Status>(value_).ok());
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(value_); }
  Status status() const { return ok() ? OkStatus() : std::get<Status>(value_); }

  // REQUIRES: ok().
  const T& value() const& { return std::get<T>(value_); }
  T& value() & { return std::get<T>(value_); }
  T&& value() && { return std::get<T>(std::move(value_)); }
  const T& operator*() const& { return value(); }
  T& operator*() & { return value(); }
  const T* operator->() const { return &value(); }
  T* operator->() { return &value(); }

 private:
  std::variant<Status, T> value_;
};

namespace internal {
inline Status AsStatus(const Status& s) {
  return s;
}
template <typename T>
Status AsStatus(const StatusOr<T>& s) {
  return s.status();
}
}  // namespace internal

}  // namespace tfjob

#define TFJOB_STATUS_CONCAT_INNER(a, b) a##b
#define TFJOB_STATUS_CONCAT(a, b) TFJOB_STATUS_CONCAT_INNER(a, b)

// Returns the status of `expr` from the enclosing function when it is not OK.
#define TFJOB_RETURN_IF_ERROR(expr)                                                                                   \
  do {                                                                                                                \
    if (::tfjob::Status tfjob_status_ = ::tfjob::internal::AsStatus(expr); !tfjob_status_.ok()) return tfjob_status_; \
  } while (false)

// `lhs = value of expr`, or returns its error status.
#define TFJOB_ASSIGN_OR_RETURN(lhs, expr) \
  TFJOB_ASSIGN_OR_RETURN_IMPL(TFJOB_STATUS_CONCAT(tfjob_statusor_, __LINE__), lhs, expr)
#define TFJOB_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                                \
  if (!tmp.ok()) return tmp.status();               \
  lhs = std::move(tmp).value()

// Crash on a broken invariant of our own code (never on something the outside world controls).
#define TFJOB_CHECK(cond)                                                   \
  do {                                                                      \
    if (!(cond)) ::tfjob::internal::CheckFailed(#cond, __FILE__, __LINE__); \
  } while (false)

namespace tfjob::internal {
[[noreturn]] void CheckFailed(const char* cond, const char* file, int line);
}
