// PlanApplier against the in-process FakeApiServer through the real RestClient, on a FakeClock:
// slow start, partial failures and expectations, AlreadyExists, uid-preconditioned deletes, the
// status merge patch, the D29 annotation first, the TTL delete, and the write pool's bound.
#include "operator/plan_applier.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <thread>

#include "api/defaults.h"
#include "api/object_key.h"
#include "api/tfjob_json.h"
#include "operator/resources.h"
#include "testing/fake_api_server.h"
#include "testing/fake_clock.h"
#include "tfjob/core/conditions.h"

namespace tfjob::operator_ {
namespace {

using nlohmann::json;

struct Fixture {
  FakeClock clock;
  testing::FakeApiServer server{clock};
  kube::RestClient client{server, clock, testing::UnthrottledClientOptions()};
  controller::Registry registry;
  controller::EventRecorder events{client, clock, Logger(), &registry, {.spam_burst = 1000000}};
  controller::Expectations expectations{clock};
  controller::WritePool pool;
  RestObjectWriter writer{client};
  std::mutex mu;
  std::vector<std::string> deleting, delete_done;
  std::map<std::string, json> wrote;
  PlanApplier applier;

  explicit Fixture(int pool_size = 16)
      : pool(pool_size),
        applier(writer, pool, expectations, events, registry, nullptr,
                PlanApplierHooks{[this](const std::string& key, const json& o) {
                                   std::lock_guard lock(mu);
                                   wrote[key] = o;
                                 },
                                 [this](const std::string&, const std::string& uid) {
                                   std::lock_guard lock(mu);
                                   deleting.push_back(uid);
                                 },
                                 [this](const std::string& uid) {
                                   std::lock_guard lock(mu);
                                   delete_done.push_back(uid);
                                 }}) {}
  ~Fixture() { events.Stop(); }

  // The job as the server created it, and the plan of its first pass (no pods yet).
  api::TfJob CreateJob(const std::string& name, int workers) {
    auto created = server.Create(kTfJobs, "default", testing::WorkerJobObject(name, workers));
    EXPECT_TRUE(created.ok()) << created.status().message();
    auto job = api::DecodeTfJobStrict(*created);
    EXPECT_TRUE(job.ok()) << job.status().message();
    return *job;
  }
  core::Plan FirstPlan(const api::TfJob& job) {
    core::ObservedState observed{job, {}, {}, std::nullopt, clock.Now(), {}};
    return core::Reconcile(observed, {});
  }
  int Creates() { return server.CountRequests("create", "pods") + server.CountRequests("create", "services"); }
  // The events the recorder wrote (or tried to: with one clock instant their names collide).
  int EventsWithReason(const std::string& reason) {
    events.Flush();
    int n = 0;
    for (const auto& r : server.requests())
      if (r.resource == "events" && r.verb == "create" && json::parse(r.body).value("reason", "") == reason) ++n;
    return n;
  }
};

// The services of a first pass's replicas in the applier's order (each replica's pod goes once
// its service exists, D17).
std::vector<std::pair<std::string, std::string>> Items(const core::Plan& plan) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : plan.create_pods) out.emplace_back("services", p.name);
  return out;
}

// Fails every create of `item` with `code`.
testing::Fault FailCreateOf(const std::pair<std::string, std::string>& item, long code) {
  return {
      .verb = "create",
      .resource = item.first,
      .when = [name = item.second](
                  const testing::FakeRequest& r) { return json::parse(r.body)["metadata"].value("name", "") == name; },
      .code = code,
      .times = -1};
}

