#include "tfjob/core/kueue_sync.h"

#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

const api::Time kNow = *api::ParseTime("2026-12-03T10:00:00Z");
constexpr char kAdmittedAt[] = "2026-12-03T09:58:20Z";  // 100 s before kNow
constexpr char kWlName[] = "tfjob-mnist-817ee";

// The job states of the table.
enum class J { kNoQueue, kDeleting, kFresh, kCreatedUnsuspended, kSuspendedActive, kRunning, kRunningNotReady,
               kPartlyDone, kSucceeded, kFailed, kPrebuilt };

api::TfJob MakeJob(J state) {
  std::string labels = "kueue.x-k8s.io/queue-name: user-queue";
  if (state == J::kNoQueue) labels = "team: a";
  if (state == J::kPrebuilt) labels += ", kueue.x-k8s.io/prebuilt-workload-name: pre";
  api::TfJob job = testing::JobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: mnist, namespace: ns, resourceVersion: '7', "
      "uid: 6e1b7c0a-0000-4000-8000-000000000001, labels: {" +
      labels +
      "}}\nspec:\n  tfReplicaSpecs:\n"
      "    PS:\n      replicas: 1\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n"
      "    Worker:\n      replicas: 2\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n");
  const bool running = state == J::kRunning || state == J::kRunningNotReady || state == J::kPartlyDone ||
                       state == J::kCreatedUnsuspended || state == J::kSucceeded || state == J::kFailed;
  job.spec.run_policy.suspend = !running;
  if (state == J::kCreatedUnsuspended) return job;
  if (state == J::kDeleting) job.metadata.deletion_timestamp = kNow;
  if (state == J::kRunning || state == J::kPartlyDone || state == J::kSuspendedActive || state == J::kRunningNotReady)
    job.status.replica_statuses["Worker"].active = 1;
  if (state == J::kRunning || state == J::kPartlyDone)
    job.status.conditions.push_back({.type = "Running", .status = "True", .reason = "TFJobRunning"});
  if (state == J::kPartlyDone) job.status.replica_statuses["Worker"].succeeded = 1;
  if (state == J::kSucceeded)
    job.status.conditions.push_back({.type = "Succeeded", .status = "True", .message = "TFJob ns/mnist successfully completed."});
  if (state == J::kFailed) job.status.conditions.push_back({.type = "Failed", .status = "True", .message = "it broke"});
  return job;
}

// The Workload states of the table.
enum class W { kPending, kReservedChecksPending, kAdmitted, kPreempted, kPodsReadyTimeout, kFinished, kDeleting,
               kOtherCount, kPodsReadyTrue };

json MakeWorkload(W state, const api::TfJob& job) {
  json w = *RenderKueueWorkload(job, {}, KueueOptions{});
  w["metadata"]["resourceVersion"] = "11";
  w["metadata"]["generation"] = 1;
  json& st = w["status"];
  st["conditions"] = json::array();
  auto cond = [&](const char* type, const char* status, const char* reason, const char* message,
                  const char* at = kAdmittedAt) {
    st["conditions"].push_back({{"type", type}, {"status", status}, {"reason", reason}, {"message", message},
                                {"lastTransitionTime", at}});
  };
  auto admit = [&] {
    st["admission"] = {{"clusterQueue", "cluster-queue"},
                       {"podSetAssignments",
                        {{{"name", "ps"}, {"flavors", {{"cpu", "default"}}}, {"count", 1}},
                         {{"name", "worker"}, {"flavors", {{"cpu", "default"}}}, {"count", 2}}}}};
  };
  switch (state) {
    case W::kPending:
      cond("QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set worker: insufficient quota");
      break;
    case W::kReservedChecksPending:
      cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cluster-queue");
      st["admissionChecks"] = {{{"name", "prov"}, {"state", "Pending"}, {"message", "waiting for capacity"}}};
      admit();
      break;
    case W::kAdmitted:
    case W::kPodsReadyTrue:
    case W::kPreempted:
    case W::kPodsReadyTimeout:
    case W::kFinished:
    case W::kDeleting:
      cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue cluster-queue");
      cond("Admitted", "True", "Admitted", "The workload is admitted");
      admit();
      break;
    case W::kOtherCount:
      w["spec"]["podSets"][1]["count"] = 5;
      break;
  }
  if (state == W::kPodsReadyTrue) cond("PodsReady", "True", "Started", "All pods reached readiness and the workload is running");
  if (state == W::kPreempted) cond("Evicted", "True", "Preempted", "Preempted to accommodate a workload");
  if (state == W::kPodsReadyTimeout) cond("Evicted", "True", "PodsReadyTimeout", "Exceeded the PodsReady timeout");
  if (state == W::kFinished) cond("Finished", "True", "Succeeded", "done");
  if (state == W::kDeleting) w["metadata"]["deletionTimestamp"] = "2026-12-03T09:59:00Z";
  return w;
}

