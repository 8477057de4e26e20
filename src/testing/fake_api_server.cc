#include "testing/fake_api_server.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "api/labels.h"
#include "api/time.h"
#include "kube/api_error.h"

namespace tfjob::testing {

using nlohmann::json;

namespace {

// Resources whose objects have no status subresource (every write takes the whole object).
bool HasStatus(const std::string& resource) {
  static const std::set<std::string> kWithout = {"events",    "leases",          "configmaps",      "secrets",
                                                 "endpoints", "serviceaccounts", "priorityclasses", "namespaces"};
  return !kWithout.contains(resource);
}

// Groups served by CRDs in the operator's world: an update must carry a resourceVersion there
// (AllowUnconditionalUpdate is false for custom resources).
bool IsCustomResource(const std::string& group) {
  return group == "kubeflow.org" || group == "scheduling.volcano.sh" || group == "scheduling.x-k8s.io" ||
         group == api::kKueueGroup;
}

bool ClusterScoped(const std::string& resource) {
  return resource == "namespaces" || resource == "nodes" || resource == "priorityclasses" ||
         resource == "customresourcedefinitions" || resource == "resourceflavors" ||
         resource == "workloadpriorityclasses" || resource == "clusterqueues";
}

std::string KindOf(const std::string& resource) {
  static const std::map<std::string, std::string> kKinds = {{"pods", "Pod"},
                                                            {"services", "Service"},
                                                            {"events", "Event"},
                                                            {"tfjobs", "TFJob"},
                                                            {"leases", "Lease"},
                                                            {"podgroups", "PodGroup"},
                                                            {"workloads", "Workload"},
                                                            {"priorityclasses", "PriorityClass"},
                                                            {"customresourcedefinitions", "CustomResourceDefinition"},
                                                            {"configmaps", "ConfigMap"},
                                                            {"namespaces", "Namespace"}};
  auto it = kKinds.find(resource);
  return it == kKinds.end() ? "Object" : it->second;
}

// "pods" or "tfjobs.kubeflow.org", as errors name a resource (schema.GroupResource.String()).
std::string Qualified(const FakeRequest& r) {
  return r.group.empty() ? r.resource : r.resource + "." + r.group;
}

std::string DefaultReason(long code) {
  switch (code) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 410: return "Expired";
    case 415: return "UnsupportedMediaType";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 503: return "ServiceUnavailable";
    case 504: return "Timeout";
    default: return "InternalError";
  }
}

// A metav1.Status as the API server writes a failure.
json StatusBody(long code, const std::string& reason, const std::string& message, const FakeRequest* r = nullptr) {
  json body = {{"kind", "Status"},    {"apiVersion", "v1"}, {"metadata", json::object()},
               {"status", "Failure"}, {"message", message}, {"reason", reason},
               {"code", code}};
  if (r != nullptr && !r->resource.empty()) {
    json details = {{"kind", r->resource}};
    if (!r->name.empty()) details["name"] = r->name;
    if (!r->group.empty()) details["group"] = r->group;
    body["details"] = details;
  }
  return body;
}

std::string UrlDecode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i] == '+' ? ' ' : s[i];
    }
  }
  return out;
}

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      if (i > start) out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

FakeRequest ParseRequest(const kube::HttpRequest& h) {
  FakeRequest r;
  r.method = h.method;
  r.body = h.body;
  r.content_type = h.content_type;
  std::string path = h.path, query;
  if (auto q = path.find('?'); q != std::string::npos) {
    query = path.substr(q + 1);
    path = path.substr(0, q);
  }
  for (const auto& kv : Split(query, '&')) {
    auto eq = kv.find('=');
    r.query[UrlDecode(kv.substr(0, eq))] = eq == std::string::npos ? "" : UrlDecode(kv.substr(eq + 1));
  }
  std::vector<std::string> seg = Split(path, '/');
  size_t i = 0;
  if (!seg.empty() && seg[0] == "api") {
    if (seg.size() >= 2) r.version = seg[1];
    i = 2;
  } else if (!seg.empty() && seg[0] == "apis" && seg.size() >= 3) {
    r.group = seg[1];
    r.version = seg[2];
    i = 3;
  } else if (seg.size() == 2 && seg[0] == "apis") {
    r.group = seg[1];  // the group's discovery document
    i = 2;
  }
  std::vector<std::string> rest(seg.begin() + static_cast<long>(std::min(i, seg.size())), seg.end());
  if (rest.size() >= 3 && rest[0] == "namespaces") {
    r.ns = rest[1];
    rest.erase(rest.begin(), rest.begin() + 2);
  }
  if (!rest.empty()) r.resource = rest[0];
  if (rest.size() > 1) r.name = rest[1];
  if (rest.size() > 2) r.subresource = rest[2];
  bool watch = r.query.contains("watch") && (r.query["watch"] == "true" || r.query["watch"] == "1");
  if (r.method == "GET") r.verb = !r.name.empty() ? "get" : watch ? "watch" : "list";
  if (r.method == "POST") r.verb = "create";
  if (r.method == "PUT") r.verb = "update";
  if (r.method == "PATCH") r.verb = "patch";
  if (r.method == "DELETE") r.verb = r.name.empty() ? "deletecollection" : "delete";
  return r;
}

