#pragma once
// RestClient: the Kubernetes REST verbs over an HttpTransport, with one client-side token
// bucket shared by every caller (--kube-api-qps/--kube-api-burst), Retry-After on 429, and
// exponential backoff on transient failures of idempotent calls. Objects are JSON; typed
// decoding happens in the callers' codecs. client-go's rest.RESTClient + dynamic client.

#include <chrono>
#include <functional>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/status.h"
#include "common/token_bucket.h"
#include "kube/http_transport.h"
#include "kube/resource_path.h"

namespace tfjob::kube {

struct RestClientOptions {
  double qps = 100;
  int burst = 200;
  int max_retries = 5;                             // for 429 and transient failures
  std::chrono::milliseconds initial_backoff{200};  // doubles per retry
  std::chrono::milliseconds max_backoff{10000};
};

enum class PatchType { kMerge, kJson, kStrategicMerge };

struct DeleteOptions {
  std::string propagation_policy;  // "", "Background", "Foreground", "Orphan"
  std::string precondition_uid;
  std::string precondition_resource_version;
};

// One completed request, for metrics (verb is the Kubernetes verb, code the HTTP status or 0).
struct RequestRecord {
  std::string verb;
  long code;
  std::chrono::nanoseconds latency;
};

class RestClient {
 public:
  RestClient(HttpTransport& transport, Clock& clock, RestClientOptions options = {});

  // Observer called after every HTTP request (thread-safe callers only). Set before use.
  void set_observer(std::function<void(const RequestRecord&)> observer) { observer_ = std::move(observer); }

  StatusOr<nlohmann::json> Get(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                               const std::string& subresource = "");
  // One page (the raw List object).
  StatusOr<nlohmann::json> List(const GroupVersionResource& gvr, const std::string& ns, const ListOptions& options);
  // Every page (limit = options.limit or 500); `resource_version` receives the list's version.
  StatusOr<std::vector<nlohmann::json>> ListAll(const GroupVersionResource& gvr, const std::string& ns,
                                                ListOptions options, std::string* resource_version);
  StatusOr<nlohmann::json> Create(const GroupVersionResource& gvr, const std::string& ns, const nlohmann::json& object);
  StatusOr<nlohmann::json> Update(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                                  const nlohmann::json& object, const std::string& subresource = "");
  StatusOr<nlohmann::json> Patch(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                                 PatchType type, const nlohmann::json& patch, const std::string& subresource = "");
  Status Delete(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                const DeleteOptions& options = {});
  // Streams a watch's body into `on_bytes` until the server ends it or `stop` fires.
  Status Watch(const GroupVersionResource& gvr, const std::string& ns, ListOptions options, const ByteSink& on_bytes,
               std::stop_token stop);

 private:
  StatusOr<nlohmann::json> Do(const std::string& verb, HttpRequest request, bool idempotent);

  HttpTransport& transport_;
  Clock& clock_;
  RestClientOptions options_;
  TokenBucket bucket_;
  std::function<void(const RequestRecord&)> observer_;
};

}  // namespace tfjob::kube
