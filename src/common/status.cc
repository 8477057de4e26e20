#include "common/status.h"

#include <cstdio>
#include <cstdlib>

namespace tfjob {

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "Cancelled";
    case StatusCode::kInvalidArgument: return "InvalidArgument";
    case StatusCode::kDeadlineExceeded: return "DeadlineExceeded";
    case StatusCode::kNotFound: return "NotFound";
    case StatusCode::kAlreadyExists: return "AlreadyExists";
    case StatusCode::kConflict: return "Conflict";
    case StatusCode::kGone: return "Gone";
    case StatusCode::kInvalid: return "Invalid";
    case StatusCode::kUnauthorized: return "Unauthorized";
    case StatusCode::kForbidden: return "Forbidden";
    case StatusCode::kTooManyRequests: return "TooManyRequests";
    case StatusCode::kUnavailable: return "Unavailable";
    case StatusCode::kInternal: return "Internal";
    case StatusCode::kDataLoss: return "DataLoss";
    case StatusCode::kNotAcceptable: return "NotAcceptable";
  }
  return "Unknown";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const {
  if (ok()) return *this;
  Status out(code_, std::string(context) + ": " + message_);
  out.retry_after_ = retry_after_;
  return out;
}

bool IsRetryable(const Status& s) {
  switch (s.code()) {
    case StatusCode::kConflict:
    case StatusCode::kTooManyRequests:
    case StatusCode::kUnavailable:
    case StatusCode::kDeadlineExceeded:
    case StatusCode::kInternal: return true;
    default: return false;
  }
}

namespace internal {
void CheckFailed(const char* cond, const char* file, int line) {
  std::fprintf(stderr, "TFJOB_CHECK failed: %s at %s:%d\n", cond, file, line);
  std::abort();
}
}  // namespace internal

}  // namespace tfjob