const json& Meta(const json& object) {
  static const json kEmpty = json::object();
  auto it = object.find("metadata");
  return it != object.end() && it->is_object() ? *it : kEmpty;
}

std::string MetaString(const json& object, const char* field) {
  const json& m = Meta(object);
  auto it = m.find(field);
  return it != m.end() && it->is_string() ? it->get<std::string>() : "";
}

// Selection of a list or watch: namespace, labels and fields.
struct Selection {
  std::string ns;
  std::vector<LabelRequirement> labels;
  std::vector<std::pair<std::string, std::pair<bool, std::string>>> fields;  // field -> (equal?, value)
};

// Reads labelSelector and fieldSelector; an error answer when either is malformed.
std::optional<json> ParseSelection(const FakeRequest& r, Selection* out) {
  out->ns = r.ns;
  if (auto it = r.query.find("labelSelector"); it != r.query.end()) {
    auto parsed = ParseLabelSelector(it->second);
    if (!parsed) return StatusBody(400, "BadRequest", "unable to parse requirement: " + it->second);
    out->labels = std::move(*parsed);
  }
  if (auto it = r.query.find("fieldSelector"); it != r.query.end()) {
    for (const auto& term : Split(it->second, ',')) {
      bool equal = term.find("!=") == std::string::npos;
      auto op = equal ? term.find('=') : term.find("!=");
      if (op == std::string::npos) return StatusBody(400, "BadRequest", "invalid selector: '" + it->second + "'");
      std::string field = term.substr(0, op);
      std::string value = term.substr(op + (equal ? (term.compare(op, 2, "==") == 0 ? 2 : 1) : 2));
      if (field != "metadata.name" && field != "metadata.namespace")
        return StatusBody(400, "BadRequest", "field label not supported: " + field);
      out->fields.push_back({field, {equal, value}});
    }
  }
  return std::nullopt;
}

bool Selected(const Selection& s, const json& object) {
  if (!s.ns.empty() && MetaString(object, "namespace") != s.ns) return false;
  for (const auto& [field, test] : s.fields) {
    std::string v = MetaString(object, field == "metadata.name" ? "name" : "namespace");
    if ((v == test.second) != test.first) return false;
  }
  const json& m = Meta(object);
  auto labels = m.find("labels");
  return SelectorMatches(s.labels, labels != m.end() ? *labels : json::object());
}

std::string WatchLine(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump() + "\n";
}

// Everything but metadata and status: what metadata.generation counts.
json SpecPart(const json& object) {
  json copy = object;
  if (copy.is_object()) {
    copy.erase("metadata");
    copy.erase("status");
  }
  return copy;
}

}  // namespace

std::optional<std::vector<LabelRequirement>> ParseLabelSelector(const std::string& selector) {
  std::vector<LabelRequirement> out;
  size_t i = 0, n = selector.size();
  auto skip = [&] {
    while (i < n && selector[i] == ' ') ++i;
  };
  auto key_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' || c == '/';
  };
  while (true) {
    skip();
    if (i >= n) break;
    LabelRequirement req;
    bool negated = selector[i] == '!';
    if (negated) {
      ++i;
      skip();
    }
    size_t start = i;
    while (i < n && key_char(selector[i])) ++i;
    req.key = selector.substr(start, i - start);
    if (req.key.empty()) return std::nullopt;
    skip();
    if (negated) {
      req.op = LabelRequirement::Op::kDoesNotExist;
    } else if (i >= n || selector[i] == ',') {
      req.op = LabelRequirement::Op::kExists;
    } else if (selector[i] == '=' || selector.compare(i, 2, "!=") == 0) {
      req.op = selector[i] == '=' ? LabelRequirement::Op::kEquals : LabelRequirement::Op::kNotEquals;
      i += (selector.compare(i, 2, "==") == 0 || selector[i] == '!') ? 2 : 1;
      skip();
      size_t vstart = i;
      while (i < n && key_char(selector[i])) ++i;
      req.values.insert(selector.substr(vstart, i - vstart));
    } else {
      bool in = selector.compare(i, 2, "in") == 0 && i + 2 < n && !key_char(selector[i + 2]);
      bool notin = selector.compare(i, 5, "notin") == 0 && i + 5 < n && !key_char(selector[i + 5]);
      if (!in && !notin) return std::nullopt;
      req.op = in ? LabelRequirement::Op::kIn : LabelRequirement::Op::kNotIn;
      i += in ? 2 : 5;
      skip();
      if (i >= n || selector[i] != '(') return std::nullopt;
      size_t close = selector.find(')', i);
      if (close == std::string::npos) return std::nullopt;
      for (auto v : Split(selector.substr(i + 1, close - i - 1), ',')) {
        v.erase(0, v.find_first_not_of(' '));
        v.erase(v.find_last_not_of(' ') + 1);
        if (!v.empty()) req.values.insert(v);
      }
      i = close + 1;
    }
    out.push_back(std::move(req));
    skip();
    if (i < n && selector[i] != ',') return std::nullopt;
    if (i < n) ++i;
  }
  return out;
}