const std::map<std::string, KueueFlavor> kFlavors = {{"default", {.node_labels = {{"pool", "a"}}}}};

// The Workload as the operator's informer decodes it.
api::KueueWorkload Typed(const json& workload) {
  return testing::DecodedKueueWorkload(workload);
}

KueuePlan Plan(const api::TfJob& job, const std::vector<json>& workloads, KueueOptions options = {},
               const std::optional<json>& prebuilt = std::nullopt) {
  std::vector<api::KueueWorkload> typed;
  for (const json& w : workloads) typed.push_back(Typed(w));
  KueueObserved o{.job = &job,
                  .workloads = std::move(typed),
                  .prebuilt = prebuilt ? std::optional(Typed(*prebuilt)) : std::nullopt,
                  .flavors = kFlavors,
                  .now = kNow};
  return PlanKueueWorkload(o, options);
}

// docs/kueue.md: the table of job state x Workload state -> step, with the writes of each step.
TEST(PlanKueueWorkload, JobByWorkloadTable) {
  struct Case {
    const char* id;
    J job;
    std::vector<W> workloads;
    bool wait_for_pods_ready;
    KueueStep want;
    std::optional<bool> suspend;  // the job update's suspend, nullopt: no job update
    bool create;
    size_t deletes;
    bool status;  // a Workload status patch
    size_t finalizers;
  };
  const Case cases[] = {
      {"no queue-name label", J::kNoQueue, {}, false, KueueStep::kNotQueued, {}, false, 0, false, 0},
      {"new suspended job: create", J::kFresh, {}, false, KueueStep::kCreateWorkload, {}, true, 0, false, 0},
      {"created unsuspended: suspend and create in one pass", J::kCreatedUnsuspended, {}, false,
       KueueStep::kCreateWorkload, true, true, 0, false, 0},
      {"suspended with pods still active: wait", J::kSuspendedActive, {}, false, KueueStep::kWaitPodsGone, {}, false, 0,
       false, 0},
      {"running with no Workload: suspend, then wait for the pods", J::kRunning, {}, false, KueueStep::kWaitPodsGone,
       true, false, 0, false, 0},
      {"pending: wait", J::kFresh, {W::kPending}, false, KueueStep::kPending, {}, false, 0, false, 0},
      {"reserved, checks pending: wait", J::kFresh, {W::kReservedChecksPending}, false, KueueStep::kPending, {}, false,
       0, false, 0},
      {"admitted: start", J::kFresh, {W::kAdmitted}, false, KueueStep::kStart, false, false, 0, false, 0},
      {"admitted and running", J::kRunning, {W::kAdmitted}, false, KueueStep::kRunning, {}, false, 0, false, 0},
      {"running, not admitted: suspend", J::kCreatedUnsuspended, {W::kPending}, false,
       KueueStep::kSuspendNotAdmitted, true, false, 0, false, 0},
      {"preempted while running: stop first", J::kRunning, {W::kPreempted}, false, KueueStep::kEvicted, true, false, 0,
       false, 0},
      {"preempted, pods gone: clear the reservation", J::kFresh, {W::kPreempted}, false, KueueStep::kEvicted, {}, false,
       0, true, 0},
      {"podsReady timeout, pods gone: clear", J::kFresh, {W::kPodsReadyTimeout}, false, KueueStep::kEvicted, {}, false,
       0, true, 0},
      {"job succeeded: Workload Finished", J::kSucceeded, {W::kAdmitted}, false, KueueStep::kFinishWorkload, {}, false,
       0, true, 0},
      {"job failed: Workload Finished", J::kFailed, {W::kAdmitted}, false, KueueStep::kFinishWorkload, {}, false, 0,
       true, 0},
      {"finished Workload: the finalizer goes", J::kSucceeded, {W::kFinished}, false, KueueStep::kWorkloadFinished, {},
       false, 0, false, 1},
      {"finished job without Workload: nothing", J::kSucceeded, {}, false, KueueStep::kJobFinished, {}, false, 0, false,
       0},
      {"Workload being deleted: stop, finalizer goes", J::kRunning, {W::kDeleting}, false,
       KueueStep::kWorkloadDeleted, true, false, 0, false, 1},
      {"job being deleted: finalizers go", J::kDeleting, {W::kAdmitted, W::kPending}, false,
       KueueStep::kReleaseFinalizers, {}, false, 0, false, 2},
      {"a second Workload is deleted, never kept", J::kRunning, {W::kAdmitted, W::kAdmitted}, false,
       KueueStep::kDeleteExtra, {}, false, 1, false, 1},
      {"running with a non-matching Workload: stop, delete it", J::kRunning, {W::kOtherCount}, false,
       KueueStep::kDeleteExtra, true, false, 1, false, 1},
      {"suspended with a non-matching unreserved Workload: update it", J::kFresh, {W::kOtherCount}, false,
       KueueStep::kUpdateWorkload, {}, false, 0, false, 0},
      {"a Worker succeeded: reclaimable pods", J::kPartlyDone, {W::kAdmitted}, false, KueueStep::kReclaimablePods, {},
       false, 0, true, 0},
      {"waitForPodsReady, running: PodsReady True", J::kRunning, {W::kAdmitted}, true, KueueStep::kPodsReady, {}, false,
       0, true, 0},
      {"waitForPodsReady, already True", J::kRunning, {W::kPodsReadyTrue}, true, KueueStep::kRunning, {}, false, 0,
       false, 0},
      {"waitForPodsReady, not ready any more: WaitForRecovery", J::kRunningNotReady, {W::kPodsReadyTrue}, true,
       KueueStep::kPodsReady, {}, false, 0, true, 0},
      {"waitForPodsReady, pending: WaitForStart", J::kFresh, {W::kPending}, true, KueueStep::kPodsReady, {}, false, 0,
       true, 0},
      {"prebuilt missing: wait", J::kPrebuilt, {}, false, KueueStep::kWaitPrebuilt, {}, false, 0, false, 0},
  };
  for (const Case& c : cases) {
    const api::TfJob job = MakeJob(c.job);
    std::vector<json> workloads;
    for (size_t i = 0; i < c.workloads.size(); ++i) {
      workloads.push_back(MakeWorkload(c.workloads[i], job));
      if (i > 0) workloads.back()["metadata"]["name"] = "second-" + std::to_string(i);
    }
    const KueuePlan plan = Plan(job, workloads, KueueOptions{.wait_for_pods_ready = c.wait_for_pods_ready});
    EXPECT_EQ(KueueStepName(plan.step), KueueStepName(c.want)) << c.id;
    EXPECT_EQ(plan.job_update.has_value(), c.suspend.has_value()) << c.id;
    if (plan.job_update && c.suspend) {
      EXPECT_EQ(plan.job_update->suspend, *c.suspend) << c.id;
    }
    EXPECT_EQ(plan.create_workload.has_value(), c.create) << c.id;
    EXPECT_EQ(plan.delete_workloads.size(), c.deletes) << c.id;
    EXPECT_EQ(plan.workload_status.has_value(), c.status) << c.id;
    EXPECT_EQ(plan.remove_finalizer.size(), c.finalizers) << c.id;
  }
}

