#pragma once
// WebhookServer: the HTTPS endpoint admission webhooks are served on (controller-runtime's
// webhook server). TLS 1.2 or newer; the serving certificate chain and key come from
// DIR/tls.crt and DIR/tls.key (a kubernetes.io/tls Secret mounted as a volume) and are read
// again when either file changes, so a rotation by cert-manager or a re-run of
// config/webhook/generate-cert needs no restart. Handlers take the request body and answer
// (HTTP status, JSON body); requests are counted in
// controller_runtime_webhook_requests_total{webhook,code}.

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "common/logging.h"
#include "common/status.h"
#include "controller/metrics.h"

namespace httplib {
class Server;
}

namespace tfjob::controller {

class ServingCertificate;

class WebhookServer {
 public:
  using Handler = std::function<std::pair<int, std::string>(const std::string& body)>;

  WebhookServer(std::string cert_dir, Logger log, Registry* registry = nullptr);
  ~WebhookServer();

  // REQUIRES: before Start.
  void Handle(const std::string& path, Handler handler);

  // Reads the certificate (kInvalidArgument naming the file when it is missing, unreadable or
  // does not match the key), binds "host:port" ("host:0" picks a free port; kUnavailable when
  // in use) and serves on a background thread.
  Status Start(const std::string& address);
  void Stop();
  int port() const { return port_; }

 private:
  std::string cert_dir_;
  Logger log_;
  Registry* registry_;
  std::unique_ptr<ServingCertificate> cert_;
  std::unique_ptr<httplib::Server> server_;
  std::jthread thread_;
  int port_ = 0;
};

}  // namespace tfjob::controller
