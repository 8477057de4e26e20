#include "kube/rest_client.h"

#include "api/json_fields.h"

#include <thread>

#include "kube/api_error.h"

namespace tfjob::kube {

using nlohmann::json;

RestClient::RestClient(HttpTransport& transport, Clock& clock, RestClientOptions options)
    : transport_(transport), clock_(clock), options_(options), bucket_(clock, options.qps, options.burst) {}

StatusOr<json> RestClient::Do(const std::string& verb, HttpRequest request, bool idempotent) {
  auto backoff = options_.initial_backoff;
  for (int attempt = 0;; ++attempt) {
    bucket_.Accept();
    auto start = clock_.SteadyNow();
    StatusOr<HttpResponse> response = transport_.Send(request);
    long code = response.ok() ? response->status : 0;
    if (observer_) observer_({verb, code, clock_.SteadyNow() - start});
    Status status = response.ok() ? StatusFromHttp(code, response->body, response->retry_after) : response.status();
    if (status.ok()) {
      if (response->body.empty()) return json::object();
      try {
        return json::parse(response->body);
      } catch (const json::exception& e) {
        return DataLossError(verb + " " + request.path + ": undecodable response: " + e.what());
      }
    }
    // Retry: 429 always (the server did not act); network failures and 5xx only when repeating
    // the call cannot do anything twice.
    bool retry =
        status.code() == StatusCode::kTooManyRequests ||
        (idempotent && (status.code() == StatusCode::kUnavailable || status.code() == StatusCode::kDeadlineExceeded)) ||
        (!response.ok() && status.message().find("Couldn't connect") != std::string::npos);
    if (!retry || attempt >= options_.max_retries) return status.WithContext(verb + " " + request.path);
    auto wait =
        status.retry_after() ? std::chrono::duration_cast<std::chrono::milliseconds>(*status.retry_after()) : backoff;
    std::this_thread::sleep_for(wait);
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

StatusOr<json> RestClient::Get(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                               const std::string& subresource) {
  return Do("get", {"GET", ResourcePath(gvr, ns, name, subresource)}, true);
}

StatusOr<json> RestClient::List(const GroupVersionResource& gvr, const std::string& ns, const ListOptions& options) {
  HttpRequest r{"GET", ResourcePath(gvr, ns) + ListQuery(options)};
  r.timeout = std::chrono::seconds(60);
  return Do("list", std::move(r), true);
}

StatusOr<std::vector<json>> RestClient::ListAll(const GroupVersionResource& gvr, const std::string& ns,
                                                ListOptions options, std::string* resource_version) {
  if (options.limit <= 0) options.limit = 500;
  std::vector<json> items;
  for (;;) {
    TFJOB_ASSIGN_OR_RETURN(json page, List(gvr, ns, options));
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
  return Do("create", {"POST", ResourcePath(gvr, ns), object.dump()}, false);
}

StatusOr<json> RestClient::Update(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                                  const json& object, const std::string& subresource) {
  // A PUT carries resourceVersion: repeating it after a lost response yields Conflict, never a
  // double write.
  return Do("update", {"PUT", ResourcePath(gvr, ns, name, subresource), object.dump()}, true);
}

StatusOr<json> RestClient::Patch(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                                 PatchType type, const json& patch, const std::string& subresource) {
  HttpRequest r{"PATCH", ResourcePath(gvr, ns, name, subresource), patch.dump()};
  r.content_type = type == PatchType::kMerge  ? "application/merge-patch+json"
                   : type == PatchType::kJson ? "application/json-patch+json"
                                              : "application/strategic-merge-patch+json";
  return Do("patch", std::move(r), type != PatchType::kJson);
}

Status RestClient::Delete(const GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                          const DeleteOptions& options) {
  json body = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  if (!options.precondition_uid.empty()) body["preconditions"]["uid"] = options.precondition_uid;
  if (!options.precondition_resource_version.empty())
    body["preconditions"]["resourceVersion"] = options.precondition_resource_version;
  return Do("delete", {"DELETE", ResourcePath(gvr, ns, name), body.dump()}, true).status();
}

Status RestClient::Watch(const GroupVersionResource& gvr, const std::string& ns, ListOptions options,
                         const ByteSink& on_bytes, std::stop_token stop) {
  options.watch = true;
  bucket_.Accept(stop);
  HttpRequest r{"GET", ResourcePath(gvr, ns) + ListQuery(options)};
  r.timeout = std::chrono::milliseconds(0);
  auto start = clock_.SteadyNow();
  Status s = transport_.Stream(r, on_bytes, stop);
  if (observer_)
    observer_({"watch", s.ok() || s.code() == StatusCode::kCancelled ? 200L : 0L, clock_.SteadyNow() - start});
  return s;
}

}  // namespace tfjob::kube
