#include "cli/job_view.h"

#include <algorithm>
#include <cstdio>
#include <set>

#include "api/field_error.h"
#include "api/json_fields.h"
#include "api/labels.h"

namespace tfjob::cli {
namespace {

using nlohmann::json;

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

}  // namespace

std::string Esc(std::string_view s) {
  return api::EscapeNonPrintable(s);
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

JobView DecodeJobView(const json& job) {
  JobView v;
  const json& meta = api::ObjectField(job, "metadata");
  v.name = api::StringField(meta, "name");
  v.ns = api::StringField(meta, "namespace");
  v.uid = api::StringField(meta, "uid");
  v.created = TimeField(meta, "creationTimestamp");
  v.queue = api::StringField(api::ObjectField(meta, "labels"), api::kLabelKueueQueueName);
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
  p.replica_type = api::StringField(labels, api::kLabelReplicaType);
  std::string index = api::StringField(labels, api::kLabelReplicaIndex);
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
