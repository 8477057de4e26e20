// Table tests of each reconcile phase on its own (reconcile_phases.h); reconcile_test.cc tests
// the whole pass.
#include "tfjob/core/reconcile_phases.h"

#include <limits>
#include <tuple>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/defaults.h"
#include "testing/fixtures.h"
#include "tfjob/core/conditions.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::core {
namespace {

using api::PodPhase;
using api::ReplicaType;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MakePod;
using testing::MakeService;

const api::Time kNow = api::Time(std::chrono::seconds(1767225600));

std::vector<const api::Pod*> Ptrs(const std::vector<api::Pod>& pods) {
  std::vector<const api::Pod*> out;
  for (const auto& p : pods) out.push_back(&p);
  return out;
}
std::vector<std::string> Names(const std::vector<const api::Pod*>& pods) {
  std::vector<std::string> out;
  for (const auto* p : pods) out.push_back(p->meta.name);
  return out;
}
std::vector<std::string> Names(const std::vector<ChildDeletion>& v) {
  std::vector<std::string> out;
  for (const auto& d : v) out.push_back(d.name);
  return out;
}
std::vector<std::string> Reasons(const std::vector<RenderEvent>& events) {
  std::vector<std::string> out;
  for (const auto& e : events) out.push_back(std::string(api::EnumName(e.type)) + " " + e.reason);
  return out;
}
api::TfJob Defaulted(api::TfJob job) {
  api::SetDefaults(job);
  return job;
}

TEST(ReconcilePhases, ShouldSkip) {
  struct Case {
    const char* id;
    std::optional<std::string> managed_by;
    bool deleting;
    bool skip;
  };
  const Case cases[] = {
      {"plain", std::nullopt, false, false},
      {"ours", std::string(api::kManagedByUs), false, false},
      {"multikueue", std::string(api::kManagedByMultiKueue), false, true},
      {"being deleted", std::nullopt, true, true},
  };
  for (const auto& c : cases) {
    api::TfJob job = testing::NewTfJob(1, 0);
    job.spec.run_policy.managed_by = c.managed_by;
    if (c.deleting) job.metadata.deletion_timestamp = kNow;
    EXPECT_EQ(ShouldSkip(job), c.skip) << c.id;
  }
}

TEST(ReconcilePhases, Admit) {
  struct Case {
    const char* id;
    bool created, finished, invalid_spec, spec_warning;
    std::vector<std::string> events;
    bool invalid;
    std::vector<std::string> conditions;
  };
  const Case cases[] = {
      {"new job", false, false, false, false, {}, false, {"Created"}},
      {"new job with a warning", false, false, false, true, {"Warning TFJobSpecWarning"}, false, {"Created"}},
      {"warnings once", true, false, false, true, {}, false, {"Created"}},
      {"invalid", false, false, true, false, {"Warning TFJobFailedValidation"}, true, {"Created", "Failed"}},
      {"invalid once finished (D5)", true, true, true, false, {}, false, {"Created", "Succeeded"}},
  };
  for (const auto& c : cases) {
    api::TfJob job = testing::NewTfJob(1, 0);
    if (c.created) SetCondition(job.status, kConditionCreated, "True", "TFJobCreated", "", kNow);
    if (c.finished) SetCondition(job.status, kConditionSucceeded, "True", "TFJobSucceeded", "", kNow);
    if (c.invalid_spec) job.spec.replica_specs["Worker"]->replicas = -1;
    if (c.spec_warning) job.spec.run_policy.clean_pod_policy = "none";
    Admission a = Admit(job, job.status, kNow);
    EXPECT_EQ(Reasons(a.events), c.events) << c.id;
    EXPECT_EQ(a.invalid, c.invalid) << c.id;
    std::vector<std::string> types;
    for (const auto& cond : a.status.conditions) types.push_back(cond.type);
    EXPECT_EQ(types, c.conditions) << c.id;
    EXPECT_EQ(a.status.completion_time.has_value(), c.invalid) << c.id;
  }
}

TEST(ReconcilePhases, ClassifyChildrenKeepsOnlyControlledOnes) {
  api::TfJob job = testing::NewTfJob(2, 0);
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kRunning),
                                MakePod("test-tfjob", "worker", 1, PodPhase::kRunning, "other-uid")};
  std::vector<api::Service> svcs = {MakeService("test-tfjob", "worker", 0, "other-uid"),
                                    MakeService("test-tfjob", "worker", 1)};
  Children c = ClassifyChildren(job, pods, svcs);
  EXPECT_THAT(Names(c.pods), ElementsAre("test-tfjob-worker-0"));
  ASSERT_EQ(c.services.size(), 1u);
  EXPECT_TRUE(c.services.contains("test-tfjob-worker-1"));
}

