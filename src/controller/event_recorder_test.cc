#include "controller/event_recorder.h"

#include <gtest/gtest.h>

#include "testing/fake_clock.h"
#include "testing/fake_transport.h"

namespace tfjob::controller {
namespace {

using nlohmann::json;

TEST(EventRecorder, CreatesThenAggregatesRepeatsWithinTheWindow) {
  kube::FakeTransport t;
  t.set_handler([](const kube::HttpRequest&) -> StatusOr<kube::HttpResponse> { return kube::HttpResponse{201, "{}"}; });
  FakeClock clock;
  kube::RestClient client(t, clock);
  EventRecorder rec(client, clock, Logger());
  ObjectReference job{"kubeflow.org/v1", "TFJob", "ns", "mnist", "uid-1"};
  rec.Record(job, "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-0");
  rec.Record(job, "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-0");
  rec.Record(job, "Warning", "TFJobRestarting", "job mnist is restarting because Worker replica(s) failed.");
  rec.Flush();
  clock.Advance(std::chrono::minutes(11));
  rec.Record(job, "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-0");
  rec.Flush();
  auto reqs = t.requests();
  ASSERT_EQ(reqs.size(), 4u);
  EXPECT_EQ(reqs[0].method, "POST");
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/ns/events");
  json first = json::parse(reqs[0].body);
  EXPECT_EQ(first["involvedObject"]["uid"], "uid-1");
  EXPECT_EQ(first["source"]["component"], "tfjob-controller");
  EXPECT_EQ(first["reason"], "SuccessfulCreatePod");
  EXPECT_EQ(reqs[1].method, "PATCH");
  EXPECT_EQ(json::parse(reqs[1].body)["count"], 2);
  EXPECT_EQ(reqs[2].method, "POST");  // a different reason is a new event
  EXPECT_EQ(reqs[3].method, "POST");  // outside the 10-minute window: a new event
}

TEST(EventRecorder, NeverBlocksAndDropsWhenFull) {
  kube::FakeTransport t;
  std::mutex gate;
  gate.lock();  // the first write blocks until the test ends: the queue fills up
  t.set_handler([&](const kube::HttpRequest&) -> StatusOr<kube::HttpResponse> {
    std::lock_guard lock(gate);
    return kube::HttpResponse{201, "{}"};
  });
  FakeClock clock;
  kube::RestClient client(t, clock);
  Registry registry;
  EventRecorderOptions options;
  options.max_queue = 5;
  {
    EventRecorder rec(client, clock, Logger(), &registry, options);
    ObjectReference job{"kubeflow.org/v1", "TFJob", "ns", "j", "u"};
    for (int i = 0; i < 50; ++i) rec.Record(job, "Normal", "R" + std::to_string(i), "m");
    gate.unlock();
    rec.Flush();
  }
  EXPECT_GE(registry.AddCounter("tfjob_events_dropped_total", "").With({}).value(), 40);
}

}  // namespace
}  // namespace tfjob::controller