const json* Cond(const json& status_patch, const std::string& type) {
  for (const json& c : status_patch["status"]["conditions"])
    if (c["type"] == type) return &c;
  return nullptr;
}

TEST(PlanKueueWorkload, StartInjectsTheAssignment) {
  const api::TfJob job = MakeJob(J::kFresh);
  const KueuePlan plan = Plan(job, {MakeWorkload(W::kAdmitted, job)}, KueueOptions{.topology_aware_scheduling = false});
  ASSERT_EQ(plan.step, KueueStep::kStart);
  EXPECT_EQ(plan.message, "Admitted by clusterQueue cluster-queue");
  ASSERT_TRUE(plan.job_update);
  EXPECT_EQ(plan.job_update->templates.at("Worker")["spec"]["nodeSelector"], json({{"pool", "a"}}));
  EXPECT_EQ(plan.job_update->templates.at("Worker")["metadata"]["labels"]["kueue.x-k8s.io/podset"], "worker");
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].reason, "Started");
  // A flavour not known yet: retry; a conflicting podSetUpdate: Finished FailedToStart.
  const KueuePlan unknown = PlanKueueWorkload(
      KueueObserved{.job = &job, .workloads = {Typed(MakeWorkload(W::kAdmitted, job))}, .now = kNow}, KueueOptions{});
  EXPECT_EQ(unknown.step, KueueStep::kWaitFlavor);
  EXPECT_TRUE(unknown.retry);
  json conflicting = MakeWorkload(W::kAdmitted, job);
  conflicting["status"]["admissionChecks"] = {
      {{"name", "c"}, {"state", "Ready"}, {"podSetUpdates", {{{"name", "worker"}, {"nodeSelector", {{"pool", "b"}}}}}}}};
  const KueuePlan failed = Plan(job, {conflicting});
  EXPECT_EQ(failed.step, KueueStep::kStartFailed);
  ASSERT_TRUE(failed.workload_status);
  EXPECT_EQ((*Cond(*failed.workload_status, "Finished"))["reason"], "FailedToStart");
}