// D17: slow start as a window of creates: one, then two more for each that succeeds, nothing new
// after a failure (what was queued still goes), every service before the pods and a replica's pod
// only once its service exists. With one write thread (FIFO) the order is fixed (services 0-7,
// then pods 0-7): when service k fails, 2k+1 creates have been handed to the pool.
TEST(PlanApplier, SlowStartWindowDoublesAndStopsAtTheFirstFailure) {
  const std::vector<std::pair<size_t, int>> fail_then_sent = {{0, 1}, {1, 3},  {2, 5},  {3, 7},
                                                              {4, 9}, {5, 11}, {6, 13}, {7, 15}};
  for (auto [fail, sent] : fail_then_sent) {
    Fixture f(1);
    api::TfJob job = f.CreateJob("big", 8);
    core::Plan plan = f.FirstPlan(job);
    auto items = Items(plan);
    ASSERT_EQ(items.size(), 8u);
    f.server.AddFault(FailCreateOf(items[fail], 500));
    Status s = f.applier.Apply(job, plan, Logger());
    EXPECT_EQ(s.code(), StatusCode::kUnavailable) << "item " << fail;
    EXPECT_EQ(f.Creates(), sent) << "item " << fail << " failed";
  }
  Fixture f;
  api::TfJob job = f.CreateJob("big", 8);
  EXPECT_TRUE(f.applier.Apply(job, f.FirstPlan(job), Logger()).ok());
  EXPECT_EQ(f.Creates(), 16);
  EXPECT_EQ(f.server.List(kube::kPods).size(), 8u);
}

// A systematic rejection (quota, admission: 422) costs one request, not one per child.
TEST(PlanApplier, SystematicRejectionCostsOneRequest) {
  Fixture f;
  api::TfJob job = f.CreateJob("quota", 8);
  // Every create of a child is refused (events are creates too: they pass).
  f.server.AddFault({.verb = "create",
                     .when = [](const testing::FakeRequest& r) { return r.resource != "events"; },
                     .code = 422,
                     .message = "exceeded quota",
                     .times = -1});
  Status s = f.applier.Apply(job, f.FirstPlan(job), Logger());
  EXPECT_EQ(s.code(), StatusCode::kInvalid);
  EXPECT_THAT(s.message(), ::testing::HasSubstr("exceeded quota"));
  EXPECT_EQ(f.Creates(), 1);
  EXPECT_TRUE(f.expectations.Satisfied("default/quota")) << "nothing was created: nothing to wait for";
  EXPECT_EQ(f.EventsWithReason("FailedCreateService"), 1);
}

// Some creates fail: the error is returned, and only the successful creates stay expected (their
// watch events will come); the failed and the unsent ones are lowered. One write thread (the
// order above): services 0 and 1 succeed, 2 fails while 3 and 4 are queued (they go, and
// succeed); services 5-7 and every pod are never sent.
TEST(PlanApplier, PartialFailureLowersExpectationsOnlyForWhatFailed) {
  Fixture f(1);
  api::TfJob job = f.CreateJob("partial", 8);
  core::Plan plan = f.FirstPlan(job);
  f.server.AddFault(FailCreateOf(Items(plan)[2], 500));
  EXPECT_FALSE(f.applier.Apply(job, plan, Logger()).ok());
  EXPECT_EQ(f.Creates(), 5);
  const std::string key = "default/partial";
  for (int seen = 0; seen < 4; ++seen) {
    EXPECT_FALSE(f.expectations.Satisfied(key)) << seen;
    f.expectations.CreationObserved(key);  // the informer sees one of the 4 created
  }
  EXPECT_TRUE(f.expectations.Satisfied(key)) << "expectations kept for a create that failed or was never sent";
  EXPECT_EQ(f.EventsWithReason("SuccessfulCreateService"), 4);
  EXPECT_EQ(f.EventsWithReason("SuccessfulCreatePod"), 0);
  EXPECT_EQ(f.EventsWithReason("FailedCreateService"), 1);
  EXPECT_EQ(f.server.Get(kube::kPods, "default", Items(plan)[2].second), std::nullopt) << "a pod without its service";
}

