#pragma once
// HttpEndpoint: serves /metrics (the Registry), /healthz and /readyz on one address. Checks
// are functions returning Status; /readyz fails while any check fails (caches not synced, leader
// election stopped). A standby replica is ready: it serves the webhook and waits for the lease. "host:0" picks a free
// port; port() tells which. Served by HttpServerBase (its limits: docs/operator.md, "Endpoints";
// bodies are capped at kMaxProbeBodyBytes, as none is expected).

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "common/status.h"
#include "common/thread_annotations.h"
#include "controller/http_server_base.h"
#include "controller/metrics.h"

namespace tfjob::controller {

using HealthCheck = std::function<Status()>;

inline constexpr std::size_t kMaxProbeBodyBytes = 4 * 1024;

class HttpEndpoint {
 public:
  explicit HttpEndpoint(HttpServerLimits limits = {.max_body_bytes = kMaxProbeBodyBytes});
  ~HttpEndpoint();

  void ServeMetrics(const Registry* registry) { registry_ = registry; }
  // REQUIRES: before Start (see HttpServerBase::CountRefusedIn).
  void CountRefusedIn(Counter* counter) { server_.CountRefusedIn(counter); }
  void AddLivenessCheck(const std::string& name, HealthCheck check);
  void AddReadinessCheck(const std::string& name, HealthCheck check);

  // Binds "host:port" and serves on a background thread. kInvalidArgument for a malformed
  // address, kUnavailable when the port cannot be bound.
  Status Start(const std::string& address);
  void Stop();
  int port() const { return server_.port(); }
  const HttpServerBase& server() const { return server_; }

 private:
  enum class CheckKind { kLiveness, kReadiness };
  // Runs a copy of the checks of `kind` outside the lock (a check may take time).
  std::string RunChecks(CheckKind kind, bool* ok) const;

  HttpServerBase server_;
  const Registry* registry_ = nullptr;
  mutable Mutex mu_;
  std::map<std::string, HealthCheck> liveness_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, HealthCheck> readiness_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::controller