TEST(PlanKueueWorkload, EvictionClearsTheReservationWithRequeued) {
  struct Case {
    W workload;
    const char* requeued_status;
    const char* reason;
  };
  const Case cases[] = {{W::kPreempted, "True", "Preempted"}, {W::kPodsReadyTimeout, "False", "PodsReadyTimeout"}};
  for (const Case& c : cases) {
    const api::TfJob job = MakeJob(J::kFresh);
    const json wl = MakeWorkload(c.workload, job);
    const KueuePlan plan = Plan(job, {wl});
    ASSERT_TRUE(plan.workload_status) << c.reason;
    const json& patch = *plan.workload_status;
    EXPECT_EQ(patch["metadata"]["resourceVersion"], "11");
    EXPECT_TRUE(patch["status"]["admission"].is_null());
    EXPECT_EQ(patch["status"]["accumulatedPastExecutionTimeSeconds"], 100);
    const json* requeued = Cond(patch, "Requeued");
    ASSERT_NE(requeued, nullptr);
    EXPECT_EQ((*requeued)["status"], c.requeued_status);
    EXPECT_EQ((*requeued)["reason"], c.reason);
    const json* reserved = Cond(patch, "QuotaReserved");
    EXPECT_EQ((*reserved)["status"], "False");
    EXPECT_EQ((*reserved)["reason"], "Pending");
    EXPECT_EQ((*reserved)["lastTransitionTime"], "2026-12-03T10:00:00Z");
    const json* admitted = Cond(patch, "Admitted");
    EXPECT_EQ((*admitted)["status"], "False");
    EXPECT_EQ((*admitted)["reason"], "NoReservation");
    // The Evicted condition stays as Kueue wrote it.
    EXPECT_EQ((*Cond(patch, "Evicted"))["status"], "True");
  }
  // While the job runs: stopped with the templates from the Workload, the reservation kept.
  const api::TfJob running = MakeJob(J::kRunning);
  const KueuePlan stop = Plan(running, {MakeWorkload(W::kPreempted, running)});
  ASSERT_TRUE(stop.job_update);
  EXPECT_TRUE(stop.job_update->suspend);
  EXPECT_FALSE(stop.workload_status);
  EXPECT_EQ(stop.message, "Preempted to accommodate a workload");
  // Suspended, no pod counted active (pending pods are not), but pods still exist: the quota
  // stays reserved until they are gone.
  const api::TfJob stopped = MakeJob(J::kFresh);
  KueueObserved o{.job = &stopped, .workloads = {Typed(MakeWorkload(W::kPreempted, stopped))}, .live_pods = 2, .now = kNow};
  const KueuePlan wait = PlanKueueWorkload(o, KueueOptions{});
  EXPECT_EQ(wait.step, KueueStep::kEvicted);
  EXPECT_FALSE(wait.workload_status);
  EXPECT_FALSE(wait.job_update);
}

TEST(PlanKueueWorkload, PodsReadyMirrorsRunning) {
  struct Case {
    const char* id;
    J job;
    W workload;
    const char* status;
    const char* reason;
  };
  const Case cases[] = {
      {"admitted, running", J::kRunning, W::kAdmitted, "True", "Started"},
      {"admitted, not running yet", J::kRunningNotReady, W::kAdmitted, "False", "WaitForStart"},
      {"was ready, is not", J::kRunningNotReady, W::kPodsReadyTrue, "False", "WaitForRecovery"},
      {"not admitted", J::kFresh, W::kPending, "False", "WaitForStart"},
  };
  for (const Case& c : cases) {
    const api::TfJob job = MakeJob(c.job);
    const KueuePlan plan = Plan(job, {MakeWorkload(c.workload, job)}, KueueOptions{.wait_for_pods_ready = true});
    ASSERT_TRUE(plan.workload_status) << c.id;
    const json* ready = Cond(*plan.workload_status, "PodsReady");
    ASSERT_NE(ready, nullptr) << c.id;
    EXPECT_EQ((*ready)["status"], c.status) << c.id;
    EXPECT_EQ((*ready)["reason"], c.reason) << c.id;
  }
  // Recovering, then running again: Recovered.
  const api::TfJob job = MakeJob(J::kRunning);
  json wl = MakeWorkload(W::kAdmitted, job);
  wl["status"]["conditions"].push_back({{"type", "PodsReady"}, {"status", "False"}, {"reason", "WaitForRecovery"}});
  const KueuePlan plan = Plan(job, {wl}, KueueOptions{.wait_for_pods_ready = true});
  EXPECT_EQ((*Cond(*plan.workload_status, "PodsReady"))["reason"], "Recovered");
}

