#pragma once
// CurlTransport: HttpTransport over libcurl: TLS with the kubeconfig's CA and client
// certificate (from memory), bearer tokens, HTTP/1.1, and a pool of easy handles so connections
// are kept alive and reused. Each request uses one easy handle (one connection) on one thread.

#include <chrono>
#include <memory>
#include <mutex>
#include <vector>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "kube/http_transport.h"
#include "kube/kube_config.h"

namespace tfjob::kube {

// Initialises libcurl once per process. Create it in main before any thread starts.
class CurlGlobal {
 public:
  CurlGlobal();
  ~CurlGlobal();
  CurlGlobal(const CurlGlobal&) = delete;
  CurlGlobal& operator=(const CurlGlobal&) = delete;
};

// Connecting (TCP and TLS) gives up after this long: kUnavailable "timeout".
inline constexpr std::chrono::milliseconds kConnectTimeout{10000};

class CurlTransport final : public HttpTransport {
 public:
  // REQUIRES: a CurlGlobal is alive for the transport's whole life.
  CurlTransport(KubeConfig config, Clock& clock);
  ~CurlTransport() override;

  // HttpTransport:
  StatusOr<HttpResponse> Send(const HttpRequest& request) override;
  Status Stream(const HttpRequest& request, const ByteSink& on_bytes, std::stop_token stop) override;

 private:
  void* Acquire();             // an easy handle from the pool (CURL*)
  void Release(void* handle);  // back to the pool
  // Fills `handle` (CURL*) for `request`; `headers` receives the curl_slist* to free.
  void Prepare(void* handle, const HttpRequest& request, void** headers);

  const KubeConfig config_;
  Clock& clock_;
  TokenSource tokens_;
  Mutex mu_;
  std::vector<void*> pool_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::kube
