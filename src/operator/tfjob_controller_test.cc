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
  Fixture() {
    // Every request is refused (403, not retried): creates and the status patch fail.
    transport.set_handler([](const kube::HttpRequest&) {
      return StatusOr<kube::HttpResponse>(kube::HttpResponse{
          403,
          R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","message":"no","code":403})",
          std::nullopt});
    });
    options.workers = 1;
    controller = std::make_unique<TfJobController>(client, clock, registry, events, options, Logger());
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
  for (int i = 0; i < 500 && q.NumRequeues("default/deadline") == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  f.controller->Stop();  // the write pool has finished
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
  for (int i = 0; i < 500 && q.DelayedLenForTesting() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(q.DelayedLenForTesting(), 1u);
  EXPECT_EQ(q.NumRequeues("default/deadline"), 0) << "a success must not back off";
}

// Issue 12 item 1: the elector's thread may call StartWorkers while the main thread runs Stop.
// Before, StartWorkers pushed into workers_ while Stop cleared it (a data race, TSan), and workers
// started after the stop were left behind. Now a StartWorkers after Stop starts nothing.
TEST(TfJobController, StartWorkersAfterStopStartsNothing) {
  Fixture f;
  f.controller->Stop();
  f.controller->StartWorkers();
  EXPECT_EQ(TfJobControllerTestPeer::Workers(*f.controller), 0u);
  EXPECT_TRUE(f.controller->WorkersAlive());
}

TEST(TfJobController, StartWorkersRacesStop) {
  for (int i = 0; i < 20; ++i) {
    Fixture f;
    std::jthread elector([&] { f.controller->StartWorkers(); });
    std::jthread prober([&] { (void)f.controller->WorkersAlive(); });
    f.controller->Stop();
    elector.join();
    EXPECT_EQ(TfJobControllerTestPeer::Workers(*f.controller), 0u) << "workers started after Stop";
  }
}

}  // namespace
}  // namespace tfjob::operator_