TEST(ReconcilePhases, SliceReplicas) {
  api::TfJob job = Defaulted(testing::NewTfJob(2, 1));
  job.status.replica_statuses["Worker"].restarts = 2;
  job.status.replica_statuses["PS"].restarts = 1;
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kRunning),
                                MakePod("test-tfjob", "worker", 3, PodPhase::kFailed),
                                MakePod("test-tfjob", "ps", 0, PodPhase::kRunning)};
  pods[0].container_statuses.push_back({});
  pods[0].container_statuses.back().restart_count = 3;
  pods[2].init_container_statuses.push_back({});
  pods[2].init_container_statuses.back().restart_count = 1;
  Replicas r = SliceReplicas(job, Ptrs(pods), job.status);
  ASSERT_EQ(r.types.size(), 2u);
  EXPECT_EQ(r.types[0].type, ReplicaType::kPS);
  EXPECT_EQ(r.types[0].slices.size(), 1u);
  EXPECT_EQ(r.types[1].type, ReplicaType::kWorker);
  EXPECT_EQ(r.types[1].slices.size(), 4u);  // index 3 beyond replicas 2: a slice of its own
  EXPECT_EQ(r.recreations, 3);
  EXPECT_EQ(r.in_place, 4);
}

TEST(ReconcilePhases, CountNotedDisruptions) {
  api::TfJob job = Defaulted(testing::NewTfJob(2, 0));
  std::vector<api::Pod> pods;
  Replicas r = SliceReplicas(job, Ptrs(pods), job.status);
  struct Case {
    const char* id;
    std::optional<ReplicaType> type;
    int32_t index;
    bool counted;
  };
  const Case cases[] = {
      {"worker 1", ReplicaType::kWorker, 1, true},
      {"scale-down: index 2 of 2 replicas", ReplicaType::kWorker, 2, false},
      {"no index", ReplicaType::kWorker, -1, false},
      {"a type the spec lacks", ReplicaType::kPS, 0, false},
      {"no type (a label of none)", std::nullopt, 0, false},
  };
  for (const auto& c : cases) {
    PodDisruption d{"p", "u", c.type, c.index, "EvictionByEvictionAPI", ""};
    auto counted = CountNotedDisruptions({d}, r.types);
    EXPECT_EQ(counted.size(), c.counted ? 1u : 0u) << c.id;
    if (c.counted && !counted.empty()) {
      EXPECT_EQ(counted[0].type, ReplicaType::kWorker) << c.id;
    }
  }
}

// D21: which deletions of a pod (by someone the process noting them did not ask) are
// disruptions. An ended pod without a DisruptionTarget is not one, whoever deleted it: the restart
// delete of a Failed pod that an earlier operator process sent and a later one sees land.
TEST(ReconcilePhases, DeletionDisruption) {
  struct Case {
    const char* id;
    PodPhase phase;
    const char* disruption;             // DisruptionTarget reason ("" none)
    std::optional<std::string> reason;  // the note's reason; nullopt: no disruption
  };
  const Case cases[] = {
      {"Running, deleted by another", PodPhase::kRunning, "", "DeletedExternally"},
      {"Pending, deleted by another", PodPhase::kPending, "", "DeletedExternally"},
      {"no phase yet", PodPhase::kUnknown, "", "DeletedExternally"},
      {"Running, evicted", PodPhase::kRunning, "EvictionByEvictionAPI", "EvictionByEvictionAPI"},
      {"Failed: restarted by an earlier operator process", PodPhase::kFailed, "", std::nullopt},
      {"Succeeded: cleaned up", PodPhase::kSucceeded, "", std::nullopt},
      {"Failed by a kubelet eviction", PodPhase::kFailed, "Evicted", "Evicted"},
      {"Succeeded, then garbage-collected with a DisruptionTarget", PodPhase::kSucceeded, "DeletionByPodGC",
       "DeletionByPodGC"},
  };
  for (const auto& c : cases) {
    api::Pod pod = MakePod("test-tfjob", "worker", 1, c.phase);
    pod.disruption_reason = c.disruption;
    if (*c.disruption) pod.disruption_message = "by x";
    std::optional<PodDisruption> d = DeletionDisruption(pod);
    ASSERT_EQ(d.has_value(), c.reason.has_value()) << c.id;
    if (!d) continue;
    EXPECT_EQ(d->reason, *c.reason) << c.id;
    EXPECT_EQ(d->message, *c.disruption ? "by x" : "deleted without the operator asking") << c.id;
    EXPECT_EQ((std::tuple{d->pod, d->uid, d->replica_type, d->index}),
              (std::tuple{pod.meta.name, pod.meta.uid, std::optional(ReplicaType::kWorker), 1}))
        << c.id;
  }
}

