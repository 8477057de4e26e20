#include "tfjob/core/reconcile.h"

#include <algorithm>
#include <limits>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/tfjob_json.h"
#include "testing/fixtures.h"
#include "tfjob/core/conditions.h"
#include "tfjob/core/naming.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::api {
// Readable failures: "{active 1, succeeded 0, failed 0, restarts 2}".
void PrintTo(const ReplicaStatus& s, std::ostream* os) {
  *os << "{active " << s.active << ", succeeded " << s.succeeded << ", failed " << s.failed << ", restarts "
      << s.restarts << ", disruptions " << s.disruptions << "}";
}
}  // namespace tfjob::api

namespace tfjob::core {
// Readable failures of whole-plan comparisons: the parts a plan of these tests holds.
void PrintTo(const Plan& plan, std::ostream* os) {
  *os << "{";
  for (const auto& c : plan.create_pods) *os << " create pod " << c.name << ";";
  for (const auto& c : plan.create_services) *os << " create service " << c.name << ";";
  for (const auto& d : plan.delete_pods) *os << " delete pod " << d.name << " " << d.uid << ";";
  for (const auto& d : plan.delete_services) *os << " delete service " << d.name << " " << d.uid << ";";
  for (const auto& e : plan.events) *os << " event " << e.reason << ": " << e.message << ";";
  if (plan.status) *os << " status " << api::EncodeStatus(*plan.status).dump() << ";";
  if (plan.requeue_after) *os << " requeue_after " << plan.requeue_after->count() << "ns;";
  *os << " ends_job " << plan.ends_job << " }";
}

namespace {

using api::PodPhase;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using testing::MakePod;
using testing::MakeService;
using ::testing::UnorderedElementsAreArray;

const api::Time kNow = api::Time(std::chrono::seconds(1767225600));

// `n` pods of `type` with the given phases in order (indices from `first`).
void AddPods(std::vector<api::Pod>& pods, std::string_view type, int first, int n, PodPhase phase) {
  for (int i = first; i < first + n; ++i) pods.push_back(MakePod("test-tfjob", type, i, phase));
}
void AddServices(std::vector<api::Service>& svcs, std::string_view type, int n) {
  for (int i = 0; i < n; ++i) svcs.push_back(MakeService("test-tfjob", type, i));
}

Plan Decide(const api::TfJob& job, std::vector<api::Pod> pods = {}, std::vector<api::Service> svcs = {},
            api::Time now = kNow, ReconcileOptions options = {}) {
  ObservedState o{job, std::move(pods), std::move(svcs), std::nullopt, now};
  return Reconcile(o, options);
}

std::vector<std::string> Names(const std::vector<ChildCreation>& v) {
  std::vector<std::string> out;
  for (const auto& c : v) out.push_back(c.name);
  return out;
}
std::vector<std::string> Names(const std::vector<ChildDeletion>& v) {
  std::vector<std::string> out;
  for (const auto& c : v) out.push_back(c.name);
  return out;
}
std::vector<std::string> Reasons(const Plan& p) {
  std::vector<std::string> out;
  for (const auto& e : p.events) out.push_back(std::string(api::EnumName(e.type)) + " " + e.reason);
  return out;
}
// "Type Status Reason" of every condition, in order.
std::vector<std::string> Conditions(const api::JobStatus& s) {
  std::vector<std::string> out;
  for (const auto& c : s.conditions) out.push_back(c.type + " " + c.status + " " + c.reason);
  return out;
}

api::TfJob WithStatus(api::TfJob job, const char* condition) {
  SetCondition(job.status, "Created", "True", "TFJobCreated", "", kNow);
  if (condition != nullptr) SetCondition(job.status, condition, "True", std::string("TFJob") + condition, "", kNow);
  return job;
}

// Cases N1-N8 of docs/semantics.md 4.7 (ReconcileJobs with pods and services present).
TEST(Reconcile, NormalPathN1ToN8) {
  struct Case {
    const char* id;
    int workers, ps;
    int w_pending, w_running, w_succeeded, ps_pending, ps_running, ps_succeeded;
    int w_svcs, ps_svcs;
    size_t pods_created, svcs_created;
    api::ReplicaStatus worker, psr;
    const char* condition;  // last condition type after Created, or nullptr
  };
  std::vector<Case> cases = {
      {"N1", 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, {}, {}, nullptr},
      {"N2", 4, 2, 0, 0, 0, 0, 0, 0, 0, 0, 6, 6, {}, {}, nullptr},
      {"N3", 4, 2, 4, 0, 0, 2, 0, 0, 4, 2, 0, 0, {}, {}, nullptr},
      {"N4", 4, 2, 0, 4, 0, 0, 2, 0, 4, 2, 0, 0, {4, 0, 0, 0}, {2, 0, 0, 0}, "Running"},
      {"N5", 4, 2, 2, 0, 0, 1, 0, 0, 2, 1, 3, 3, {}, {}, nullptr},
      {"N6", 4, 2, 2, 1, 0, 1, 0, 0, 3, 1, 2, 2, {1, 0, 0, 0}, {}, "Running"},
      {"N7", 4, 2, 2, 0, 1, 1, 0, 0, 3, 1, 2, 2, {0, 1, 0, 0}, {}, nullptr},
      {"N8", 4, 2, 0, 0, 4, 0, 0, 2, 4, 2, 0, 0, {0, 4, 0, 0}, {0, 2, 0, 0}, "Succeeded"},
  };
  for (const auto& c : cases) {
    std::vector<api::Pod> pods;
    int i = 0;
    AddPods(pods, "worker", i, c.w_pending, PodPhase::kPending), i += c.w_pending;
    AddPods(pods, "worker", i, c.w_running, PodPhase::kRunning), i += c.w_running;
    for (int k = 0; k < c.w_succeeded; ++k) {
      pods.push_back(MakePod("test-tfjob", "worker", i + k, PodPhase::kSucceeded));
      if (std::string(c.id) == "N8") testing::WithExitCode(pods.back(), 0);  // N7's lacks it
    }
    int j = 0;
    AddPods(pods, "ps", j, c.ps_pending, PodPhase::kPending), j += c.ps_pending;
    AddPods(pods, "ps", j, c.ps_running, PodPhase::kRunning), j += c.ps_running;
    AddPods(pods, "ps", j, c.ps_succeeded, PodPhase::kSucceeded);
    std::vector<api::Service> svcs;
    AddServices(svcs, "worker", c.w_svcs);
    AddServices(svcs, "ps", c.ps_svcs);
    Plan plan = Decide(testing::NewTfJob(c.workers, c.ps), pods, svcs);
    EXPECT_EQ(plan.create_pods.size(), c.pods_created) << c.id;
    EXPECT_EQ(plan.create_services.size(), c.svcs_created) << c.id;
    EXPECT_THAT(plan.delete_pods, IsEmpty()) << c.id;
    ASSERT_TRUE(plan.status) << c.id;
    EXPECT_EQ(plan.status->replica_statuses["Worker"], c.worker) << c.id;
    if (c.ps > 0) {
      EXPECT_EQ(plan.status->replica_statuses["PS"], c.psr) << c.id;
    }
    EXPECT_EQ(plan.status->conditions.back().type, c.condition ? c.condition : "Created") << c.id;
    EXPECT_EQ(plan.status->start_time, kNow) << c.id;
    const PodRenderer renderer(testing::NewTfJob(c.workers, c.ps), {});  // as the plan is applied
    for (const auto& pc : plan.create_pods) {
      const nlohmann::json pod = renderer.Render(pc.type, pc.index);
      EXPECT_EQ(pod["metadata"]["name"], pc.name) << c.id;
      EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], "test-uid") << c.id;
      EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "TFJob") << c.id;
    }
  }
}

TEST(Reconcile, CreatesExactlyTheMissingIndices) {
  std::vector<api::Pod> pods;
  pods.push_back(MakePod("test-tfjob", "worker", 1, PodPhase::kRunning));
  Plan plan = Decide(testing::NewTfJob(3, 0), pods);
  EXPECT_THAT(Names(plan.create_pods), ElementsAre("test-tfjob-worker-0", "test-tfjob-worker-2"));
  EXPECT_THAT(Names(plan.create_services),
              ElementsAre("test-tfjob-worker-0", "test-tfjob-worker-1", "test-tfjob-worker-2"));
}

// Issue 28: the plan is a plain value, compared whole. A new job's first pass: its pods and
// services named by {name, type, index} (rendered where the plan is applied), the Created
// condition, the start time and the replica statuses; nothing else (no event: the core records
// none for a job it only starts).
TEST(Reconcile, WholePlanOfANewJob) {
  const api::TfJob job = testing::NewTfJob(2, 1);
  Plan expected;
  expected.create_pods = {{"test-tfjob-ps-0", api::ReplicaType::kPS, 0},
                          {"test-tfjob-worker-0", api::ReplicaType::kWorker, 0},
                          {"test-tfjob-worker-1", api::ReplicaType::kWorker, 1}};
  expected.create_services = expected.create_pods;
  api::JobStatus status;
  status.conditions.push_back({"Created", "True", "TFJobCreated", "TFJob test-tfjob is created.", kNow, kNow});
  status.replica_statuses["PS"] = {};
  status.replica_statuses["Worker"] = {};
  status.start_time = kNow;
  expected.status = status;
  EXPECT_EQ(Decide(job), expected);
}