// D17: a replica's pod is created only once its own service exists: with 16 write threads,
// every pod's create comes after its service's.
TEST(PlanApplier, APodComesAfterItsOwnService) {
  Fixture f;
  api::TfJob job = f.CreateJob("order", 40);
  core::Plan plan = f.FirstPlan(job);
  ASSERT_TRUE(f.applier.Apply(job, plan, Logger()).ok());
  std::map<std::string, size_t> service_at, pod_at;
  size_t n = 0;
  for (const auto& r : f.server.requests()) {
    if (r.verb != "create" || (r.resource != "pods" && r.resource != "services")) continue;
    const std::string name = json::parse(r.body)["metadata"].value("name", "");
    (r.resource == "pods" ? pod_at : service_at)[name] = n++;
  }
  ASSERT_EQ(pod_at.size(), 40u);
  ASSERT_EQ(service_at.size(), 40u);
  for (const auto& [name, at] : pod_at) {
    ASSERT_TRUE(service_at.count(name)) << name;
    EXPECT_LT(service_at[name], at) << name << ": its pod came before its service";
  }
}

// D17: every service of a pass is sent before its pods (they measured best, bench/README.md):
// with one write thread, the 8 services, then the 8 pods, each in the plan's order.
TEST(PlanApplier, EveryServiceIsSentBeforeThePods) {
  Fixture f(1);
  api::TfJob job = f.CreateJob("early", 8);
  ASSERT_TRUE(f.applier.Apply(job, f.FirstPlan(job), Logger()).ok());
  std::vector<std::string> creates, expected;
  for (const auto& r : f.server.requests())
    if (r.verb == "create" && (r.resource == "pods" || r.resource == "services"))
      creates.push_back(r.resource + "/" + json::parse(r.body)["metadata"].value("name", ""));
  for (const char* kind : {"services", "pods"})
    for (int i = 0; i < 8; ++i) expected.push_back(std::string(kind) + "/early-worker-" + std::to_string(i));
  EXPECT_EQ(creates, expected);
}

// A pass whose pods exist but some services do not (a leader replaced mid-pass, or a service
// deleted by someone): those services are created alone, and a pod whose service exists already
// is created alone.
TEST(PlanApplier, AMissingServiceOrPodIsCreatedAlone) {
  Fixture f;
  api::TfJob job = f.CreateJob("half", 2);
  core::Plan plan = f.FirstPlan(job);
  ASSERT_EQ(plan.create_pods.size(), 2u);
  ASSERT_EQ(plan.create_services.size(), 2u);
  plan.create_pods.erase(plan.create_pods.begin());              // replica 0: its pod exists
  plan.create_services.erase(plan.create_services.begin() + 1);  // replica 1: its service exists
  ASSERT_TRUE(f.applier.Apply(job, plan, Logger()).ok());
  EXPECT_EQ(f.server.CountRequests("create", "services"), 1);
  EXPECT_EQ(f.server.CountRequests("create", "pods"), 1);
  EXPECT_TRUE(f.server.Get(kube::kServices, "default", "half-worker-0"));
  EXPECT_TRUE(f.server.Get(kube::kPods, "default", "half-worker-1"));
  for (int seen = 0; seen < 2; ++seen) f.expectations.CreationObserved("default/half");
  EXPECT_TRUE(f.expectations.Satisfied("default/half"));
}

// A child that exists already (deterministic names) is ours: no error, no failure event, and no
// watch event is waited for.
TEST(PlanApplier, AlreadyExistsCountsAsCreated) {
  Fixture f;
  api::TfJob job = f.CreateJob("again", 1);
  core::Plan plan = f.FirstPlan(job);
  ASSERT_EQ(plan.create_pods.size(), 1u);
  const core::PodRenderer renderer(job, {});
  ASSERT_TRUE(
      f.server.Create(kube::kPods, "default", renderer.Render(plan.create_pods[0].type, plan.create_pods[0].index))
          .ok());
  EXPECT_TRUE(f.applier.Apply(job, plan, Logger()).ok());
  EXPECT_EQ(f.server.CountRequests("create", "pods"), 1);
  EXPECT_EQ(f.EventsWithReason("FailedCreatePod"), 0);
  const std::string key = "default/again";
  f.expectations.CreationObserved(key);  // the service's event
  EXPECT_TRUE(f.expectations.Satisfied(key));
}