bool SelectorMatches(const std::vector<LabelRequirement>& selector, const json& labels) {
  for (const auto& req : selector) {
    auto it = labels.is_object() ? labels.find(req.key) : labels.end();
    bool has = labels.is_object() && it != labels.end() && it->is_string();
    std::string value = has ? it->get<std::string>() : "";
    bool ok = false;
    switch (req.op) {
      case LabelRequirement::Op::kEquals:
      case LabelRequirement::Op::kIn: ok = has && req.values.contains(value); break;
      case LabelRequirement::Op::kNotEquals:
      case LabelRequirement::Op::kNotIn: ok = !has || !req.values.contains(value); break;
      case LabelRequirement::Op::kExists: ok = has; break;
      case LabelRequirement::Op::kDoesNotExist: ok = !has; break;
    }
    if (!ok) return false;
  }
  return true;
}

FakeApiServer::FakeApiServer(Clock& clock) : clock_(clock) {}

FakeApiServer::~FakeApiServer() {
  CloseWatches();
}

void FakeApiServer::AddFault(Fault fault) {
  MutexLock lock(mu_);
  faults_.push_back(std::move(fault));
}

void FakeApiServer::ClearFaults() {
  MutexLock lock(mu_);
  faults_.clear();
}

void FakeApiServer::set_latency_hook(std::function<void(const FakeRequest&)> hook) {
  MutexLock lock(mu_);
  latency_hook_ = std::move(hook);
}

void FakeApiServer::set_history_limit(size_t events) {
  MutexLock lock(mu_);
  history_limit_ = std::max<size_t>(events, 1);
  while (history_.size() > history_limit_) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
}

void FakeApiServer::PauseWatches() {
  MutexLock lock(mu_);
  watches_paused_ = true;
}

void FakeApiServer::ResumeWatches() {
  MutexLock lock(mu_);
  watches_paused_ = false;
  changed_.notify_all();
}

void FakeApiServer::set_watch_event_drop(std::function<bool(const std::string&, const json&)> drop) {
  MutexLock lock(mu_);
  drop_event_ = std::move(drop);
}

void FakeApiServer::CloseWatches() {
  MutexLock lock(mu_);
  ++watch_epoch_;
  changed_.notify_all();
}

std::vector<FakeRequest> FakeApiServer::requests() const {
  MutexLock lock(mu_);
  return log_;
}

int FakeApiServer::CountRequests(const std::string& verb, const std::string& resource,
                                 std::optional<std::string> subresource) const {
  MutexLock lock(mu_);
  return static_cast<int>(std::count_if(log_.begin(), log_.end(), [&](const FakeRequest& r) {
    return (verb.empty() || r.verb == verb) && (resource.empty() || r.resource == resource) &&
           (!subresource || r.subresource == *subresource);
  }));
}

void FakeApiServer::ClearRequests() {
  MutexLock lock(mu_);
  log_.clear();
}

int FakeApiServer::open_watches() const {
  MutexLock lock(mu_);
  return open_watches_;
}

uint64_t FakeApiServer::resource_version() const {
  MutexLock lock(mu_);
  return rv_;
}

std::optional<json> FakeApiServer::Get(const kube::GroupVersionResource& gvr, const std::string& ns,
                                       const std::string& name) const {
  MutexLock lock(mu_);
  auto store = stores_.find(gvr.group + "/" + gvr.resource);
  if (store == stores_.end()) return std::nullopt;
  auto it = store->second.find(ns + "/" + name);
  if (it == store->second.end()) return std::nullopt;
  return it->second;
}

std::vector<json> FakeApiServer::List(const kube::GroupVersionResource& gvr, const std::string& ns) const {
  MutexLock lock(mu_);
  std::vector<json> out;
  auto store = stores_.find(gvr.group + "/" + gvr.resource);
  if (store == stores_.end()) return out;
  for (const auto& [key, object] : store->second)
    if (ns.empty() || MetaString(object, "namespace") == ns) out.push_back(object);
  return out;
}

namespace {
FakeRequest DirectRequest(const kube::GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                          std::string method, std::string verb) {
  FakeRequest r;
  r.method = std::move(method);
  r.verb = std::move(verb);
  r.group = gvr.group;
  r.resource = gvr.resource;
  r.ns = ns;
  r.name = name;
  return r;
}

StatusOr<json> ToStatusOr(long code, const json& body) {
  Status s = kube::StatusFromHttp(code, body.dump());
  if (!s.ok()) return s;
  return body;
}
}  // namespace

