#include "cli/dashboard_model.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <thread>

#include "testing/fake_clock.h"

namespace tfjob::cli::dashboard {
namespace {

using kube::WatchEventType;
using nlohmann::json;

json Job(const std::string& name, const std::string& state = "") {
  json j = {{"metadata",
             {{"name", name},
              {"namespace", "ns"},
              {"uid", "uid-" + name},
              {"creationTimestamp", "2026-01-01T00:00:00Z"},
              {"managedFields", json::array({1})}}},
            {"spec", {{"tfReplicaSpecs", {{"Worker", {{"replicas", 1}}}}}}}};
  if (!state.empty()) j["status"]["conditions"] = json::array({{{"type", state}, {"status", "True"}}});
  return j;
}

json Pod(const std::string& job, const std::string& uid, const std::string& phase) {
  return {{"metadata",
           {{"name", job + "-worker-0"},
            {"namespace", "ns"},
            {"uid", uid},
            {"creationTimestamp", "2026-01-01T00:00:01Z"},
            {"labels", {{"training.kubeflow.org/job-name", job}}}}},
          {"spec", {{"nodeName", "n1"}, {"containers", json::array({{{"name", "tensorflow"}, {"image", "big"}}})}}},
          {"status", {{"phase", phase}}}};
}

TEST(Model, ListSendsOnlyWhatChangedAndWhatWasRemoved) {
  FakeClock clock;
  Model m(clock);
  m.Replace(Kind::kJob, {Job("a"), Job("b")});
  json full = m.List(0);
  EXPECT_TRUE(full["full"]);
  ASSERT_EQ(full["rows"].size(), 2u);
  const int64_t v1 = full["version"];
  EXPECT_EQ(m.List(v1)["rows"].size(), 0u);

  m.Apply(Kind::kJob, WatchEventType::kModified, Job("a", "Running"));
  json d = m.List(v1);
  EXPECT_FALSE(d["full"]);
  ASSERT_EQ(d["rows"].size(), 1u);
  EXPECT_EQ(d["rows"][0]["state"], "Running");
  const int64_t v2 = d["version"];

  m.Replace(Kind::kJob, {Job("a", "Running")});  // b is gone after a relist
  d = m.List(v2);
  EXPECT_EQ(d["removed"], json::array({"ns/b"}));
  EXPECT_EQ(d["rows"].size(), 0u);  // a did not change
  EXPECT_EQ(m.jobs(), 1u);
}

TEST(Model, ForgottenDeletionsSendTheWholeList) {
  FakeClock clock;
  ModelLimits limits;
  limits.tombstones = 2;
  Model m(clock, limits);
  m.Replace(Kind::kJob, {Job("a"), Job("b"), Job("c"), Job("d")});
  const int64_t v = m.version();
  for (const char* n : {"a", "b", "c"}) m.Apply(Kind::kJob, WatchEventType::kDeleted, Job(n));
  json d = m.List(v);
  EXPECT_TRUE(d["full"]);  // the first deletion is no longer remembered
  ASSERT_EQ(d["rows"].size(), 1u);
  EXPECT_EQ(d["rows"][0]["name"], "d");
}

TEST(Model, PageHasAttemptsOfDeletedPodsEventsAndTrimmedYaml) {
  FakeClock clock;
  Model m(clock);
  m.Apply(Kind::kJob, WatchEventType::kAdded, Job("a"));
  m.Apply(Kind::kPod, WatchEventType::kAdded, Pod("a", "p1", "Pending"));
  json running = Pod("a", "p1", "Running");
  running["status"]["containerStatuses"] =
      json::array({{{"name", "tensorflow"},
                    {"restartCount", 0},
                    {"state", {{"running", {{"startedAt", "2026-01-01T00:00:02Z"}}}}}}});
  m.Apply(Kind::kPod, WatchEventType::kModified, running);
  clock.Advance(std::chrono::seconds(10));
  m.Apply(Kind::kPod, WatchEventType::kDeleted, running);
  json second = Pod("a", "p2", "Pending");  // the same pod name, created again after the first went
  second["metadata"]["creationTimestamp"] = "2026-01-01T00:00:11Z";
  m.Apply(Kind::kPod, WatchEventType::kAdded, second);
  m.Apply(Kind::kPod, WatchEventType::kAdded, Pod("other", "p3", "Pending"));
  m.Apply(Kind::kEvent, WatchEventType::kAdded,
          {{"metadata", {{"name", "e1"}, {"namespace", "ns"}}},
           {"involvedObject", {{"kind", "Pod"}, {"name", "a-worker-0"}, {"namespace", "ns"}}},
           {"type", "Warning"},
           {"reason", "BackOff"},
           {"message", "<img src=x onerror=alert(1)>"},
           {"lastTimestamp", "2026-01-01T00:00:03Z"}});
  auto page = m.Page("ns", "a");
  ASSERT_TRUE(page);
  const json& attempts = (*page)["attempts"];
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0]["uid"], "p1");
  EXPECT_EQ(attempts[0]["outcome"], "deleted");
  EXPECT_EQ(attempts[0]["end"], "2026-01-01T00:00:10Z");
  EXPECT_EQ(attempts[1]["uid"], "p2");
  EXPECT_EQ(attempts[1]["outcome"], "pending");
  ASSERT_EQ((*page)["pods"].size(), 1u);
  ASSERT_EQ((*page)["events"].size(), 1u);
  EXPECT_EQ((*page)["events"][0]["message"], "<img src=x onerror=alert(1)>");
  EXPECT_THAT((*page)["yaml"].get<std::string>(), ::testing::Not(::testing::HasSubstr("managedFields")));
  EXPECT_FALSE(m.Page("ns", "nope"));
}

