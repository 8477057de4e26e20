#pragma once
// What the cluster commands (`tfjob get`, `describe`, `submit --wait`; docs/cli.md) show of a
// TFJob and its pods: plain values decoded from the API objects, and pure functions that turn
// them into table rows and text. No I/O, no clock: `now` is passed in.

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/time.h"
#include "local/replica_view.h"

namespace tfjob::cli {

struct ConditionView {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
  std::optional<api::Time> last_transition;
};

struct JobView {
  std::string name;
  std::string ns;
  std::string uid;
  std::optional<api::Time> created;
  std::optional<api::Time> started;     // status.startTime
  std::optional<api::Time> completed;   // status.completionTime
  bool suspend = false;                 // spec.runPolicy.suspend
  std::string queue;                    // the kueue.x-k8s.io/queue-name label
  std::string scheduler;                // spec.runPolicy.schedulingPolicy / templates' schedulerName, if any
  std::map<std::string, int> replicas;  // spec: type ("Worker") -> replicas (1 when unset)
  struct Counts {
    int active = 0, succeeded = 0, failed = 0, restarts = 0;
  };
  std::map<std::string, Counts> counts;  // status.replicaStatuses
  std::vector<ConditionView> conditions;
};

// The container whose state is the replica's: "tensorflow", else the first.
struct ContainerView {
  std::string name;
  int restarts = 0;
  std::string state;  // "waiting", "running", "terminated", ""
  std::string reason;
  std::string message;
  int exit_code = -1;  // when terminated (or the last termination, see last_*)
  std::optional<api::Time> started;
  std::optional<api::Time> finished;
  int last_exit_code = -1;  // lastState.terminated
  std::string last_reason;
  std::optional<api::Time> last_started;
  std::optional<api::Time> last_finished;
};

struct PodView {
  std::string name;
  std::string uid;
  std::string replica_type;  // the training.kubeflow.org/replica-type label ("worker")
  int index = -1;
  std::string phase;  // "Pending", "Running", ...
  std::string node;
  bool deleting = false;
  std::optional<api::Time> created;
  std::optional<api::Time> started;  // status.startTime
  std::vector<ConditionView> conditions;
  std::vector<ContainerView> init_containers;
  ContainerView main;  // see ContainerView
  std::vector<ContainerView> containers;
};

struct EventView {
  std::string type;    // Normal, Warning
  std::string reason;  // "SuccessfulCreatePod"
  std::string message;
  std::string object;  // "TFJob/dist", "Pod/dist-worker-0"
  int count = 1;
  std::optional<api::Time> last;  // lastTimestamp, eventTime or firstTimestamp
};

// Kueue's Workload of the job (kueue.x-k8s.io), when the job has a queue label.
struct WorkloadView {
  std::string name;
  std::vector<ConditionView> conditions;  // QuotaReserved, Admitted, Evicted, ...
};

// A gang scheduler's PodGroup named like the job: Volcano's, scheduler-plugins', or
// kube-scheduler's own (scheduling.k8s.io, docs/semantics.md D27), whose groups have no phase but
// a PodGroupScheduled condition; with D33's hierarchy, the CompositePodGroup and its members.
struct PodGroupView {
  std::string kind;   // "podgroups.scheduling.volcano.sh", "compositepodgroups.scheduling.k8s.io"
  std::string phase;  // "Pending", "Inqueue", "Running", ... (Volcano's and scheduler-plugins')
  std::vector<ConditionView> conditions;
  bool native = false;                // kube-scheduler's own
  std::string name;                   // of a native group (the members have the job's name and their own)
  std::vector<PodGroupView> members;  // a CompositePodGroup's member PodGroups (D33)
};

JobView DecodeJobView(const nlohmann::json& job);
PodView DecodePodView(const nlohmann::json& pod);
EventView DecodeEventView(const nlohmann::json& event);
WorkloadView DecodeWorkloadView(const nlohmann::json& workload);
PodGroupView DecodePodGroupView(const std::string& kind, const nlohmann::json& pod_group);

// The job's state: the type of its latest true condition among Created, Running, Restarting,
// Suspended, Succeeded, Failed ("Pending" when it has none yet).
std::string JobState(const JobView& job);
bool JobFinished(const JobView& job);
bool JobSucceeded(const JobView& job);

// kubectl's short ages: "45s", "3m12s", "17m", "5h3m", "20h", "3d4h", "12d".
std::string FormatAge(std::chrono::seconds age);

// `tfjob get`: one header and one row per job. `wide`: queue and the last condition's message;
// `namespaces`: a NAMESPACE column first (-A).
struct GetTableOptions {
  bool wide = false;
  bool namespaces = false;
  bool header = true;
};
std::vector<std::string> FormatGetTable(const std::vector<JobView>& jobs, api::Time now,
                                        const GetTableOptions& options);
// "PS 2/2 Worker 1/3": ready (active) / wanted per type.
std::string FormatReplicaCounts(const JobView& job);

// The replica rows of the live table (submit --wait), one per pod, sorted by name; a replica
// with no pod yet is "-"-less "NotCreated". The state is the pod's phase, or the waiting
// reason of its main container when it has one (ImagePullBackOff, ContainerCreating), or
// "Deleting".
std::vector<local::ReplicaRow> ReplicaRows(const JobView& job, const std::vector<PodView>& pods, api::Time now);

// One short line per change between two snapshots of the rows (for stdout that is not a terminal):
// "dist-worker-0: Pending -> Running", "dist-worker-0: Failed (exit code 1, restarts 1)".
std::vector<std::string> RowChanges(const std::vector<local::ReplicaRow>& before,
                                    const std::vector<local::ReplicaRow>& after);
// "Created=True, Running=True" of the job's conditions.
std::string ConditionsLine(const JobView& job);

// Why the job is not running, in one sentence; "" when it runs or has finished normally.
// Pure (docs/cli.md, "tfjob describe"); the first cause that applies wins, in this order: failed
// validation; suspended (by Kueue when the queue label is set: its Workload's conditions);
// a gang scheduler's PodGroup not yet Inqueue; an image pull error; an unschedulable pod (the
// scheduler's message); a crash loop; no Created condition (no operator); pods not created yet;
// pods pending.
struct WhyInput {
  JobView job;
  std::vector<PodView> pods;
  std::optional<WorkloadView> workload;
  std::optional<PodGroupView> pod_group;
};
std::string WhyNotRunning(const WhyInput& in);

// `tfjob describe`: the whole text.
struct DescribeInput {
  WhyInput why;
  std::vector<EventView> events;  // of the job and its pods, any order
  api::Time now;
};
std::string FormatDescribe(const DescribeInput& in);

// The text timeline of the replicas' lifetimes (created, running, exits, restarts), one row each:
//   dist-worker-0   |--....====x====>     created 0s, running 4s, exit 1 at 9s, 1 restart
// across `width` columns from the job's creation to `now`.
std::vector<std::string> FormatReplicaTimeline(const JobView& job, const std::vector<PodView>& pods, api::Time now,
                                               int width = 40);

}  // namespace tfjob::cli