StatusOr<json> FakeApiServer::Create(const kube::GroupVersionResource& gvr, const std::string& ns, json object) {
  MutexLock lock(mu_);
  Answer a = DoCreate(DirectRequest(gvr, ns, "", "POST", "create"), std::move(object));
  return ToStatusOr(a.code, a.body);
}

StatusOr<json> FakeApiServer::MergePatch(const kube::GroupVersionResource& gvr, const std::string& ns,
                                         const std::string& name, const json& patch, const std::string& subresource) {
  MutexLock lock(mu_);
  FakeRequest r = DirectRequest(gvr, ns, name, "PATCH", "patch");
  r.subresource = subresource;
  r.content_type = "application/merge-patch+json";
  Answer a = DoWrite(r, patch.dump());
  return ToStatusOr(a.code, a.body);
}

Status FakeApiServer::Delete(const kube::GroupVersionResource& gvr, const std::string& ns, const std::string& name) {
  MutexLock lock(mu_);
  Answer a = DoDelete(DirectRequest(gvr, ns, name, "DELETE", "delete"), "");
  return ToStatusOr(a.code, a.body).status();
}

std::optional<Fault> FakeApiServer::TakeFault(const FakeRequest& r) {
  for (auto it = faults_.begin(); it != faults_.end(); ++it) {
    if (!it->verb.empty() && it->verb != r.verb) continue;
    if (!it->resource.empty() && it->resource != r.resource) continue;
    if (it->subresource && *it->subresource != r.subresource) continue;
    if (it->when && !it->when(r)) continue;
    Fault f = *it;
    if (it->times > 0 && --it->times == 0) faults_.erase(it);
    return f;
  }
  return std::nullopt;
}

StatusOr<kube::HttpResponse> FakeApiServer::Send(const kube::HttpRequest& request) {
  FakeRequest r = ParseRequest(request);
  std::function<void(const FakeRequest&)> hook;
  {
    MutexLock lock(mu_);
    hook = latency_hook_;
  }
  if (hook) hook(r);
  if (request.abort.stop_requested()) return CancelledError(request.method + " " + request.path + ": aborted");
  MutexLock lock(mu_);
  std::optional<Fault> fault = TakeFault(r);
  Answer a{0, json()};
  if (!fault || fault->after_write) a = Serve(r, request.body);
  std::optional<int> retry_after;
  if (fault) {
    std::string reason = fault->reason.empty() ? DefaultReason(fault->code) : fault->reason;
    std::string message = fault->message.empty() ? "injected " + std::to_string(fault->code) : fault->message;
    a = {fault->code, StatusBody(fault->code, reason, message, &r)};
    retry_after = fault->retry_after;
  }
  r.code = a.code;
  log_.push_back(r);
  return kube::HttpResponse{a.code, a.body.is_null() ? "" : a.body.dump(), retry_after};
}

void FakeApiServer::ServeVersions(const std::string& group, std::vector<std::string> versions) {
  MutexLock lock(mu_);
  served_versions_[group] = std::move(versions);
}

void FakeApiServer::ServeResources(const std::string& group, const std::string& version,
                                   std::vector<std::string> resources) {
  MutexLock lock(mu_);
  served_resources_[group + "/" + version] = std::move(resources);
}

std::optional<FakeApiServer::Answer> FakeApiServer::Discovery(const FakeRequest& r) const {
  auto served = served_versions_.find(r.group);
  if (r.group.empty() || served == served_versions_.end()) return std::nullopt;
  const std::vector<std::string>& versions = served->second;
  const Answer not_found{404, StatusBody(404, "NotFound", "the server could not find the requested resource")};
  if (!r.version.empty()) {
    if (std::find(versions.begin(), versions.end(), r.version) == versions.end()) return not_found;
    if (r.method != "GET" || !r.resource.empty()) return std::nullopt;
    json resources = json::array();
    if (auto it = served_resources_.find(r.group + "/" + r.version); it != served_resources_.end())
      for (const auto& name : it->second) resources.push_back({{"name", name}, {"namespaced", true}});
    return Answer{200,
                  {{"kind", "APIResourceList"},
                   {"apiVersion", "v1"},
                   {"groupVersion", r.group + "/" + r.version},
                   {"resources", std::move(resources)}}};
  }
  if (r.method != "GET" || !r.resource.empty() || versions.empty()) return not_found;
  json list = json::array();
  for (const auto& v : versions) list.push_back({{"groupVersion", r.group + "/" + v}, {"version", v}});
  return Answer{200,
                {{"kind", "APIGroup"},
                 {"apiVersion", "v1"},
                 {"name", r.group},
                 {"versions", list},
                 {"preferredVersion", list.front()}}};
}