// The same, once three workers run for two replicas: the extra pod and service deleted by uid,
// the missing service created, and the status Running. The pod being deleted still runs, so
// this pass counts it active.
TEST(Reconcile, WholePlanOfAScaleDown) {
  api::TfJob job = testing::NewTfJob(2, 0);
  job.status.start_time = kNow;
  SetCondition(job.status, kConditionCreated, "True", "TFJobCreated", "TFJob test-tfjob is created.", kNow);
  std::vector<api::Pod> pods;
  AddPods(pods, "worker", 0, 3, PodPhase::kRunning);
  std::vector<api::Service> svcs = {MakeService("test-tfjob", "worker", 0), MakeService("test-tfjob", "worker", 2)};
  Plan expected;
  expected.delete_pods = {{"test-tfjob-worker-2", "test-tfjob-worker-2-uid"}};
  expected.create_services = {{"test-tfjob-worker-1", api::ReplicaType::kWorker, 1}};
  expected.delete_services = {{"test-tfjob-worker-2", MakeService("test-tfjob", "worker", 2).meta.uid}};
  api::JobStatus status = job.status;
  status.replica_statuses["Worker"] = {.active = 3};
  SetCondition(status, kConditionRunning, "True", "TFJobRunning", RunningMessage(job), kNow);
  expected.status = status;
  EXPECT_EQ(Decide(job, pods, svcs), expected);
}

// P3/P4: scale down deletes indices >= replicas (pods and services); scale up creates.
TEST(Reconcile, ScaleDownAndUp) {
  std::vector<api::Pod> pods;
  AddPods(pods, "worker", 0, 3, PodPhase::kRunning);
  std::vector<api::Service> svcs;
  AddServices(svcs, "worker", 3);
  Plan down = Decide(testing::NewTfJob(2, 0), pods, svcs);
  EXPECT_THAT(Names(down.delete_pods), ElementsAre("test-tfjob-worker-2"));
  EXPECT_THAT(Names(down.delete_services), ElementsAre("test-tfjob-worker-2"));
  EXPECT_EQ(down.delete_pods[0].uid, "test-tfjob-worker-2-uid");
  std::vector<api::Pod> one;
  AddPods(one, "worker", 0, 1, PodPhase::kRunning);
  Plan up = Decide(testing::NewTfJob(3, 0), one);
  EXPECT_THAT(Names(up.create_pods), ElementsAre("test-tfjob-worker-1", "test-tfjob-worker-2"));
}

// P1: ExitCode with a retryable code deletes the pod to restart it.
TEST(Reconcile, ExitCodeRetryableRestartsThePod) {
  api::TfJob job = testing::NewTfJob(1, 0);
  job.spec.replica_specs["Worker"]->restart_policy = "ExitCode";
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kFailed)};
  testing::WithExitCode(pods[0], 130);
  Plan plan = Decide(job, pods, {MakeService("test-tfjob", "worker", 0)});
  EXPECT_THAT(Names(plan.delete_pods), ElementsAre("test-tfjob-worker-0"));
  EXPECT_THAT(plan.create_pods, IsEmpty());  // recreated once the deletion is observed
  ASSERT_TRUE(plan.status);
  EXPECT_THAT(Conditions(*plan.status), ElementsAre("Created True TFJobCreated", "Restarting True TFJobRestarting"));
  EXPECT_EQ(plan.status->conditions.back().message, "job test-tfjob is restarting because Worker replica(s) failed.");
  EXPECT_EQ(plan.status->replica_statuses["Worker"].restarts, 1);
  EXPECT_THAT(Reasons(plan), ElementsAre("Normal ExitedWithCode", "Warning TFJobRestarting"));
  EXPECT_EQ(plan.counters.restarted, 1);
}

// P2: ExitCode with a permanent code fails the job with the exact message.
TEST(Reconcile, ExitCodePermanentFailsTheJob) {
  api::TfJob job = testing::NewTfJob(1, 0);
  job.metadata.name = "test-noretry-exit-code";
  job.spec.replica_specs["Worker"]->restart_policy = "ExitCode";
  std::vector<api::Pod> pods = {MakePod("test-noretry-exit-code", "worker", 0, PodPhase::kFailed)};
  testing::WithExitCode(pods[0], 1);
  Plan plan = Decide(job, pods);
  ASSERT_TRUE(plan.status);
  const auto& last = plan.status->conditions.back();
  EXPECT_EQ(last.type, "Failed");
  EXPECT_EQ(last.reason, "TFJobFailed");
  EXPECT_EQ(last.message, "job \"test-noretry-exit-code\" is failing because \"Worker\" replica(s) failed.");
  EXPECT_EQ(plan.status->completion_time, kNow);
  EXPECT_THAT(plan.delete_pods, IsEmpty());  // cleanPodPolicy None keeps the pod
}

TEST(Reconcile, NeverFailsTheJobWithTheCount) {
  std::vector<api::Pod> pods;
  AddPods(pods, "worker", 0, 1, PodPhase::kRunning);
  AddPods(pods, "worker", 1, 2, PodPhase::kFailed);
  Plan plan = Decide(testing::NewTfJob(3, 0), pods);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->conditions.back().message,
            "TFJob default/test-tfjob has failed because 2 Worker replica(s) failed.");
  EXPECT_THAT(Reasons(plan), ElementsAre("Warning TFJobFailed"));  // D7: Warning
  EXPECT_EQ(plan.counters.failed, 1);
}

// Cases CP1-CP4 and CP5-CP8 of 4.9: what a finished job keeps.
TEST(Reconcile, CleanPodPolicyOnFinishedJob) {
  struct Case {
    const char* id;
    const char* policy;
    PodPhase phase;
    size_t deleted;
  };
  for (const Case& c :
       {Case{"CP1", "All", PodPhase::kRunning, 6}, Case{"CP2", "Running", PodPhase::kRunning, 6},
        Case{"CP3", "Running", PodPhase::kSucceeded, 0}, Case{"CP4", "None", PodPhase::kSucceeded, 0},
        Case{"None-running", "None", PodPhase::kRunning, 0}, Case{"Pending", "Running", PodPhase::kPending, 6}}) {
    api::TfJob job = WithStatus(testing::NewTfJob(4, 2), "Succeeded");
    job.spec.run_policy.clean_pod_policy = c.policy;
    std::vector<api::Pod> pods;
    AddPods(pods, "worker", 0, 4, c.phase);
    AddPods(pods, "ps", 0, 2, c.phase);
    std::vector<api::Service> svcs;
    AddServices(svcs, "worker", 4);
    AddServices(svcs, "ps", 2);
    Plan plan = Decide(job, pods, svcs);
    EXPECT_EQ(plan.delete_pods.size(), c.deleted) << c.id;
    EXPECT_EQ(plan.delete_services.size(), c.deleted) << c.id;
    EXPECT_THAT(plan.create_pods, IsEmpty()) << c.id;  // D18
    EXPECT_THAT(plan.create_services, IsEmpty()) << c.id;
  }
}

// Plan::ends_job (docs/semantics.md 3.11): a pass whose status adds Succeeded or Failed says so,
// and the glue writes that status before the pass's clean-up deletes; a pass that deletes pods of
// a job that goes on (a restart, a suspend) or of one already finished does not.
TEST(Reconcile, EndingPassWritesItsStatusBeforeItsCleanUp) {
  struct Case {
    const char* id;
    const char* job_condition;  // the job's last condition before the pass
    const char* restart_policy;
    const char* clean_pod_policy;
    PodPhase worker;  // worker-0's phase; ps-0 is Running
    int exit_code;
    bool suspend;
    std::optional<int32_t> backoff_limit;
    bool ends_job;
    std::vector<std::string> deleted;
    const char* last_condition;
  };
  const std::string w0 = "test-tfjob-worker-0", ps0 = "test-tfjob-ps-0";
  const Case cases[] = {
      {"worker fails (Never), Running policy: the PS goes",
       "Running",
       "Never",
       "Running",
       PodPhase::kFailed,
       1,
       false,
       std::nullopt,
       true,
       {ps0},
       "Failed"},
      {"worker fails (Never), All: the failed worker goes too",
       "Running",
       "Never",
       "All",
       PodPhase::kFailed,
       1,
       false,
       std::nullopt,
       true,
       {w0, ps0},
       "Failed"},
      {"backoffLimit reached, All",
       "Running",
       "ExitCode",
       "All",
       PodPhase::kFailed,
       137,
       false,
       0,
       true,
       {w0, ps0},
       "Failed"},
      {"worker 0 succeeded, Running policy",
       "Running",
       "Never",
       "Running",
       PodPhase::kSucceeded,
       0,
       false,
       std::nullopt,
       true,
       {ps0},
       "Succeeded"},
      {"worker fails (Never), None: nothing deleted",
       "Running",
       "Never",
       "None",
       PodPhase::kFailed,
       1,
       false,
       std::nullopt,
       true,
       {},
       "Failed"},
      {"restart (OnFailure): the job goes on",
       "Running",
       "OnFailure",
       "All",
       PodPhase::kFailed,
       1,
       false,
       std::nullopt,
       false,
       {w0},
       "Restarting"},
      {"already Failed: a later clean-up pass",
       "Failed",
       "Never",
       "All",
       PodPhase::kFailed,
       1,
       false,
       std::nullopt,
       false,
       {w0, ps0},
       "Failed"},
      {"suspended",
       "Running",
       "Never",
       "None",
       PodPhase::kRunning,
       0,
       true,
       std::nullopt,
       false,
       {w0, ps0},
       "Suspended"},
  };
  for (const Case& c : cases) {
    api::TfJob job = WithStatus(testing::NewTfJob(1, 1), c.job_condition);
    job.status.start_time = kNow;
    job.spec.replica_specs["Worker"]->restart_policy = c.restart_policy;
    job.spec.run_policy.clean_pod_policy = c.clean_pod_policy;
    job.spec.run_policy.suspend = c.suspend;
    job.spec.run_policy.backoff_limit = c.backoff_limit;
    std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, c.worker),
                                  MakePod("test-tfjob", "ps", 0, PodPhase::kRunning)};
    if (c.worker != PodPhase::kRunning) testing::WithExitCode(pods[0], c.exit_code);
    std::vector<api::Service> svcs = {MakeService("test-tfjob", "worker", 0), MakeService("test-tfjob", "ps", 0)};
    Plan plan = Decide(job, pods, svcs);
    EXPECT_EQ(plan.ends_job, c.ends_job) << c.id;
    EXPECT_THAT(Names(plan.delete_pods), UnorderedElementsAreArray(c.deleted)) << c.id;
    const api::JobStatus& st = plan.status ? *plan.status : job.status;
    EXPECT_EQ(st.conditions.back().type, c.last_condition) << c.id;
    EXPECT_THAT(plan.create_pods, IsEmpty()) << c.id;
  }
}