// Every delete carries the uid the plan saw: a recreated namesake is left alone, and its
// expectation is lowered at once (no delete event of ours will come).
TEST(PlanApplier, DeletesCarryTheUidSoANamesakeSurvives) {
  Fixture f;
  api::TfJob job = f.CreateJob("del", 1);
  json pod = {{"metadata", {{"name", "del-worker-0"}}}, {"spec", json::object()}};
  auto old = f.server.Create(kube::kPods, "default", pod);
  std::string old_uid = (*old)["metadata"]["uid"];
  ASSERT_TRUE(f.server.Delete(kube::kPods, "default", "del-worker-0").ok());
  auto fresh = f.server.Create(kube::kPods, "default", pod);
  core::Plan plan;
  plan.delete_pods = {{"del-worker-0", old_uid}};
  EXPECT_TRUE(f.applier.Apply(job, plan, Logger()).ok());
  EXPECT_EQ(f.server.CountRequests("delete", "pods"), 1);
  EXPECT_TRUE(f.server.Get(kube::kPods, "default", "del-worker-0")) << "the namesake was deleted";
  EXPECT_TRUE(f.expectations.Satisfied("default/del"));
  EXPECT_THAT(f.delete_done, ::testing::ElementsAre(old_uid));
  // The right uid deletes it, and the deletion is expected until the informer sees it.
  plan.delete_pods = {{"del-worker-0", (*fresh)["metadata"]["uid"]}};
  EXPECT_TRUE(f.applier.Apply(job, plan, Logger()).ok());
  EXPECT_FALSE(f.server.Get(kube::kPods, "default", "del-worker-0"));
  EXPECT_FALSE(f.expectations.Satisfied("default/del"));
  EXPECT_EQ(f.EventsWithReason("SuccessfulDeletePod"), 1);
}

// D14: the status is a merge patch on /status, sent only when the plan has one; zero counters
// are nulls (they disappear).
TEST(PlanApplier, StatusIsAMergePatchOnTheStatusSubresource) {
  Fixture f;
  api::TfJob job = f.CreateJob("st", 1);
  core::Plan plan;
  EXPECT_TRUE(f.applier.Apply(job, plan, Logger()).ok());
  EXPECT_EQ(f.server.CountRequests("patch", "tfjobs"), 0) << "a plan without a status wrote one";
  api::JobStatus status;
  status.replica_statuses["Worker"].active = 1;
  status.conditions.push_back({"Created", "True", "TFJobCreated", "TFJob st is created.", {}, {}});
  plan.status = status;
  EXPECT_TRUE(f.applier.Apply(job, plan, Logger()).ok());
  auto log = f.server.requests();
  auto patch = std::find_if(log.begin(), log.end(), [](const auto& r) { return r.verb == "patch"; });
  ASSERT_NE(patch, log.end());
  EXPECT_EQ(patch->subresource, "status");
  EXPECT_EQ(patch->content_type, "application/merge-patch+json");
  json body = json::parse(patch->body);
  EXPECT_EQ(body, StatusPatch(status));
  EXPECT_EQ(body["status"]["replicaStatuses"]["Worker"]["active"], 1);
  EXPECT_TRUE(body["status"]["replicaStatuses"]["Worker"]["failed"].is_null());
  auto stored = f.server.Get(kTfJobs, "default", "st");
  EXPECT_EQ((*stored)["status"]["conditions"][0]["type"], "Created");
  // The returned object goes to the controller's mutation cache.
  ASSERT_TRUE(f.wrote.contains("default/st"));
  EXPECT_EQ(f.wrote["default/st"]["metadata"]["resourceVersion"], (*stored)["metadata"]["resourceVersion"]);
}

