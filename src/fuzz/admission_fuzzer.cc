// libFuzzer target: the webhook's request handling, from the bytes on the connection to the
// AdmissionReview answer, never crashes, hangs or allocates without bound. The input is either
// an AdmissionReview body (first byte even), posted to the validate path and handed to the
// mutating webhook's handler (ServeTfJobDefaulting) too, or (first byte odd) the raw bytes of an
// HTTP/1.1 connection. Both go through HttpServerBase::Serve, what the server's connection threads
// run, and ServeWebhookBody (what WebhookServer::Handle does with a body) with the operator's
// handlers (ServeTfJobReview, ServeTfJobDefaulting) behind it.
#include <httplib.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "controller/http_server_base.h"
#include "controller/webhook_server.h"
#include "operator/admission.h"

namespace {

using tfjob::controller::HttpServerBase;

class MemoryConnection : public HttpServerBase::Connection {
 public:
  explicit MemoryConnection(std::string in) : in_(std::move(in)) {}
  bool WaitReadable(Clock::time_point) override { return true; }
  long Read(char* buf, std::size_t n, Clock::time_point) override {
    std::size_t k = std::min(n, in_.size() - pos_);
    std::memcpy(buf, in_.data() + pos_, k);
    pos_ += k;
    return static_cast<long>(k);
  }
  bool Write(const char*, std::size_t, Clock::time_point) override { return true; }

 private:
  std::string in_;
  std::size_t pos_ = 0;
};

HttpServerBase& Server() {
  static HttpServerBase* server = [] {
    auto* s = new HttpServerBase({.max_body_bytes = tfjob::controller::kMaxReviewBodyBytes});
    s->routes().Post(tfjob::operator_::kValidatePath, [](const httplib::Request& req, httplib::Response& res) {
      auto [code, body] = tfjob::controller::ServeWebhookBody(tfjob::operator_::ServeTfJobReview, req.body);
      res.status = code;
      res.set_content(body, "application/json");
    });
    s->routes().Post(tfjob::operator_::kDefaultPath, [](const httplib::Request& req, httplib::Response& res) {
      auto [code, body] = tfjob::controller::ServeWebhookBody(tfjob::operator_::ServeTfJobDefaulting, req.body);
      res.status = code;
      res.set_content(body, "application/json");
    });
    return s;
  }();
  return *server;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) tfjob::controller::ServeWebhookBody(tfjob::operator_::ServeTfJobDefaulting, rest);
  std::string wire = (data[0] & 1) != 0 ? rest
                                        : std::string("POST ") + tfjob::operator_::kValidatePath +
                                              " HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n"
                                              "Content-Length: " +
                                              std::to_string(rest.size()) + "\r\n\r\n" + rest;
  MemoryConnection connection(std::move(wire));
  Server().Serve(connection);
  return 0;
}