FakeApiServer::Answer FakeApiServer::Serve(const FakeRequest& r, const std::string& body) {
  if (auto answer = Discovery(r)) return *answer;
  if (r.resource.empty()) return {404, StatusBody(404, "NotFound", "the server could not find the requested resource")};
  if (r.verb == "create") {
    json object;
    try {
      object = json::parse(body);
    } catch (const json::exception& e) {
      return {400, StatusBody(400, "BadRequest",
                              std::string("the body of the request was in an unknown format: ") + e.what())};
    }
    return DoCreate(r, std::move(object));
  }
  if (r.verb == "get") return DoGet(r);
  if (r.verb == "list") return DoList(r);
  if (r.verb == "delete") return DoDelete(r, body);
  if (r.verb == "update" || r.verb == "patch") return DoWrite(r, body);
  return {405, StatusBody(405, "MethodNotAllowed", "the server does not allow this method on the requested resource")};
}

json FakeApiServer::Commit(const std::string& resource_key, const std::string& key, json object,
                           const std::string& type) {
  Objects& store = stores_[resource_key];
  std::optional<json> old;
  if (auto it = store.find(key); it != store.end()) old = it->second;
  object["metadata"]["resourceVersion"] = std::to_string(++rv_);
  if (type == "DELETED")
    store.erase(key);
  else
    store[key] = object;
  if (!drop_event_ || !drop_event_(type, object))
    history_.push_back({rv_, resource_key, type, object, type == "DELETED" ? std::nullopt : old});
  while (history_.size() > history_limit_) {
    compacted_rv_ = history_.front().rv;
    history_.pop_front();
  }
  changed_.notify_all();
  return object;
}

FakeApiServer::Answer FakeApiServer::DoCreate(const FakeRequest& r, json object) {
  if (!object.is_object()) return {400, StatusBody(400, "BadRequest", "the body of the request is not an object")};
  json& meta = object["metadata"];
  if (!meta.is_object()) meta = json::object();
  std::string ns = ClusterScoped(r.resource) ? "" : r.ns;
  std::string body_ns = MetaString(object, "namespace");
  if (!body_ns.empty() && !ns.empty() && body_ns != ns)
    return {400, StatusBody(400, "BadRequest",
                            "the namespace of the provided object does not match the namespace sent on the request")};
  if (!ns.empty()) meta["namespace"] = ns;
  std::string name = MetaString(object, "name");
  if (name.empty() && !MetaString(object, "generateName").empty()) {
    static const char kAlphabet[] = "bcdfghjklmnpqrstvwxz2456789";
    uint64_t n = rv_ * 7919 + uids_;
    std::string suffix;
    for (int i = 0; i < 5; ++i, n /= 27) suffix += kAlphabet[n % 27];
    name = MetaString(object, "generateName") + suffix;
    meta["name"] = name;
  }
  FakeRequest named = r;
  named.name = name;
  if (name.empty())
    return {422, StatusBody(422, "Invalid",
                            KindOf(r.resource) +
                                " \"\" is invalid: metadata.name: Required value: name or generateName is required",
                            &named)};
  std::string resource_key = r.group + "/" + r.resource;
  std::string key = ns + "/" + name;
  if (stores_[resource_key].contains(key))
    return {409, StatusBody(409, "AlreadyExists", Qualified(r) + " \"" + name + "\" already exists", &named)};
  char uid[64];
  ++uids_;
  std::snprintf(uid, sizeof uid, "%08llx-0000-4000-8000-%012llx", static_cast<unsigned long long>(uids_),
                static_cast<unsigned long long>(uids_));
  meta["uid"] = uid;
  meta["creationTimestamp"] = api::FormatTime(clock_.Now());
  meta["generation"] = 1;
  meta.erase("deletionTimestamp");
  meta.erase("deletionGracePeriodSeconds");
  if (HasStatus(r.resource)) {
    if (r.resource == "pods")
      object["status"] = {{"phase", "Pending"}};
    else if (r.resource == "services")
      object["status"] = {{"loadBalancer", json::object()}};
    else
      object.erase("status");
  }
  return {201, Commit(resource_key, key, std::move(object), "ADDED")};
}

FakeApiServer::Answer FakeApiServer::DoGet(const FakeRequest& r) {
  auto store = stores_.find(r.group + "/" + r.resource);
  std::string key = (ClusterScoped(r.resource) ? "" : r.ns) + "/" + r.name;
  if (store == stores_.end() || !store->second.contains(key))
    return {404, StatusBody(404, "NotFound", Qualified(r) + " \"" + r.name + "\" not found", &r)};
  if (!r.subresource.empty() && (r.subresource != "status" || !HasStatus(r.resource)))
    return {404, StatusBody(404, "NotFound", "the server could not find the requested resource")};
  return {200, store->second.at(key)};
}

