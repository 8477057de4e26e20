#pragma once
// HttpTransport: the seam between the REST client and the network, so the client, reflector
// and elector are tested with FakeTransport and run with CurlTransport (leveldb's Env idea).

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tfjob::kube {

// The default cap of a response body (Send): a larger body is refused with kDataLoss rather than
// held in memory (docs/operator.md, section 2).
inline constexpr size_t kMaxResponseBytes = 64 * 1024 * 1024;

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // "/api/v1/pods?limit=500": path and query, no host
  std::string body;
  std::string content_type = "application/json";
  std::string accept = "application/json";   // the Accept header
  std::chrono::milliseconds timeout{30000};  // whole request (Send only); 0 = none
  // No response (not one byte of the status line) this long after the request started:
  // kDeadlineExceeded. 0 = none. For a watch, whose whole length is unbounded.
  std::chrono::milliseconds response_timeout{0};
  // A stream that received no byte for this long is dropped (kDeadlineExceeded). 0 = none.
  std::chrono::milliseconds idle_timeout{0};
  size_t max_response_bytes = kMaxResponseBytes;  // Send only
  // When this is requested the request ends at once with kCancelled (shutdown).
  std::stop_token abort;
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::optional<int> retry_after;  // Retry-After seconds
  // The values of the response's `Warning` headers (RFC 7234: `299 - "text"`), as the API
  // server sends them for deprecated APIs, admission webhooks' warnings and field validation
  // (fieldValidation=Warn); at most kMaxWarnings of at most kMaxWarningBytes each.
  std::vector<std::string> warnings;
};
inline constexpr size_t kMaxWarnings = 200;
inline constexpr size_t kMaxWarningBytes = 4096;

// Receives a streamed body chunk by chunk; returns false to stop the stream.
using ByteSink = std::function<bool(std::string_view)>;

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // A complete request. Network failures are kUnavailable (connect, TLS, reset) or
  // kDeadlineExceeded (request.timeout); a body over request.max_response_bytes is kDataLoss;
  // request.abort ends it with kCancelled. Messages start with the method and URL, then the
  // cause: "timeout", "connection refused", "TLS error", ... Any HTTP status is a response, not
  // an error. Thread-safe.
  virtual StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;
  // A long request whose body is streamed to `on_bytes` (a watch). Returns OK when the server
  // ends the body, kCancelled when `stop` or request.abort fired or `on_bytes` returned false,
  // the API error (via StatusFromHttp) when the status is not 200, kUnavailable on network
  // failures, kDeadlineExceeded after request.response_timeout or request.idle_timeout.
  virtual Status Stream(const HttpRequest& request, const ByteSink& on_bytes, std::stop_token stop) = 0;
};

}  // namespace tfjob::kube