// R02 / D18: a deleted pod of a finished job is never recreated.
TEST(Reconcile, FinishedJobRecreatesNothing) {
  Plan plan = Decide(WithStatus(testing::NewTfJob(2, 1), "Failed"));
  EXPECT_THAT(plan.create_pods, IsEmpty());
  EXPECT_THAT(plan.create_services, IsEmpty());
}

// Success moves active to succeeded in the status of a finished job (3.3 step 3).
TEST(Reconcile, SucceededJobCountsActiveAsSucceeded) {
  api::TfJob job = WithStatus(testing::NewTfJob(2, 0), "Succeeded");
  job.status.replica_statuses["Worker"] = {1, 1, 0, 0};
  Plan plan = Decide(job);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->replica_statuses["Worker"], (api::ReplicaStatus{0, 2, 0, 0}));
}

// AD1/AD2 and D3: the deadline fails the job; before it, a requeue at the due time.
TEST(Reconcile, ActiveDeadline) {
  api::TfJob job = WithStatus(testing::NewTfJob(4, 2), "Running");
  job.metadata.name = "test-ads-1";
  job.spec.run_policy.clean_pod_policy = "All";
  job.spec.run_policy.active_deadline_seconds = 2;
  job.status.start_time = kNow;
  std::vector<api::Pod> pods;
  for (int i = 0; i < 4; ++i) pods.push_back(MakePod("test-ads-1", "worker", i, PodPhase::kRunning));
  for (int i = 0; i < 2; ++i) pods.push_back(MakePod("test-ads-1", "ps", i, PodPhase::kRunning));
  Plan early = Decide(job, pods, {}, kNow + std::chrono::seconds(1));
  ASSERT_TRUE(early.requeue_after);
  EXPECT_EQ(*early.requeue_after, std::chrono::seconds(1));
  EXPECT_THAT(early.delete_pods, IsEmpty());
  Plan late = Decide(job, pods, {}, kNow + std::chrono::seconds(2));
  EXPECT_EQ(late.delete_pods.size(), 6u);
  ASSERT_TRUE(late.status);
  EXPECT_EQ(late.status->conditions.back().message,
            "Job test-ads-1 has failed because it was active longer than specified deadline");
  EXPECT_EQ(late.status->conditions.back().type, "Failed");
  api::TfJob none = job;
  none.spec.run_policy.active_deadline_seconds.reset();
  EXPECT_THAT(Decide(none, pods, {}, kNow + std::chrono::hours(1)).delete_pods, IsEmpty());  // AD1
}

// A deadline (or TTL) beyond the year 2262 never passes. The schema admits any int64: adding
// 9223372036 s to the start time overflowed and failed the job at once.
TEST(Reconcile, ActiveDeadlineBeyondTheTimeRangeNeverPasses) {
  api::TfJob job = WithStatus(testing::NewTfJob(1, 0), "Running");
  job.metadata.name = "test-ads-far";
  job.status.start_time = kNow;
  std::vector<api::Pod> pods = {MakePod("test-ads-far", "worker", 0, PodPhase::kRunning)};
  for (int64_t far : {int64_t{9223372036}, int64_t{100000000000}, std::numeric_limits<int64_t>::max()}) {
    job.spec.run_policy.active_deadline_seconds = far;
    Plan plan = Decide(job, pods, {}, kNow + std::chrono::hours(1));
    EXPECT_FALSE(plan.requeue_after) << far;
    EXPECT_THAT(plan.delete_pods, IsEmpty()) << far;
    if (plan.status) {
      EXPECT_NE(plan.status->conditions.back().type, "Failed") << far;
    }
  }
  job.spec.run_policy.active_deadline_seconds = 7000000000;  // about 222 years: still representable
  Plan plan = Decide(job, pods, {}, kNow + std::chrono::hours(1));
  ASSERT_TRUE(plan.requeue_after);
  EXPECT_EQ(*plan.requeue_after, std::chrono::seconds(7000000000) - std::chrono::hours(1));

  api::TfJob done = WithStatus(testing::NewTfJob(1, 0), "Succeeded");
  done.status.completion_time = api::Time::max() - std::chrono::hours(1);
  done.spec.run_policy.ttl_seconds_after_finished = std::numeric_limits<int32_t>::max();
  Plan ttl = Decide(done, {}, {}, kNow);
  EXPECT_FALSE(ttl.delete_job);
  EXPECT_FALSE(ttl.requeue_after);
}

// TimeUntilDue (issue 25): when the clock alone asks for the next pass, as the passes themselves
// ask (the same requeue_after, zero once due), so a pass that waits for expectations can look again.
TEST(Reconcile, TimeUntilDueTable) {
  using std::chrono::seconds;
  using Due = std::optional<std::chrono::nanoseconds>;
  api::TfJob running = WithStatus(testing::NewTfJob(1, 0), "Running");
  running.status.start_time = kNow;
  running.spec.run_policy.active_deadline_seconds = 100;
  api::TfJob suspended = running;
  suspended.spec.run_policy.suspend = true;
  api::TfJob no_start = running;
  no_start.status.start_time.reset();
  api::TfJob far = running;
  far.spec.run_policy.active_deadline_seconds = std::numeric_limits<int64_t>::max();
  api::TfJob done = WithStatus(testing::NewTfJob(1, 0), "Succeeded");
  done.status.completion_time = kNow;
  done.spec.run_policy.ttl_seconds_after_finished = 30;
  done.spec.run_policy.active_deadline_seconds = 5;  // a finished job's deadline no longer counts
  api::TfJob done_no_ttl = done;
  done_no_ttl.spec.run_policy.ttl_seconds_after_finished.reset();
  api::TfJob other = running;
  other.spec.run_policy.managed_by = "kueue.x-k8s.io/multikueue";
  struct Case {
    const char* id;
    const api::TfJob& job;
    api::Time now;
    Due want;
  };
  const Case cases[] = {
      {"deadline ahead", running, kNow + seconds(40), seconds(60)},
      {"deadline due", running, kNow + seconds(100), seconds(0)},
      {"deadline past", running, kNow + seconds(500), seconds(0)},
      {"suspended", suspended, kNow + seconds(500), std::nullopt},
      {"not started", no_start, kNow, std::nullopt},
      {"beyond 2262", far, kNow, std::nullopt},
      {"ttl ahead", done, kNow + seconds(10), seconds(20)},
      {"ttl due", done, kNow + seconds(30), seconds(0)},
      {"finished without ttl", done_no_ttl, kNow + seconds(10), std::nullopt},
      {"another controller's job", other, kNow + seconds(500), std::nullopt},
  };
  for (const auto& c : cases) EXPECT_EQ(TimeUntilDue(c.job, c.now), c.want) << c.id;
  // The same due time as the pass's own requeue.
  Plan plan = Decide(running, {MakePod("test-tfjob", "worker", 0, PodPhase::kRunning)}, {}, kNow + seconds(40));
  ASSERT_TRUE(plan.requeue_after);
  EXPECT_EQ(*plan.requeue_after, *TimeUntilDue(running, kNow + seconds(40)));
}

// BO1 and BO3: in-place restarts of running pods reach the limit.
TEST(Reconcile, BackoffLimitCountsInPlaceRestarts) {
  api::TfJob job = WithStatus(testing::NewTfJob(4, 2), "Running");
  job.metadata.name = "test-bof-0";
  job.spec.run_policy.clean_pod_policy = "All";
  job.spec.run_policy.backoff_limit = 4;
  job.spec.replica_specs["Worker"]->restart_policy = "OnFailure";
  std::vector<api::Pod> pods;
  for (int i = 0; i < 4; ++i) {
    pods.push_back(MakePod("test-bof-0", "worker", i, PodPhase::kRunning));
    pods.back().container_statuses.push_back({"tensorflow", 1});
  }
  for (int i = 0; i < 2; ++i) pods.push_back(MakePod("test-bof-0", "ps", i, PodPhase::kRunning));
  Plan plan = Decide(job, pods);
  EXPECT_EQ(plan.delete_pods.size(), 6u);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->conditions.back().message,
            "Job test-bof-0 has failed because it has reached the specified backoff limit");
  job.spec.run_policy.backoff_limit = 5;
  EXPECT_THAT(Decide(job, pods).delete_pods, IsEmpty());
}

