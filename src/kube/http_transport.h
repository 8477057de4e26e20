#pragma once
// HttpTransport: the seam between the REST client and the network, so the client, reflector
// and elector are tested with FakeTransport and run with CurlTransport (leveldb's Env idea).

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tfjob::kube {

struct HttpRequest {
  std::string method = "GET";
  std::string path;  // "/api/v1/pods?limit=500": path and query, no host
  std::string body;
  std::string content_type = "application/json";
  std::chrono::milliseconds timeout{30000};  // whole request (Send only)
};

struct HttpResponse {
  long status = 0;
  std::string body;
  std::optional<int> retry_after;  // Retry-After seconds
};

// Receives a streamed body chunk by chunk; returns false to stop the stream.
using ByteSink = std::function<bool(std::string_view)>;

class HttpTransport {
 public:
  virtual ~HttpTransport() = default;
  // A complete request. Network failures are kUnavailable (connect, TLS, reset) or
  // kDeadlineExceeded; any HTTP status is a response, not an error. Thread-safe.
  virtual StatusOr<HttpResponse> Send(const HttpRequest& request) = 0;
  // A long request whose body is streamed to `on_bytes` (a watch). Returns OK when the server
  // ends the body, kCancelled when `stop` fired or `on_bytes` returned false, the API error
  // (via StatusFromHttp) when the status is not 200, kUnavailable on network failures.
  virtual Status Stream(const HttpRequest& request, const ByteSink& on_bytes, std::stop_token stop) = 0;
};

}  // namespace tfjob::kube