// Plan::ends_job: the pass's status adds Succeeded or Failed to a job that had neither.
TEST(ReconcilePhases, EndsJob) {
  auto status = [](const char* condition) {
    api::JobStatus s;
    SetCondition(s, "Created", "True", "TFJobCreated", "", kNow);
    if (condition != nullptr) SetCondition(s, condition, "True", "x", "", kNow);
    return s;
  };
  struct Case {
    const char* id;
    const char* observed;
    std::optional<const char*> planned;  // nullopt: the status is unchanged
    bool ends;
  };
  const Case cases[] = {
      {"running -> Failed", "Running", "Failed", true},
      {"running -> Succeeded", "Running", "Succeeded", true},
      {"created -> Failed (validation, deadline)", nullptr, "Failed", true},
      {"running -> Restarting", "Running", "Restarting", false},
      {"running, unchanged", "Running", std::nullopt, false},
      {"finished, later pass (clean-up, completion time)", "Failed", "Failed", false},
      {"finished, unchanged", "Succeeded", std::nullopt, false},
      {"suspended", "Running", "Suspended", false},
  };
  for (const auto& c : cases) {
    std::optional<api::JobStatus> planned;
    if (c.planned) planned = status(*c.planned);
    EXPECT_EQ(EndsJob(status(c.observed), planned), c.ends) << c.id;
  }
}

TEST(ReconcilePhases, DisruptionEvent) {
  EXPECT_EQ(DisruptionEvent("ns", {"p-0", "u", ReplicaType::kWorker, 0, "PreemptionByScheduler", "by x"}),
            (RenderEvent{api::EventType::kWarning, "PreemptionByScheduler",
                         "Pod ns/p-0 was disrupted (PreemptionByScheduler: by x); it is recreated and not counted "
                         "against backoffLimit"}));
  EXPECT_EQ(DisruptionEvent("ns", {"p-0", "u", ReplicaType::kWorker, 0, "DeletedExternally", ""}).message,
            "Pod ns/p-0 was disrupted (DeletedExternally); it is recreated and not counted against backoffLimit");
}

TEST(ReconcilePhases, DecideRestarts) {
  struct Case {
    const char* id;
    const char* policy;
    std::optional<int> exit_code;
    const char* disruption;
    size_t restart, exit_code_failures, disrupted;
    TypeFailures failures;
  };
  const Case cases[] = {
      {"Never", "Never", 1, "", 0, 0, 0, {0, 1}},
      {"OnFailure", "OnFailure", 1, "", 1, 0, 0, {1, 0}},
      {"Always", "Always", 0, "", 1, 0, 0, {1, 0}},
      {"ExitCode 137: retried", "ExitCode", 137, "", 1, 0, 0, {1, 0}},
      {"ExitCode 1: fails the job", "ExitCode", 1, "", 0, 1, 0, {0, 0}},
      {"ExitCode, no exit code: retried", "ExitCode", std::nullopt, "", 1, 0, 0, {1, 0}},
      {"a disruption, whatever the policy (D21)", "Never", 1, "EvictionByEvictionAPI", 0, 0, 1, {0, 0}},
  };
  for (const auto& c : cases) {
    api::TfJob job = Defaulted(testing::NewTfJob(1, 0));
    job.spec.replica_specs["Worker"]->restart_policy = c.policy;
    std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kFailed)};
    if (c.exit_code) testing::WithExitCode(pods[0], *c.exit_code);
    pods[0].disruption_reason = c.disruption;
    Replicas r = SliceReplicas(job, Ptrs(pods), job.status);
    RestartDecisions d = DecideRestarts(r.types);
    EXPECT_EQ(d.to_restart.size(), c.restart) << c.id;
    EXPECT_EQ(d.exit_code_failures.size(), c.exit_code_failures) << c.id;
    EXPECT_EQ(d.disrupted.size(), c.disrupted) << c.id;
    EXPECT_EQ(d.failures[ReplicaType::kWorker], c.failures) << c.id;
  }
}