FakeApiServer::Answer FakeApiServer::DoList(const FakeRequest& r) {
  Selection sel;
  if (auto error = ParseSelection(r, &sel)) return {400, *error};
  int64_t limit = 0;
  if (auto it = r.query.find("limit"); it != r.query.end()) limit = std::atoll(it->second.c_str());
  std::string after;
  if (auto it = r.query.find("continue"); it != r.query.end()) after = it->second;
  json items = json::array();
  std::string last;
  bool more = false;
  int64_t remaining = 0;
  if (auto store = stores_.find(r.group + "/" + r.resource); store != stores_.end()) {
    for (auto it = after.empty() ? store->second.begin() : store->second.upper_bound(after); it != store->second.end();
         ++it) {
      if (!Selected(sel, it->second)) continue;
      if (limit > 0 && static_cast<int64_t>(items.size()) >= limit) {
        more = true;
        ++remaining;
        continue;
      }
      items.push_back(it->second);
      last = it->first;
    }
  }
  json meta = {{"resourceVersion", std::to_string(rv_)}};
  if (more) {
    meta["continue"] = last;
    meta["remainingItemCount"] = remaining;
  }
  std::string api_version = r.group.empty() ? "v1" : r.group + "/v1";
  json list = {
      {"kind", KindOf(r.resource) + "List"}, {"apiVersion", api_version}, {"metadata", meta}, {"items", items}};
  return {200, list};
}

FakeApiServer::Answer FakeApiServer::DoDelete(const FakeRequest& r, const std::string& body) {
  std::string resource_key = r.group + "/" + r.resource;
  std::string key = (ClusterScoped(r.resource) ? "" : r.ns) + "/" + r.name;
  auto& store = stores_[resource_key];
  auto it = store.find(key);
  if (it == store.end()) return {404, StatusBody(404, "NotFound", Qualified(r) + " \"" + r.name + "\" not found", &r)};
  json options = json::object();
  if (!body.empty()) {
    try {
      options = json::parse(body);
    } catch (const json::exception&) {
      return {400, StatusBody(400, "BadRequest", "the body of the request was in an unknown format")};
    }
  }
  const json& object = it->second;
  auto precondition = [&](const char* field, const char* label, const char* meta_label) -> std::optional<Answer> {
    if (!options.contains("preconditions") || !options["preconditions"].is_object()) return std::nullopt;
    const json& p = options["preconditions"];
    if (!p.contains(field) || !p[field].is_string()) return std::nullopt;
    std::string want = p[field].get<std::string>();
    std::string have = MetaString(object, field);
    if (want == have) return std::nullopt;
    std::string storage_key = "/registry/" + (r.group.empty() ? "" : r.group + "/") + r.resource + "/" + key;
    if (storage_key.find("//") != std::string::npos) storage_key.replace(storage_key.find("//"), 2, "/");
    std::string message = "Operation cannot be fulfilled on " + Qualified(r) + " \"" + r.name +
                          "\": StorageError: invalid object, Code: 4, Key: " + storage_key +
                          ", ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: " + label +
                          " in precondition: " + want + ", " + meta_label + ": " + have;
    return Answer{409, StatusBody(409, "Conflict", message, &r)};
  };
  if (auto a = precondition("uid", "UID", "UID in object meta")) return *a;
  if (auto a = precondition("resourceVersion", "ResourceVersion", "ResourceVersion in meta")) return *a;
  const json& meta = Meta(object);
  bool finalizers = meta.contains("finalizers") && meta["finalizers"].is_array() && !meta["finalizers"].empty();
  if (finalizers) {
    if (meta.contains("deletionTimestamp")) return {200, object};
    json marked = object;
    marked["metadata"]["deletionTimestamp"] = api::FormatTime(clock_.Now());
    marked["metadata"]["deletionGracePeriodSeconds"] = 0;
    return {200, Commit(resource_key, key, std::move(marked), "MODIFIED")};
  }
  const std::string uid = MetaString(object, "uid");
  json gone = Commit(resource_key, key, object, "DELETED");  // `object` is gone from here on
  if (r.resource == "pods" || r.resource == "services") return {200, gone};
  json success = {{"kind", "Status"},
                  {"apiVersion", "v1"},
                  {"metadata", json::object()},
                  {"status", "Success"},
                  {"details", {{"name", r.name}, {"kind", r.resource}, {"uid", uid}}}};
  if (!r.group.empty()) success["details"]["group"] = r.group;
  return {200, success};
}

namespace {
// What the server keeps of a write: the main resource keeps the old status and /status keeps
// everything else (the strategies of pods and custom resources); identity is the server's, and
// metadata.generation counts spec changes.
json WriteStrategy(const FakeRequest& r, const json& old, json updated) {
  // The strategies: the main resource keeps the old status, /status keeps everything else.
  if (HasStatus(r.resource)) {
    if (r.subresource == "status") {
      json status = updated.contains("status") ? updated["status"] : json();
      updated = old;
      if (status.is_null())
        updated.erase("status");
      else
        updated["status"] = status;
    } else if (old.contains("status")) {
      updated["status"] = old["status"];
    } else {
      updated.erase("status");
    }
  }
  // Identity is the server's.
  json& meta = updated["metadata"];
  if (!meta.is_object()) meta = json::object();
  for (const char* f : {"name", "namespace", "uid", "creationTimestamp", "deletionTimestamp", "generation"}) {
    if (Meta(old).contains(f))
      meta[f] = Meta(old)[f];
    else
      meta.erase(f);
  }
  meta["resourceVersion"] = MetaString(old, "resourceVersion");
  if (SpecPart(updated) != SpecPart(old)) meta["generation"] = meta.value("generation", 0) + 1;
  return updated;
}
}  // namespace