TEST(PlanKueueWorkload, FinishedWithTheOutcome) {
  const api::TfJob failed = MakeJob(J::kFailed);
  const KueuePlan plan = Plan(failed, {MakeWorkload(W::kAdmitted, failed)});
  const json* finished = Cond(*plan.workload_status, "Finished");
  ASSERT_NE(finished, nullptr);
  EXPECT_EQ((*finished)["status"], "True");
  EXPECT_EQ((*finished)["reason"], "Failed");
  EXPECT_EQ((*finished)["message"], "it broke");
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].message, "Workload 'ns/tfjob-mnist-817ee' is declared finished");
}

TEST(PlanKueueWorkload, ReclaimablePods) {
  const api::TfJob job = MakeJob(J::kPartlyDone);
  json wl = MakeWorkload(W::kAdmitted, job);
  const KueuePlan plan = Plan(job, {wl});
  ASSERT_TRUE(plan.workload_status);
  EXPECT_EQ(plan.workload_status->at("status"), json({{"reclaimablePods", {{{"name", "worker"}, {"count", 1}}}}}));
  // Already reported: nothing more.
  wl["status"]["reclaimablePods"] = {{{"name", "worker"}, {"count", 1}}};
  EXPECT_EQ(Plan(job, {wl}).step, KueueStep::kRunning);
}

TEST(PlanKueueWorkload, CreateNamesAndOwnsTheWorkload) {
  const api::TfJob job = MakeJob(J::kFresh);
  const KueuePlan plan = Plan(job, {});
  ASSERT_TRUE(plan.create_workload);
  EXPECT_EQ(plan.workload_name, kWlName);
  EXPECT_EQ((*plan.create_workload)["metadata"]["name"], kWlName);
  EXPECT_EQ((*plan.create_workload)["spec"]["queueName"], "user-queue");
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].reason, "CreatedWorkload");
  EXPECT_EQ(plan.events[0].message, "Created Workload: ns/tfjob-mnist-817ee");
  // A priority class that does not exist: retry, nothing created.
  api::TfJob with_class = job;
  with_class.metadata.labels["kueue.x-k8s.io/priority-class"] = "missing";
  const KueuePlan wait = Plan(with_class, {});
  EXPECT_EQ(wait.step, KueueStep::kWaitPriorityClass);
  EXPECT_TRUE(wait.retry);
  EXPECT_FALSE(wait.create_workload);
}

TEST(PlanKueueWorkload, PendingSaysWhy) {
  const api::TfJob job = MakeJob(J::kFresh);
  EXPECT_EQ(Plan(job, {MakeWorkload(W::kPending, job)}).message,
            "couldn't assign flavors to pod set worker: insufficient quota");
  EXPECT_EQ(Plan(job, {MakeWorkload(W::kReservedChecksPending, job)}).message, "prov: waiting for capacity");
  // The queue-name label changed while it waits: the Workload follows.
  api::TfJob moved = job;
  moved.metadata.labels["kueue.x-k8s.io/queue-name"] = "other-queue";
  const KueuePlan plan = Plan(moved, {MakeWorkload(W::kPending, job)});
  EXPECT_EQ(plan.step, KueueStep::kUpdateQueueName);
  EXPECT_EQ((*plan.update_workload)["spec"]["queueName"], "other-queue");
}