// Regression (issue 25, chaos trial 1 of seed 130661443): an operator killed while its DELETE
// of a Failed pod was in flight left the pod with a deletionTimestamp and nothing removed it, so
// the job waited for it for good. An ended pod whose deletion stalled is deleted again.
TEST(ReconcilePhases, FinishStalledDeletions) {
  using std::chrono::seconds;
  struct Case {
    const char* id;
    PodPhase phase;
    std::optional<seconds> deleting_for;  // how long ago its deletionTimestamp is; nullopt: none
    std::vector<std::string> deleted;
    std::optional<std::chrono::nanoseconds> requeue_after;
  };
  const Case cases[] = {
      {"Failed, stalled", PodPhase::kFailed, seconds(5), {"test-tfjob-worker-0"}, std::nullopt},
      {"Succeeded, long stalled", PodPhase::kSucceeded, seconds(600), {"test-tfjob-worker-0"}, std::nullopt},
      {"Failed, deletion just begun: looked at again when due", PodPhase::kFailed, seconds(1), {}, seconds(4)},
      {"Failed, not being deleted", PodPhase::kFailed, std::nullopt, {}, std::nullopt},
      {"Running, being deleted: its kubelet's (grace period)", PodPhase::kRunning, seconds(600), {}, std::nullopt},
      {"Pending, being deleted", PodPhase::kPending, seconds(600), {}, std::nullopt},
  };
  for (const auto& c : cases) {
    api::TfJob job = Defaulted(testing::NewTfJob(1, 0));
    std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, c.phase)};
    if (c.deleting_for) pods[0].meta.deletion_timestamp = kNow - *c.deleting_for;
    StalledDeletions s = FinishStalledDeletions(Ptrs(pods), kNow);
    EXPECT_EQ(Names(s.delete_pods), c.deleted) << c.id;
    EXPECT_EQ(s.requeue_after, c.requeue_after) << c.id;
    if (!s.delete_pods.empty()) {
      EXPECT_EQ(s.delete_pods[0].uid, pods[0].meta.uid) << c.id;  // the precondition: this pod only
    }
  }
}

TEST(ReconcilePhases, DecideRestartsIgnoresPodsBeingDeletedAndDuplicates) {
  api::TfJob job = Defaulted(testing::NewTfJob(2, 0));
  job.spec.replica_specs["Worker"]->restart_policy = "OnFailure";
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kFailed),
                                MakePod("test-tfjob", "worker", 1, PodPhase::kFailed),
                                MakePod("test-tfjob", "worker", 1, PodPhase::kFailed)};
  pods[0].meta.deletion_timestamp = kNow;
  pods[2].meta.name = "dup";
  Replicas r = SliceReplicas(job, Ptrs(pods), job.status);
  EXPECT_THAT(DecideRestarts(r.types).to_restart, IsEmpty());
}

TEST(ReconcilePhases, CheckLimits) {
  const std::string backoff = "Job test-tfjob has failed because it has reached the specified backoff limit";
  const std::string deadline = "Job test-tfjob has failed because it was active longer than specified deadline";
  struct Case {
    const char* id;
    std::optional<int32_t> backoff_limit;
    int64_t recreations, in_place;
    size_t restarts;
    std::optional<int64_t> deadline_s;
    int64_t started_s_ago;
    std::string failure;
    std::optional<std::chrono::nanoseconds> requeue;
  };
  const Case cases[] = {
      {"no limits", std::nullopt, 9, 9, 9, std::nullopt, 0, "", std::nullopt},
      {"within backoff", 3, 1, 1, 1, std::nullopt, 0, "", std::nullopt},
      {"past backoff", 3, 2, 1, 1, std::nullopt, 0, backoff, std::nullopt},
      {"in-place restarts reach it", 2, 0, 2, 0, std::nullopt, 0, backoff, std::nullopt},
      {"no new restart: recreations alone do not", 1, 5, 0, 0, std::nullopt, 0, "", std::nullopt},
      {"deadline ahead", std::nullopt, 0, 0, 0, 60, 10, "", std::chrono::seconds(50)},
      {"deadline passed", std::nullopt, 0, 0, 0, 60, 60, deadline, std::nullopt},
      {"deadline never comes", std::nullopt, 0, 0, 0, std::numeric_limits<int64_t>::max(), 0, "", std::nullopt},
      {"backoff first", 0, 0, 0, 1, 1, 5, backoff, std::nullopt},
  };
  for (const auto& c : cases) {
    api::TfJob job = Defaulted(testing::NewTfJob(1, 0));
    job.spec.run_policy.backoff_limit = c.backoff_limit;
    job.spec.run_policy.active_deadline_seconds = c.deadline_s;
    Replicas r;
    r.recreations = c.recreations;
    r.in_place = c.in_place;
    LimitCheck l = CheckLimits(job, r, c.restarts, kNow - std::chrono::seconds(c.started_s_ago), kNow);
    EXPECT_EQ(l.failure, c.failure) << c.id;
    EXPECT_EQ(l.requeue_after, c.requeue) << c.id;
  }
}