// D2 / R06: ExitCode 137 again and again with backoffLimit 2: restarted twice, then Failed.
TEST(Reconcile, BackoffLimitCountsRecreations) {
  api::TfJob job = WithStatus(testing::NewTfJob(1, 0), "Running");
  job.spec.run_policy.backoff_limit = 2;
  job.spec.replica_specs["Worker"]->restart_policy = "ExitCode";
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kFailed)};
  testing::WithExitCode(pods[0], 137);
  for (int restarts = 0; restarts < 2; ++restarts) {
    job.status.replica_statuses["Worker"].restarts = restarts;
    Plan plan = Decide(job, pods);
    EXPECT_THAT(Names(plan.delete_pods), ElementsAre("test-tfjob-worker-0")) << restarts;
    ASSERT_TRUE(plan.status);
    EXPECT_EQ(plan.status->conditions.back().type, "Restarting") << restarts;
    EXPECT_EQ(plan.status->replica_statuses["Worker"].restarts, restarts + 1);
  }
  job.status.replica_statuses["Worker"].restarts = 2;
  Plan plan = Decide(job, pods);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->conditions.back().type, "Failed");
  EXPECT_EQ(plan.status->conditions.back().message,
            "Job test-tfjob has failed because it has reached the specified backoff limit");
  EXPECT_THAT(plan.delete_pods, IsEmpty());  // cleanPodPolicy None (D4)
  api::TfJob zero = job;
  zero.spec.run_policy.backoff_limit = 0;
  zero.status.replica_statuses["Worker"].restarts = 0;
  EXPECT_EQ(Decide(zero, pods).status->conditions.back().type, "Failed");  // first failure fails
}

// Issue 14 item 4 (docs/semantics.md 3.8): with backoffLimit 0, upstream's backoff check sees any
// new failed pod first, so even a failure nobody restarts (Never, ExitCode below 128) ends with
// the backoff message; the SDK and dashboards read that condition message.
TEST(Reconcile, BackoffLimitZeroFailsWithTheBackoffMessage) {
  const std::string backoff = "Job test-tfjob has failed because it has reached the specified backoff limit";
  struct Case {
    const char* id;
    const char* policy;
    int exit_code;
    std::optional<int32_t> limit;
    std::string message;
  };
  for (const Case& c :
       {Case{"Never, limit 0", "Never", 1, 0, backoff}, Case{"ExitCode 1, limit 0", "ExitCode", 1, 0, backoff},
        Case{"ExitCode 137, limit 0", "ExitCode", 137, 0, backoff},
        Case{"Never, limit 1", "Never", 1, 1,
             "TFJob default/test-tfjob has failed because 1 Worker replica(s) failed."},
        Case{"ExitCode 1, no limit", "ExitCode", 1, std::nullopt,
             "job \"test-tfjob\" is failing because \"Worker\" replica(s) failed."}}) {
    api::TfJob job = WithStatus(testing::NewTfJob(2, 0), "Running");
    job.spec.run_policy.backoff_limit = c.limit;
    job.spec.replica_specs["Worker"]->restart_policy = c.policy;
    std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kRunning),
                                  MakePod("test-tfjob", "worker", 1, PodPhase::kFailed)};
    testing::WithExitCode(pods[1], c.exit_code);
    Plan plan = Decide(job, pods);
    ASSERT_TRUE(plan.status) << c.id;
    const auto& last = plan.status->conditions.back();
    EXPECT_EQ(last.type + " " + last.reason, "Failed TFJobFailed") << c.id;
    EXPECT_EQ(last.message, c.message) << c.id;
    EXPECT_THAT(plan.create_pods, IsEmpty()) << c.id;
  }
}

// D22: the spec's oddities are one Warning event, recorded with the Created condition (once).
TEST(Reconcile, SpecWarningsAreOneWarningEventWhenTheJobIsCreated) {
  api::TfJob job = testing::NewTfJob(1, 0);
  job.spec.run_policy.clean_pod_policy = "none";
  job.spec.success_policy = "Majority";
  Plan plan = Decide(job);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->conditions.front().type, "Created");
  EXPECT_EQ(plan.create_pods.size(), 1u);  // admitted and run
  std::vector<RenderEvent> warnings;
  for (const auto& e : plan.events)
    if (e.reason == "TFJobSpecWarning") warnings.push_back(e);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].type, api::EventType::kWarning);
  EXPECT_EQ(warnings[0].message,
            "TFJob default/test-tfjob runs with warnings: spec.runPolicy.cleanPodPolicy: unsupported value \"none\" "
            "(supported: \"All\", \"None\", \"Running\"): treated as \"All\", as upstream does: every pod and its "
            "service are deleted when the job finishes; spec.successPolicy: unsupported value \"Majority\" "
            "(supported: \"\", \"AllWorkers\"): treated as \"\", the default, as upstream does: the job succeeds when "
            "worker 0 (or the chief) does");
  api::TfJob again = job;
  again.status = *plan.status;
  for (const auto& e : Decide(again).events) EXPECT_NE(e.reason, "TFJobSpecWarning");
  for (const auto& e : Decide(testing::NewTfJob(1, 0)).events) EXPECT_NE(e.reason, "TFJobSpecWarning");
}

// D22 / 3.11: an unknown cleanPodPolicy cleans up like All, as upstream's clean-up does.
TEST(Reconcile, UnknownCleanPodPolicyCleansUpLikeAll) {
  api::TfJob job = WithStatus(testing::NewTfJob(2, 0), "Succeeded");
  job.spec.run_policy.clean_pod_policy = "none";
  std::vector<api::Pod> pods;
  AddPods(pods, "worker", 0, 1, PodPhase::kSucceeded);
  AddPods(pods, "worker", 1, 1, PodPhase::kRunning);
  EXPECT_EQ(Decide(job, pods).delete_pods.size(), 2u);
}

// Issue 14 item 7 (D28): the terminal status write counts the pods as they are, whatever path
// ends the job (backoff, deadline, ExitCode, status computation), and a later pass of the
// finished job changes nothing. Pods the terminal pass deletes (cleanPodPolicy) are counted as
// being deleted (Running: failed); in a Succeeded job the pods still active are counted as
// succeeded in the same write (3.3 step 3 moved to the terminal pass).
TEST(Reconcile, TerminalStatusCountsThePodsAsTheyAre) {
  struct Case {
    const char* id;
    const char* worker_policy;
    int32_t backoff_limit;  // -1: unset
    int64_t deadline;       // -1: unset
    const char* clean_pod_policy;
    bool chief;
    std::vector<PodPhase> workers;  // worker pods by index
    int32_t worker_exit_code;       // for Failed/Succeeded workers
    api::ReplicaStatus stale;       // the Worker status before this pass
    const char* outcome;
    api::ReplicaStatus worker;  // the Worker status written
  };
  const std::vector<Case> cases = {
      // The report of issue 14: ExitCode 137, backoffLimit 2, after 2 restarts.
      {"backoff-exitcode",
       "ExitCode",
       2,
       -1,
       "None",
       false,
       {PodPhase::kFailed},
       137,
       {1, 0, 0, 2},
       "Failed",
       {0, 0, 1, 2}},
      {"backoff-exitcode-all",
       "ExitCode",
       2,
       -1,
       "All",
       false,
       {PodPhase::kFailed},
       137,
       {1, 0, 0, 2},
       "Failed",
       {0, 0, 1, 2}},
      {"backoff-zero-onfailure",
       "OnFailure",
       0,
       -1,
       "None",
       false,
       {PodPhase::kRunning, PodPhase::kFailed},
       1,
       {2, 0, 0, 0},
       "Failed",
       {1, 0, 1, 0}},
      {"deadline-none",
       "Never",
       -1,
       0,
       "None",
       false,
       {PodPhase::kRunning, PodPhase::kPending},
       0,
       {2, 0, 0, 0},
       "Failed",
       {1, 0, 0, 0}},
      {"deadline-all",
       "Never",
       -1,
       0,
       "All",
       false,
       {PodPhase::kRunning, PodPhase::kSucceeded},
       0,
       {2, 0, 0, 0},
       "Failed",
       {0, 1, 1, 0}},
      {"exitcode-permanent",
       "ExitCode",
       -1,
       -1,
       "Running",
       false,
       {PodPhase::kFailed, PodPhase::kRunning},
       1,
       {2, 0, 0, 1},
       "Failed",
       {0, 0, 2, 1}},
      {"never-failed",
       "Never",
       -1,
       -1,
       "None",
       false,
       {PodPhase::kRunning, PodPhase::kFailed},
       1,
       {2, 0, 0, 0},
       "Failed",
       {1, 0, 1, 0}},
      {"chief-succeeded",
       "Never",
       -1,
       -1,
       "None",
       true,
       {PodPhase::kRunning, PodPhase::kRunning},
       0,
       {2, 0, 0, 0},
       "Succeeded",
       {0, 2, 0, 0}},
      {"chief-succeeded-running",
       "Never",
       -1,
       -1,
       "Running",
       true,
       {PodPhase::kRunning, PodPhase::kFailed},
       1,
       {2, 0, 0, 0},
       "Succeeded",
       {0, 1, 1, 0}},
      {"worker0-succeeded",
       "Never",
       -1,
       -1,
       "None",
       false,
       {PodPhase::kSucceeded, PodPhase::kRunning},
       0,
       {2, 0, 0, 0},
       "Succeeded",
       {0, 2, 0, 0}},
  };
  for (const Case& c : cases) {
    api::TfJob job = WithStatus(testing::NewTfJob(static_cast<int>(c.workers.size()), 0, c.chief), "Running");
    job.status.start_time = kNow - std::chrono::seconds(10);
    job.spec.replica_specs["Worker"]->restart_policy = c.worker_policy;
    job.spec.run_policy.clean_pod_policy = c.clean_pod_policy;
    if (c.backoff_limit >= 0) job.spec.run_policy.backoff_limit = c.backoff_limit;
    if (c.deadline >= 0) job.spec.run_policy.active_deadline_seconds = c.deadline;
    job.status.replica_statuses["Worker"] = c.stale;
    std::vector<api::Pod> pods;
    for (size_t i = 0; i < c.workers.size(); ++i) {
      pods.push_back(MakePod("test-tfjob", "worker", static_cast<int>(i), c.workers[i]));
      if (c.workers[i] == PodPhase::kFailed || c.workers[i] == PodPhase::kSucceeded)
        testing::WithExitCode(pods.back(), c.workers[i] == PodPhase::kSucceeded ? 0 : c.worker_exit_code);
    }
    if (c.chief) {
      pods.push_back(MakePod("test-tfjob", "chief", 0, PodPhase::kSucceeded));
      testing::WithExitCode(pods.back(), 0);
    }
    Plan plan = Decide(job, pods);
    ASSERT_TRUE(plan.status) << c.id;
    EXPECT_EQ(plan.status->conditions.back().type, c.outcome) << c.id;
    EXPECT_EQ(plan.status->replica_statuses["Worker"], c.worker) << c.id;
    if (c.chief) {
      EXPECT_EQ(plan.status->replica_statuses["Chief"], (api::ReplicaStatus{0, 1, 0, 0})) << c.id;
    }
    // Afterwards: the next passes (pods as they were, or deleted as planned, or all gone) write nothing.
    api::TfJob after = job;
    after.status = *plan.status;
    std::vector<api::Pod> kept;
    for (const auto& pod : pods)
      if (std::none_of(plan.delete_pods.begin(), plan.delete_pods.end(),
                       [&](const ChildDeletion& d) { return d.name == pod.meta.name; }))
        kept.push_back(pod);
    for (const auto& left : {pods, kept, std::vector<api::Pod>{}}) {
      Plan next = Decide(after, left, {}, kNow + std::chrono::seconds(5));
      EXPECT_FALSE(next.status) << c.id << " with " << left.size() << " pods left";
    }
  }
}