// D29: the counters annotation is written first, and when it fails nothing else is done.
TEST(PlanApplier, CountersAnnotationComesFirstAndAlone) {
  Fixture f;
  api::TfJob job = f.CreateJob("d29", 1);
  core::Plan plan = f.FirstPlan(job);
  plan.delete_pods = {{"d29-worker-0", "some-uid"}};
  plan.counters_annotation = R"({"Worker":{"restarts":1}})";
  f.server.AddFault({.verb = "patch", .resource = "tfjobs", .subresource = "", .code = 500});
  Status s = f.applier.Apply(job, plan, Logger());
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(s.message(), ::testing::HasSubstr("writing the counters annotation"));
  EXPECT_EQ(f.Creates() + f.server.CountRequests("delete", "") + f.server.CountRequests("patch", "", "status"), 0);
  EXPECT_TRUE(f.applier.Apply(job, plan, Logger()).ok());
  auto log = f.server.requests();
  auto first_write = std::find_if(log.begin() + 1, log.end(), [](const auto& r) { return r.verb != "get"; });
  ASSERT_NE(first_write, log.end());
  EXPECT_EQ(first_write->verb, "patch");
  EXPECT_EQ(first_write->subresource, "");
  auto stored = f.server.Get(kTfJobs, "default", "d29");
  EXPECT_EQ((*stored)["metadata"]["annotations"][std::string(core::kCountersAnnotation)], *plan.counters_annotation);
}

// Plan::ends_job (docs/semantics.md 3.11): the status that ends the job is written before the
// clean-up deletes, and the TTL delete of the job comes last; when that status write fails,
// nothing is deleted (the pass is retried whole). Another pass deletes first, then writes.
TEST(PlanApplier, TheStatusThatEndsTheJobComesBeforeItsCleanUp) {
  for (bool ends : {true, false}) {
    Fixture f;
    api::TfJob job = f.CreateJob(ends ? "ends" : "goes-on", 1);
    auto pod = f.server.Create(kube::kPods, "default",
                               {{"metadata", {{"name", job.metadata.name + "-worker-0"}}}, {"spec", json::object()}});
    ASSERT_TRUE(pod.ok());
    core::Plan plan;
    plan.delete_pods = {{job.metadata.name + "-worker-0", (*pod)["metadata"]["uid"]}};
    plan.status = job.status;
    core::SetCondition(*plan.status, "Failed", "True", "TFJobFailed", "x", f.clock.Now());
    plan.ends_job = ends;
    plan.delete_job = ends;
    if (ends) {
      f.server.AddFault({.verb = "patch", .resource = "tfjobs", .subresource = "status", .code = 500});
      EXPECT_FALSE(f.applier.Apply(job, plan, Logger()).ok());
      EXPECT_EQ(f.server.CountRequests("delete", ""), 0) << "deleted before the status that ends the job";
      EXPECT_TRUE(f.expectations.Satisfied(api::JobKey(job))) << "a delete never sent is expected";
    }
    f.server.ClearRequests();
    ASSERT_TRUE(f.applier.Apply(job, plan, Logger()).ok());
    std::vector<std::string> writes;
    for (const auto& r : f.server.requests())
      if (r.resource != "events" && r.verb != "get") writes.push_back(r.verb + " " + r.resource);
    if (ends)
      EXPECT_THAT(writes, ::testing::ElementsAre("patch tfjobs", "delete pods", "delete tfjobs"));
    else
      EXPECT_THAT(writes, ::testing::ElementsAre("delete pods", "patch tfjobs"));
  }
}

