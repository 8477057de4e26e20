#include "controller/event_recorder.h"

#include <gtest/gtest.h>

#include <map>

#include "testing/fake_api_server.h"
#include "testing/fake_clock.h"
#include "testing/fake_transport.h"

namespace tfjob::controller {
namespace {

using nlohmann::json;

ObjectReference Job(const std::string& name) {
  return {"kubeflow.org/v1", "TFJob", "ns", name, "uid-" + name};
}

// The recorder in front of the fake API server, with the operator's defaults unless told.
struct Bed {
  FakeClock clock;
  testing::FakeApiServer server{clock};
  kube::RestClient client{server, clock, testing::UnthrottledClientOptions()};
  Registry registry;
  EventRecorder rec;

  explicit Bed(EventRecorderOptions options = {}) : rec(client, clock, Logger(), &registry, options) {}
  ~Bed() { rec.Stop(); }

  std::vector<json> Events(const std::string& job = "") const {
    std::vector<json> out;
    for (auto& e : server.List(kube::kEvents, "ns"))
      if (job.empty() || e["involvedObject"]["name"] == job) out.push_back(e);
    return out;
  }
  double Metric(const std::string& name, const std::string& reason = "") {
    auto& family = reason.empty() ? registry.AddCounter(name, "") : registry.AddCounter(name, "", {"reason"});
    return reason.empty() ? family.With({}).value() : family.With({reason}).value();
  }
};

// Issue 15 item 6: a burst of 200 jobs, each with its 5 pods and 5 services created at once.
// The old recorder (one 5/s bucket of 25 for everyone, a queue of 1,000) wrote 25 of 2,000.
TEST(EventRecorder, EveryJobsOwnEventsSurviveABurstOf200Jobs) {
  Bed bed;
  for (int j = 0; j < 200; ++j) {
    std::string name = "job-" + std::to_string(j);
    for (int i = 0; i < 5; ++i) {
      std::string type = i == 0 ? "ps" : "worker";
      bed.rec.Record(Job(name), "Normal", "SuccessfulCreatePod",
                     "Created pod: " + name + "-" + type + "-" + std::to_string(i));
      bed.rec.Record(Job(name), "Normal", "SuccessfulCreateService",
                     "Created service: " + name + "-" + type + "-" + std::to_string(i));
    }
  }
  bed.rec.Flush();
  auto events = bed.Events();
  EXPECT_EQ(events.size(), 2000u);
  std::map<std::string, int> per_job;
  for (auto& e : events) per_job[e["involvedObject"]["name"]] += e["count"].get<int>();
  EXPECT_EQ(per_job.size(), 200u);
  for (auto& [job, n] : per_job) EXPECT_EQ(n, 10) << job;
}

TEST(EventRecorder, CreatesThenCorrelatesRepeatsWithinTheWindow) {
  kube::FakeTransport t;
  t.set_handler([](const kube::HttpRequest&) -> StatusOr<kube::HttpResponse> { return kube::HttpResponse{201, "{}"}; });
  FakeClock clock;
  kube::RestClient client(t, clock);
  EventRecorder rec(client, clock, Logger());
  ObjectReference job{"kubeflow.org/v1", "TFJob", "ns", "mnist", "uid-1"};
  rec.Record(job, "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-0");
  rec.Flush();
  rec.Record(job, "Normal", "SuccessfulCreatePod", "Created pod: mnist-worker-0");
  rec.Flush();
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

TEST(EventRecorder, ExactRepeatsAreOneEventWithTheirCount) {
  Bed bed;
  for (int i = 0; i < 7; ++i) {
    bed.rec.Record(Job("a"), "Warning", "FailedCreatePod", "Error creating: quota");
    bed.rec.Flush();  // each repeat is a patch of the count
  }
  for (int i = 0; i < 5; ++i) bed.rec.Record(Job("b"), "Warning", "FailedCreatePod", "Error creating: quota");
  bed.rec.Flush();  // repeats still queued fold into the queued write
  auto a = bed.Events("a");
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0]["count"], 7);
  EXPECT_EQ(a[0]["message"], "Error creating: quota");
  auto b = bed.Events("b");
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0]["count"], 5);
  EXPECT_EQ(bed.Metric("tfjob_events_aggregated_total"), 6 + 4);
  // a's 6 repeats are patches; b's fold into its queued create unless the writer took it first
  // (then a patch each for those recorded after).
  EXPECT_GE(bed.server.CountRequests("patch", "events"), 6);
  EXPECT_LE(bed.server.CountRequests("patch", "events"), 6 + 4);
}

TEST(EventRecorder, SimilarEventsBecomeOneCombinedEventWhoseCountGoesUp) {
  Bed bed;
  for (int i = 0; i < 12; ++i) {
    bed.rec.Record(Job("big"), "Normal", "SuccessfulCreatePod", "Created pod: big-worker-" + std::to_string(i));
    bed.rec.Flush();
  }
  bed.rec.Record(Job("big"), "Normal", "SuccessfulCreateService", "Created service: big-worker-0");  // another reason
  bed.rec.Flush();
  std::vector<json> own, combined;
  for (auto& e : bed.Events("big")) {
    if (e["reason"] != "SuccessfulCreatePod") continue;
    (e["message"].get<std::string>().starts_with("(combined") ? combined : own).push_back(e);
  }
  EXPECT_EQ(own.size(), 9u);  // the first nine distinct messages have events of their own
  ASSERT_EQ(combined.size(), 1u);
  EXPECT_EQ(combined[0]["message"], "(combined from similar events): Created pod: big-worker-11");
  EXPECT_EQ(combined[0]["count"], 3);  // the 10th, 11th and 12th
  EXPECT_EQ(bed.Events("big").size(), 11u);
  EXPECT_EQ(bed.Metric("tfjob_events_aggregated_total"), 2);
  EXPECT_EQ(bed.Metric("tfjob_events_written_total"), 13);  // 11 creates + 2 patches
  // A repeat of a message that has its own event still counts there.
  bed.rec.Record(Job("big"), "Normal", "SuccessfulCreatePod", "Created pod: big-worker-0");
  bed.rec.Flush();
  EXPECT_EQ(bed.Events("big").size(), 11u);
  // After 10 quiet minutes the similar events start over.
  bed.clock.Advance(std::chrono::minutes(11));
  bed.rec.Record(Job("big"), "Normal", "SuccessfulCreatePod", "Created pod: big-worker-12");
  bed.rec.Flush();
  EXPECT_EQ(bed.Events("big").size(), 12u);
}