FakeApiServer::Answer FakeApiServer::DoWrite(const FakeRequest& r, const std::string& body) {
  std::string resource_key = r.group + "/" + r.resource;
  std::string key = (ClusterScoped(r.resource) ? "" : r.ns) + "/" + r.name;
  auto& store = stores_[resource_key];
  auto it = store.find(key);
  if (!r.subresource.empty() && (r.subresource != "status" || !HasStatus(r.resource)))
    return {404, StatusBody(404, "NotFound", "the server could not find the requested resource")};
  if (it == store.end()) return {404, StatusBody(404, "NotFound", Qualified(r) + " \"" + r.name + "\" not found", &r)};
  const json old = it->second;
  const std::string old_rv = MetaString(old, "resourceVersion");
  json input;
  try {
    input = json::parse(body);
  } catch (const json::exception& e) {
    return {400, StatusBody(400, "BadRequest", std::string("error decoding the request body: ") + e.what())};
  }
  json updated;
  bool conditional = false;
  if (r.verb == "update") {
    if (!input.is_object()) return {400, StatusBody(400, "BadRequest", "the body of the request is not an object")};
    std::string name = MetaString(input, "name");
    if (name != r.name)
      return {400,
              StatusBody(400, "BadRequest",
                         "the name of the object (" + name + ") does not match the name on the URL (" + r.name + ")")};
    std::string rv = MetaString(input, "resourceVersion");
    if (rv.empty() && IsCustomResource(r.group))
      return {422, StatusBody(422, "Invalid",
                              KindOf(r.resource) + " \"" + r.name +
                                  "\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified "
                                  "for an update",
                              &r)};
    conditional = !rv.empty();
    updated = input;
  } else if (r.content_type == "application/merge-patch+json") {
    updated = old;
    updated.merge_patch(input);
    conditional = MetaString(updated, "resourceVersion") != old_rv;
  } else if (r.content_type == "application/json-patch+json") {
    if (!input.is_array()) return {400, StatusBody(400, "BadRequest", "the JSON patch is not an array")};
    try {
      updated = old.patch(input);
    } catch (const json::exception& e) {
      return {422, StatusBody(422, "Invalid", e.what())};
    }
    conditional = MetaString(updated, "resourceVersion") != old_rv;
  } else {
    return {415, StatusBody(415, "UnsupportedMediaType",
                            "the body of the request was in an unknown format: " + r.content_type)};
  }
  if (!updated.is_object()) return {422, StatusBody(422, "Invalid", "the result is not an object")};
  if (conditional && MetaString(updated, "resourceVersion") != old_rv)
    return {409, StatusBody(409, "Conflict",
                            "Operation cannot be fulfilled on " + Qualified(r) + " \"" + r.name +
                                "\": the object has been modified; please apply your changes to the latest version "
                                "and try again",
                            &r)};
  updated = WriteStrategy(r, old, std::move(updated));
  if (updated == old) return {200, old};  // a no-op write: no new version, no event
  const json& m = Meta(updated);
  bool finalizers = m.contains("finalizers") && m["finalizers"].is_array() && !m["finalizers"].empty();
  if (m.contains("deletionTimestamp") && !finalizers) return {200, Commit(resource_key, key, updated, "DELETED")};
  return {200, Commit(resource_key, key, std::move(updated), "MODIFIED")};
}

Status FakeApiServer::Stream(const kube::HttpRequest& request, const kube::ByteSink& on_bytes, std::stop_token stop) {
  FakeRequest r = ParseRequest(request);
  auto wake = [this] {
    MutexLock lock(mu_);
    changed_.notify_all();
  };
  std::stop_callback on_stop(stop, wake);
  std::stop_callback on_abort(request.abort, wake);
  mu_.lock();
  Status result = Watch(r, request.abort, on_bytes, stop);
  mu_.unlock();
  return result;
}

Status FakeApiServer::Refuse(FakeRequest& r, long code, const json& body) {
  r.code = code;
  log_.push_back(r);
  return kube::StatusFromHttp(code, body.dump());
}

namespace {
// The watch lines of the events after *pos of one resource, as a selection sees them (an object
// leaving it is DELETED, one entering it ADDED); *pos moves past every event looked at.
template <typename History>
void CollectEvents(const History& history, const std::string& resource_key, const Selection& sel, uint64_t* pos,
                   std::vector<std::string>* lines) {
  auto first = std::partition_point(history.begin(), history.end(), [p = *pos](const auto& e) { return e.rv <= p; });
  for (auto e = first; e != history.end(); ++e) {
    *pos = e->rv;
    if (e->resource_key != resource_key) continue;
    bool now = Selected(sel, e->object);
    bool before = e->old_object && Selected(sel, *e->old_object);
    if (e->type == "MODIFIED" && before && !now) {
      json old = *e->old_object;  // as the cacher: the old content at the event's version
      old["metadata"]["resourceVersion"] = std::to_string(e->rv);
      lines->push_back(WatchLine("DELETED", old));
    } else if (e->type == "MODIFIED" && now && !before) {
      lines->push_back(WatchLine("ADDED", e->object));
    } else if (now) {
      lines->push_back(WatchLine(e->type, e->object));
    }
  }
}
}  // namespace