TEST(ReconcilePhases, ComputeOutcome) {
  struct Case {
    const char* id;
    bool chief;
    PodPhase chief_phase, worker0, worker1;
    const char* success_policy;
    int32_t permanent_workers;
    bool dynamic;
    bool succeeded, running;
    std::string failure;
  };
  const std::string failed = "TFJob default/test-tfjob has failed because 1 Worker replica(s) failed.";
  const Case cases[] = {
      {"workers running", false, {}, PodPhase::kRunning, PodPhase::kRunning, "", 0, false, false, true, ""},
      {"worker 0 done", false, {}, PodPhase::kSucceeded, PodPhase::kRunning, "", 0, false, true, false, ""},
      {"AllWorkers: one left",
       false,
       {},
       PodPhase::kSucceeded,
       PodPhase::kRunning,
       "AllWorkers",
       0,
       false,
       false,
       true,
       ""},
      {"AllWorkers: all done",
       false,
       {},
       PodPhase::kSucceeded,
       PodPhase::kSucceeded,
       "AllWorkers",
       0,
       false,
       true,
       false,
       ""},
      {"chief decides", true, PodPhase::kRunning, PodPhase::kSucceeded, PodPhase::kSucceeded, "", 0, false, false, true,
       ""},
      {"chief done", true, PodPhase::kSucceeded, PodPhase::kRunning, PodPhase::kRunning, "", 0, false, true, false, ""},
      {"a permanent failure", false, {}, PodPhase::kRunning, PodPhase::kFailed, "", 1, false, false, true, failed},
      {"dynamic workers may fail", false, {}, PodPhase::kRunning, PodPhase::kFailed, "", 1, true, false, true, ""},
  };
  for (const auto& c : cases) {
    api::TfJob job = Defaulted(testing::NewTfJob(2, 0, c.chief));
    job.spec.success_policy = c.success_policy;
    job.spec.enable_dynamic_worker = c.dynamic;
    job.status.replica_statuses["Worker"].restarts = 4;
    std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, c.worker0),
                                  MakePod("test-tfjob", "worker", 1, c.worker1)};
    if (c.worker0 == PodPhase::kSucceeded) testing::WithExitCode(pods[0], 0);
    if (c.chief) pods.push_back(MakePod("test-tfjob", "chief", 0, c.chief_phase));
    Replicas r = SliceReplicas(job, Ptrs(pods), job.status);
    std::map<ReplicaType, TypeFailures> failures;
    failures[ReplicaType::kWorker].permanent = c.permanent_workers;
    Outcome o = ComputeOutcome(job, r.types, failures, job.status, Ptrs(pods));
    EXPECT_EQ(o.succeeded, c.succeeded) << c.id;
    EXPECT_EQ(o.running, c.running) << c.id;
    EXPECT_EQ(o.failure, c.failure) << c.id;
    EXPECT_EQ(o.replica_statuses["Worker"].restarts, 4) << c.id;
    EXPECT_EQ(o.replica_statuses.contains("Chief"), c.chief) << c.id;
  }
}

TEST(ReconcilePhases, CleanUp) {
  struct Case {
    const char* id;
    const char* policy;
    bool finished;
    std::vector<std::string> pods;
  };
  const Case cases[] = {
      {"None keeps all", "None", true, {}},
      {"Running: the running and pending ones", "Running", true, {"test-tfjob-worker-0", "test-tfjob-worker-1"}},
      {"All", "All", true, {"test-tfjob-worker-0", "test-tfjob-worker-1", "test-tfjob-worker-2"}},
      {"suspend: everything", "None", false, {"test-tfjob-worker-0", "test-tfjob-worker-1", "test-tfjob-worker-2"}},
  };
  for (const auto& c : cases) {
    api::TfJob job = Defaulted(testing::NewTfJob(4, 0));
    job.spec.run_policy.clean_pod_policy = c.policy;
    std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kRunning),
                                  MakePod("test-tfjob", "worker", 1, PodPhase::kPending),
                                  MakePod("test-tfjob", "worker", 2, PodPhase::kSucceeded),
                                  MakePod("test-tfjob", "worker", 3, PodPhase::kRunning)};
    pods[3].meta.deletion_timestamp = kNow;
    std::vector<api::Service> svcs = {MakeService("test-tfjob", "worker", 0)};
    ObservedState observed{job, pods, svcs, std::nullopt, kNow};
    Children children = ClassifyChildren(job, observed.pods, observed.services);
    CleanUpPlan plan = CleanUp(job, children, {}, observed, c.finished);
    EXPECT_EQ(Names(plan.delete_pods), c.pods) << c.id;
    EXPECT_EQ(plan.delete_services.size(), c.pods.empty() ? 0u : 1u) << c.id;
    EXPECT_FALSE(plan.delete_pod_group) << c.id;
    EXPECT_THAT(plan.events, IsEmpty()) << c.id;
  }
}

