#include "kube/rest_client.h"

#include "api/json_fields.h"

#include <thread>

#include "kube/api_error.h"

namespace tfjob::kube {

using nlohmann::json;

RestClient::RestClient(HttpTransport& transport, Clock& clock, RestClientOptions options)
    : transport_(transport),
      clock_(clock),
      options_(options),
      bucket_(clock, options.qps, options.burst),
      failure_log_(clock, options.failure_log_interval) {}

namespace {

// Failures that are answers the callers branch on (R2), not trouble: not logged here.
bool Expected(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kConflict:
    case StatusCode::kGone:
    case StatusCode::kCancelled: return true;
    default: return false;
  }
}

}  // namespace

void RestClient::LogFailure(const std::string& verb, const std::string& resource, const HttpRequest& request,
                            const Status& status, long code, std::chrono::nanoseconds elapsed, int attempt,
                            std::optional<std::chrono::nanoseconds> retry_in) {
  if (Expected(status)) return;
  std::string cause = FailureCause(status, code);
  std::optional<int> held = failure_log_.Allow(verb + " " + resource + " " + cause);
  if (!held) return;
  LogFields fields = {{"verb", verb},
                      {"path", request.path.substr(0, request.path.find('?'))},
                      {"cause", cause},
                      {"error", status.message()},
                      {"elapsed", FormatDuration(elapsed)},
                      {"attempt", std::to_string(attempt + 1)}};
  fields.emplace_back("retry_in", retry_in ? FormatDuration(*retry_in) : "no retry");
  if (*held > 0) fields.emplace_back("suppressed", std::to_string(*held));
  log_.Warning("API request failed", fields);
}

bool RestClient::WaitOutPause() {
  std::optional<Clock::SteadyTime> until;
  {
    MutexLock lock(pause_mu_);
    until = paused_until_;
  }
  if (!until) return true;
  auto now = clock_.SteadyNow();
  if (now >= *until) return true;
  return clock_.SleepFor(*until - now, options_.abort);
}

void RestClient::PauseFor(std::chrono::nanoseconds wait) {
  auto until = clock_.SteadyNow() + wait;
  MutexLock lock(pause_mu_);
  if (!paused_until_ || *paused_until_ < until) paused_until_ = until;
}