TEST(EventRecorder, OneObjectGetsABurstOf25ThenOnePerFiveMinutes) {
  Bed bed;
  for (int i = 0; i < 40; ++i) bed.rec.Record(Job("noisy"), "Normal", "Reason" + std::to_string(i), "m");
  bed.rec.Record(Job("quiet"), "Normal", "SuccessfulCreatePod", "Created pod: quiet-worker-0");
  bed.rec.Flush();
  EXPECT_EQ(bed.Events("noisy").size(), 25u);
  EXPECT_EQ(bed.Events("quiet").size(), 1u);  // the noisy one does not starve the others
  EXPECT_EQ(bed.Metric("tfjob_events_dropped_total", "spam_filter"), 15);
  bed.clock.Advance(std::chrono::minutes(4));
  bed.rec.Record(Job("noisy"), "Normal", "Late0", "m");
  bed.rec.Flush();
  EXPECT_EQ(bed.Events("noisy").size(), 25u);
  bed.clock.Advance(std::chrono::minutes(1));  // 5 minutes: one token
  bed.rec.Record(Job("noisy"), "Normal", "Late1", "m");
  bed.rec.Record(Job("noisy"), "Normal", "Late2", "m");
  bed.rec.Flush();
  auto noisy = bed.Events("noisy");
  EXPECT_EQ(noisy.size(), 26u);
  EXPECT_EQ(std::count_if(noisy.begin(), noisy.end(), [](const json& e) { return e["reason"] == "Late1"; }), 1);
  EXPECT_EQ(bed.Metric("tfjob_events_dropped_total", "spam_filter"), 17);
  EXPECT_EQ(bed.Metric("tfjob_events_written_total"), 27);
}

TEST(EventRecorder, TheSpamFilterForgetsIdleObjectsAndKeepsAtMostItsCap) {
  EventRecorderOptions options;
  options.max_objects = 100;
  Bed bed(options);
  for (int j = 0; j < 150; ++j) bed.rec.Record(Job("j" + std::to_string(j)), "Normal", "R", "m");
  bed.rec.Flush();
  EXPECT_EQ(bed.rec.TrackedObjects(), 100u);
  EXPECT_EQ(bed.Events().size(), 150u);
  bed.clock.Advance(std::chrono::minutes(11));
  bed.rec.Record(Job("late"), "Normal", "R", "m");
  EXPECT_EQ(bed.rec.TrackedObjects(), 1u);  // the idle ones are gone
}

TEST(EventRecorder, TheLeastRecentlyUsedObjectIsEvictedFirst) {
  EventRecorderOptions options;
  options.max_objects = 2;
  Bed bed(options);
  for (int i = 0; i < 25; ++i) bed.rec.Record(Job("a"), "Normal", "R" + std::to_string(i), "m");
  bed.rec.Record(Job("b"), "Normal", "R", "m");
  bed.rec.Record(Job("a"), "Normal", "Over", "m");   // a has no token left: dropped, and a is used
  bed.rec.Record(Job("c"), "Normal", "R", "m");      // evicts b, the least recently used
  bed.rec.Record(Job("a"), "Normal", "Over2", "m");  // still limited
  bed.rec.Flush();
  EXPECT_EQ(bed.Events("a").size(), 25u);
  EXPECT_EQ(bed.Metric("tfjob_events_dropped_total", "spam_filter"), 2);
}

TEST(EventRecorder, WriteErrorsAreCountedAndAMissingEventIsWrittenAnew) {
  Bed bed;
  bed.server.AddFault({.verb = "create", .resource = "events", .code = 500, .times = 1});
  bed.rec.Record(Job("a"), "Normal", "R", "lost");
  bed.rec.Flush();
  EXPECT_EQ(bed.Metric("tfjob_events_dropped_total", "write_error"), 1);
  // The repeat finds no event on the server (its create failed, or it expired): it is created,
  // with the count so far.
  bed.rec.Record(Job("a"), "Normal", "R", "lost");
  bed.rec.Flush();
  auto events = bed.Events("a");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0]["count"], 2);
  EXPECT_EQ(bed.Metric("tfjob_events_written_total"), 1);
  EXPECT_NE(bed.registry.Expose().find("tfjob_events_dropped_total{reason=\"queue_full\"} 0"), std::string::npos)
      << bed.registry.Expose();
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
    for (int i = 0; i < 50; ++i) rec.Record(Job("j" + std::to_string(i)), "Normal", "R", "m");
    gate.unlock();
    rec.Flush();
  }
  double dropped = registry.AddCounter("tfjob_events_dropped_total", "", {"reason"}).With({"queue_full"}).value();
  EXPECT_GE(dropped, 44);
  EXPECT_EQ(dropped + registry.AddCounter("tfjob_events_written_total", "").With({}).value(), 50);
}

}  // namespace
}  // namespace tfjob::controller