TEST(ReconcilePhases, CleanUpDeletesThePodGroupWithAnEventOnceFinished) {
  api::TfJob job = Defaulted(testing::NewTfJob(1, 0));
  ObservedState observed{job, {}, {}, PodGroupState{"Running", "", {}}, kNow};
  observed.workload_exists = true;
  ReconcileOptions volcano, kubernetes;
  volcano.render.gang_scheduler_name = "volcano";
  kubernetes.render.gang_scheduler_name = "kubernetes";
  CleanUpPlan v = CleanUp(job, {}, volcano, observed, true);
  EXPECT_TRUE(v.delete_pod_group);
  EXPECT_FALSE(v.delete_workload);
  EXPECT_THAT(Reasons(v.events), ElementsAre("Normal JobTerminated"));
  EXPECT_THAT(CleanUp(job, {}, volcano, observed, false).events, IsEmpty());
  EXPECT_TRUE(CleanUp(job, {}, kubernetes, observed, true).delete_workload);
}

TEST(ReconcilePhases, TerminalCounts) {
  api::TfJob job = Defaulted(testing::NewTfJob(3, 0));
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kRunning),
                                MakePod("test-tfjob", "worker", 1, PodPhase::kRunning),
                                MakePod("test-tfjob", "worker", 2, PodPhase::kSucceeded)};
  api::JobStatus status;
  status.replica_statuses["Worker"].restarts = 2;
  status.replica_statuses["Other"].active = 7;  // kept as is
  Replicas r = SliceReplicas(job, Ptrs(pods), status);
  const std::vector<ChildDeletion> deleting = {{"test-tfjob-worker-0", ""}};

  api::JobStatus failed = status;
  SetCondition(failed, kConditionFailed, "True", "TFJobFailed", "", kNow);
  auto f = TerminalCounts(failed, r.types, deleting);
  EXPECT_EQ(f["Worker"], (api::ReplicaStatus{1, 1, 1, 2, 0}));  // the deleted running pod counts as failed
  EXPECT_EQ(f["Other"].active, 7);

  api::JobStatus succeeded = status;
  SetCondition(succeeded, kConditionSucceeded, "True", "TFJobSucceeded", "", kNow);
  EXPECT_EQ(TerminalCounts(succeeded, r.types, deleting)["Worker"], (api::ReplicaStatus{0, 3, 0, 2, 0}));
}

TEST(ReconcilePhases, ExitEventsOncePerPod) {
  api::TfJob job = Defaulted(testing::NewTfJob(2, 0));
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kSucceeded),
                                MakePod("test-tfjob", "worker", 1, PodPhase::kRunning)};
  testing::WithExitCode(pods[0], 0);
  Replicas r = SliceReplicas(job, Ptrs(pods), job.status);
  auto events = ExitEvents(job, r.types, {});
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].message, "Pod: default.test-tfjob-worker-0 exited with code 0");
  EXPECT_THAT(ExitEvents(job, r.types, events), IsEmpty());
}

TEST(ReconcilePhases, DecideTtl) {
  struct Case {
    const char* id;
    std::optional<int32_t> ttl;
    std::optional<int64_t> completed_s_ago;
    bool delete_job;
    std::optional<std::chrono::nanoseconds> requeue;
  };
  const Case cases[] = {
      {"no ttl", std::nullopt, 100, false, std::nullopt},
      {"not completed", 10, std::nullopt, false, std::nullopt},
      {"due later", 10, 4, false, std::chrono::seconds(6)},
      {"due now", 10, 10, true, std::nullopt},
      {"past due", 0, 1, true, std::nullopt},
  };
  for (const auto& c : cases) {
    api::TfJob job = testing::NewTfJob(1, 0);
    job.spec.run_policy.ttl_seconds_after_finished = c.ttl;
    api::JobStatus st;
    if (c.completed_s_ago) st.completion_time = kNow - std::chrono::seconds(*c.completed_s_ago);
    TtlDecision t = DecideTtl(job, st, kNow);
    EXPECT_EQ(t.delete_job, c.delete_job) << c.id;
    EXPECT_EQ(t.requeue_after, c.requeue) << c.id;
  }
}