TEST(Model, EventsBoundedPerObject) {
  FakeClock clock;
  ModelLimits limits;
  limits.events_per_object = 3;
  Model m(clock, limits);
  m.Apply(Kind::kJob, WatchEventType::kAdded, Job("a"));
  for (int i = 0; i < 10; ++i)
    m.Apply(Kind::kEvent, WatchEventType::kAdded,
            {{"metadata", {{"name", "e" + std::to_string(i)}, {"namespace", "ns"}}},
             {"involvedObject", {{"kind", "TFJob"}, {"name", "a"}, {"namespace", "ns"}}},
             {"reason", "R" + std::to_string(i)},
             {"lastTimestamp", "2026-01-01T00:00:0" + std::to_string(i) + "Z"}});
  const json events = (*m.Page("ns", "a"))["events"];
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[0]["reason"], "R7");  // the newest three, oldest first
  EXPECT_EQ(events[2]["reason"], "R9");
}

TEST(Model, LogsBoundedWithDroppedCount) {
  FakeClock clock;
  ModelLimits limits;
  limits.log_lines_per_job = 3;
  Model m(clock, limits);
  for (int i = 1; i <= 5; ++i) m.Log("ns", "a", "[worker-0] line " + std::to_string(i));
  json l = m.Logs("ns", "a", 0);
  EXPECT_EQ(l["lines"], json::array({"[worker-0] line 3", "[worker-0] line 4", "[worker-0] line 5"}));
  EXPECT_EQ(l["dropped"], 2);
  EXPECT_EQ(l["next"], 5);
  EXPECT_EQ(m.Logs("ns", "a", 5)["lines"].size(), 0u);
  EXPECT_EQ(m.Logs("ns", "a", 4)["lines"], json::array({"[worker-0] line 5"}));
}

TEST(Model, WaitAfterWakesOnAChangeAndOnClose) {
  FakeClock clock;
  Model m(clock);
  m.Apply(Kind::kJob, WatchEventType::kAdded, Job("a"));
  const int64_t v = m.version();
  EXPECT_FALSE(m.WaitAfter(Model::Watched::kList, "", v, std::chrono::milliseconds(1)));
  std::jthread t([&] { m.Log("ns", "a", "x"); });
  EXPECT_TRUE(m.WaitAfter(Model::Watched::kLogs, "ns/a", 0, std::chrono::minutes(5)));
  t.join();
  m.Close();
  EXPECT_FALSE(m.WaitAfter(Model::Watched::kList, "", v, std::chrono::minutes(5)));
}

}  // namespace
}  // namespace tfjob::cli::dashboard
