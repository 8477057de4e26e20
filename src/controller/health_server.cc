#include "controller/health_server.h"

#include <httplib.h>

namespace tfjob::controller {

HttpEndpoint::HttpEndpoint(HttpServerLimits limits) : server_(limits) {}

HttpEndpoint::~HttpEndpoint() {
  Stop();
}

void HttpEndpoint::AddLivenessCheck(const std::string& name, HealthCheck check) {
  MutexLock lock(mu_);
  liveness_[name] = std::move(check);
}

void HttpEndpoint::AddReadinessCheck(const std::string& name, HealthCheck check) {
  MutexLock lock(mu_);
  readiness_[name] = std::move(check);
}

std::string HttpEndpoint::RunChecks(CheckKind kind, bool* ok) const {
  std::map<std::string, HealthCheck> copy;
  {
    MutexLock lock(mu_);
    copy = kind == CheckKind::kReadiness ? readiness_ : liveness_;
  }
  std::string body;
  *ok = true;
  for (const auto& [name, check] : copy) {
    Status s = check();
    if (s.ok()) {
      body += "[+]" + name + " ok\n";
    } else {
      *ok = false;
      body += "[-]" + name + " failed: " + s.message() + "\n";
    }
  }
  body += *ok ? "ok\n" : "check failed\n";
  return body;
}

Status HttpEndpoint::Start(const std::string& address) {
  server_.routes().Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(registry_ != nullptr ? registry_->Expose() : "", "text/plain; version=0.0.4; charset=utf-8");
  });
  server_.routes().Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    bool ok;
    res.set_content(RunChecks(CheckKind::kLiveness, &ok), "text/plain");
    res.status = ok ? 200 : 500;
  });
  server_.routes().Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    bool ok;
    res.set_content(RunChecks(CheckKind::kReadiness, &ok), "text/plain");
    res.status = ok ? 200 : 500;
  });
  return server_.Start(address);
}

void HttpEndpoint::Stop() {
  server_.Stop();
}

}  // namespace tfjob::controller