// D28: the pods that exited are on record once, when the job ends: the chief's exit 0 (upstream
// records it on every reconcile), a worker that failed under Never; none again afterwards.
TEST(Reconcile, TerminalPassRecordsEachExitOnce) {
  api::TfJob job = testing::NewTfJob(2, 0, true);
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "chief", 0, PodPhase::kSucceeded),
                                MakePod("test-tfjob", "worker", 0, PodPhase::kRunning),
                                MakePod("test-tfjob", "worker", 1, PodPhase::kFailed)};
  testing::WithExitCode(pods[0], 0);
  testing::WithExitCode(pods[2], 1);
  Plan plan = Decide(job, pods);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->conditions.back().type, "Succeeded");
  std::vector<std::string> exits;
  for (const auto& e : plan.events)
    if (e.reason == "ExitedWithCode") exits.push_back(std::string(api::EnumName(e.type)) + " " + e.message);
  EXPECT_THAT(exits, ElementsAre("Normal Pod: default.test-tfjob-chief-0 exited with code 0",
                                 "Normal Pod: default.test-tfjob-worker-1 exited with code 1"));
  api::TfJob after = job;
  after.status = *plan.status;
  EXPECT_THAT(Decide(after, pods).events, IsEmpty());
  // While the job runs, a worker that exited 0 is not reported yet (no event on every pass).
  std::vector<api::Pod> running = {MakePod("test-tfjob", "chief", 0, PodPhase::kRunning),
                                   MakePod("test-tfjob", "worker", 0, PodPhase::kSucceeded),
                                   MakePod("test-tfjob", "worker", 1, PodPhase::kRunning)};
  testing::WithExitCode(running[1], 0);
  EXPECT_THAT(Reasons(Decide(job, running,
                             {MakeService("test-tfjob", "chief", 0), MakeService("test-tfjob", "worker", 0),
                              MakeService("test-tfjob", "worker", 1)})),
              IsEmpty());
}

// D21 (issue 14 item 6): a pod disrupted by others is recreated whatever the restart policy, is
// counted in replicaStatuses.<Rt>.disruptions and never in restarts (backoffLimit 0 holds), and
// gets a Warning whose reason names the disruption.
TEST(Reconcile, DisruptedPodsAreRecreatedNotCountedAgainstBackoff) {
  struct Case {
    const char* id;
    const char* policy;
    bool finished;
    // worker-0: a pod in this phase (kUnknown: none), with this disruption reason ("" none) and
    // deletionTimestamp; plus one note from the controller when note_reason is set.
    PodPhase phase;
    const char* pod_disruption;
    bool terminating;
    const char* note_reason;
    std::vector<std::string> deleted, created;
    api::ReplicaStatus worker;
    const char* last_condition;
    std::vector<std::string> reasons;
  };
  const std::vector<Case> cases = {
      {"kubelet-eviction-never",
       "Never",
       false,
       PodPhase::kFailed,
       "TerminationByKubelet",
       false,
       nullptr,
       {"test-tfjob-worker-0"},
       {},
       {0, 0, 1, 0, 1},
       "Running",
       {"Warning TerminationByKubelet"}},
      {"evicted-without-condition",
       "ExitCode",
       false,
       PodPhase::kFailed,
       "Evicted",
       false,
       nullptr,
       {"test-tfjob-worker-0"},
       {},
       {0, 0, 1, 0, 1},
       "Running",
       {"Warning Evicted"}},
      {"pod-gc-onfailure",
       "OnFailure",
       false,
       PodPhase::kFailed,
       "DeletionByPodGC",
       false,
       nullptr,
       {"test-tfjob-worker-0"},
       {},
       {0, 0, 1, 0, 1},
       "Running",
       {"Warning DeletionByPodGC"}},
      {"evicted-still-terminating",
       "Never",
       false,
       PodPhase::kRunning,
       "EvictionByEvictionAPI",
       true,
       "EvictionByEvictionAPI",
       {},
       {},
       {0, 0, 1, 0, 1},
       "Running",
       {"Warning EvictionByEvictionAPI"}},
      {"evicted-and-gone",
       "Never",
       false,
       PodPhase::kUnknown,
       "",
       false,
       "EvictionByEvictionAPI",
       {},
       {"test-tfjob-worker-0"},
       {0, 0, 0, 0, 1},
       "Running",
       {"Warning EvictionByEvictionAPI"}},
      {"kubectl-delete",
       "ExitCode",
       false,
       PodPhase::kUnknown,
       "",
       false,
       "DeletedExternally",
       {},
       {"test-tfjob-worker-0"},
       {0, 0, 0, 0, 1},
       "Running",
       {"Warning DeletedExternally"}},
      {"preemption-announced",
       "Never",
       false,
       PodPhase::kRunning,
       "PreemptionByScheduler",
       false,
       nullptr,
       {},
       {},
       {1, 0, 0, 0, 0},
       "Running",
       {}},
      {"finished-job",
       "Never",
       true,
       PodPhase::kUnknown,
       "",
       false,
       "EvictionByEvictionAPI",
       {},
       {},
       {0, 1, 0, 0, 0},
       "Succeeded",
       {}},
  };
  for (const Case& c : cases) {
    api::TfJob job = WithStatus(testing::NewTfJob(2, 0), c.finished ? "Succeeded" : "Running");
    job.status.start_time = kNow;
    job.spec.run_policy.backoff_limit = 0;
    job.spec.replica_specs["Worker"]->restart_policy = c.policy;
    job.status.replica_statuses["Worker"] = c.finished ? api::ReplicaStatus{0, 1, 0, 0, 0} : api::ReplicaStatus{};
    std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 1, PodPhase::kRunning)};
    if (c.phase != PodPhase::kUnknown) {
      pods.push_back(MakePod("test-tfjob", "worker", 0, c.phase));
      pods.back().disruption_reason = c.pod_disruption;
      if (c.phase == PodPhase::kFailed) testing::WithExitCode(pods.back(), 137);
      if (c.terminating) pods.back().meta.deletion_timestamp = kNow;
    }
    if (c.finished) pods.erase(pods.begin());
    ObservedState o{
        job,          pods, {MakeService("test-tfjob", "worker", 0), MakeService("test-tfjob", "worker", 1)},
        std::nullopt, kNow, {}};
    if (c.note_reason)
      o.disruptions.push_back(
          {"test-tfjob-worker-0", "test-tfjob-worker-0-uid", api::ReplicaType::kWorker, 0, c.note_reason, "evicting"});
    Plan plan = Reconcile(o, {});
    EXPECT_EQ(Names(plan.delete_pods), c.deleted) << c.id;
    EXPECT_EQ(Names(plan.create_pods), c.created) << c.id;
    const api::JobStatus& st = plan.status ? *plan.status : job.status;
    EXPECT_EQ(st.replica_statuses.at("Worker").disruptions, c.worker.disruptions) << c.id;
    EXPECT_EQ(st.replica_statuses.at("Worker").restarts, 0) << c.id;  // D21: never a restart
    EXPECT_EQ(st.conditions.back().type, c.last_condition) << c.id;
    std::vector<std::string> reasons;
    for (const auto& e : plan.events)
      if (e.type == api::EventType::kWarning) reasons.push_back("Warning " + e.reason);
    EXPECT_EQ(reasons, c.reasons) << c.id;
    EXPECT_EQ(plan.disruptions.size(), c.reasons.size()) << c.id;
    EXPECT_EQ(plan.counters.restarted, 0) << c.id;
    if (!c.reasons.empty() && !plan.disruptions.empty() && !plan.events.empty()) {
      EXPECT_EQ(plan.disruptions[0].replica_type, api::ReplicaType::kWorker) << c.id;
      EXPECT_THAT(plan.events.back().message,
                  ::testing::StartsWith("Pod default/test-tfjob-worker-0 was disrupted (" + c.reasons[0].substr(8)))
          << c.id;
      EXPECT_THAT(plan.events.back().message,
                  ::testing::EndsWith("); it is recreated and not counted against backoffLimit"))
          << c.id;
    }
    // The count survives later passes (it is in the status), and a pass without a new
    // disruption adds nothing.
    if (plan.status && !c.finished) {
      api::TfJob next = job;
      next.status = *plan.status;
      ObservedState later{
          next, {MakePod("test-tfjob", "worker", 1, PodPhase::kRunning)}, o.services, std::nullopt, kNow, {}};
      Plan again = Reconcile(later, {});
      const api::JobStatus& st2 = again.status ? *again.status : next.status;
      EXPECT_EQ(st2.replica_statuses.at("Worker").disruptions, c.worker.disruptions) << c.id;
      EXPECT_THAT(again.disruptions, IsEmpty()) << c.id;
    }
  }
}

