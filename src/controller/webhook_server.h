#pragma once
// WebhookServer: the HTTPS endpoint admission webhooks are served on (controller-runtime's
// webhook server). TLS 1.2 or newer; the serving certificate chain and key come from
// DIR/tls.crt and DIR/tls.key (a kubernetes.io/tls Secret mounted as a volume) and are read
// again when either file changes, so a rotation by cert-manager or a re-run of
// config/webhook/generate-cert needs no restart. Handlers take the request body and answer
// (HTTP status, JSON body); requests are counted in
// controller_runtime_webhook_requests_total{webhook,code}. Served by HttpServerBase: its limits
// (docs/operator.md, "Endpoints"), bodies capped at kMaxReviewBodyBytes (413 above).

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

#include "common/logging.h"
#include "common/status.h"
#include "controller/http_server_base.h"
#include "controller/metrics.h"

namespace tfjob::controller {

// The API server sends AdmissionReviews of a few MiB at most (an object is at most 1.5 MiB in
// etcd; an UPDATE carries two).
inline constexpr std::size_t kMaxReviewBodyBytes = 8 * 1024 * 1024;
// A JSON document costs up to ~100 bytes of memory per value once parsed: 8 MiB of "[[[[" or of
// "0,0,0" would need over 600 MiB. Bodies deeper or with more values (counted as the brackets,
// commas and colons outside strings) are refused (400) before they are parsed; AdmissionReviews
// nest about 20 deep and a TFJob has a few thousand values.
inline constexpr std::size_t kMaxReviewJsonDepth = 128;
inline constexpr std::size_t kMaxReviewJsonValues = 500'000;
// Reviews parsed at once; more wait. With the shape limits this bounds the parse memory.
inline constexpr std::size_t kMaxConcurrentReviews = 4;

// kInvalidArgument when `json` nests deeper than max_depth or holds more than max_values values
// (counted without parsing: no allocation). Says nothing about validity.
Status CheckJsonShape(std::string_view json, std::size_t max_depth, std::size_t max_values);

// What the server does with one request body for `handler`: the shape check (400 with
// {"error": ...} when over), at most kMaxConcurrentReviews at once, then the handler.
std::pair<int, std::string> ServeWebhookBody(
    const std::function<std::pair<int, std::string>(const std::string&)>& handler, const std::string& body);

class ServingCertificate;

class WebhookServer {
 public:
  using Handler = std::function<std::pair<int, std::string>(const std::string& body)>;

  WebhookServer(std::string cert_dir, Logger log, Registry* registry = nullptr,
                HttpServerLimits limits = {.max_body_bytes = kMaxReviewBodyBytes,
                                           .max_body_bytes_in_flight = 4 * kMaxReviewBodyBytes});
  ~WebhookServer();

  // REQUIRES: before Start.
  void Handle(const std::string& path, Handler handler);

  // Reads the certificate (kInvalidArgument naming the file when it is missing, unreadable or
  // does not match the key), binds "host:port" ("host:0" picks a free port; kUnavailable when
  // in use) and serves on a background thread.
  Status Start(const std::string& address);
  void Stop();
  int port() const { return server_->port(); }
  const HttpServerBase& server() const { return *server_; }

 private:
  std::string cert_dir_;
  Logger log_;
  Registry* registry_;
  std::unique_ptr<ServingCertificate> cert_;
  SSL_CTX* ctx_ = nullptr;
  std::unique_ptr<HttpServerBase> server_;
};

}  // namespace tfjob::controller
