// The Manager without a cluster: its cross-thread state (issue 12 item 1) and one whole Run over a
// FakeTransport. TSan runs these (make test-tsan).
#include "operator/manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "testing/fake_transport.h"

namespace tfjob::operator_ {
namespace {

// Lists answer empty; watches fail (the reflector retries); writes are refused.
void ServeEmptyCluster(kube::FakeTransport& t) {
  t.set_handler([](const kube::HttpRequest& r) {
    if (r.method == "GET")
      return StatusOr<kube::HttpResponse>(
          kube::HttpResponse{200, R"({"metadata":{"resourceVersion":"1"},"items":[]})", std::nullopt});
    return StatusOr<kube::HttpResponse>(kube::HttpResponse{
        403, R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403})",
        std::nullopt});
  });
  t.set_stream_handler([](const kube::HttpRequest&, const kube::ByteSink&) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return UnavailableError("no watch here");
  });
}

struct Fixture {
  RealClock clock;
  kube::FakeTransport transport;
  kube::RestClient client{transport, clock, {}};
  controller::Registry registry;
  controller::EventRecorder events{client, clock, Logger(), &registry};
  OperatorOptions options;
  std::unique_ptr<TfJobController> controller;
  controller::InformerFactory informers{client, Logger()};  // after the controller: stopped before it goes
  std::unique_ptr<Manager> manager;
  explicit Fixture(bool leader_elect = false) {
    ServeEmptyCluster(transport);
    options.workers = 2;
    options.metrics_bind_address = "0";
    options.health_probe_bind_address = "0";
    controller = std::make_unique<TfJobController>(client, clock, registry, events, informers, options, Logger());
    ManagerConfig config;
    config.leader_elect = leader_elect;
    config.lease_namespace = "default";
    manager = std::make_unique<Manager>(options, std::move(config), transport, clock, registry, informers, *controller,
                                        events, Logger());
  }
  ~Fixture() {
    manager.reset();
    informers.Stop();
    controller.reset();
    events.Stop();
  }
};

// Before: `lost` was set without the mutex, so a loss between Run's check and its wait was missed.
// Now OnStoppedLeading records it under mu_; a loss before the wait, or during it, ends it.
TEST(Manager, LostLeaseBeforeTheWaitIsNotMissed) {
  Fixture f(true);
  f.manager->OnStoppedLeading();
  EXPECT_TRUE(f.manager->WaitForStopOrLoss({}));
}

TEST(Manager, LostLeaseDuringTheWaitWakesIt) {
  Fixture f(true);
  std::jthread loser([&] { f.manager->OnStoppedLeading(); });
  EXPECT_TRUE(f.manager->WaitForStopOrLoss({}));
}

TEST(Manager, StopWakesTheWait) {
  Fixture f;
  std::stop_source stop;
  std::jthread stopper([&] { stop.request_stop(); });
  EXPECT_FALSE(f.manager->WaitForStopOrLoss(stop.get_token()));
}

// Before: the readiness check read `elector` while the main thread assigned it (a data race TSan
// reports). Now it reads mu_-guarded state.
TEST(Manager, ReadinessReadsWhileTheElectionStarts) {
  Fixture f(true);
  EXPECT_FALSE(f.manager->LeaderElectionReady().ok());
  std::atomic<bool> done{false};
  std::jthread prober([&] {
    while (!done) (void)f.manager->LeaderElectionReady();
  });
  f.manager->ElectionStarted();
  EXPECT_TRUE(f.manager->LeaderElectionReady().ok());
  f.manager->OnStoppedLeading();
  EXPECT_FALSE(f.manager->LeaderElectionReady().ok());
  done = true;
}

// The whole order without leader election: informers sync on the empty cluster, the workers
// start, a stop ends Run with 0.
TEST(Manager, RunSyncsStartsWorkersAndStops) {
  Fixture f;
  std::stop_source stop;
  std::jthread stopper([&] {
    while (!f.controller->HasSynced()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    stop.request_stop();
  });
  EXPECT_EQ(f.manager->Run(stop.get_token()), 0);
  EXPECT_TRUE(f.controller->CheckWorkers().ok());
}

// A stop before the caches sync ends Run with 0 too.
TEST(Manager, StopBeforeSyncReturnsZero) {
  Fixture f;
  std::stop_source stop;
  stop.request_stop();
  EXPECT_EQ(f.manager->Run(stop.get_token()), 0);
}

}  // namespace
}  // namespace tfjob::operator_