// Regression (issue 25): a Failed pod that a killed operator began to delete (a deletionTimestamp
// the API server wrote before the killed client's request was dropped) is deleted again once the
// deletion has stalled, without a count (its restart's count was lost with the killed process);
// the pass before that asks to look again when it is due. Nothing is recreated while it exists.
TEST(Reconcile, StalledDeletionOfAnEndedPodIsFinished) {
  api::TfJob job = WithStatus(testing::NewTfJob(1, 0), "Running");
  job.status.start_time = kNow;
  job.spec.run_policy.backoff_limit = 1;
  job.spec.replica_specs["Worker"]->restart_policy = "ExitCode";
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kFailed)};
  testing::WithExitCode(pods[0], 137);
  pods[0].meta.deletion_timestamp = kNow - std::chrono::seconds(2);
  Plan early = Decide(job, pods);
  EXPECT_THAT(early.delete_pods, IsEmpty());
  EXPECT_THAT(early.create_pods, IsEmpty());
  EXPECT_EQ(early.requeue_after, std::chrono::nanoseconds(std::chrono::seconds(3)));
  Plan due = Decide(job, pods, {}, kNow + std::chrono::seconds(3));
  EXPECT_EQ(due.delete_pods, (std::vector<ChildDeletion>{{"test-tfjob-worker-0", pods[0].meta.uid}}));
  EXPECT_THAT(due.create_pods, IsEmpty());
  EXPECT_EQ(due.counters.restarted, 0);
  EXPECT_FALSE(due.status && due.status->replica_statuses["Worker"].restarts != 0);
  EXPECT_FALSE(due.status && IsFinished(*due.status));
}

// The same in a finished job: its clean-up comes after the status that ended it (3.11), so an
// operator killed mid-DELETE of an ended pod (cleanPodPolicy All) leaves it stalled there too.
TEST(Reconcile, StalledDeletionInAFinishedJobIsFinished) {
  api::TfJob job = WithStatus(testing::NewTfJob(1, 0), "Failed");
  job.status.completion_time = kNow;
  job.spec.run_policy.clean_pod_policy = "All";
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kFailed)};
  testing::WithExitCode(pods[0], 1);
  pods[0].meta.deletion_timestamp = kNow - std::chrono::seconds(2);
  Plan early = Decide(job, pods);
  EXPECT_THAT(early.delete_pods, IsEmpty());
  EXPECT_EQ(early.requeue_after, std::chrono::nanoseconds(std::chrono::seconds(3)));
  Plan due = Decide(job, pods, {}, kNow + std::chrono::seconds(3));
  EXPECT_EQ(due.delete_pods, (std::vector<ChildDeletion>{{"test-tfjob-worker-0", pods[0].meta.uid}}));
  EXPECT_THAT(due.create_pods, IsEmpty());
  EXPECT_FALSE(due.status) << "a later pass of a finished job changed its status";
}

// D21: a noted deletion of an index the spec no longer has is a scale-down, not a disruption.
TEST(Reconcile, ScaledDownPodIsNotADisruption) {
  api::TfJob job = WithStatus(testing::NewTfJob(2, 0), "Running");
  ObservedState o{job, {}, {}, std::nullopt, kNow, {}};
  o.disruptions.push_back({"test-tfjob-worker-3", "u3", api::ReplicaType::kWorker, 3, "DeletedExternally", ""});
  Plan plan = Reconcile(o, {});
  EXPECT_THAT(plan.disruptions, IsEmpty());
  EXPECT_EQ(plan.status->replica_statuses["Worker"].disruptions, 0);
}

// D21 with D28: a job that ends keeps its disruption count in the terminal status.
TEST(Reconcile, TerminalStatusKeepsTheDisruptions) {
  api::TfJob job = WithStatus(testing::NewTfJob(1, 0), "Running");
  job.status.replica_statuses["Worker"] = {1, 0, 0, 0, 3};
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kSucceeded)};
  testing::WithExitCode(pods[0], 0);
  Plan plan = Decide(job, pods);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->conditions.back().type, "Succeeded");
  EXPECT_EQ(plan.status->replica_statuses["Worker"], (api::ReplicaStatus{0, 1, 0, 0, 3}));
}

// D29 (issue 14 item 8): with a CRD whose status schema prunes restarts, the counts are kept in
// an annotation, read back as the larger of both, and backoffLimit holds.
TEST(Reconcile, CountersAnnotationKeepsTheBackoffCount) {
  api::TfJob job = WithStatus(testing::NewTfJob(1, 0), "Running");
  job.status.start_time = kNow;
  job.spec.run_policy.backoff_limit = 2;
  job.spec.replica_specs["Worker"]->restart_policy = "ExitCode";
  std::vector<api::Pod> failed = {MakePod("test-tfjob", "worker", 0, PodPhase::kFailed)};
  testing::WithExitCode(failed[0], 137);
  std::vector<api::Service> svcs = {MakeService("test-tfjob", "worker", 0)};
  ReconcileOptions pruning;
  pruning.counters_in_annotation = true;
  auto decide = [&](const api::TfJob& j, const std::vector<api::Pod>& pods, const ReconcileOptions& o) {
    return Reconcile(ObservedState{j, pods, svcs, std::nullopt, kNow, {}}, o);
  };
  // First restart: the annotation is planned (the glue writes it before deleting the pod).
  Plan first = decide(job, failed, pruning);
  EXPECT_THAT(Names(first.delete_pods), ElementsAre("test-tfjob-worker-0"));
  ASSERT_TRUE(first.counters_annotation);
  EXPECT_EQ(*first.counters_annotation, R"({"Worker":{"restarts":1}})");
  EXPECT_FALSE(decide(job, failed, {}).counters_annotation);  // our CRD: the status keeps it
  // The status lost restarts to the schema; the annotation says 2: the next failure is over the limit.
  api::TfJob pruned = job;
  pruned.metadata.annotations[std::string(kCountersAnnotation)] = R"({"Worker":{"restarts":2}})";
  Plan over = decide(pruned, failed, pruning);
  ASSERT_TRUE(over.status);
  EXPECT_EQ(over.status->conditions.back().message,
            "Job test-tfjob has failed because it has reached the specified backoff limit");
  EXPECT_EQ(over.status->replica_statuses["Worker"], (api::ReplicaStatus{0, 0, 1, 2, 0}));
  EXPECT_FALSE(over.counters_annotation);  // unchanged
  // Steady state: the status without restarts is not rewritten on every pass.
  std::vector<api::Pod> running = {MakePod("test-tfjob", "worker", 0, PodPhase::kRunning)};
  api::TfJob steady = pruned;
  steady.status.replica_statuses["Worker"] = {1, 0, 0, 0, 0};
  SetCondition(steady.status, "Running", "True", "TFJobRunning", RunningMessage(steady), kNow);
  Plan quiet = decide(steady, running, pruning);
  EXPECT_FALSE(quiet.status);
  EXPECT_FALSE(quiet.counters_annotation);
  // Garbage in the annotation is ignored.
  api::TfJob garbage = job;
  garbage.metadata.annotations[std::string(kCountersAnnotation)] = "{not json";
  EXPECT_EQ(decide(garbage, failed, pruning).status->replica_statuses["Worker"].restarts, 1);
}

// TT1/DU4/DU5: TTL after completion deletes the job, or requeues until then.
TEST(Reconcile, TtlAfterFinished) {
  api::TfJob job = WithStatus(testing::NewTfJob(1, 0), "Succeeded");
  job.spec.run_policy.ttl_seconds_after_finished = 5;
  job.status.completion_time = kNow - std::chrono::seconds(4);
  Plan wait = Decide(job);
  EXPECT_FALSE(wait.delete_job);
  ASSERT_TRUE(wait.requeue_after);
  EXPECT_EQ(*wait.requeue_after, std::chrono::seconds(1));
  job.status.completion_time = kNow - std::chrono::seconds(6);
  EXPECT_TRUE(Decide(job).delete_job);
  job.spec.run_policy.ttl_seconds_after_finished = 0;
  job.status.completion_time = kNow;
  EXPECT_TRUE(Decide(job).delete_job);
}