StatusOr<json> RestClient::Do(const std::string& verb, const std::string& resource, HttpRequest request,
                              bool idempotent, std::vector<std::string>* warnings, std::string* raw_body) {
  request.abort = options_.abort;
  auto backoff = options_.initial_backoff;
  const std::chrono::milliseconds attempt_timeout = request.timeout;
  std::optional<Clock::SteadyTime> deadline;
  if (options_.call_timeout.count() > 0) deadline = clock_.SteadyNow() + options_.call_timeout;
  // The last attempt's failure, when the call's time is up: the error names the bound.
  auto out_of_time = [&](const Status& last, int attempts) {
    return Status(last.code(), verb + " " + request.path + ": " + last.message() + " (gave up after " +
                                   std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts") +
                                   ": the request timeout of " + FormatDuration(options_.call_timeout) +
                                   " covers the whole call)");
  };
  for (int attempt = 0;; ++attempt) {
    if (!WaitOutPause() || !bucket_.Accept(options_.abort) || options_.abort.stop_requested())
      return CancelledError(verb + " " + request.path + ": stopping");
    auto start = clock_.SteadyNow();
    if (deadline) {
      auto left = std::chrono::ceil<std::chrono::milliseconds>(*deadline - start);
      if (left.count() <= 0) left = std::chrono::milliseconds(1);
      request.timeout = attempt_timeout.count() == 0 ? left : std::min(attempt_timeout, left);
    }
    StatusOr<HttpResponse> response = transport_.Send(request);
    long code = response.ok() ? response->status : 0;
    auto elapsed = clock_.SteadyNow() - start;
    if (observer_) observer_({verb, code, elapsed});
    Status status = response.ok() ? StatusFromHttp(code, response->body, response->retry_after) : response.status();
    if (response.ok() && warnings != nullptr)
      for (auto& w : response->warnings) warnings->push_back(std::move(w));
    if (status.ok()) {
      if (raw_body != nullptr) {
        *raw_body = std::move(response->body);
        return json::object();
      }
      if (response->body.empty()) return json::object();
      try {
        return json::parse(response->body);
      } catch (const json::exception& e) {
        Status undecodable = DataLossError(verb + " " + request.path + ": undecodable response: " + e.what());
        LogFailure(verb, resource, request, undecodable, 0, elapsed, attempt, std::nullopt);
        return undecodable;
      }
    }
    // Retry: 429 always (the server did not act); network failures and 5xx only when repeating
    // the call cannot do anything twice, or when the connection was refused (nothing was sent).
    bool retry =
        status.code() == StatusCode::kTooManyRequests ||
        (idempotent && (status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kDeadlineExceeded)) ||
        (!response.ok() && (status.message().find(": connection refused:") != std::string::npos ||
                            status.message().find("Couldn't connect") != std::string::npos));
    std::chrono::nanoseconds wait = backoff;
    if (status.retry_after())
      wait = std::min<std::chrono::nanoseconds>(*status.retry_after(), options_.max_retry_after);
    if (status.code() == StatusCode::kTooManyRequests) PauseFor(wait);
    if (!retry || attempt >= options_.max_retries || options_.abort.stop_requested()) {
      LogFailure(verb, resource, request, status, code, elapsed, attempt, std::nullopt);
      return status.WithContext(verb + " " + request.path);
    }
    if (deadline && clock_.SteadyNow() + wait >= *deadline) {  // no time left for another attempt
      LogFailure(verb, resource, request, status, code, elapsed, attempt, std::nullopt);
      return out_of_time(status, attempt + 1);
    }
    LogFailure(verb, resource, request, status, code, elapsed, attempt, wait);
    if (!clock_.SleepFor(wait, options_.abort)) return CancelledError(verb + " " + request.path + ": stopping");
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

HttpRequest RestClient::Request(std::string method, std::string path, std::string body) const {
  HttpRequest r{std::move(method), std::move(path), std::move(body)};
  r.timeout = options_.request_timeout;
  return r;
}

StatusOr<json> RestClient::Get(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                               const std::string& subresource) {
  return Do("get", gvr.resource, Request("GET", ResourcePath(gvr, ns, name, subresource)), true);
}

StatusOr<json> RestClient::GetApiGroup(const std::string& group) {
  return Do("get", "apigroups", Request("GET", ApiGroupPath(group)), true);
}

StatusOr<json> RestClient::GetApiResources(const std::string& group, const std::string& version) {
  return Do("get", "apiresources", Request("GET", ApiGroupPath(group) + "/" + version), true);
}

StatusOr<json> RestClient::List(const GroupVersionResource& gvr, const std::string& ns, const ListOptions& options,
                                const ObjectToJson* protobuf) {
  HttpRequest r = Request("GET", ResourcePath(gvr, ns) + ListQuery(options));
  r.timeout = 2 * options_.request_timeout;  // a page of up to 500 objects
  if (protobuf == nullptr) return Do("list", gvr.resource, std::move(r), true);
  r.accept = kProtobufAccept;
  const std::string what = "list " + r.path;
  std::string body;
  TFJOB_RETURN_IF_ERROR(Do("list", gvr.resource, std::move(r), true, nullptr, &body).status());
  if (IsProtobufBody(body)) {
    StatusOr<json> page = ProtobufListToJson(body, *protobuf);
    if (!page.ok()) return page.status().WithContext(what);
    return page;
  }
  try {
    return json::parse(body);
  } catch (const json::exception& e) {
    return DataLossError(what + ": undecodable response: " + e.what());
  }
}

StatusOr<std::vector<json>> RestClient::ListAll(const GroupVersionResource& gvr, const std::string& ns,
                                                ListOptions options, std::string* resource_version,
                                                const ObjectToJson* protobuf) {
  if (options.limit <= 0) options.limit = 500;
  std::vector<json> items;
  for (;;) {
    TFJOB_ASSIGN_OR_RETURN(json page, List(gvr, ns, options, protobuf));
    if (page.contains("items") && page["items"].is_array())
      for (auto& item : page["items"]) items.push_back(std::move(item));
    const json& meta = api::ObjectField(page, "metadata");
    std::string cont = api::StringField(meta, "continue");
    if (resource_version != nullptr) *resource_version = api::StringField(meta, "resourceVersion");
    if (cont.empty()) break;
    options.continue_token = cont;
    options.resource_version.clear();  // a continue token pins the version itself
  }
  return items;
}

StatusOr<json> RestClient::Create(const GroupVersionResource& gvr, const std::string& ns, const json& object) {
  return Do("create", gvr.resource, Request("POST", ResourcePath(gvr, ns), object.dump()), false);
}

Status RestClient::CreateDiscardingResponse(const GroupVersionResource& gvr, const std::string& ns,
                                            const json& object) {
  // The created object comes back as its metadata alone (a PartialObjectMetadata, about 1 KB
  // against 20 KB for a pod of a 500-worker job): less for the API server to encode and send.
  // A server without that form answers with the next one, the whole object.
  HttpRequest r = Request("POST", ResourcePath(gvr, ns), object.dump());
  r.accept = kMetadataOnlyAccept;
  std::string body;
  return Do("create", gvr.resource, std::move(r), false, nullptr, &body).status();
}

StatusOr<json> RestClient::Update(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                                  const json& object, const std::string& subresource) {
  // A PUT carries resourceVersion: repeating it after a lost response yields Conflict, never a
  // double write.
  return Do("update", gvr.resource, Request("PUT", ResourcePath(gvr, ns, name, subresource), object.dump()), true);
}

StatusOr<json> RestClient::Patch(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                                 PatchType type, const json& patch, const std::string& subresource) {
  HttpRequest r = Request("PATCH", ResourcePath(gvr, ns, name, subresource), patch.dump());
  r.content_type = type == PatchType::kMerge ? "application/merge-patch+json" : "application/json-patch+json";
  return Do("patch", gvr.resource, std::move(r), type != PatchType::kJson);
}

StatusOr<json> RestClient::CreateWithWarnings(const GroupVersionResource& gvr, const std::string& ns,
                                              const json& object, const std::string& field_validation,
                                              std::vector<std::string>* warnings) {
  std::string path = ResourcePath(gvr, ns);
  if (!field_validation.empty()) path += "?fieldValidation=" + UrlEncode(field_validation);
  return Do("create", gvr.resource, Request("POST", path, object.dump()), false, warnings);
}

StatusOr<std::string> RestClient::GetText(const std::string& path_and_query, size_t max_bytes) {
  HttpRequest r = Request("GET", path_and_query);
  r.accept = "*/*";
  r.max_response_bytes = max_bytes;
  std::string body;
  auto resource = path_and_query.substr(0, path_and_query.find('?'));
  TFJOB_RETURN_IF_ERROR(
      Do("get", resource.substr(resource.rfind('/') + 1), std::move(r), true, nullptr, &body).status());
  return body;
}

Status RestClient::StreamText(const std::string& path_and_query, const ByteSink& on_bytes, std::stop_token stop,
                              std::chrono::milliseconds idle_timeout) {
  if (!bucket_.Accept(stop) || options_.abort.stop_requested()) return CancelledError("stream: stopping");
  HttpRequest r{"GET", path_and_query};
  r.accept = "*/*";
  r.timeout = std::chrono::milliseconds(0);
  r.response_timeout = options_.request_timeout;
  r.idle_timeout = idle_timeout;
  r.abort = options_.abort;
  return transport_.Stream(r, on_bytes, stop);
}

Status RestClient::Delete(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                          const DeleteOptions& options) {
  json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (!options.precondition_uid.empty()) body["preconditions"]["uid"] = options.precondition_uid;
  if (!options.precondition_resource_version.empty())
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  return Do("delete", gvr.resource, Request("DELETE", ResourcePath(gvr, ns, name), body.dump()), true).status();
}

Status RestClient::Watch(const GroupVersionResource& gvr, const std::string& ns, ListOptions options,
                         const ByteSink& on_bytes, std::stop_token stop, const char* accept) {
  options.watch = true;
  if (!bucket_.Accept(stop) || options_.abort.stop_requested()) return CancelledError("watch: stopping");
  HttpRequest r{"GET", ResourcePath(gvr, ns) + ListQuery(options)};
  r.accept = accept;
  // The server ends the watch after timeoutSeconds; a minute more is a server that did not.
  r.timeout = options.timeout
                  ? std::chrono::duration_cast<std::chrono::milliseconds>(*options.timeout) + std::chrono::minutes(1)
                  : std::chrono::milliseconds(0);
  r.response_timeout = options_.request_timeout;
  r.idle_timeout = options_.watch_idle_timeout;
  r.abort = options_.abort;
  auto start = clock_.SteadyNow();
  Status s = transport_.Stream(r, on_bytes, stop);
  if (observer_)
    observer_({"watch", s.ok() || s.code() == StatusCode::kCancelled ? 200L : 0L, clock_.SteadyNow() - start});
  return s;
}

}  // namespace tfjob::kube
