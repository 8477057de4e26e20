#pragma once
// FakeTransport: an HttpTransport answered by a test's handler, recording every request.
// Streams replay a list of chunks. Thread-safe.

#include <functional>
#include <mutex>
#include <vector>

#include "kube/http_transport.h"

namespace tfjob::kube {

class FakeTransport final : public HttpTransport {
 public:
  using Handler = std::function<StatusOr<HttpResponse>(const HttpRequest&)>;
  using StreamHandler = std::function<Status(const HttpRequest&, const ByteSink&)>;

  void set_handler(Handler h) { handler_ = std::move(h); }
  void set_stream_handler(StreamHandler h) { stream_handler_ = std::move(h); }
  std::vector<HttpRequest> requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }

  // HttpTransport:
  StatusOr<HttpResponse> Send(const HttpRequest& request) override {
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
    }
    return handler_ ? handler_(request) : StatusOr<HttpResponse>(HttpResponse{404, "", std::nullopt});
  }
  Status Stream(const HttpRequest& request, const ByteSink& on_bytes, std::stop_token) override {
    {
      std::lock_guard lock(mu_);
      requests_.push_back(request);
    }
    return stream_handler_ ? stream_handler_(request, on_bytes) : UnavailableError("no stream handler");
  }

 private:
  Handler handler_;
  StreamHandler stream_handler_;
  mutable std::mutex mu_;  // guards requests_
  std::vector<HttpRequest> requests_;
};

}  // namespace tfjob::kube