// SU1-SU4 of 4.11 and R07.
TEST(Reconcile, SuspendAndResume) {
  api::TfJob job = testing::NewTfJob(1, 0, true);
  job.metadata.name = "test-job";
  job.metadata.ns = "ns1";
  job.spec.run_policy.suspend = true;
  Plan created = Decide(job);  // SU1
  EXPECT_THAT(created.create_pods, IsEmpty());
  ASSERT_TRUE(created.status);
  EXPECT_FALSE(created.status->start_time);
  EXPECT_THAT(Conditions(*created.status), ElementsAre("Created True TFJobCreated", "Suspended True TFJobSuspended"));
  EXPECT_EQ(created.status->conditions[1].message, "TFJob test-job is suspended.");

  api::TfJob running = job;  // SU2 then SU3
  running.spec.run_policy.suspend = false;
  std::vector<api::Pod> pods = {MakePod("test-job", "chief", 0, PodPhase::kRunning),
                                MakePod("test-job", "worker", 0, PodPhase::kRunning)};
  std::vector<api::Service> svcs = {MakeService("test-job", "chief", 0), MakeService("test-job", "worker", 0)};
  Plan run = Decide(running, pods, svcs);
  ASSERT_TRUE(run.status);
  EXPECT_THAT(Conditions(*run.status), ElementsAre("Created True TFJobCreated", "Running True TFJobRunning"));
  EXPECT_EQ(run.status->conditions[1].message, "TFJob ns1/test-job is running.");
  running.status = *run.status;
  running.spec.run_policy.suspend = true;
  Plan suspend = Decide(running, pods, svcs, kNow + std::chrono::seconds(10));
  EXPECT_EQ(suspend.delete_pods.size(), 2u);
  EXPECT_EQ(suspend.delete_services.size(), 2u);
  ASSERT_TRUE(suspend.status);
  EXPECT_THAT(Conditions(*suspend.status), ElementsAre("Created True TFJobCreated", "Running False TFJobSuspended",
                                                       "Suspended True TFJobSuspended"));
  EXPECT_EQ(suspend.status->replica_statuses["Worker"].active, 0);
  EXPECT_EQ(suspend.status->start_time, kNow);  // unchanged (D8)
  EXPECT_THAT(Reasons(suspend), ElementsAre("Normal TFJobSuspended"));
  // A second pass while suspended writes and records nothing new (D9).
  api::TfJob still = running;
  still.status = *suspend.status;
  Plan again = Decide(still, {}, {}, kNow + std::chrono::seconds(20));
  EXPECT_FALSE(again.status);
  EXPECT_THAT(again.events, IsEmpty());
  // SU4: resume.
  still.spec.run_policy.suspend = false;
  Plan resume = Decide(still, {}, {}, kNow + std::chrono::seconds(30));
  EXPECT_EQ(resume.create_pods.size(), 2u);
  ASSERT_TRUE(resume.status);
  EXPECT_EQ(resume.status->start_time, kNow + std::chrono::seconds(30));
  EXPECT_THAT(Conditions(*resume.status),
              ElementsAre("Created True TFJobCreated", "Running False TFJobSuspended", "Suspended False TFJobResumed"));
  EXPECT_THAT(Reasons(resume), ElementsAre("Normal TFJobResumed"));
}

// MB1 / R09: another controller's job: nothing at all.
TEST(Reconcile, ManagedByMultiKueueIsSkipped) {
  api::TfJob job = testing::NewTfJob(1, 0);
  job.spec.run_policy.managed_by = "kueue.x-k8s.io/multikueue";
  Plan plan = Decide(job);
  EXPECT_TRUE(plan.skip);
  EXPECT_FALSE(plan.status);
  EXPECT_THAT(plan.create_pods, IsEmpty());
  job.spec.run_policy.managed_by = "kubeflow.org/training-operator";
  EXPECT_FALSE(Decide(job).skip);
}

// D18 / R03: a job being deleted gets nothing.
TEST(Reconcile, DeletingJobIsSkipped) {
  api::TfJob job = testing::NewTfJob(2, 0);
  job.metadata.deletion_timestamp = kNow;
  EXPECT_TRUE(Decide(job).skip);
}

// D13 / R18: an invalid job fails with every error; nothing is created.
TEST(Reconcile, InvalidJobFailsValidation) {
  api::TfJob job = testing::NewTfJob(1, 0);
  job.spec.replica_specs["Worker"]->replicas = -1;
  job.spec.replica_specs["Trainer"] = job.spec.replica_specs["Worker"];
  Plan plan = Decide(job);
  EXPECT_THAT(plan.create_pods, IsEmpty());
  ASSERT_TRUE(plan.status);
  const auto& last = plan.status->conditions.back();
  EXPECT_EQ(last.type, "Failed");
  EXPECT_EQ(last.reason, "TFJobFailedValidation");
  EXPECT_THAT(last.message, ::testing::HasSubstr("spec.tfReplicaSpecs[Trainer]: Unsupported value: \"Trainer\""));
  EXPECT_THAT(last.message, ::testing::HasSubstr("spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1"));
  EXPECT_THAT(Reasons(plan), ElementsAre("Warning TFJobFailedValidation"));
  api::TfJob again = job;
  again.status = *plan.status;
  Plan second = Decide(again);
  EXPECT_FALSE(second.status);
  EXPECT_THAT(second.events, IsEmpty());
}

// R14: pods with our labels but another owner are not counted, adopted or deleted.
TEST(Reconcile, PodsOfAnotherOwnerAreIgnored) {
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kFailed, "someone-else"),
                                MakePod("test-tfjob", "worker", 5, PodPhase::kRunning, "someone-else")};
  Plan plan = Decide(testing::NewTfJob(1, 0), pods);
  EXPECT_THAT(Names(plan.create_pods), ElementsAre("test-tfjob-worker-0"));
  EXPECT_THAT(plan.delete_pods, IsEmpty());
  EXPECT_EQ(plan.status->replica_statuses["Worker"], api::ReplicaStatus{});
}

// D5 / R19: the chief succeeded while a worker failed: Succeeded, one terminal condition.
TEST(Reconcile, SuccessWinsOverFailureInOnePass) {
  api::TfJob job = testing::NewTfJob(2, 1, true);
  job.spec.run_policy.clean_pod_policy = "Running";
  std::vector<api::Pod> pods = {
      MakePod("test-tfjob", "chief", 0, PodPhase::kSucceeded), MakePod("test-tfjob", "worker", 0, PodPhase::kFailed),
      MakePod("test-tfjob", "worker", 1, PodPhase::kRunning), MakePod("test-tfjob", "ps", 0, PodPhase::kRunning)};
  Plan plan = Decide(job, pods);
  ASSERT_TRUE(plan.status);
  EXPECT_THAT(Conditions(*plan.status), ElementsAre("Created True TFJobCreated", "Succeeded True TFJobSucceeded"));
  EXPECT_THAT(Reasons(plan), ElementsAre("Normal TFJobSucceeded", "Warning TFJobFailed"));
  EXPECT_THAT(Names(plan.delete_pods), UnorderedElementsAreArray({"test-tfjob-ps-0", "test-tfjob-worker-1"}));
}

// D6: a worker restarting does not hide a PS that failed for good.
TEST(Reconcile, RestartingDoesNotMaskAPermanentFailure) {
  api::TfJob job = testing::NewTfJob(2, 1);
  job.spec.replica_specs["Worker"]->restart_policy = "OnFailure";
  SetCondition(job.status, "Restarting", "True", "TFJobRestarting", "", kNow);
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kFailed),
                                MakePod("test-tfjob", "worker", 1, PodPhase::kRunning),
                                MakePod("test-tfjob", "ps", 0, PodPhase::kFailed)};
  Plan plan = Decide(job, pods);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->conditions.back().type, "Failed");
  EXPECT_EQ(plan.status->conditions.back().message,
            "TFJob default/test-tfjob has failed because 1 PS replica(s) failed.");
}

// D10: several types restart in one pass: a deterministic message.
TEST(Reconcile, RestartMessageListsTypesInFixedOrder) {
  api::TfJob job = testing::NewTfJob(1, 1);
  job.spec.replica_specs["Worker"]->restart_policy = "OnFailure";
  job.spec.replica_specs["PS"]->restart_policy = "Always";
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kFailed),
                                MakePod("test-tfjob", "ps", 0, PodPhase::kFailed)};
  Plan plan = Decide(job, pods);
  ASSERT_TRUE(plan.status);
  EXPECT_EQ(plan.status->conditions.back().message,
            "job test-tfjob is restarting because PS, Worker replica(s) failed.");
}

// Success rules of 3.6: worker 0 by default, every worker with AllWorkers.
TEST(Reconcile, SuccessPolicies) {
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kSucceeded),
                                MakePod("test-tfjob", "worker", 1, PodPhase::kRunning)};
  testing::WithExitCode(pods[0], 0);
  EXPECT_EQ(Decide(testing::NewTfJob(2, 0), pods).status->conditions.back().type, "Succeeded");
  api::TfJob all = testing::NewTfJob(2, 0);
  all.spec.success_policy = "AllWorkers";
  EXPECT_EQ(Decide(all, pods).status->conditions.back().type, "Running");
}

// R12: a pending, unschedulable pod is reported with the scheduler's reason.
TEST(Reconcile, UnschedulablePodIsReported) {
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kPending)};
  pods[0].conditions.push_back(
      {"PodScheduled", "False", "Unschedulable", "0/4 nodes are available: 4 Insufficient cpu.", kNow});
  Plan plan = Decide(testing::NewTfJob(1, 0), pods, {MakeService("test-tfjob", "worker", 0)});
  ASSERT_EQ(plan.events.size(), 1u);
  EXPECT_EQ(plan.events[0].reason, "Unschedulable");
  EXPECT_EQ(plan.events[0].message,
            "Error pod test-tfjob-worker-0 condition message: 0/4 nodes are available: 4 Insufficient cpu.");
}

// Gang scheduling: the PodGroup first; Volcano holds pods back while it is Pending.
TEST(Reconcile, VolcanoWaitsForThePodGroup) {
  ReconcileOptions options;
  options.render.gang_scheduler_name = "volcano";
  ObservedState o{testing::NewTfJob(2, 0), {}, {}, std::nullopt, kNow};
  Plan first = Reconcile(o, options);
  ASSERT_TRUE(first.create_pod_group);
  EXPECT_THAT(first.create_pods, IsEmpty());
  o.pod_group = PodGroupState{"Pending", "default", (*first.create_pod_group)["spec"]};
  EXPECT_THAT(Reconcile(o, options).create_pods, IsEmpty());
  o.pod_group->phase = "Inqueue";
  Plan go = Reconcile(o, options);
  EXPECT_EQ(go.create_pods.size(), 2u);
  EXPECT_FALSE(go.update_pod_group);
  ReconcileOptions plugins;
  plugins.render.gang_scheduler_name = "scheduler-plugins";
  ObservedState p{testing::NewTfJob(2, 0), {}, {}, std::nullopt, kNow};
  Plan sp = Reconcile(p, plugins);
  EXPECT_TRUE(sp.create_pod_group);
  EXPECT_EQ(sp.create_pods.size(), 2u);  // scheduler-plugins never waits
}

