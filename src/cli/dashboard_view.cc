#include "cli/dashboard_view.h"

#include <algorithm>
#include <tuple>

#include "api/json_fields.h"
#include "api/manifest.h"
#include "api/object_key.h"

namespace tfjob::cli::dashboard {
namespace {

using nlohmann::json;

json TimeJson(const std::optional<api::Time>& t) {
  return t ? json(api::FormatTime(*t)) : json(nullptr);
}

json ConditionsJson(const std::vector<ConditionView>& conditions) {
  json out = json::array();
  for (const auto& c : conditions)
    out.push_back({{"type", c.type},
                   {"status", c.status},
                   {"reason", c.reason},
                   {"message", c.message},
                   {"time", TimeJson(c.last_transition)}});
  return out;
}

std::string ReplicaOf(const std::string& job, const std::string& pod) {
  if (pod.size() > job.size() + 1 && pod.compare(0, job.size() + 1, job + "-") == 0) return pod.substr(job.size() + 1);
  return pod;
}

Attempt Base(const std::string& job, const PodView& pod, int instance) {
  Attempt a;
  a.pod = pod.name;
  a.uid = pod.uid;
  a.replica = ReplicaOf(job, pod.name);
  a.instance = instance;
  a.node = pod.node;
  return a;
}

std::string OutcomeOf(int exit_code) {
  return exit_code == 0 ? "succeeded" : "failed";
}

// The current instance of the main container, or nullopt while it waits to be restarted.
std::optional<Attempt> Current(const std::string& job, const PodView& pod) {
  const ContainerView& c = pod.main;
  Attempt a = Base(job, pod, c.restarts);
  if (c.state == "running") {
    a.start = c.started ? c.started : pod.started;
    a.outcome = "running";
  } else if (c.state == "terminated") {
    a.start = c.started ? c.started : pod.started;
    a.end = c.finished;
    a.exit_code = c.exit_code;
    a.outcome = OutcomeOf(c.exit_code);
    a.reason = c.reason;
  } else if (c.restarts > 0) {
    return std::nullopt;  // waiting to be restarted (CrashLoopBackOff): the last instance shows
  } else if (pod.phase == "Succeeded" || pod.phase == "Failed") {
    a.start = pod.started ? pod.started : pod.created;  // ended without a container status
    a.outcome = pod.phase == "Succeeded" ? "succeeded" : "failed";
    a.end = a.start;
  } else {
    a.start = pod.created;
    a.outcome = "pending";
    a.reason = c.reason;
  }
  if (!a.start) a.start = pod.created;
  return a;
}

int Order(const std::string& replica_type) {
  static const char* kOrder[] = {"chief", "master", "ps", "worker", "evaluator"};
  for (int i = 0; i < 5; ++i)
    if (replica_type == kOrder[i]) return i;
  return 5;
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// "a%2Fb+c" -> "a/b c"; "" when a %-escape is malformed.
std::string PercentDecoded(std::string_view v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] == '+') {
      out += ' ';
    } else if (v[i] != '%') {
      out += v[i];
    } else {
      if (i + 2 >= v.size()) return "";
      int hi = HexDigit(v[i + 1]), lo = HexDigit(v[i + 2]);
      if (hi < 0 || lo < 0) return "";
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

}  // namespace

std::vector<Attempt> ExtractAttempts(const std::string& job, const PodView& pod) {
  std::vector<Attempt> out;
  const ContainerView& c = pod.main;
  if (c.restarts > 0 && c.last_exit_code >= 0) {
    Attempt prev = Base(job, pod, c.restarts - 1);
    prev.start = c.last_started;
    prev.end = c.last_finished;
    prev.exit_code = c.last_exit_code;
    prev.outcome = OutcomeOf(c.last_exit_code);
    prev.reason = c.last_reason;
    out.push_back(prev);
  }
  if (auto cur = Current(job, pod)) out.push_back(*cur);
  return out;
}

void MergeAttempts(std::vector<Attempt>& history, const std::vector<Attempt>& seen, size_t max) {
  for (const Attempt& a : seen) {
    auto it = std::find_if(history.begin(), history.end(),
                           [&](const Attempt& h) { return h.uid == a.uid && h.instance == a.instance; });
    if (it == history.end()) {
      history.push_back(a);
      continue;
    }
    // What the newer status no longer says (a start time, a node) is kept from the older one.
    Attempt b = a;
    if (!b.start) b.start = it->start;
    if (b.node.empty()) b.node = it->node;
    *it = std::move(b);
  }
  while (history.size() > max) {
    auto ended = std::find_if(history.begin(), history.end(), [](const Attempt& h) { return h.end.has_value(); });
    history.erase(ended == history.end() ? history.begin() : ended);
  }
}

void EndDeleted(std::vector<Attempt>& history, const std::string& uid, api::Time at) {
  for (Attempt& a : history) {
    if (a.uid != uid || a.end) continue;
    a.end = at;
    a.outcome = "deleted";
  }
}

json AttemptsJson(std::vector<Attempt> history) {
  auto key = [](const Attempt& a) {
    auto dash = a.replica.rfind('-');
    std::string type = dash == std::string::npos ? a.replica : a.replica.substr(0, dash);
    long index = -1;
    if (dash != std::string::npos) index = std::strtol(a.replica.c_str() + dash + 1, nullptr, 10);
    return std::make_tuple(Order(type), type, index, a.start.value_or(api::Time{}), a.instance);
  };
  std::stable_sort(history.begin(), history.end(), [&](const Attempt& x, const Attempt& y) { return key(x) < key(y); });
  json out = json::array();
  for (const auto& a : history)
    out.push_back({{"pod", a.pod},
                   {"uid", a.uid},
                   {"replica", a.replica},
                   {"instance", a.instance},
                   {"node", a.node},
                   {"start", TimeJson(a.start)},
                   {"end", TimeJson(a.end)},
                   {"outcome", a.outcome},
                   {"exitCode", a.exit_code >= 0 ? json(a.exit_code) : json(nullptr)},
                   {"reason", a.reason}});
  return out;
}

std::string Admission(const JobView& job, const std::optional<WorkloadView>& workload) {
  if (job.queue.empty()) return "";
  if (!workload) return "no workload";
  if (IsTrue(workload->conditions, "Evicted")) {
    const ConditionView* c = Condition(workload->conditions, "Evicted");
    return "evicted: " + c->reason;
  }
  if (IsTrue(workload->conditions, "Admitted")) return "admitted";
  if (IsTrue(workload->conditions, "QuotaReserved")) return "quota reserved";
  return "pending";
}

json JobRow(const JobView& job, const std::optional<WorkloadView>& workload) {
  json replicas = json::array();
  int restarts = 0;
  for (const auto& [type, wanted] : job.replicas) {
    JobView::Counts c;
    if (auto it = job.counts.find(type); it != job.counts.end()) c = it->second;
    restarts += c.restarts;
    replicas.push_back(
        {{"type", type}, {"running", c.active}, {"succeeded", c.succeeded}, {"failed", c.failed}, {"wanted", wanted}});
  }
  return {{"key", api::ObjectKey{job.ns, job.name}.String()},
          {"ns", job.ns},
          {"name", job.name},
          {"state", JobState(job)},
          {"created", TimeJson(job.created)},
          {"replicas", replicas},
          {"restarts", restarts},
          {"suspended", job.suspend},
          {"queue", job.queue},
          {"admission", Admission(job, workload)}};
}

json JobPage(const PageInput& in) {
  JobView job = DecodeJobView(in.job);
  WhyInput why{job, in.pods, in.workload, in.pod_group};
  json pods = json::array();
  for (const auto& p : in.pods)
    pods.push_back({{"name", p.name},
                    {"replica", ReplicaOf(job.name, p.name)},
                    {"state", PodState(p)},
                    {"node", p.node},
                    {"restarts", p.main.restarts}});
  json events = json::array();
  std::vector<EventView> sorted = in.events;
  std::stable_sort(sorted.begin(), sorted.end(), [](const EventView& a, const EventView& b) {
    return a.last.value_or(api::Time{}) < b.last.value_or(api::Time{});
  });
  for (const auto& e : sorted)
    events.push_back({{"type", e.type},
                      {"reason", e.reason},
                      {"message", e.message},
                      {"object", e.object},
                      {"count", e.count},
                      {"time", TimeJson(e.last)}});
  json workload = nullptr, pod_group = nullptr;
  if (in.workload) workload = {{"name", in.workload->name}, {"conditions", ConditionsJson(in.workload->conditions)}};
  if (in.pod_group)
    pod_group = {{"kind", in.pod_group->kind},
                 {"phase", in.pod_group->phase},
                 {"conditions", ConditionsJson(in.pod_group->conditions)}};
  return {{"row", JobRow(job, in.workload)},
          {"uid", job.uid},
          {"started", TimeJson(job.started)},
          {"completed", TimeJson(job.completed)},
          {"why", WhyNotRunning(why)},
          {"conditions", ConditionsJson(job.conditions)},
          {"attempts", AttemptsJson(in.attempts)},
          {"pods", pods},
          {"workload", workload},
          {"podGroup", pod_group},
          {"events", events},
          {"yaml", api::ToYaml(in.job)},
          {"now", api::FormatTime(in.now)}};
}

json Trimmed(json object) {
  if (!object.is_object()) return object;
  auto meta = object.find("metadata");
  if (meta == object.end() || !meta->is_object()) return object;
  meta->erase("managedFields");
  if (auto a = meta->find("annotations"); a != meta->end() && a->is_object()) {
    a->erase("kubectl.kubernetes.io/last-applied-configuration");
    if (a->empty()) meta->erase("annotations");
  }
  return object;
}

bool HostAllowed(std::string_view host, int port, bool loopback_only) {
  if (!loopback_only) return true;
  const std::string p = ":" + std::to_string(port);
  for (std::string_view name : {"127.0.0.1", "localhost", "[::1]"})
    if (host.size() == name.size() + p.size() && host.substr(0, name.size()) == name && host.substr(name.size()) == p)
      return true;
  return false;
}

bool SameSecret(std::string_view expected, std::string_view given) {
  if (expected.empty() || expected.size() != given.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < expected.size(); ++i) diff |= static_cast<unsigned char>(expected[i] ^ given[i]);
  return diff == 0;
}

std::string RequestToken(std::string_view query_token, std::string_view cookie_header) {
  if (!query_token.empty()) return std::string(query_token);
  constexpr std::string_view kName = "tfjob_dashboard=";
  size_t pos = 0;
  while (pos < cookie_header.size()) {
    size_t end = cookie_header.find(';', pos);
    if (end == std::string_view::npos) end = cookie_header.size();
    std::string_view part = cookie_header.substr(pos, end - pos);
    while (!part.empty() && part.front() == ' ') part.remove_prefix(1);
    if (part.substr(0, kName.size()) == kName) return std::string(part.substr(kName.size()));
    pos = end + 1;
  }
  return "";
}

Status CheckAction(const ActionRequest& req, std::string_view csrf) {
  std::string_view type = req.content_type;
  type = type.substr(0, type.find(';'));
  if (type != "application/json") return Status(StatusCode::kForbidden, "an action must be sent as application/json");
  if (!SameSecret(csrf, req.csrf_header))
    return Status(StatusCode::kForbidden, "the X-Tfjob-Csrf header does not hold this page's token");
  if (!req.origin.empty() && req.origin != "http://" + req.host)
    return Status(StatusCode::kForbidden,
                  "the Origin " + api::EscapeNonPrintable(req.origin) + " is not this dashboard's");
  return OkStatus();
}

std::string QueryParam(std::string_view query, std::string_view key) {
  size_t pos = 0;
  while (pos <= query.size()) {
    size_t end = query.find('&', pos);
    if (end == std::string_view::npos) end = query.size();
    std::string_view part = query.substr(pos, end - pos);
    size_t eq = part.find('=');
    if (part.substr(0, eq) == key)
      return PercentDecoded(eq == std::string_view::npos ? std::string_view() : part.substr(eq + 1));
    pos = end + 1;
  }
  return "";
}

}  // namespace tfjob::cli::dashboard
