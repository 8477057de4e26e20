// The Manager without a cluster: its cross-thread state (issue 12 item 1) and one whole Run over a
// FakeTransport. TSan runs these (make test-tsan).
#include "operator/manager.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "api/json_fields.h"
#include "controller/informer_factory.h"
#include "kube/resource_path.h"
#include "operator/tfjob_controller.h"
#include "testing/fake_api_server.h"
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
    manager = std::make_unique<Manager>(options, std::move(config), transport, clock, registry, Logger());
    manager->Add(informers.AsRunnable());
    manager->Add(controller->AsRunnable());
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

// The start and stop order of runnables (manager.h), against the FakeApiServer with leader
// election on: the others start in the order added, each once ready; the leader's runnables
// start once the Lease is held; at the stop the leader's go first (the Lease still held), then the
// Lease is released, then the others in reverse.
TEST(Manager, StartsAndStopsRunnablesInOrder) {
  RealClock clock;
  testing::FakeApiServer server{clock};
  kube::RestClient client{server, clock, testing::UnthrottledClientOptions()};
  controller::Registry registry;
  OperatorOptions options;
  options.metrics_bind_address = "0";
  options.health_probe_bind_address = "0";
  ManagerConfig config;
  config.leader_elect = true;
  config.lease_namespace = "default";
  Manager manager(options, std::move(config), server, clock, registry, Logger());

  Mutex mu;
  std::vector<std::string> log;
  auto note = [&](const std::string& what) {
    MutexLock lock(mu);
    log.push_back(what);
  };
  auto holder = [&] {
    auto lease = server.Get(kube::kLeases, "default", options.leader_election_id);
    return lease ? api::StringField(api::ObjectField(*lease, "spec"), "holderIdentity") : std::string("none");
  };
  std::atomic<int> polls{0};
  auto runnable = [&](const std::string& name, bool leader) {
    return controller::Runnable{.name = name,
                                .needs_leader = leader,
                                .start =
                                    [&, name, leader] {
                                      note("start " + name + (leader && holder().empty() ? " (no lease)" : ""));
                                      return OkStatus();
                                    },
                                .stop = [&, name] { note("stop " + name + (holder().empty() ? "" : " (leading)")); }};
  };
  manager.Add(runnable("server", false));
  controller::Runnable cache = runnable("cache", false);
  cache.ready = [&] { return ++polls >= 3; };  // ready at the third look
  manager.Add(cache);
  manager.Add(runnable("controller", true));
  manager.Add(runnable("second-controller", true));

  std::stop_source stop;
  std::jthread stopper([&] {
    for (;;) {
      {
        MutexLock lock(mu);
        if (log.size() == 4) break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop.request_stop();
  });
  EXPECT_EQ(manager.Run(stop.get_token()), 0);
  EXPECT_GE(polls.load(), 3) << "the leader's runnables waited for the cache";
  EXPECT_THAT(log, ::testing::ElementsAre("start server", "start cache", "start controller", "start second-controller",
                                          "stop second-controller (leading)", "stop controller (leading)", "stop cache",
                                          "stop server"));
  EXPECT_EQ(holder(), "") << "the Lease was released";
}

// A runnable that cannot start ends Run with 2; what started before it is stopped.
TEST(Manager, ARunnableThatCannotStartStopsTheOthers) {
  RealClock clock;
  testing::FakeApiServer server{clock};
  controller::Registry registry;
  OperatorOptions options;
  options.metrics_bind_address = "0";
  options.health_probe_bind_address = "0";
  ManagerConfig config;
  Manager manager(options, std::move(config), server, clock, registry, Logger());
  std::vector<std::string> log;
  manager.Add({.name = "a",
               .start =
                   [&] {
                     log.push_back("start a");
                     return OkStatus();
                   },
               .stop = [&] { log.push_back("stop a"); }});
  manager.Add(
      {.name = "b", .start = [] { return UnavailableError("port in use"); }, .stop = [&] { log.push_back("stop b"); }});
  manager.Add({.name = "c",
               .needs_leader = true,
               .start =
                   [&] {
                     log.push_back("start c");
                     return OkStatus();
                   },
               .stop = [&] { log.push_back("stop c"); }});
  EXPECT_EQ(manager.Run({}), 2);
  EXPECT_THAT(log, ::testing::ElementsAre("start a", "stop a"));
}

}  // namespace
}  // namespace tfjob::operator_
