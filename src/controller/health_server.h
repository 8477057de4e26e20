#pragma once
// HttpEndpoint: serves /metrics (the Registry), /healthz and /readyz on one address. Checks
// are functions returning Status; /readyz fails while any check fails (caches not synced, leader
// election stopped). A standby replica is ready: it serves the webhook and waits for the lease. "host:0" picks a free
// port; port() tells which. cpp-httplib underneath, on its own thread.

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"
#include "controller/metrics.h"

namespace httplib {
class Server;
}

namespace tfjob::controller {

using HealthCheck = std::function<Status()>;

// Binds `server` to "host:port" (empty host: all interfaces; port 0: a free one) and sets *port.
// kInvalidArgument for a malformed address, kUnavailable when the port cannot be bound.
Status BindHttpServer(httplib::Server& server, const std::string& address, int* port);

class HttpEndpoint {
 public:
  HttpEndpoint();
  ~HttpEndpoint();

  void ServeMetrics(const Registry* registry) { registry_ = registry; }
  void AddLivenessCheck(const std::string& name, HealthCheck check);
  void AddReadinessCheck(const std::string& name, HealthCheck check);

  // Binds "host:port" and serves on a background thread. kInvalidArgument for a malformed
  // address, kUnavailable when the port cannot be bound.
  Status Start(const std::string& address);
  void Stop();
  int port() const { return port_; }

 private:
  std::string RunChecks(const std::map<std::string, HealthCheck>& checks, bool* ok) const;

  std::unique_ptr<httplib::Server> server_;
  const Registry* registry_ = nullptr;
  mutable std::mutex mu_;  // guards the check maps
  std::map<std::string, HealthCheck> liveness_;
  std::map<std::string, HealthCheck> readiness_;
  std::jthread thread_;
  int port_ = 0;
};

}  // namespace tfjob::controller