namespace tfjob::cli {

// The text of one `Warning` response header (RFC 7234 `299 - "text"`, the quotes and
// backslash escapes removed), escaped for the terminal; a value of another shape as it is.
std::string WarningText(std::string_view header);

// The pieces the views share (job_view.cc, describe_view.cc).
// A name or message from the server, escaped for the terminal (api::EscapeNonPrintable).
std::string Esc(std::string_view s);
// "12s" (never negative).
std::string Seconds(std::chrono::system_clock::duration d);
// `s` padded with spaces to `width`.
std::string Pad(std::string s, size_t width);
// The condition of `type`, or nullptr.
const ConditionView* Condition(const std::vector<ConditionView>& conditions, std::string_view type);
bool IsTrue(const std::vector<ConditionView>& conditions, std::string_view type);
// A waiting reason that means the image cannot be pulled.
bool ImagePullReason(const std::string& r);
// The pod's state as the tables show it: Deleting, a waiting reason, else its phase.
std::string PodState(const PodView& p);

// The "[worker-0] " prefix of a pod's log lines, as `tfjob run` prints a replica's: the pod name
// without "<job>-", and "/<container>" for a container that is not the main one.
std::string LogPrefix(const std::string& job, const std::string& pod, const std::string& container, bool main);

}  // namespace tfjob::cli