TEST(PlanApplier, TtlDeletesTheJobWithItsUid) {
  Fixture f;
  api::TfJob job = f.CreateJob("ttl", 1);
  core::Plan plan;
  plan.delete_job = true;
  api::TfJob stale = job;
  stale.metadata.uid = "another-incarnation";
  EXPECT_TRUE(IsConflict(f.applier.Apply(stale, plan, Logger()))) << "a recreated job must not be deleted";
  EXPECT_TRUE(f.server.Get(kTfJobs, "default", "ttl"));
  EXPECT_TRUE(f.applier.Apply(job, plan, Logger()).ok());
  EXPECT_FALSE(f.server.Get(kTfJobs, "default", "ttl"));
  EXPECT_EQ(f.EventsWithReason("SuccessfulDeleteJob"), 1);
  EXPECT_TRUE(f.applier.Apply(job, plan, Logger()).ok()) << "gone already is done";
}

// Issue 12 item 4: four reconciles at once, each with a 16-child job, through a pool of 3: never
// more than 3 creates in flight (before, each create had its own thread: up to 8 per job).
TEST(PlanApplier, WritePoolBoundsConcurrentCreatesAcrossReconciles) {
  Fixture f(3);
  std::atomic<int> in_flight{0}, peak{0};
  f.server.set_latency_hook([&](const testing::FakeRequest& r) {
    if (r.verb != "create" || r.resource == "events") return;
    int now = ++in_flight;
    for (int p = peak.load(); now > p && !peak.compare_exchange_weak(p, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --in_flight;
  });
  std::vector<api::TfJob> jobs;
  for (int i = 0; i < 4; ++i) jobs.push_back(f.CreateJob("job" + std::to_string(i), 8));
  {
    std::vector<std::jthread> workers;
    for (const auto& job : jobs)
      workers.emplace_back([&f, &job] { EXPECT_TRUE(f.applier.Apply(job, f.FirstPlan(job), Logger()).ok()); });
  }
  EXPECT_EQ(f.server.List(kube::kPods).size(), 32u);
  EXPECT_LE(peak.load(), 3);
  EXPECT_GE(peak.load(), 2) << "the creates never overlapped";
}

// Issue 15 item 1: Start returns once the creates are queued (the worker is free), and `done`
// runs once, after the last create, with the pass's outcome.
TEST(PlanApplier, StartReturnsBeforeTheCreatesAndDoneRunsOnceAfterThem) {
  Fixture f(2);
  std::promise<void> open;
  std::shared_future<void> opened = open.get_future().share();
  f.server.set_latency_hook([opened](const testing::FakeRequest& r) {
    if (r.verb == "create" && r.resource == "pods") opened.wait();
  });
  api::TfJob job = f.CreateJob("async", 4);
  std::atomic<int> done_calls{0};
  std::promise<Status> outcome;
  StartOutcome started = f.applier.Start(job, f.FirstPlan(job), {}, Logger(), [&](Status s) {
    ++done_calls;
    outcome.set_value(std::move(s));
  });
  EXPECT_TRUE(started.status.ok());
  EXPECT_TRUE(started.creating);
  EXPECT_EQ(f.server.List(kube::kPods).size(), 0u) << "Start waited for a pod create";
  EXPECT_EQ(done_calls.load(), 0);
  open.set_value();
  EXPECT_TRUE(outcome.get_future().get().ok());
  EXPECT_EQ(f.server.List(kube::kPods).size(), 4u);
  EXPECT_EQ(f.server.List(kube::kServices).size(), 4u);
  f.pool.Stop();
  EXPECT_EQ(done_calls.load(), 1);
}

// A plan with nothing to create: Start's status is the outcome, `done` never runs.
TEST(PlanApplier, StartWithoutCreatesDoesNotCallDone) {
  Fixture f;
  api::TfJob job = f.CreateJob("nothing", 1);
  core::Plan plan;
  plan.status = job.status;
  bool called = false;
  StartOutcome started = f.applier.Start(job, std::move(plan), {}, Logger(), [&](Status) { called = true; });
  EXPECT_TRUE(started.status.ok());
  EXPECT_FALSE(started.creating);
  f.pool.Stop();
  EXPECT_FALSE(called);
}

// Issue 15 item 4, issue 28: the plan holds no pod or service objects, only which to create; the
// applier renders each as it sends it, and the server receives exactly what `tfjob render`
// (core::RenderJob) renders for the job.
TEST(PlanApplier, PodsAndServicesAreRenderedWhenSentAsRenderJobRendersThem) {
  Fixture f;
  api::TfJob job = f.CreateJob("lazy", 6);
  core::ObservedState observed{job, {}, {}, std::nullopt, f.clock.Now(), {}};
  core::Plan plan = core::Reconcile(observed, {});
  ASSERT_EQ(plan.create_pods.size(), 6u);
  ASSERT_EQ(plan.create_services.size(), 6u);
  EXPECT_TRUE(f.applier.Apply(job, plan, Logger()).ok());
  std::map<std::string, json> sent, rendered;
  for (const auto& r : f.server.requests())
    if (r.verb == "create" && (r.resource == "pods" || r.resource == "services")) {
      json body = json::parse(r.body);
      sent[r.resource + "/" + body["metadata"]["name"].get<std::string>()] = body;
    }
  api::TfJob defaulted = job;
  api::SetDefaults(defaulted);
  auto all = core::RenderJob(defaulted, {});
  ASSERT_TRUE(all.ok()) << all.status().message();
  for (const auto& o : all->objects)
    rendered[(o["kind"] == "Pod" ? "pods/" : "services/") + o["metadata"]["name"].get<std::string>()] = o;
  ASSERT_EQ(sent.size(), 12u);
  EXPECT_EQ(sent, rendered);
  EXPECT_NE(sent["pods/lazy-worker-5"].dump().find("TF_CONFIG"), std::string::npos);
  EXPECT_EQ(sent["services/lazy-worker-5"]["spec"]["clusterIP"], "None");
}

// Issue 15 item 3: a small job's creates started after a big job's are not queued behind all of
// them. 4 write threads, each create held 2 ms by the server (so the big job's keep the threads
// busy, as real round trips do), and 128 or more of the big job's replicas (a service and a pod
// each) waiting: the small job's 10 children are created while fewer than 64 of the big job's are
// (the big job keeps at most half the threads while another job has work; in one FIFO queue, or
// oldest-first without that share, the 256 creates waiting would all go first).
TEST(PlanApplier, ASmallJobIsNotQueuedBehindABigOne) {
  Fixture f(4);
  f.server.set_latency_hook([](const testing::FakeRequest& r) {
    if (r.verb == "create" && r.resource != "events") std::this_thread::sleep_for(std::chrono::milliseconds(2));
  });
  api::TfJob big = f.CreateJob("big", 400);
  api::TfJob small = f.CreateJob("small", 5);
  std::promise<void> big_done, small_done;
  auto children = [&f] { return f.server.List(kube::kPods).size() + f.server.List(kube::kServices).size(); };
  f.applier.Start(big, f.FirstPlan(big), {}, Logger(), [&](Status) { big_done.set_value(); });
  ASSERT_TRUE([&] {  // the big job's slow start has reached a large batch
    for (int i = 0; i < 20000; ++i) {
      if (f.pool.Queued() >= 128) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return false;
  }());
  size_t before = children(), after = 0;
  f.applier.Start(small, f.FirstPlan(small), {}, Logger(), [&](Status) {
    after = children();
    small_done.set_value();
  });
  small_done.get_future().wait();
  big_done.get_future().wait();
  EXPECT_EQ(f.server.List(kube::kPods).size(), 405u);
  ASSERT_GE(after, before + 10);
  EXPECT_LT(after - before - 10, 64u) << "the small job waited for the big one's queued creates";
}

}  // namespace
}  // namespace tfjob::operator_
