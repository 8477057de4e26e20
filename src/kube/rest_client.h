#pragma once
// RestClient: the Kubernetes REST verbs over an HttpTransport, with one client-side token
// bucket shared by every caller (--kube-api-qps/--kube-api-burst), Retry-After on 429, and
// exponential backoff on transient failures of idempotent calls. Objects are JSON; typed
// decoding happens in the callers' codecs. client-go's rest.RESTClient + dynamic client.

#include <chrono>
#include <functional>
#include <optional>
#include <stop_token>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/log_throttle.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "common/token_bucket.h"
#include "kube/http_transport.h"
#include "kube/protobuf.h"
#include "kube/resource_path.h"

namespace tfjob::kube {

// The Accept header of a create whose answer only needs its outcome: the object's metadata
// alone (meta.k8s.io/v1 PartialObjectMetadata), or the whole object from a server without it.
inline constexpr const char* kMetadataOnlyAccept =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

// Every limit here is named in docs/operator.md (section 2, "API requests").
struct RestClientOptions {
  double qps = 100;
  int burst = 200;
  int max_retries = 5;                             // for 429 and transient failures
  std::chrono::milliseconds initial_backoff{200};  // doubles per retry
  std::chrono::milliseconds max_backoff{10000};
  std::chrono::seconds max_retry_after{30};  // a longer Retry-After is cut to this
  // Each non-watch request (a list page gets twice this); for a watch, the wait for the
  // server's response headers.
  std::chrono::milliseconds request_timeout{30000};
  // When not 0, bounds a whole call: its attempts and the waits between them end this long
  // after the call began (each attempt's own timeout is cut to what is left, no retry starts
  // after it), and the error says so. The CLI's --request-timeout sets both (docs/cli.md).
  std::chrono::milliseconds call_timeout{0};
  // A watch that received no byte for this long is dropped and resumed (the server sends a
  // bookmark about once a minute).
  std::chrono::milliseconds watch_idle_timeout{120000};
  // When requested, in-flight requests end at once and new ones fail, with kCancelled
  // (shutdown); retry waits end too.
  std::stop_token abort;
  // One "API request failed" line per verb+resource+cause per this interval.
  std::chrono::seconds failure_log_interval{10};
};

enum class PatchType { kMerge, kJson };

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
  // Where failed requests are logged (warning "API request failed", rate-limited per
  // verb+resource+cause, with the cause, the attempt's elapsed time and the delay until the
  // next try). Set before use.
  void set_logger(Logger log) { log_ = std::move(log); }
  Clock& clock() const { return clock_; }

  StatusOr<nlohmann::json> Get(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                               const std::string& subresource = "");
  // Discovery: the APIGroup document of an API group (GET /apis/<group>): the versions the
  // server serves (`versions[].version`) and the preferred one. 404 when it serves none.
  StatusOr<nlohmann::json> GetApiGroup(const std::string& group);
  // Discovery: the APIResourceList of one version of a group (GET /apis/<group>/<version>): the
  // resources it serves (`resources[].name`). 404 when the version is not served.
  StatusOr<nlohmann::json> GetApiResources(const std::string& group, const std::string& version);
  // One page (the raw List object). With `protobuf`, asked for in protobuf (kube/protobuf.h) and
  // turned into the JSON of a list whose items are what `protobuf` makes of each object; a JSON
  // answer is read as it is.
  StatusOr<nlohmann::json> List(const GroupVersionResource& gvr, const std::string& ns, const ListOptions& options,
                                const ObjectToJson* protobuf = nullptr);
  // Every page (limit = options.limit or 500); `resource_version` receives the list's version.
  StatusOr<std::vector<nlohmann::json>> ListAll(const GroupVersionResource& gvr, const std::string& ns,
                                                ListOptions options, std::string* resource_version,
                                                const ObjectToJson* protobuf = nullptr);
  StatusOr<nlohmann::json> Create(const GroupVersionResource& gvr, const std::string& ns, const nlohmann::json& object);
  // Create, without decoding the created object the server returns (only the outcome counts); it
  // asks for the object's metadata alone (kMetadataOnlyAccept).
  Status CreateDiscardingResponse(const GroupVersionResource& gvr, const std::string& ns, const nlohmann::json& object);
  StatusOr<nlohmann::json> Update(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                                  const nlohmann::json& object, const std::string& subresource = "");
  StatusOr<nlohmann::json> Patch(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                                 PatchType type, const nlohmann::json& patch, const std::string& subresource = "");
  Status Delete(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                const DeleteOptions& options = {});
  // Create with the server's field validation (`fieldValidation`: "Strict", "Warn", "Ignore" or
  // "" for the server's default) and the response's `Warning` headers appended to `warnings`
  // (the webhook's admission warnings, unknown fields under "Warn").
  StatusOr<nlohmann::json> CreateWithWarnings(const GroupVersionResource& gvr, const std::string& ns,
                                              const nlohmann::json& object, const std::string& field_validation,
                                              std::vector<std::string>* warnings);
  // A GET whose body is not JSON (pods/log): the raw body, at most `max_bytes`.
  StatusOr<std::string> GetText(const std::string& path_and_query, size_t max_bytes = kMaxResponseBytes);
  // A long GET streamed into `on_bytes` (pods/log?follow=true) until the server ends it, `stop`
  // fires or no byte came for `idle_timeout` (0: none).
  Status StreamText(const std::string& path_and_query, const ByteSink& on_bytes, std::stop_token stop,
                    std::chrono::milliseconds idle_timeout = std::chrono::milliseconds(0));
  // Streams a watch's body into `on_bytes` until the server ends it or `stop` fires. `accept`:
  // the Accept header (kProtobufWatchAccept for a protobuf stream).
  Status Watch(const GroupVersionResource& gvr, const std::string& ns, ListOptions options, const ByteSink& on_bytes,
               std::stop_token stop, const char* accept = "application/json");

 private:
  StatusOr<nlohmann::json> Do(const std::string& verb, const std::string& resource, HttpRequest request,
                              bool idempotent, std::vector<std::string>* warnings = nullptr,
                              std::string* raw_body = nullptr);
  HttpRequest Request(std::string method, std::string path, std::string body = "") const;
  void LogFailure(const std::string& verb, const std::string& resource, const HttpRequest& request,
                  const Status& status, long code, std::chrono::nanoseconds elapsed, int attempt,
                  std::optional<std::chrono::nanoseconds> retry_in);

  // API Priority and Fairness: a 429 pauses every request of this client, not only the refused
  // one, until its Retry-After (or the retry backoff) has passed; then the full rate resumes.
  // Returns false if the abort fired while waiting.
  bool WaitOutPause();
  void PauseFor(std::chrono::nanoseconds wait);

  HttpTransport& transport_;
  Clock& clock_;
  RestClientOptions options_;
  TokenBucket bucket_;
  Mutex pause_mu_;
  std::optional<Clock::SteadyTime> paused_until_ TFJOB_GUARDED_BY(pause_mu_);
  std::function<void(const RequestRecord&)> observer_;
  Logger log_ = Logger().With({{"component", "kube-client"}});
  LogThrottle failure_log_;
};

}  // namespace tfjob::kube
