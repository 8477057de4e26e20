#include "controller/health_server.h"

#include <httplib.h>

namespace tfjob::controller {

Status BindHttpServer(httplib::Server& server, const std::string& address, int* port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("address \"" + address + "\" is not host:port");
  std::string host = address.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  int wanted = 0;
  try {
    size_t used = 0;
    wanted = std::stoi(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1 || wanted < 0 || wanted > 65535) throw std::out_of_range("port");
  } catch (const std::exception&) {
    return InvalidArgumentError("address \"" + address + "\" has no valid port");
  }
  if (wanted == 0) {
    *port = server.bind_to_any_port(host);
    if (*port <= 0) return UnavailableError("cannot bind " + address);
  } else {
    if (!server.bind_to_port(host, wanted)) return UnavailableError("cannot bind " + address + " (in use?)");
    *port = wanted;
  }
  return OkStatus();
}

HttpEndpoint::HttpEndpoint() : server_(std::make_unique<httplib::Server>()) {}

HttpEndpoint::~HttpEndpoint() {
  Stop();
}

void HttpEndpoint::AddLivenessCheck(const std::string& name, HealthCheck check) {
  std::lock_guard lock(mu_);
  liveness_[name] = std::move(check);
}

void HttpEndpoint::AddReadinessCheck(const std::string& name, HealthCheck check) {
  std::lock_guard lock(mu_);
  readiness_[name] = std::move(check);
}

std::string HttpEndpoint::RunChecks(const std::map<std::string, HealthCheck>& checks, bool* ok) const {
  std::map<std::string, HealthCheck> copy;
  {
    std::lock_guard lock(mu_);
    copy = checks;
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
  server_->Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(registry_ != nullptr ? registry_->Expose() : "", "text/plain; version=0.0.4; charset=utf-8");
  });
  server_->Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    bool ok;
    res.set_content(RunChecks(liveness_, &ok), "text/plain");
    res.status = ok ? 200 : 500;
  });
  server_->Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    bool ok;
    res.set_content(RunChecks(readiness_, &ok), "text/plain");
    res.status = ok ? 200 : 500;
  });
  TFJOB_RETURN_IF_ERROR(BindHttpServer(*server_, address, &port_));
  thread_ = std::jthread([this](std::stop_token) { server_->listen_after_bind(); });
  return OkStatus();
}

void HttpEndpoint::Stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace tfjob::controller