TEST(PlanKueueWorkload, PriorityLabelFollowed) {
  const api::TfJob job = MakeJob(J::kFresh);
  api::TfJob labelled = job;
  labelled.metadata.labels["kueue.x-k8s.io/priority-class"] = "urgent";
  KueueObserved o{.job = &labelled, .workloads = {Typed(MakeWorkload(W::kPending, job))}, .now = kNow};
  o.priority_classes.workload_priority_classes = {{"urgent", 9000}};
  const KueuePlan plan = PlanKueueWorkload(o, KueueOptions{});
  ASSERT_EQ(plan.step, KueueStep::kUpdatePriority);
  EXPECT_EQ((*plan.update_workload)["spec"]["priority"], 9000);
  EXPECT_EQ((*plan.update_workload)["spec"]["priorityClassRef"]["name"], "urgent");
  // A Workload with a pod PriorityClass keeps it.
  json pc = MakeWorkload(W::kPending, job);
  pc["spec"]["priorityClassRef"] = {{"group", "scheduling.k8s.io"}, {"kind", "PriorityClass"}, {"name", "high"}};
  o.workloads = {Typed(pc)};
  EXPECT_EQ(PlanKueueWorkload(o, KueueOptions{}).step, KueueStep::kPending);
}

TEST(PlanKueueWorkload, PrebuiltWorkload) {
  const api::TfJob job = MakeJob(J::kPrebuilt);
  json pre = MakeWorkload(W::kPending, job);
  pre["metadata"]["name"] = "pre";
  pre["metadata"].erase("ownerReferences");
  // Not controlled yet: adopted.
  const KueuePlan adopt = Plan(job, {}, {}, pre);
  ASSERT_EQ(adopt.step, KueueStep::kAdoptPrebuilt);
  EXPECT_EQ(adopt.workload_name, "pre");
  EXPECT_EQ((*adopt.update_workload)["metadata"]["ownerReferences"][0]["uid"], job.metadata.uid);
  EXPECT_EQ((*adopt.update_workload)["metadata"]["labels"]["kueue.x-k8s.io/job-uid"], job.metadata.uid);
  // Adopted and matching: used like the job's own.
  json owned = *adopt.update_workload;
  EXPECT_EQ(Plan(job, {}, {}, owned).step, KueueStep::kPending);
  // Controlled by another object: as if missing.
  json other = owned;
  other["metadata"]["ownerReferences"][0]["uid"] = "someone-else";
  EXPECT_EQ(Plan(job, {}, {}, other).step, KueueStep::kWaitPrebuilt);
  // Out of sync with the job: Finished OutOfSync.
  json out_of_sync = owned;
  out_of_sync["spec"]["podSets"][0]["count"] = 9;
  const KueuePlan oos = Plan(job, {}, {}, out_of_sync);
  ASSERT_EQ(oos.step, KueueStep::kPrebuiltOutOfSync);
  EXPECT_EQ((*Cond(*oos.workload_status, "Finished"))["reason"], "OutOfSync");
}

TEST(PlanKueueWorkload, BadTopologyAnnotationKeepsTheJobSuspended) {
  api::TfJob job = MakeJob(J::kCreatedUnsuspended);
  job.spec.replica_specs.at("Worker")->pod_template["metadata"]["annotations"] = {
      {"kueue.x-k8s.io/podset-unconstrained-topology", "maybe"}};
  const KueuePlan plan = Plan(job, {});
  EXPECT_EQ(plan.step, KueueStep::kBadJob);
  ASSERT_TRUE(plan.job_update);
  EXPECT_TRUE(plan.job_update->suspend);
  EXPECT_FALSE(plan.create_workload);
  EXPECT_NE(plan.message.find("not a boolean"), std::string::npos) << plan.message;
}

TEST(SetKueueCondition, TransitionTimeMovesOnlyWithTheStatus) {
  json conditions = json::array();
  const api::Time later = kNow + std::chrono::minutes(5);
  EXPECT_TRUE(SetKueueCondition(&conditions, "PodsReady", "False", "WaitForStart", "m", 1, kNow));
  EXPECT_FALSE(SetKueueCondition(&conditions, "PodsReady", "False", "WaitForStart", "m", 1, later));
  EXPECT_EQ(conditions[0]["lastTransitionTime"], "2026-12-03T10:00:00Z");
  EXPECT_TRUE(SetKueueCondition(&conditions, "PodsReady", "False", "WaitForRecovery", "m2", 2, later));
  EXPECT_EQ(conditions[0]["lastTransitionTime"], "2026-12-03T10:00:00Z");
  EXPECT_TRUE(SetKueueCondition(&conditions, "PodsReady", "True", "Started", "m3", 2, later));
  EXPECT_EQ(conditions[0]["lastTransitionTime"], "2026-12-03T10:05:00Z");
  EXPECT_EQ(conditions.size(), 1u);
}

}  // namespace
}  // namespace tfjob::core