Status FakeApiServer::Watch(FakeRequest& r, const std::stop_token& abort, const kube::ByteSink& on_bytes,
                            const std::stop_token& stop) {
  if (r.verb != "watch") return Refuse(r, 405, StatusBody(405, "MethodNotAllowed", "not a watch"));
  if (std::optional<Fault> fault = TakeFault(r)) {
    std::string reason = fault->reason.empty() ? DefaultReason(fault->code) : fault->reason;
    std::string message = fault->message.empty() ? "injected " + std::to_string(fault->code) : fault->message;
    return Refuse(r, fault->code, StatusBody(fault->code, reason, message, &r));
  }
  if (auto answer = Discovery(r)) return Refuse(r, answer->code, answer->body);
  Selection sel;
  if (auto error = ParseSelection(r, &sel)) return Refuse(r, 400, *error);
  std::string rv_text = r.query.contains("resourceVersion") ? r.query["resourceVersion"] : "";
  uint64_t pos = 0;
  std::vector<std::string> lines;
  if (rv_text.empty() || rv_text == "0") {
    // "Any" version: the current objects first, as ADDED.
    if (auto store = stores_.find(r.group + "/" + r.resource); store != stores_.end())
      for (const auto& [key, object] : store->second)
        if (Selected(sel, object)) lines.push_back(WatchLine("ADDED", object));
    pos = rv_;
  } else {
    char* end = nullptr;
    pos = std::strtoull(rv_text.c_str(), &end, 10);
    if (end == rv_text.c_str() || *end != '\0')
      return Refuse(r, 400, StatusBody(400, "BadRequest", "invalid resource version: " + rv_text));
  }
  r.code = 200;
  log_.push_back(r);
  const std::string resource_key = r.group + "/" + r.resource;
  const uint64_t epoch = watch_epoch_;
  ++open_watches_;
  Status result = OkStatus();
  while (true) {
    while (watches_paused_ && !stop.stop_requested() && !abort.stop_requested() && watch_epoch_ == epoch)
      changed_.wait(mu_);
    if (stop.stop_requested() || abort.stop_requested()) {
      result = CancelledError("watch: stopped");
      break;
    }
    if (watch_epoch_ != epoch) break;
    bool expired = pos < compacted_rv_;
    if (expired) {
      // The watch cache no longer holds what follows `pos` (or the watcher fell behind it).
      json status =
          StatusBody(410, "Expired",
                     "too old resource version: " + std::to_string(pos) + " (" + std::to_string(compacted_rv_) + ")");
      lines.push_back(WatchLine("ERROR", status));
    } else {
      CollectEvents(history_, resource_key, sel, &pos, &lines);
    }
    if (!lines.empty()) {
      std::vector<std::string> out;
      out.swap(lines);
      mu_.unlock();  // the client's sink takes its own locks
      bool more = true;
      for (const auto& line : out)
        if (more) more = on_bytes(line);
      mu_.lock();
      if (!more) {
        result = CancelledError("watch: the client stopped reading");
        break;
      }
    }
    if (expired) break;  // the server ends the stream after the ERROR event
    while (!stop.stop_requested() && !abort.stop_requested() && watch_epoch_ == epoch &&
           (history_.empty() || history_.back().rv <= pos) && pos >= compacted_rv_)
      changed_.wait(mu_);
    if (stop.stop_requested() || abort.stop_requested()) {
      result = CancelledError("watch: stopped");
      break;
    }
    if (watch_epoch_ != epoch) break;  // the server ended the watch
  }
  --open_watches_;
  changed_.notify_all();
  return result;
}

kube::RestClientOptions UnthrottledClientOptions() {
  kube::RestClientOptions o;
  o.max_retries = 0;
  o.qps = 1e6;
  o.burst = 1000000;
  return o;
}

json WorkerJobObject(const std::string& name, int workers) {
  json container = {{"name", "tensorflow"},
                    {"image", "tf:2"},
                    {"ports", json::array({{{"name", "tfjob-port"}, {"containerPort", 2222}}})}};
  return {{"apiVersion", "kubeflow.org/v1"},
          {"kind", "TFJob"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"tfReplicaSpecs",
             {{"Worker",
               {{"replicas", workers},
                {"restartPolicy", "Never"},
                {"template", {{"spec", {{"containers", json::array({container})}}}}}}}}}}}};
}

}  // namespace tfjob::testing
