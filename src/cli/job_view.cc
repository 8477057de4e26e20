#include "cli/job_view.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "api/field_error.h"
#include "api/json_fields.h"

namespace tfjob::cli {
namespace {

using nlohmann::json;

std::string Esc(std::string_view s) {
  return api::EscapeNonPrintable(s);
}

std::optional<api::Time> TimeField(const json& obj, std::string_view key) {
  std::string t = api::StringField(obj, key);
  if (t.empty()) return std::nullopt;
  return api::ParseTime(t);
}

std::vector<ConditionView> DecodeConditions(const json& status) {
  std::vector<ConditionView> out;
  auto it = status.find("conditions");
  if (it == status.end() || !it->is_array()) return out;
  for (const json& c : *it) {
    if (!c.is_object()) continue;
    out.push_back({api::StringField(c, "type"), api::StringField(c, "status"), api::StringField(c, "reason"),
                   api::StringField(c, "message"), TimeField(c, "lastTransitionTime")});
  }
  return out;
}

ContainerView DecodeContainer(const json& cs) {
  ContainerView c;
  c.name = api::StringField(cs, "name");
  c.restarts = static_cast<int>(api::IntField(cs, "restartCount"));
  const json& state = api::ObjectField(cs, "state");
  for (const char* s : {"waiting", "running", "terminated"}) {
    auto it = state.find(s);
    if (it == state.end() || !it->is_object()) continue;
    c.state = s;
    c.reason = api::StringField(*it, "reason");
    c.message = api::StringField(*it, "message");
    c.started = TimeField(*it, "startedAt");
    if (c.state == "terminated") {
      c.exit_code = static_cast<int>(api::IntField(*it, "exitCode"));
      c.finished = TimeField(*it, "finishedAt");
    }
  }
  const json& last = api::ObjectField(api::ObjectField(cs, "lastState"), "terminated");
  if (!last.empty()) {
    c.last_exit_code = static_cast<int>(api::IntField(last, "exitCode"));
    c.last_reason = api::StringField(last, "reason");
    c.last_started = TimeField(last, "startedAt");
    c.last_finished = TimeField(last, "finishedAt");
  }
  return c;
}

std::vector<ContainerView> DecodeContainers(const json& status, const char* key) {
  std::vector<ContainerView> out;
  auto it = status.find(key);
  if (it == status.end() || !it->is_array()) return out;
  for (const json& cs : *it)
    if (cs.is_object()) out.push_back(DecodeContainer(cs));
  return out;
}

std::string Seconds(std::chrono::system_clock::duration d) {
  auto s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
  return std::to_string(std::max<long long>(0, s)) + "s";
}

std::string Pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

const ConditionView* Condition(const std::vector<ConditionView>& conditions, std::string_view type) {
  for (const auto& c : conditions)
    if (c.type == type) return &c;
  return nullptr;
}

bool IsTrue(const std::vector<ConditionView>& conditions, std::string_view type) {
  const ConditionView* c = Condition(conditions, type);
  return c != nullptr && c->status == "True";
}

bool ImagePullReason(const std::string& r) {
  return r == "ErrImagePull" || r == "ImagePullBackOff" || r == "InvalidImageName" || r == "ErrImageNeverPull" ||
         r == "RegistryUnavailable";
}

std::string PodState(const PodView& p) {
  if (p.deleting) return "Deleting";
  for (const auto& c : p.init_containers)
    if (c.state == "waiting" && !c.reason.empty() && c.reason != "PodInitializing") return c.reason;
  if (p.main.state == "waiting" && !p.main.reason.empty()) return p.main.reason;
  return p.phase.empty() ? "Pending" : p.phase;
}

}  // namespace

JobView DecodeJobView(const json& job) {
  JobView v;
  const json& meta = api::ObjectField(job, "metadata");
  v.name = api::StringField(meta, "name");
  v.ns = api::StringField(meta, "namespace");
  v.uid = api::StringField(meta, "uid");
  v.created = TimeField(meta, "creationTimestamp");
  v.queue = api::StringField(api::ObjectField(meta, "labels"), "kueue.x-k8s.io/queue-name");
  const json& spec = api::ObjectField(job, "spec");
  const json& run_policy = api::ObjectField(spec, "runPolicy");
  if (auto s = run_policy.find("suspend"); s != run_policy.end() && s->is_boolean()) v.suspend = s->get<bool>();
  const json& specs = api::ObjectField(spec, "tfReplicaSpecs");
  for (auto it = specs.begin(); it != specs.end(); ++it) {
    int n = 1;
    if (it->is_object())
      if (auto r = it->find("replicas"); r != it->end() && r->is_number_integer()) n = r->get<int>();
    v.replicas[it.key()] = n;
    if (v.scheduler.empty() && it->is_object())
      v.scheduler = api::StringField(api::ObjectField(api::ObjectField(*it, "template"), "spec"), "schedulerName");
  }
  const json& status = api::ObjectField(job, "status");
  v.started = TimeField(status, "startTime");
  v.completed = TimeField(status, "completionTime");
  const json& rs = api::ObjectField(status, "replicaStatuses");
  for (auto it = rs.begin(); it != rs.end(); ++it) {
    if (!it->is_object()) continue;
    v.counts[it.key()] = {
        static_cast<int>(api::IntField(*it, "active")), static_cast<int>(api::IntField(*it, "succeeded")),
        static_cast<int>(api::IntField(*it, "failed")), static_cast<int>(api::IntField(*it, "restarts"))};
  }
  v.conditions = DecodeConditions(status);
  return v;
}

PodView DecodePodView(const json& pod) {
  PodView p;
  const json& meta = api::ObjectField(pod, "metadata");
  p.name = api::StringField(meta, "name");
  p.uid = api::StringField(meta, "uid");
  p.created = TimeField(meta, "creationTimestamp");
  p.deleting = !api::StringField(meta, "deletionTimestamp").empty();
  const json& labels = api::ObjectField(meta, "labels");
  p.replica_type = api::StringField(labels, "training.kubeflow.org/replica-type");
  std::string index = api::StringField(labels, "training.kubeflow.org/replica-index");
  if (!index.empty() && index.size() < 9 && index.find_first_not_of("0123456789") == std::string::npos)
    p.index = std::stoi(index);
  p.node = api::StringField(api::ObjectField(pod, "spec"), "nodeName");
  const json& status = api::ObjectField(pod, "status");
  p.phase = api::StringField(status, "phase");
  p.started = TimeField(status, "startTime");
  p.conditions = DecodeConditions(status);
  p.init_containers = DecodeContainers(status, "initContainerStatuses");
  p.containers = DecodeContainers(status, "containerStatuses");
  for (const auto& c : p.containers)
    if (c.name == "tensorflow") p.main = c;
  if (p.main.name.empty() && !p.containers.empty()) p.main = p.containers.front();
  return p;
}

EventView DecodeEventView(const json& e) {
  EventView v;
  v.type = api::StringField(e, "type");
  v.reason = api::StringField(e, "reason");
  v.message = api::StringField(e, "message");
  const json& obj = api::ObjectField(e, "involvedObject");
  v.object = api::StringField(obj, "kind") + "/" + api::StringField(obj, "name");
  v.count = std::max<int>(1, static_cast<int>(api::IntField(e, "count", 1)));
  v.last = TimeField(e, "lastTimestamp");
  if (!v.last) v.last = TimeField(e, "eventTime");
  if (!v.last) v.last = TimeField(e, "firstTimestamp");
  if (!v.last) v.last = TimeField(api::ObjectField(e, "metadata"), "creationTimestamp");
  return v;
}

WorkloadView DecodeWorkloadView(const json& w) {
  return {api::StringField(api::ObjectField(w, "metadata"), "name"), DecodeConditions(api::ObjectField(w, "status"))};
}

PodGroupView DecodePodGroupView(const std::string& kind, const json& pg) {
  const json& status = api::ObjectField(pg, "status");
  return {kind, api::StringField(status, "phase"), DecodeConditions(status)};
}

std::string JobState(const JobView& job) {
  static const std::set<std::string> kStates = {"Created", "Running", "Restarting", "Suspended", "Succeeded", "Failed"};
  std::string state = "Pending";
  std::optional<api::Time> at;
  for (const auto& c : job.conditions) {
    if (c.status != "True" || !kStates.contains(c.type)) continue;
    // Terminal conditions win; else the latest (by time, then by order).
    if (state == "Succeeded" || state == "Failed") break;
    if (!at || !c.last_transition || *c.last_transition >= *at || c.type == "Succeeded" || c.type == "Failed") {
      state = c.type;
      if (c.last_transition) at = c.last_transition;
    }
  }
  if (state == "Pending" && job.suspend) return "Suspended";
  return state;
}

bool JobFinished(const JobView& job) {
  return IsTrue(job.conditions, "Succeeded") || IsTrue(job.conditions, "Failed");
}

bool JobSucceeded(const JobView& job) {
  return IsTrue(job.conditions, "Succeeded");
}

std::string FormatAge(std::chrono::seconds age) {
  long long s = std::max<long long>(0, age.count());
  auto str = [](long long v, const char* unit) { return std::to_string(v) + unit; };
  if (s < 120) return str(s, "s");
  long long m = s / 60;
  if (m < 10) return str(m, "m") + (s % 60 ? str(s % 60, "s") : "");
  if (m < 180) return str(m, "m");
  long long h = m / 60;
  if (h < 8) return str(h, "h") + (m % 60 ? str(m % 60, "m") : "");
  if (h < 48) return str(h, "h");
  long long d = h / 24;
  if (d < 8) return str(d, "d") + (h % 24 ? str(h % 24, "h") : "");
  if (d < 730) return str(d, "d");
  return str(d / 365, "y");
}

std::string FormatReplicaCounts(const JobView& job) {
  std::string out;
  for (const auto& [type, n] : job.replicas) {
    int ready = 0;
    if (auto it = job.counts.find(type); it != job.counts.end()) ready = it->second.active + it->second.succeeded;
    out += (out.empty() ? "" : " ") + Esc(type) + " " + std::to_string(ready) + "/" + std::to_string(n);
  }
  return out.empty() ? "-" : out;
}

namespace {

std::vector<std::string> GetTableHeader(const GetTableOptions& options) {
  std::vector<std::string> header;
  if (options.namespaces) header.push_back("NAMESPACE");
  for (const char* h : {"NAME", "STATE", "AGE", "REPLICAS", "RESTARTS"}) header.push_back(h);
  if (options.wide)
    for (const char* h : {"QUEUE", "MESSAGE"}) header.push_back(h);
  return header;
}

std::vector<std::string> GetTableRow(const JobView& j, api::Time now, const GetTableOptions& options) {
  std::vector<std::string> row;
  if (options.namespaces) row.push_back(Esc(j.ns));
  row.push_back(Esc(j.name));
  row.push_back(JobState(j));
  row.push_back(j.created ? FormatAge(std::chrono::duration_cast<std::chrono::seconds>(now - *j.created)) : "-");
  row.push_back(FormatReplicaCounts(j));
  int restarts = 0;
  for (const auto& [t, c] : j.counts) restarts += c.restarts;
  row.push_back(std::to_string(restarts));
  if (options.wide) {
    row.push_back(j.queue.empty() ? "-" : Esc(j.queue));
    row.push_back(j.conditions.empty() ? "" : Esc(j.conditions.back().message));
  }
  return row;
}

// The cells as lines, each column as wide as its widest cell (the last column is not padded).
std::vector<std::string> AlignColumns(const std::vector<std::vector<std::string>>& cells, size_t columns) {
  std::vector<size_t> width(columns, 0);
  for (const auto& r : cells)
    for (size_t i = 0; i < r.size(); ++i) width[i] = std::max(width[i], r[i].size());
  std::vector<std::string> out;
  for (const auto& r : cells) {
    std::string line;
    for (size_t i = 0; i < r.size(); ++i) line += i + 1 < r.size() ? Pad(r[i], width[i] + 3) : r[i];
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace

std::vector<std::string> FormatGetTable(const std::vector<JobView>& jobs, api::Time now,
                                        const GetTableOptions& options) {
  std::vector<std::vector<std::string>> cells;
  std::vector<std::string> header = GetTableHeader(options);
  if (options.header) cells.push_back(header);
  for (const auto& j : jobs) cells.push_back(GetTableRow(j, now, options));
  return AlignColumns(cells, header.size());
}

namespace {

// A row for every replica the spec asks for, created or not.
void AddSpecRows(const JobView& job, std::map<std::string, local::ReplicaRow>& rows) {
  for (const auto& [type, n] : job.replicas) {
    std::string lower = type;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (int i = 0; i < n && i < 10000; ++i) {
      std::string name = job.name + "-" + lower + "-" + std::to_string(i);
      rows[name] = {Esc(name), "NotCreated", 0, -1, std::chrono::milliseconds(0), ""};
    }
  }
}

local::ReplicaRow PodRow(const PodView& p, api::Time now) {
  local::ReplicaRow r;
  r.name = Esc(p.name);
  r.state = PodState(p);
  r.restarts = p.main.restarts;
  r.exit_code = p.main.state == "terminated" ? p.main.exit_code : -1;
  if (r.exit_code < 0 && p.main.state != "running") r.exit_code = p.main.last_exit_code;
  if (p.main.started) {
    auto end = p.main.finished ? *p.main.finished : now;
    r.run_time = std::max(std::chrono::milliseconds(0),
                          std::chrono::duration_cast<std::chrono::milliseconds>(end - *p.main.started));
  }
  r.detail = Esc(p.node);
  return r;
}

}  // namespace

std::vector<local::ReplicaRow> ReplicaRows(const JobView& job, const std::vector<PodView>& pods, api::Time now) {
  std::map<std::string, local::ReplicaRow> rows;
  AddSpecRows(job, rows);
  for (const auto& p : pods) {
    auto& slot = rows[p.name];
    // A pod being deleted does not hide its successor.
    if (slot.state == "NotCreated" || slot.name.empty() || slot.state == "Deleting" || !p.deleting)
      slot = PodRow(p, now);
  }
  std::vector<local::ReplicaRow> out;
  for (auto& [n, r] : rows) out.push_back(std::move(r));
  return out;
}

namespace {

// Whether row `r` is worth a line: new (and created), or its state, restarts or exit code changed
// since `old` (nullptr: a new row).
bool RowChanged(const local::ReplicaRow& r, const local::ReplicaRow* old) {
  if (old == nullptr) return r.state != "NotCreated";
  return old->state != r.state || old->restarts != r.restarts || old->exit_code != r.exit_code;
}

// The parenthesised details of a change line: the exit code, the restarts, a new node.
std::string RowChangeExtra(const local::ReplicaRow& r, const local::ReplicaRow* old) {
  std::string extra;
  if (r.exit_code >= 0) extra += "exit code " + std::to_string(r.exit_code);
  if (r.restarts > 0) extra += (extra.empty() ? "" : ", ") + std::string("restarts ") + std::to_string(r.restarts);
  if (!r.detail.empty() && (old == nullptr || old->detail != r.detail))
    extra += (extra.empty() ? "" : ", ") + std::string("node ") + r.detail;
  return extra;
}

// The line of a row that changed since `old` (nullptr: a new row), or nullopt.
std::optional<std::string> RowChangeLine(const local::ReplicaRow& r, const local::ReplicaRow* old) {
  if (!RowChanged(r, old)) return std::nullopt;
  std::string line = r.name + ": ";
  if (old != nullptr && old->state != r.state && old->state != "NotCreated") line += old->state + " -> ";
  line += r.state;
  std::string extra = RowChangeExtra(r, old);
  if (!extra.empty()) line += " (" + extra + ")";
  return line;
}

}  // namespace

std::vector<std::string> RowChanges(const std::vector<local::ReplicaRow>& before,
                                    const std::vector<local::ReplicaRow>& after) {
  std::map<std::string, const local::ReplicaRow*> old;
  for (const auto& r : before) old[r.name] = &r;
  std::vector<std::string> out;
  for (const auto& r : after) {
    auto it = old.find(r.name);
    if (auto line = RowChangeLine(r, it == old.end() ? nullptr : it->second)) out.push_back(std::move(*line));
  }
  return out;
}

std::string ConditionsLine(const JobView& job) {
  std::string out;
  for (const auto& c : job.conditions) out += (out.empty() ? "" : ", ") + Esc(c.type) + "=" + Esc(c.status);
  return out;
}

namespace {

// What the checks of WhyNotRunning look at: the input, the sentence's subject, the pods not
// being deleted (by name) and the number of replicas the spec asks for.
struct WhyContext {
  const WhyInput& in;
  std::string subject;
  std::vector<const PodView*> pods;
  int wanted = 0;
};

// One cause of WhyNotRunning: its answer ("" when the job is fine), or nullopt for the next check.
using WhyCheck = std::optional<std::string> (*)(const WhyContext&);

std::optional<std::string> WhyFinished(const WhyContext& w) {
  const JobView& job = w.in.job;
  if (const ConditionView* f = Condition(job.conditions, "Failed"); f != nullptr && f->status == "True") {
    if (f->reason == "TFJobFailedValidation") return w.subject + " failed validation: " + Esc(f->message);
    return "";
  }
  if (IsTrue(job.conditions, "Succeeded")) return "";
  return std::nullopt;
}

std::string WhyKueueSuspended(const WhyContext& w) {
  const WhyInput& in = w.in;
  std::string s = w.subject + " is suspended by Kueue (queue \"" + Esc(in.job.queue) + "\")";
  if (!in.workload) return s + ": it has no Workload yet (is Kueue running and the LocalQueue there?)";
  s += ": Workload " + Esc(in.workload->name);
  const ConditionView* qr = Condition(in.workload->conditions, "QuotaReserved");
  const ConditionView* ad = Condition(in.workload->conditions, "Admitted");
  const ConditionView* ev = Condition(in.workload->conditions, "Evicted");
  if (ev != nullptr && ev->status == "True") return s + " was evicted: " + Esc(ev->reason) + ": " + Esc(ev->message);
  if (ad != nullptr && ad->status == "True") return s + " is admitted; the job is about to resume";
  if (qr != nullptr && qr->status != "True")
    return s + " is not admitted: " + (qr->message.empty() ? Esc(qr->reason) : Esc(qr->message));
  if (qr != nullptr) return s + " has quota reserved and waits for admission checks";
  return s + " is not admitted yet";
}

std::optional<std::string> WhySuspended(const WhyContext& w) {
  const JobView& job = w.in.job;
  if (!job.suspend && !IsTrue(job.conditions, "Suspended")) return std::nullopt;
  if (!job.queue.empty()) return WhyKueueSuspended(w);
  return w.subject + " is suspended (spec.runPolicy.suspend is true): `tfjob resume " + Esc(job.name) + "` starts it";
}

std::optional<std::string> WhyGangNotAdmitted(const WhyContext& w) {
  const auto& pg = w.in.pod_group;
  if (!pg || pg->phase == "Inqueue" || pg->phase == "Running" || pg->phase == "Completed") return std::nullopt;
  std::string s = "its PodGroup (" + pg->kind + ") is " +
                  (pg->phase.empty() ? std::string("without a phase") : Esc(pg->phase)) +
                  ", not yet Inqueue: the gang scheduler has not admitted the whole gang";
  for (const auto& c : pg->conditions)
    if (!c.message.empty()) {
      s += " (" + Esc(c.message) + ")";
      break;
    }
  return w.subject + " is not running: " + s;
}

std::optional<std::string> WhyImagePull(const WhyContext& w) {
  for (const PodView* p : w.pods)
    for (const auto* list : {&p->init_containers, &p->containers})
      for (const auto& c : *list)
        if (c.state == "waiting" && ImagePullReason(c.reason))
          return w.subject + " is not running: pod " + Esc(p->name) + " cannot pull the image of container " +
                 Esc(c.name) + ": " + Esc(c.reason) + (c.message.empty() ? "" : ": " + Esc(c.message));
  return std::nullopt;
}

std::optional<std::string> WhyUnschedulable(const WhyContext& w) {
  for (const PodView* p : w.pods) {
    const ConditionView* sched = Condition(p->conditions, "PodScheduled");
    if (sched != nullptr && sched->status == "False")
      return w.subject + " is not running: pod " + Esc(p->name) +
             " is unschedulable: " + (sched->message.empty() ? Esc(sched->reason) : Esc(sched->message));
  }
  return std::nullopt;
}

bool ContainerFailingReason(const std::string& r) {
  return r == "CrashLoopBackOff" || r == "CreateContainerConfigError" || r == "CreateContainerError" ||
         r == "RunContainerError";
}

std::optional<std::string> WhyContainerFailing(const WhyContext& w) {
  for (const PodView* p : w.pods)
    for (const auto& c : p->containers)
      if (c.state == "waiting" && ContainerFailingReason(c.reason))
        return w.subject + " is not running: pod " + Esc(p->name) + " container " + Esc(c.name) + " is in " +
               Esc(c.reason) + " (restarts " + std::to_string(c.restarts) + ")" +
               (c.message.empty() ? "" : ": " + Esc(c.message));
  return std::nullopt;
}

std::optional<std::string> WhyNoOperator(const WhyContext& w) {
  if (!w.in.job.conditions.empty()) return std::nullopt;
  return w.subject + " has no conditions: no TFJob operator has seen it yet (is `tfjob operator` running?)";
}

std::optional<std::string> WhyAllRunning(const WhyContext& w) {
  const JobView& job = w.in.job;
  if (!IsTrue(job.conditions, "Running") || IsTrue(job.conditions, "Restarting")) return std::nullopt;
  bool all_running = static_cast<int>(w.pods.size()) >= w.wanted;
  for (const PodView* p : w.pods) all_running = all_running && p->phase == "Running";
  if (all_running) return "";
  return std::nullopt;
}

std::optional<std::string> WhyPodsMissing(const WhyContext& w) {
  if (static_cast<int>(w.pods.size()) >= w.wanted) return std::nullopt;
  return w.subject + " is not running: " + std::to_string(w.pods.size()) + " of its " + std::to_string(w.wanted) +
         " pods exist (the operator creates them; see the events below)";
}

std::optional<std::string> WhyPodsPending(const WhyContext& w) {
  std::vector<std::string> pending;
  for (const PodView* p : w.pods)
    if (p->phase == "Pending" || p->phase.empty()) pending.push_back(Esc(p->name));
  if (pending.empty()) return std::nullopt;
  std::string s = w.subject + " is not running: " + std::to_string(pending.size()) + " pod(s) Pending (" + pending[0];
  if (pending.size() > 1) s += ", ...";
  return s + ")";
}

std::optional<std::string> WhyRestarting(const WhyContext& w) {
  if (!IsTrue(w.in.job.conditions, "Restarting")) return std::nullopt;
  return w.subject + " is restarting failed replicas";
}

// The causes in the order they are checked: the first with an answer gives it.
constexpr WhyCheck kWhyChecks[] = {WhyFinished,      WhySuspended,        WhyGangNotAdmitted, WhyImagePull,
                                   WhyUnschedulable, WhyContainerFailing, WhyNoOperator,      WhyAllRunning,
                                   WhyPodsMissing,   WhyPodsPending,      WhyRestarting};

}  // namespace

std::string WhyNotRunning(const WhyInput& in) {
  WhyContext w{in, "TFJob " + Esc(in.job.name), {}, 0};
  for (const auto& p : in.pods)
    if (!p.deleting) w.pods.push_back(&p);
  std::sort(w.pods.begin(), w.pods.end(), [](const PodView* a, const PodView* b) { return a->name < b->name; });
  for (const auto& [t, n] : in.job.replicas) w.wanted += n;
  for (WhyCheck check : kWhyChecks)
    if (auto why = check(w)) return *why;
  return "";
}

namespace {

// Maps times from t0 to now onto the columns of a timeline `width` wide.
struct TimelineScale {
  api::Time t0;
  std::chrono::system_clock::duration span;
  int width;
  size_t Col(api::Time t) const {
    auto c = static_cast<long long>((t - t0) * static_cast<long long>(width - 1) / span);
    return static_cast<size_t>(std::clamp<long long>(c, 0, width - 1));
  }
};

// When the main container's (first) run started, if it did.
std::optional<api::Time> RunStart(const ContainerView& c) {
  std::optional<api::Time> run_start = c.started ? c.started : c.last_started;
  if (c.last_started && (!run_start || *c.last_started < *run_start)) run_start = c.last_started;
  return run_start;
}

std::string TimelineBar(const PodView& p, const TimelineScale& sc, api::Time now) {
  std::string bar(static_cast<size_t>(sc.width), ' ');
  const ContainerView& c = p.main;
  api::Time created = p.created.value_or(sc.t0);
  std::optional<api::Time> run_start = RunStart(c);
  std::optional<api::Time> end = c.finished;
  size_t a = sc.Col(created), b = run_start ? sc.Col(*run_start) : sc.Col(end.value_or(now));
  for (size_t i = a; i < b && i < bar.size(); ++i) bar[i] = '.';
  if (run_start) {
    size_t e = end ? sc.Col(*end) : sc.Col(now);
    for (size_t i = b; i <= e && i < bar.size(); ++i) bar[i] = '=';
  }
  if (c.last_finished) bar[sc.Col(*c.last_finished)] = 'x';
  if (end)
    bar[sc.Col(*end)] = c.exit_code == 0 ? '|' : 'x';
  else if (run_start)
    bar[sc.Col(now)] = '>';
  return bar;
}

std::string TimelineText(const PodView& p, api::Time t0) {
  const ContainerView& c = p.main;
  api::Time created = p.created.value_or(t0);
  std::optional<api::Time> run_start = RunStart(c);
  std::optional<api::Time> end = c.finished;
  std::string text = "created +" + Seconds(created - t0);
  if (run_start) text += ", running +" + Seconds(*run_start - t0);
  if (c.last_finished) text += ", exit " + std::to_string(c.last_exit_code) + " at +" + Seconds(*c.last_finished - t0);
  if (end) text += ", exit " + std::to_string(c.exit_code) + " at +" + Seconds(*end - t0);
  if (c.restarts > 0) text += ", " + std::to_string(c.restarts) + (c.restarts == 1 ? " restart" : " restarts");
  if (!run_start && !end) text += ", " + PodState(p);
  return text;
}

}  // namespace

std::vector<std::string> FormatReplicaTimeline(const JobView& job, const std::vector<PodView>& pods, api::Time now,
                                               int width) {
  std::vector<std::string> out;
  if (pods.empty() || width < 4) return out;
  api::Time t0 = job.created.value_or(now);
  for (const auto& p : pods)
    if (p.created && *p.created < t0) t0 = *p.created;
  TimelineScale scale{t0, std::max<std::chrono::system_clock::duration>(now - t0, std::chrono::seconds(1)), width};
  size_t name_width = 0;
  for (const auto& p : pods) name_width = std::max(name_width, Esc(p.name).size());
  std::vector<const PodView*> sorted;
  for (const auto& p : pods) sorted.push_back(&p);
  std::sort(sorted.begin(), sorted.end(), [](const PodView* a, const PodView* b) { return a->name < b->name; });
  for (const PodView* p : sorted)
    out.push_back("  " + Pad(Esc(p->name), name_width) + "  " + TimelineBar(*p, scale, now) + "  " +
                  TimelineText(*p, t0));
  return out;
}

namespace {

std::string Ago(const std::optional<api::Time>& t, api::Time now) {
  return t ? api::FormatTime(*t) + " (" + FormatAge(std::chrono::duration_cast<std::chrono::seconds>(now - *t)) +
                 " ago)"
           : std::string("-");
}

std::string DescribeSummary(const DescribeInput& in) {
  const JobView& job = in.why.job;
  std::string out;
  out += "Name:        " + Esc(job.name) + "\n";
  out += "Namespace:   " + Esc(job.ns) + "\n";
  out += "State:       " + JobState(job) + "\n";
  if (!job.queue.empty()) out += "Queue:       " + Esc(job.queue) + "\n";
  out += "Created:     " + Ago(job.created, in.now) + "\n";
  if (job.started) out += "Started:     " + Ago(job.started, in.now) + "\n";
  if (job.completed) out += "Completed:   " + Ago(job.completed, in.now) + "\n";
  out += "Replicas:    " + FormatReplicaCounts(job) + "\n";
  std::string why = WhyNotRunning(in.why);
  if (!why.empty()) out += "Why not running: " + why + "\n";
  return out;
}

std::string DescribeConditions(const JobView& job) {
  std::string out = "\nConditions (oldest first):\n";
  std::vector<ConditionView> conds = job.conditions;
  std::stable_sort(conds.begin(), conds.end(), [](const ConditionView& a, const ConditionView& b) {
    if (!a.last_transition || !b.last_transition) return false;
    return *a.last_transition < *b.last_transition;
  });
  if (conds.empty()) out += "  (none)\n";
  for (const auto& c : conds) {
    std::string when = c.last_transition && job.created ? "+" + Seconds(*c.last_transition - *job.created) : "?";
    out += "  " + Pad(when, 7) + " " + Pad(Esc(c.type) + "=" + Esc(c.status), 18) + " " + Pad(Esc(c.reason), 24) + " " +
           Esc(c.message) + "\n";
  }
  return out;
}

// The Kueue Workload and the gang scheduler's PodGroup, those there are.
std::string DescribeAdmission(const WhyInput& why) {
  std::string out;
  if (why.workload) {
    out += "\nKueue Workload " + Esc(why.workload->name) + ":\n";
    for (const auto& c : why.workload->conditions)
      out += "  " + Pad(Esc(c.type) + "=" + Esc(c.status), 20) + " " + Pad(Esc(c.reason), 20) + " " + Esc(c.message) +
             "\n";
  }
  if (why.pod_group)
    out += "\nPodGroup (" + why.pod_group->kind + "): phase " +
           (why.pod_group->phase.empty() ? "-" : Esc(why.pod_group->phase)) + "\n";
  return out;
}

std::string DescribeReplicas(const DescribeInput& in) {
  const JobView& job = in.why.job;
  std::string out = "\nReplicas:\n";
  std::vector<local::ReplicaRow> rr = ReplicaRows(job, in.why.pods, in.now);
  for (auto& r : rr)
    if (r.detail.empty() && r.state != "NotCreated") r.detail = "-";
  for (const auto& r : local::FormatReplicaTable(rr, "NODE")) out += "  " + r + "\n";
  std::vector<std::string> timeline = FormatReplicaTimeline(job, in.why.pods, in.now);
  if (!timeline.empty()) {
    out +=
        "\nTimeline (job created ... now; '.' pending, '=' running, 'x' failed, '|' succeeded, '>' still running):\n";
    for (const auto& l : timeline) out += l + "\n";
  }
  return out;
}

std::string DescribeEvents(std::vector<EventView> events, api::Time now) {
  std::string out = "\nEvents (most recent last):\n";
  std::stable_sort(events.begin(), events.end(), [](const EventView& a, const EventView& b) {
    if (!a.last || !b.last) return false;
    return *a.last < *b.last;
  });
  constexpr size_t kMaxEvents = 30;
  if (events.size() > kMaxEvents) {
    out += "  (" + std::to_string(events.size() - kMaxEvents) + " older events not shown)\n";
    events.erase(events.begin(), events.end() - kMaxEvents);
  }
  if (events.empty()) out += "  (none)\n";
  for (const auto& e : events) {
    std::string when = e.last ? FormatAge(std::chrono::duration_cast<std::chrono::seconds>(now - *e.last)) : "?";
    out += "  " + Pad(when, 6) + " " + Pad(Esc(e.type), 8) + " " + Pad(Esc(e.reason), 22) + " " +
           Pad(Esc(e.object), 28) + " " + Esc(e.message) + (e.count > 1 ? " (x" + std::to_string(e.count) + ")" : "") +
           "\n";
  }
  return out;
}

}  // namespace

std::string FormatDescribe(const DescribeInput& in) {
  return DescribeSummary(in) + DescribeConditions(in.why.job) + DescribeAdmission(in.why) + DescribeReplicas(in) +
         DescribeEvents(in.events, in.now);
}

}  // namespace tfjob::cli

namespace tfjob::cli {

std::string WarningText(std::string_view h) {
  // warn-code (3 digits) SP warn-agent SP quoted warn-text [SP warn-date]
  size_t sp1 = h.find(' ');
  if (sp1 != 3 || h.substr(0, 3).find_first_not_of("0123456789") != std::string_view::npos)
    return api::EscapeNonPrintable(h);
  size_t sp2 = h.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || sp2 + 1 >= h.size() || h[sp2 + 1] != '"') return api::EscapeNonPrintable(h);
  std::string text;
  for (size_t i = sp2 + 2; i < h.size(); ++i) {
    if (h[i] == '\\' && i + 1 < h.size()) {
      text.push_back(h[++i]);
      continue;
    }
    if (h[i] == '"') break;
    text.push_back(h[i]);
  }
  return api::EscapeNonPrintable(text);
}

std::string LogPrefix(const std::string& job, const std::string& pod, const std::string& container, bool main) {
  std::string name = pod.starts_with(job + "-") ? pod.substr(job.size() + 1) : pod;
  name = api::EscapeNonPrintable(name);
  return main ? name : name + "/" + api::EscapeNonPrintable(container);
}

}  // namespace tfjob::cli