TEST(ReconcilePhases, CountersAnnotationRoundTrip) {
  struct Case {
    const char* id;
    std::string annotation;
    int32_t status_restarts;
    int32_t restarts, disruptions;
  };
  const Case cases[] = {
      {"none", "", 1, 1, 0},
      {"larger than the status", R"({"Worker":{"restarts":3,"disruptions":2}})", 1, 3, 2},
      {"smaller than the status", R"({"Worker":{"restarts":1}})", 5, 5, 0},
      {"negative and huge are clamped", R"({"Worker":{"restarts":-4,"disruptions":99999999999}})", 0, 0,
       std::numeric_limits<int32_t>::max()},
      {"not JSON", "{", 2, 2, 0},
      {"an unknown type", R"({"worker":{"restarts":3}})", 0, 0, 0},
  };
  for (const auto& c : cases) {
    api::TfJob job = testing::NewTfJob(1, 0);
    if (!c.annotation.empty()) job.metadata.annotations[std::string(kCountersAnnotation)] = c.annotation;
    job.status.replica_statuses["Worker"].restarts = c.status_restarts;
    api::JobStatus st = WithCountersAnnotation(job);
    EXPECT_EQ(st.replica_statuses["Worker"].restarts, c.restarts) << c.id;
    EXPECT_EQ(st.replica_statuses["Worker"].disruptions, c.disruptions) << c.id;
    EXPECT_FALSE(st.replica_statuses.contains("worker")) << c.id;
  }
  api::JobStatus st;
  st.replica_statuses["Worker"] = {1, 0, 0, 2, 1};
  st.replica_statuses["PS"] = {};
  EXPECT_EQ(CountersAnnotation(st), R"({"Worker":{"disruptions":1,"restarts":2}})");
  EXPECT_EQ(CountersAnnotation({}), "");
}

TEST(ReconcilePhases, PlanGang) {
  struct Case {
    const char* id;
    const char* scheduler;
    std::optional<std::string> group_phase;  // nullopt: no PodGroup yet
    bool workload_exists;
    bool create, wait, create_workload;
  };
  const Case cases[] = {
      {"none", "", std::nullopt, false, false, false, false},
      {"volcano, no group", "volcano", std::nullopt, false, true, true, false},
      {"volcano, Pending", "volcano", "Pending", false, false, true, false},
      {"volcano, Running", "volcano", "Running", false, false, false, false},
      {"scheduler-plugins never waits", "scheduler-plugins", std::nullopt, false, true, false, false},
      {"kubernetes: the Workload too", "kubernetes", std::nullopt, false, true, false, true},
      {"kubernetes: Workload exists", "kubernetes", "", true, false, false, false},
  };
  for (const auto& c : cases) {
    api::TfJob job = Defaulted(testing::NewTfJob(2, 0));
    ReconcileOptions options;
    options.render.gang_scheduler_name = c.scheduler;
    ObservedState observed{job, {}, {}, std::nullopt, kNow};
    if (c.group_phase) {
      auto desired = RenderPodGroup(job, options.render, "", {});
      const nlohmann::json spec = desired ? (*desired)["spec"] : nlohmann::json();
      observed.pod_group = PodGroupState{*c.group_phase, "", spec, api::GangMinCountOf(spec)};  // as decoded
    }
    observed.workload_exists = c.workload_exists;
    GangPlan g = PlanGang(job, options, observed);
    EXPECT_EQ(g.create_pod_group.has_value(), c.create) << c.id;
    EXPECT_FALSE(g.update_pod_group.has_value()) << c.id;
    EXPECT_EQ(g.wait, c.wait) << c.id;
    EXPECT_EQ(g.create_workload.has_value(), c.create_workload) << c.id;
  }
}

