#pragma once
// The one place that turns an HTTP status and a metav1.Status body into a Status, keeping the
// server's message (k8s.io/apimachinery/pkg/api/errors). 409 is AlreadyExists or Conflict by
// the body's reason; 410 is Gone; 429 carries Retry-After.

#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace tfjob::kube {

// OK for 2xx. `retry_after` is the Retry-After header in seconds, if any.
Status StatusFromHttp(long http_code, std::string_view body, std::optional<int> retry_after = std::nullopt);

// The short cause of a failed request, for logs: "HTTP 503" when the server answered
// (`http_code` > 0), else the transport's cause ("timeout", "connection refused", "TLS error",
// "cannot resolve host", "connection lost", "response too large", "network error").
std::string FailureCause(const Status& status, long http_code);

}  // namespace tfjob::kube
