// TfJobController without a cluster: a FakeTransport that refuses every write, a job put straight
// into the informer's cache, one reconcile. And the queue mapping of a reconcile's outcome.
#include "operator/tfjob_controller.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "testing/fake_clock.h"
#include "testing/fake_transport.h"
#include "testing/fixtures.h"

namespace tfjob::operator_ {

// Reaches the controller's cache and queue (tfjob_controller.h names it a friend).
class TfJobControllerTestPeer {
 public:
  static void PutJob(TfJobController& c, const api::TfJob& job) {
    auto& store = const_cast<controller::Store<api::TfJob>&>(c.jobs_->store());
    store.Upsert(job.metadata.ns + "/" + job.metadata.name, std::make_shared<const api::TfJob>(job));
  }
  static controller::WorkQueue& Queue(TfJobController& c) { return c.queue_; }
  static controller::Expectations& Expectations(TfJobController& c) { return c.expectations_; }
  // The drain hook: returns once the pass's creates (on the write pool) have ended and settled.
  static void Drain(TfJobController& c) { c.write_pool_.WaitIdle(); }
  // One turn of a worker: the reconcile, then its outcome settled as the Worker settles it.
  static void RunOnce(TfJobController& c, const std::string& key) { c.Settle(key, c.ReconcileKey(key)); }
  static size_t Workers(TfJobController& c) {
    MutexLock lock(c.workers_mu_);
    return c.workers_.size();
  }
};

namespace {

kube::RestClientOptions Fast() {
  kube::RestClientOptions o;
  o.initial_backoff = std::chrono::milliseconds(1);
  o.max_backoff = std::chrono::milliseconds(2);
  o.max_retries = 0;
  return o;
}

struct Fixture {
  FakeClock clock;
  kube::FakeTransport transport;
  kube::RestClient client{transport, clock, Fast()};
  controller::Registry registry;
  controller::EventRecorder events{client, clock, Logger(), &registry};
  OperatorOptions options;
  std::unique_ptr<TfJobController> controller;
  controller::InformerFactory informers{client, Logger()};  // after the controller: stopped before it goes
  Fixture() {
    // Every request is refused (403, not retried): creates and the status patch fail.
    transport.set_handler([](const kube::HttpRequest&) {
      return StatusOr<kube::HttpResponse>(kube::HttpResponse{
          403,
          R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","message":"no","code":403})",
          std::nullopt});
    });
    options.workers = 1;
    controller = std::make_unique<TfJobController>(client, clock, registry, events, informers, options, Logger());
  }
  ~Fixture() { events.Stop(); }
};

// A running job with a deadline and no pods yet: the plan creates pods AND asks for a requeue at
// the deadline.
api::TfJob DeadlineJob(const Clock& clock) {
  api::TfJob job = testing::NewTfJob(2, 0);
  job.metadata.ns = "default";
  job.metadata.name = "deadline";
  job.metadata.uid = "uid-1";
  job.spec.run_policy.active_deadline_seconds = 100;
  job.status.start_time = clock.Now();
  return job;
}

// Issue 12 item 2: a failed reconcile is requeued once, with backoff; before the fix ReconcileKey
// also queued the plan's requeue_after itself, so a failure left two queue operations behind.
// The pass creates pods, so it is pending when ReconcileKey returns (the Worker does nothing)
// and the end of its creates makes the one AddRateLimited, without the deadline's requeue.
TEST(TfJobController, FailedReconcileLeavesOneQueueOperation) {
  Fixture f;
  TfJobControllerTestPeer::PutJob(*f.controller, DeadlineJob(f.clock));
  auto result = f.controller->ReconcileKey("default/deadline");
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result->pending);
  EXPECT_EQ(QueueActionFor(result), QueueAction::kNone);
  controller::WorkQueue& q = TfJobControllerTestPeer::Queue(*f.controller);
  TfJobControllerTestPeer::Drain(*f.controller);
  EXPECT_EQ(q.NumRequeues("default/deadline"), 1);
  EXPECT_EQ(q.DelayedLenForTesting() + q.Len(), 1u) << "the deadline's requeue was queued beside the backoff";
}

// The mapping, as controller-runtime's reconcileHandler: exactly one queue action per outcome.
TEST(TfJobController, QueueActionForTable) {
  using std::chrono::seconds;
  struct Case {
    const char* name;
    StatusOr<ReconcileResult> outcome;
    QueueAction want;
  };
  const Case cases[] = {
      {"success", ReconcileResult{}, QueueAction::kForget},
      {"success with requeue", ReconcileResult{seconds(5)}, QueueAction::kForgetAndAddAfter},
      {"success due now", ReconcileResult{seconds(0)}, QueueAction::kForgetAndAddAfter},
      {"creates running", ReconcileResult{.pending = true}, QueueAction::kNone},
      {"creates running, with requeue", ReconcileResult{seconds(5), true}, QueueAction::kNone},
      {"waiting for expectations", ReconcileResult{.requeue_after = seconds(300), .waiting = true},
       QueueAction::kAddAfter},
      {"error", UnavailableError("apiserver down"), QueueAction::kAddRateLimited},
      {"conflict", ConflictError("stale"), QueueAction::kAddRateLimited},
  };
  for (const auto& c : cases) EXPECT_EQ(QueueActionFor(c.outcome), c.want) << c.name;
}

// A success hands its requeue_after back instead of queueing it; with creates running, the end
// of the creates queues it (once), not ReconcileKey.
TEST(TfJobController, SuccessfulReconcileReturnsItsRequeueAndItsCreatesQueueIt) {
  Fixture f;
  f.transport.set_handler([](const kube::HttpRequest& r) {
    return StatusOr<kube::HttpResponse>(kube::HttpResponse{r.method == "POST" ? 201L : 200L, "{}", std::nullopt});
  });
  TfJobControllerTestPeer::PutJob(*f.controller, DeadlineJob(f.clock));
  auto result = f.controller->ReconcileKey("default/deadline");
  ASSERT_TRUE(result.ok()) << result.status().message();
  ASSERT_TRUE(result->requeue_after);
  EXPECT_EQ(*result->requeue_after, std::chrono::seconds(100));
  EXPECT_TRUE(result->pending);
  controller::WorkQueue& q = TfJobControllerTestPeer::Queue(*f.controller);
  TfJobControllerTestPeer::Drain(*f.controller);
  EXPECT_EQ(q.DelayedLenForTesting(), 1u);
  EXPECT_EQ(q.NumRequeues("default/deadline"), 0) << "a success must not back off";
}

// Issue 25 item 3: each outcome is counted once, under one result, by the one mapping (Settle).
// Before, a pass whose creates failed was counted as result="success" by the worker (it was
// pending) and as an error by the end of its creates.
double ReconcileTotal(controller::Registry& r, const char* result) {
  return r.AddCounter("controller_runtime_reconcile_total", "", {"controller", "result"})
      .With({"tfjob-controller", result})
      .value();
}
double ReconcileErrors(controller::Registry& r) {
  return r.AddCounter("controller_runtime_reconcile_errors_total", "", {"controller"}).With({"tfjob-controller"}).value();
}
void AcceptEveryWrite(kube::FakeTransport& t) {
  t.set_handler([](const kube::HttpRequest& r) {
    return StatusOr<kube::HttpResponse>(kube::HttpResponse{r.method == "POST" ? 201L : 200L, "{}", std::nullopt});
  });
}

TEST(TfJobController, MetricsCountEachOutcomeOnce) {
  const std::string key = "default/deadline";
  {
    SCOPED_TRACE("the pass's creates fail: one error, no success");
    Fixture f;
    TfJobControllerTestPeer::PutJob(*f.controller, DeadlineJob(f.clock));
    TfJobControllerTestPeer::RunOnce(*f.controller, key);
    controller::WorkQueue& q = TfJobControllerTestPeer::Queue(*f.controller);
    TfJobControllerTestPeer::Drain(*f.controller);
    f.controller->Stop();
    EXPECT_EQ(ReconcileTotal(f.registry, "error"), 1);
    EXPECT_EQ(ReconcileTotal(f.registry, "success"), 0);
    EXPECT_EQ(ReconcileErrors(f.registry), 1);
    EXPECT_EQ(q.NumRequeues(key), 1);
  }
  {
    SCOPED_TRACE("the pass's creates succeed: one success, counted when they end");
    Fixture f;
    AcceptEveryWrite(f.transport);
    TfJobControllerTestPeer::PutJob(*f.controller, DeadlineJob(f.clock));
    TfJobControllerTestPeer::RunOnce(*f.controller, key);
    TfJobControllerTestPeer::Drain(*f.controller);
    f.controller->Stop();
    EXPECT_EQ(ReconcileTotal(f.registry, "success"), 1);
    EXPECT_EQ(ReconcileTotal(f.registry, "error"), 0);
    EXPECT_EQ(ReconcileErrors(f.registry), 0);
    EXPECT_EQ(TfJobControllerTestPeer::Queue(*f.controller).DelayedLenForTesting(), 1u) << "the deadline's requeue";
  }
  {
    SCOPED_TRACE("an error of the pass itself (a suspended job's status write): one error");
    Fixture f;
    api::TfJob job = DeadlineJob(f.clock);
    job.spec.run_policy.suspend = true;
    TfJobControllerTestPeer::PutJob(*f.controller, job);
    TfJobControllerTestPeer::RunOnce(*f.controller, key);
    EXPECT_EQ(ReconcileTotal(f.registry, "error"), 1);
    EXPECT_EQ(ReconcileTotal(f.registry, "success"), 0);
    EXPECT_EQ(ReconcileErrors(f.registry), 1);
    EXPECT_EQ(TfJobControllerTestPeer::Queue(*f.controller).NumRequeues(key), 1);
  }
  {
    SCOPED_TRACE("waiting for an earlier pass's creates: a success that looks again, backoff kept");
    Fixture f;
    TfJobControllerTestPeer::PutJob(*f.controller, DeadlineJob(f.clock));
    controller::WorkQueue& q = TfJobControllerTestPeer::Queue(*f.controller);
    q.AddRateLimited(key);  // an earlier failure's backoff
    TfJobControllerTestPeer::Expectations(*f.controller).Expect(key, 1, 0);
    TfJobControllerTestPeer::RunOnce(*f.controller, key);
    EXPECT_EQ(ReconcileTotal(f.registry, "success"), 1);
    EXPECT_EQ(ReconcileTotal(f.registry, "error"), 0);
    EXPECT_EQ(q.NumRequeues(key), 1) << "a waiting pass must not forget the backoff";
  }
  {
    SCOPED_TRACE("the job is gone: one success");
    Fixture f;
    TfJobControllerTestPeer::RunOnce(*f.controller, key);
    EXPECT_EQ(ReconcileTotal(f.registry, "success"), 1);
    EXPECT_EQ(ReconcileTotal(f.registry, "error"), 0);
  }
}

// D1 with a deadline: a pass that waits for expectations looks again at the deadline (sooner
// than the expectations' TTL) and runs then, although they are still not met.
TEST(TfJobController, WaitingPassLooksAgainAtTheDeadlineAndRunsThen) {
  Fixture f;
  AcceptEveryWrite(f.transport);
  TfJobControllerTestPeer::PutJob(*f.controller, DeadlineJob(f.clock));  // deadline in 100 s
  TfJobControllerTestPeer::Expectations(*f.controller).Expect("default/deadline", 1, 0);
  auto waiting = f.controller->ReconcileKey("default/deadline");
  ASSERT_TRUE(waiting.ok());
  EXPECT_TRUE(waiting->waiting);
  ASSERT_TRUE(waiting->requeue_after);
  EXPECT_EQ(*waiting->requeue_after, std::chrono::seconds(100));
  f.clock.Advance(std::chrono::seconds(100));
  auto due = f.controller->ReconcileKey("default/deadline");
  ASSERT_TRUE(due.ok()) << due.status().message();
  EXPECT_FALSE(due->waiting) << "the deadline's pass must run while expectations wait";
  f.controller->Stop();
}

// Issue 12 item 1: the elector's thread may call StartWorkers while the main thread runs Stop.
// Before, StartWorkers pushed into workers_ while Stop cleared it (a data race, TSan), and workers
// started after the stop were left behind. Now a StartWorkers after Stop starts nothing.
TEST(TfJobController, StartWorkersAfterStopStartsNothing) {
  Fixture f;
  f.controller->Stop();
  f.controller->StartWorkers();
  EXPECT_EQ(TfJobControllerTestPeer::Workers(*f.controller), 0u);
  EXPECT_TRUE(f.controller->CheckWorkers().ok());
}

TEST(TfJobController, StartWorkersRacesStop) {
  for (int i = 0; i < 20; ++i) {
    Fixture f;
    std::jthread elector([&] { f.controller->StartWorkers(); });
    std::jthread prober([&] { (void)f.controller->CheckWorkers(); });
    f.controller->Stop();
    elector.join();
    EXPECT_EQ(TfJobControllerTestPeer::Workers(*f.controller), 0u) << "workers started after Stop";
  }
}

}  // namespace
}  // namespace tfjob::operator_
