#pragma once
// What `tfjob dashboard` and `tfjob run --dashboard` show (docs/dashboard.md), as pure functions
// from the API objects (raw JSON, trimmed) to the JSON the pages read: a job's row of the list,
// its page (conditions, the Gantt chart's attempts, why it is not running, Kueue's Workload, the
// gang's PodGroup, events, the YAML), and the checks of the server (Host, access token, CSRF).
// No I/O, no clock: `now` is passed in. The same decoding as `get` and `describe` (job_view.h).

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/time.h"
#include "cli/job_view.h"
#include "common/status.h"

namespace tfjob::cli::dashboard {

// One attempt of a replica: one container instance of its pod (a pod recreated is a new uid; a
// container restarted in place a new instance of the same pod). One bar of the Gantt chart.
struct Attempt {
  std::string pod;      // "dist-worker-0"
  std::string uid;      // the pod's uid
  std::string replica;  // "worker-0" (the pod name without "<job>-")
  int instance = 0;     // the container's restartCount while this instance ran
  std::string node;
  std::optional<api::Time> start;  // created (pending) or started (running, ended)
  std::optional<api::Time> end;    // none while pending or running
  // "pending", "running", "succeeded", "failed", "deleted" (the pod went while it ran or waited).
  std::string outcome;
  int exit_code = -1;
  std::string reason;  // the termination's reason ("Error", "OOMKilled") or why it waits
  friend bool operator==(const Attempt&, const Attempt&) = default;
};

// The attempts a pod's status shows now: the previous instance (lastState.terminated) when the
// main container restarted in place, and the current one (waiting before its first start is
// "pending" from the pod's creation; a crash-loop wait shows no current instance).
std::vector<Attempt> ExtractAttempts(const std::string& job, const PodView& pod);
// Merges what a pod shows now into a job's history, by (uid, instance): a known attempt is
// updated, a new one appended. At most `max` attempts are kept (the oldest ended ones go first).
void MergeAttempts(std::vector<Attempt>& history, const std::vector<Attempt>& seen, size_t max);
// The pod `uid` is gone: its attempts still pending or running end at `at` as "deleted".
void EndDeleted(std::vector<Attempt>& history, const std::string& uid, api::Time at);
// History ordered for the chart: by replica type, index, then start.
nlohmann::json AttemptsJson(std::vector<Attempt> history);

// Kueue's admission as the list shows it: "" without a queue label; "admitted", "quota
// reserved", "evicted: <reason>", "pending" from the Workload's conditions, "no workload".
std::string Admission(const JobView& job, const std::optional<WorkloadView>& workload);

// The job's row of the list.
nlohmann::json JobRow(const JobView& job, const std::optional<WorkloadView>& workload);

// A job's page.
struct PageInput {
  nlohmann::json job;  // the TFJob (raw, trimmed)
  std::vector<PodView> pods;
  std::vector<Attempt> attempts;
  std::optional<WorkloadView> workload;
  std::optional<PodGroupView> pod_group;
  std::vector<EventView> events;
  api::Time now;
};
nlohmann::json JobPage(const PageInput& in);

// The object without metadata.managedFields and the last-applied annotation (kept small, as
// `get -o yaml` prints it).
nlohmann::json Trimmed(nlohmann::json object);

// The server's checks (docs/dashboard.md, "Safe by default").
// Whether the Host header names this server: with `loopback_only` (bound to 127.0.0.1 or ::1)
// only "127.0.0.1:PORT", "localhost:PORT" or "[::1]:PORT" (DNS rebinding: another name that
// resolves to 127.0.0.1 is refused); otherwise any (the access token protects it).
bool HostAllowed(std::string_view host, int port, bool loopback_only);
// Equal strings, in time independent of where they differ. An empty `expected` matches nothing.
bool SameSecret(std::string_view expected, std::string_view given);
// The access token of a request: its `token` query parameter, else the `tfjob_dashboard` cookie.
std::string RequestToken(std::string_view query_token, std::string_view cookie_header);
// A state-changing request (POST /api/action) is allowed: JSON content type (a cross-site form
// cannot send it without a CORS preflight, which is never granted), the CSRF token of the page in
// the X-Tfjob-Csrf header, and an Origin, when sent, of this very host. kForbidden naming
// what is wrong.
struct ActionRequest {
  std::string content_type;
  std::string csrf_header;
  std::string origin;  // "" when the browser sent none
  std::string host;
};
Status CheckAction(const ActionRequest& req, std::string_view csrf);

// The query parameter `key` of a request target's query ("a=1&b=x%2Fy"), percent-decoded; ""
// when absent or malformed.
std::string QueryParam(std::string_view query, std::string_view key);

}  // namespace tfjob::cli::dashboard