// D9: a finished gang job's PodGroup is deleted with one JobTerminated event, none once it is gone.
TEST(Reconcile, FinishedGangJobDeletesItsPodGroupOnce) {
  ReconcileOptions options;
  options.render.gang_scheduler_name = "volcano";
  ObservedState o{WithStatus(testing::NewTfJob(2, 0), "Succeeded"), {}, {}, std::nullopt, kNow};
  o.pod_group = PodGroupState{"Running", "default", nlohmann::json::object()};
  Plan plan = Reconcile(o, options);
  EXPECT_TRUE(plan.delete_pod_group);
  EXPECT_THAT(Reasons(plan), ElementsAre("Normal JobTerminated"));
  o.pod_group.reset();
  Plan after = Reconcile(o, options);
  EXPECT_FALSE(after.delete_pod_group);
  EXPECT_THAT(after.events, IsEmpty());
}

// D27: kube-scheduler's gang scheduling: the Workload and the PodGroup with the pods (nothing
// waits), never an update of the immutable PodGroup; suspend and finish delete both.
TEST(Reconcile, KubernetesGangWorkloadAndPodGroup) {
  ReconcileOptions options;
  options.render.gang_scheduler_name = "kubernetes";
  struct Case {
    std::string name;
    bool pod_group, workload, suspend, finished;
    bool create_workload, create_pod_group, delete_pod_group, delete_workload;
    size_t pods;
  };
  const std::vector<Case> cases = {
      {"new job", false, false, false, false, true, true, false, false, 2},
      {"both exist", true, true, false, false, false, false, false, false, 2},
      {"workload lost", true, false, false, false, true, false, false, false, 2},
      {"pod group lost", false, true, false, false, false, true, false, false, 2},
      {"suspended", true, true, true, false, false, false, true, true, 0},
      {"suspended, both gone", false, false, true, false, false, false, false, false, 0},
      {"finished", true, true, false, true, false, false, true, true, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    api::TfJob job = testing::NewTfJob(2, 0);
    job.spec.run_policy.suspend = c.suspend;
    if (c.finished) job = WithStatus(job, "Succeeded");
    ObservedState o{job, {}, {}, std::nullopt, kNow};
    o.workload_exists = c.workload;
    // A spec that differs from the desired one: a native PodGroup is still never updated.
    if (c.pod_group) o.pod_group = PodGroupState{"", "", nlohmann::json::object()};
    Plan plan = Reconcile(o, options);
    EXPECT_EQ(plan.create_workload.has_value(), c.create_workload);
    EXPECT_EQ(plan.create_pod_group.has_value(), c.create_pod_group);
    EXPECT_FALSE(plan.update_pod_group);
    EXPECT_EQ(plan.delete_pod_group, c.delete_pod_group);
    EXPECT_EQ(plan.delete_workload, c.delete_workload);
    EXPECT_EQ(plan.create_pods.size(), c.pods);
    if (plan.create_workload) {
      EXPECT_EQ((*plan.create_workload)["kind"], "Workload");
    }
    if (plan.create_pod_group) {
      EXPECT_EQ((*plan.create_pod_group)["apiVersion"], "scheduling.k8s.io/v1alpha2");
    }
    const PodRenderer renderer(job, options.render);
    for (const auto& pod : plan.create_pods)
      EXPECT_EQ(renderer.Render(pod.type, pod.index)["spec"]["schedulingGroup"]["podGroupName"], "test-tfjob");
  }
}

// D31: on v1beta1 the gang's minCount follows the job (it is mutable there); v1alpha2's is
// immutable, and a gang never turns basic or back (NoSet/NoUnset) in either version.
TEST(Reconcile, NativeMinCountUpdatedOnlyOnV1beta1) {
  struct Case {
    std::string name;
    NativeGangApi api;
    std::string observed_spec;
    std::optional<int64_t> updated_to;
  };
  const std::vector<Case> cases = {
      {"v1beta1, minCount changed", NativeGangApi::kV1beta1, R"({"schedulingPolicy":{"gang":{"minCount":4}}})", 2},
      {"v1beta1, same minCount, server defaults differ", NativeGangApi::kV1beta1,
       R"({"schedulingPolicy":{"gang":{"minCount":2}},"priority":0,"disruptionMode":{"all":{}}})", std::nullopt},
      {"v1beta1, basic stays basic", NativeGangApi::kV1beta1, R"({"schedulingPolicy":{"basic":{}}})", std::nullopt},
      {"v1alpha2, minCount changed: immutable", NativeGangApi::kV1alpha2,
       R"({"schedulingPolicy":{"gang":{"minCount":4}}})", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ReconcileOptions options;
    options.render.gang_scheduler_name = "kubernetes";
    options.render.native_gang_api = c.api;
    api::TfJob job = testing::NewTfJob(2, 0);  // two workers: minCount 2
    ObservedState o{job, {}, {}, std::nullopt, kNow};
    o.workload_exists = true;
    const nlohmann::json spec = nlohmann::json::parse(c.observed_spec);
    o.pod_group = PodGroupState{"", "", spec, api::GangMinCountOf(spec)};  // as decoded (api/pod_group.h)
    Plan plan = Reconcile(o, options);
    EXPECT_FALSE(plan.create_pod_group);
    EXPECT_FALSE(plan.create_workload);
    ASSERT_EQ(plan.update_pod_group.has_value(), c.updated_to.has_value());
    if (c.updated_to) {
      EXPECT_EQ((*plan.update_pod_group)["apiVersion"], "scheduling.k8s.io/v1beta1");
      EXPECT_EQ(NativeGangMinCount((*plan.update_pod_group)["spec"]), c.updated_to);
    }
  }
}

// D5: a finished job edited into an invalid spec keeps its outcome; it is not failed again.
TEST(Reconcile, FinishedJobIsNotFailedByALaterInvalidEdit) {
  api::TfJob job = WithStatus(testing::NewTfJob(1, 0), "Succeeded");
  job.spec.replica_specs["Worker"]->replicas = -1;
  Plan plan = Decide(job);
  const api::JobStatus& status = plan.status ? *plan.status : job.status;
  EXPECT_TRUE(IsSucceeded(status));
  EXPECT_FALSE(IsFailed(status));
  EXPECT_THAT(Reasons(plan), ::testing::Not(::testing::Contains("Warning TFJobFailedValidation")));
  EXPECT_THAT(plan.create_pods, IsEmpty());
}

TEST(Reconcile, UnchangedStatusIsNotWritten) {
  std::vector<api::Pod> pods;
  AddPods(pods, "worker", 0, 2, PodPhase::kRunning);
  std::vector<api::Service> svcs;
  AddServices(svcs, "worker", 2);
  Plan first = Decide(testing::NewTfJob(2, 0), pods, svcs);
  ASSERT_TRUE(first.status);
  api::TfJob job = testing::NewTfJob(2, 0);
  job.status = *first.status;
  Plan second = Decide(job, pods, svcs, kNow + std::chrono::seconds(5));
  EXPECT_FALSE(second.status);  // D14: only when changed
  EXPECT_THAT(second.create_pods, IsEmpty());
  EXPECT_THAT(second.events, IsEmpty());
}

// D30 as a table: whether a plan's status waits, and how long.
TEST(Reconcile, CountOnlyStatusWait) {
  using std::chrono::milliseconds;
  using std::chrono::nanoseconds;
  api::JobStatus cached;
  SetCondition(cached, kConditionCreated, "True", "TFJobCreated", "", kNow);
  cached.replica_statuses["Worker"].active = 1;
  api::JobStatus active = cached;
  active.replica_statuses["Worker"].active = 2;
  api::JobStatus running = active;
  SetCondition(running, kConditionRunning, "True", "TFJobRunning", "", kNow);
  struct Case {
    const char* name;
    std::optional<api::JobStatus> status;
    std::optional<nanoseconds> since;
    nanoseconds interval;
    std::optional<nanoseconds> wait;
  };
  const std::vector<Case> cases = {
      {"no status to write", std::nullopt, milliseconds(100), milliseconds(1000), std::nullopt},
      {"active only, within the interval", active, milliseconds(100), milliseconds(1000), milliseconds(900)},
      {"active only, just within", active, milliseconds(999), milliseconds(1000), milliseconds(1)},
      {"active only, the interval passed", active, milliseconds(1000), milliseconds(1000), std::nullopt},
      {"active only, no write remembered", active, std::nullopt, milliseconds(1000), std::nullopt},
      {"active only, interval zero", active, milliseconds(0), nanoseconds(0), std::nullopt},
      {"a condition too", running, milliseconds(100), milliseconds(1000), std::nullopt},
      {"the same status", cached, milliseconds(100), milliseconds(1000), std::nullopt},
  };
  for (const auto& c : cases) {
    Plan plan;
    plan.status = c.status;
    EXPECT_EQ(CountOnlyStatusWait(cached, plan, c.since, c.interval), c.wait) << c.name;
  }
}

TEST(Reconcile, HoldStatusDropsTheWriteAndLooksAgainAtTheLatest) {
  using std::chrono::milliseconds;
  Plan plan;
  plan.status = api::JobStatus{};
  HoldStatus(plan, milliseconds(700));
  Plan expected;
  expected.requeue_after = milliseconds(700);
  EXPECT_EQ(plan, expected);
  Plan sooner;
  sooner.status = api::JobStatus{};
  sooner.requeue_after = milliseconds(200);
  HoldStatus(sooner, milliseconds(700));
  expected.requeue_after = milliseconds(200);
  EXPECT_EQ(sooner, expected);
}

}  // namespace
}  // namespace tfjob::core
