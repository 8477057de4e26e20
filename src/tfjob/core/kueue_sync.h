#pragma once
// The state machine of the operator's Kueue mode (docs/kueue.md "The operator's Workload: the
// contract"): from the job and the Workloads it has, the one next step that Kueue's jobframework
// reconciler would take for it, as a plan of writes. Kueue's own order is kept: one Workload
// (adopt the prebuilt one, delete those that no longer match, follow the priority label), the
// Workload finished or being deleted, the job finished, no Workload yet, reclaimable pods,
// PodsReady, eviction, admission, and a job running without admission.
//
// One pass returns one step; its writes go in this order: the job update, finalizers removed,
// deletes, the create, the update, the status (KueueMode::Apply); the watch event of the last
// write brings the next pass. Pure: no I/O, no clock (`now` comes in).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/kueue_workload.h"
#include "api/tfjob.h"
#include "tfjob/core/kueue_admission.h"
#include "tfjob/core/kueue_workload.h"
#include "tfjob/core/render.h"

namespace tfjob::core {

struct KueueObserved {
  const api::TfJob* job = nullptr;  // as stored (not defaulted); never null
  // The Workloads whose owner references name the job (kind TFJob, its name), any order.
  std::vector<api::KueueWorkload> workloads;
  // With the prebuilt-workload-name label: that Workload, when it exists.
  std::optional<api::KueueWorkload> prebuilt;
  std::map<std::string, KueueFlavor> flavors;  // the ResourceFlavors by name
  KueuePriorityClasses priority_classes;
  // The job's pods that still exist, whatever their phase. Kueue's integration calls a job active
  // when a replica status counts an active (running) pod; here a pod that still exists counts
  // too, so an evicted job's quota is released only once its pods are gone (docs/kueue.md).
  int64_t live_pods = 0;
  api::Time now;
};

enum class KueueStep {
  kNotQueued,           // no queue-name label: Kueue leaves the job alone, so does this mode
  kReleaseFinalizers,   // the job is being deleted: its Workloads lose Kueue's finalizer
  kMarkForMultiKueue,   // a manager's job for MultiKueue: spec.managedBy repeats runPolicy.managedBy
  kBadJob,              // the job's PodSets cannot be built (a topology annotation does not parse)
  kDeleteExtra,         // Workloads that do not match the job (or a second one) are deleted
  kUpdateWorkload,      // a suspended job's unreserved, non-matching Workload is made to match
  kAdoptPrebuilt,       // the prebuilt Workload gets the job as its controller
  kPrebuiltOutOfSync,   // the prebuilt Workload does not describe the job: Finished OutOfSync
  kWaitPrebuilt,        // the prebuilt Workload is missing: the job stays suspended
  kUpdatePriority,      // the priority-class label changed: the Workload's priority follows
  kWorkloadFinished,    // the Workload is Finished: Kueue's finalizer goes, nothing else
  kWorkloadDeleted,     // the Workload is being deleted: the job stops, the finalizer goes
  kFinishWorkload,      // the job finished: the Workload gets Finished with the outcome
  kJobFinished,         // the job and its Workload are finished: nothing to do
  kWaitPodsGone,        // no Workload and pods still active: wait before creating it
  kWaitPriorityClass,   // the priority class named is missing: retry
  kCreateWorkload,      // no Workload: create it
  kReclaimablePods,     // status.reclaimablePods follows the replicas that succeeded
  kPodsReady,           // waitForPodsReady: the PodsReady condition follows the job's Running
  kEvicted,             // Evicted: stop the job; once no pod is active, clear the reservation
  kWaitFlavor,          // admitted with a ResourceFlavor not known yet: retry
  kStartFailed,         // the admission cannot be applied: the Workload Finished FailedToStart
  kStart,               // admitted: the assignment goes into the templates and the job runs
  kUpdateQueueName,     // the job's queue-name label changed while it waits
  kPending,             // suspended and not admitted: wait (`message` says why)
  kSuspendNotAdmitted,  // running without admission: suspend
  kRunning,             // admitted and running: nothing to do
};
std::string_view KueueStepName(KueueStep step);

struct KueuePlan {
  KueueStep step = KueueStep::kNotQueued;
  // Why the job is where it is, for events and `tfjob describe`.
  std::string message;
  // Retry later although nothing changed (a class or flavour not known yet).
  bool retry = false;
  // The Workload the update, status and finalizer fields are about.
  std::string workload_name;

  std::optional<KueueJobUpdate> job_update;   // KueueJobMergePatch writes it
  std::vector<std::string> delete_workloads;  // by name
  std::optional<nlohmann::json> create_workload;
  // The whole Workload to write back (PUT), with the resourceVersion it was read at.
  std::optional<nlohmann::json> update_workload;
  // A merge patch of the Workload's /status, with metadata.resourceVersion.
  std::optional<nlohmann::json> workload_status;
  // Workloads whose kueue.x-k8s.io/resource-in-use finalizer is removed.
  std::vector<std::string> remove_finalizer;
  std::vector<RenderEvent> events;
};

// REQUIRES: observed.job != nullptr.
KueuePlan PlanKueueWorkload(const KueueObserved& observed, const KueueOptions& options);

// metav1 condition bookkeeping as apimeta.SetStatusCondition does it: the condition of `type`
// gets status, reason, message and observedGeneration; lastTransitionTime moves to `now` only when
// the status changes (or the condition is new). Returns whether anything changed.
bool SetKueueCondition(nlohmann::json* conditions, std::string_view type, std::string_view status,
                       std::string_view reason, std::string_view message, int64_t observed_generation, api::Time now);

}  // namespace tfjob::core