TEST(ReconcilePhases, PlanChildren) {
  struct Case {
    const char* id;
    int replicas;
    std::vector<int> pods, svcs;
    bool wait;
    std::vector<std::string> create_pods, delete_pods, create_svcs, delete_svcs;
  };
  const Case cases[] = {
      {"all missing",
       2,
       {},
       {},
       false,
       {"test-tfjob-worker-0", "test-tfjob-worker-1"},
       {},
       {"test-tfjob-worker-0", "test-tfjob-worker-1"},
       {}},
      {"one missing", 2, {1}, {0, 1}, false, {"test-tfjob-worker-0"}, {}, {}, {}},
      {"scale down",
       1,
       {0, 1, 2},
       {0, 2},
       false,
       {},
       {"test-tfjob-worker-1", "test-tfjob-worker-2"},
       {},
       {"test-tfjob-worker-2"}},
      {"waiting for the gang", 2, {}, {}, true, {}, {}, {}, {}},
  };
  for (const auto& c : cases) {
    api::TfJob job = Defaulted(testing::NewTfJob(c.replicas, 0));
    std::vector<api::Pod> pods;
    for (int i : c.pods) pods.push_back(MakePod("test-tfjob", "worker", i, PodPhase::kRunning));
    std::vector<api::Service> svcs;
    for (int i : c.svcs) svcs.push_back(MakeService("test-tfjob", "worker", i));
    Children children = ClassifyChildren(job, pods, svcs);
    Replicas r = SliceReplicas(job, children.pods, job.status);
    ChildrenPlan plan = PlanChildren(job, r.types, children, {}, c.wait, {});
    std::vector<std::string> created, created_svcs;
    for (const auto& p : plan.create_pods) created.push_back(p.name);
    for (const auto& s : plan.create_services) created_svcs.push_back(s.name);
    EXPECT_EQ(created, c.create_pods) << c.id;
    EXPECT_EQ(Names(plan.delete_pods), c.delete_pods) << c.id;
    EXPECT_EQ(created_svcs, c.create_svcs) << c.id;
    EXPECT_EQ(Names(plan.delete_services), c.delete_svcs) << c.id;
  }
}

// A replica without a tensorflow container gets its pods but no service (RenderService refuses
// it, so the plan names none).
TEST(ReconcilePhases, PlanChildrenLeavesOutServicesRenderServiceRefuses) {
  api::TfJob job = Defaulted(testing::NewTfJob(2, 0));
  for (auto& [type, spec] : job.spec.replica_specs) spec->pod_template["spec"]["containers"][0]["name"] = "main";
  Children children = ClassifyChildren(job, {}, {});
  Replicas r = SliceReplicas(job, children.pods, job.status);
  ChildrenPlan plan = PlanChildren(job, r.types, children, {}, false, {});
  EXPECT_EQ(plan.create_pods, (std::vector<ChildCreation>{{"test-tfjob-worker-0", api::ReplicaType::kWorker, 0},
                                                          {"test-tfjob-worker-1", api::ReplicaType::kWorker, 1}}));
  EXPECT_TRUE(plan.create_services.empty());
  EXPECT_FALSE(HasService(job, api::ReplicaType::kWorker));
  EXPECT_FALSE(RenderService(job, api::ReplicaType::kWorker, 0).ok());
}

TEST(ReconcilePhases, AbnormalPodEvents) {
  struct Case {
    const char* id;
    PodPhase phase;
    bool terminated;
    int exit_code;
    const char* waiting_reason;
    const char* waiting_message;
    std::vector<std::string> events;
  };
  const Case cases[] = {
      {"running, fine", PodPhase::kRunning, false, 0, "", "", {}},
      {"a container exited 1", PodPhase::kRunning, true, 1, "", "", {"Warning Error"}},
      {"waiting with a message",
       PodPhase::kPending,
       false,
       0,
       "ImagePullBackOff",
       "back-off",
       {"Warning ImagePullBackOff"}},
      {"finished pods say nothing", PodPhase::kFailed, true, 1, "", "", {}},
  };
  for (const auto& c : cases) {
    api::Pod pod = MakePod("test-tfjob", "worker", 0, c.phase);
    api::ContainerStatus cs;
    cs.name = "tensorflow";
    cs.terminated = c.terminated;
    cs.exit_code = c.exit_code;
    cs.waiting_reason = c.waiting_reason;
    cs.waiting_message = c.waiting_message;
    pod.container_statuses.push_back(cs);
    EXPECT_EQ(Reasons(AbnormalPodEvents(pod)), c.events) << c.id;
  }
  api::Pod unscheduled = MakePod("test-tfjob", "worker", 0, PodPhase::kPending);
  unscheduled.conditions.push_back({"PodScheduled", "False", "Unschedulable", "0/3 nodes", kNow});
  EXPECT_THAT(AbnormalPodEvents(unscheduled),
              ElementsAre(RenderEvent{api::EventType::kWarning, "Unschedulable",
                                      "Error pod test-tfjob-worker-0 condition message: 0/3 nodes"}));
}

TEST(ReconcilePhases, UniqueEventsKeepsTheFirst) {
  const auto kW = api::EventType::kWarning, kN = api::EventType::kNormal;
  std::vector<RenderEvent> e = {{kW, "A", "1"}, {kN, "B", "2"}, {kW, "A", "1"}};
  EXPECT_EQ(UniqueEvents(e), (std::vector<RenderEvent>{{kW, "A", "1"}, {kN, "B", "2"}}));
}

}  // namespace
}  // namespace tfjob::core
