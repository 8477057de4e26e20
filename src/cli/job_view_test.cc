#include "cli/job_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::cli {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

api::Time T(const char* s) {
  return *api::ParseTime(s);
}

json Job(const std::string& name = "dist") {
  return json::parse(R"({"apiVersion":"kubeflow.org/v1","kind":"TFJob",
    "metadata":{"name":")" +
                     name + R"(","namespace":"ns","uid":"u1","creationTimestamp":"2026-01-01T00:00:00Z"},
    "spec":{"tfReplicaSpecs":{"PS":{"replicas":1,"template":{}},"Worker":{"replicas":2,"template":{}}}}})");
}

json WithConditions(json j, const std::vector<std::tuple<std::string, std::string, std::string, std::string>>& cs) {
  json arr = json::array();
  int i = 0;
  for (const auto& [type, status, reason, message] : cs)
    arr.push_back({{"type", type},
                   {"status", status},
                   {"reason", reason},
                   {"message", message},
                   {"lastTransitionTime", "2026-01-01T00:00:0" + std::to_string(++i) + "Z"}});
  j["status"]["conditions"] = arr;
  return j;
}

json Pod(const std::string& name, const std::string& phase, json container_status = json(),
         json conditions = json::array()) {
  json p = {{"metadata",
             {{"name", name},
              {"uid", name + "-uid"},
              {"creationTimestamp", "2026-01-01T00:00:01Z"},
              {"labels", {{"training.kubeflow.org/replica-type", "worker"}}}}},
            {"spec", {{"nodeName", "kwok-node-0"}}},
            {"status", {{"phase", phase}, {"conditions", conditions}}}};
  if (!container_status.is_null()) p["status"]["containerStatuses"] = json::array({container_status});
  return p;
}

const auto kCreated = std::make_tuple(std::string("Created"), std::string("True"), std::string("TFJobCreated"),
                                      std::string("TFJob dist is created."));
const auto kRunning = std::make_tuple(std::string("Running"), std::string("True"), std::string("TFJobRunning"),
                                      std::string("TFJob dist is running."));

TEST(JobView, StateIsTheLatestTrueConditionAndTerminalWins) {
  EXPECT_EQ(JobState(DecodeJobView(Job())), "Pending");
  EXPECT_EQ(JobState(DecodeJobView(WithConditions(Job(), {kCreated}))), "Created");
  EXPECT_EQ(JobState(DecodeJobView(WithConditions(Job(), {kCreated, kRunning}))), "Running");
  auto failed = WithConditions(Job(), {kCreated, kRunning, {"Running", "False", "", ""}, {"Failed", "True", "x", "y"}});
  failed["status"]["conditions"][1]["status"] = "False";
  EXPECT_EQ(JobState(DecodeJobView(failed)), "Failed");
  EXPECT_TRUE(JobFinished(DecodeJobView(failed)));
  EXPECT_FALSE(JobSucceeded(DecodeJobView(failed)));
  json suspended = Job();
  suspended["spec"]["runPolicy"]["suspend"] = true;
  EXPECT_EQ(JobState(DecodeJobView(suspended)), "Suspended");
}

TEST(JobView, FormatAgeLikeKubectl) {
  using std::chrono::seconds;
  EXPECT_EQ(FormatAge(seconds(45)), "45s");
  EXPECT_EQ(FormatAge(seconds(119)), "119s");
  EXPECT_EQ(FormatAge(seconds(192)), "3m12s");
  EXPECT_EQ(FormatAge(seconds(180)), "3m");
  EXPECT_EQ(FormatAge(seconds(17 * 60 + 5)), "17m");
  EXPECT_EQ(FormatAge(seconds(5 * 3600 + 3 * 60)), "5h3m");
  EXPECT_EQ(FormatAge(seconds(20 * 3600)), "20h");
  EXPECT_EQ(FormatAge(seconds((3 * 24 + 4) * 3600)), "3d4h");
  EXPECT_EQ(FormatAge(seconds(12 * 24 * 3600)), "12d");
  EXPECT_EQ(FormatAge(seconds(-5)), "0s");
}

TEST(JobView, GetTableColumns) {
  json j = WithConditions(Job(), {kCreated, kRunning});
  j["status"]["replicaStatuses"] = {{"PS", {{"active", 1}}}, {"Worker", {{"active", 1}, {"restarts", 3}}}};
  json other = Job("a");
  other["metadata"]["name"] = "a\x1b[31m";
  std::vector<JobView> jobs = {DecodeJobView(j), DecodeJobView(other)};
  auto now = T("2026-01-01T00:03:12Z");
  auto lines = FormatGetTable(jobs, now, {});
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "NAME        STATE     AGE     REPLICAS            RESTARTS");
  EXPECT_EQ(lines[1], "dist        Running   3m12s   PS 1/1 Worker 1/2   3");
  // Names are escaped: a name cannot drive the terminal.
  EXPECT_THAT(lines[2], HasSubstr("a\\x1b[31m"));
  auto wide = FormatGetTable({DecodeJobView(j)}, now, {true, true, true});
  EXPECT_THAT(wide[0], HasSubstr("NAMESPACE"));
  EXPECT_THAT(wide[0], HasSubstr("QUEUE"));
  EXPECT_THAT(wide[1], HasSubstr("TFJob dist is running."));
}

TEST(JobView, ReplicaRowsHaveEveryReplicaAndTheWaitingReason) {
  JobView job = DecodeJobView(Job());
  std::vector<PodView> pods = {
      DecodePodView(Pod("dist-worker-0", "Running",
                        {{"name", "tensorflow"},
                         {"restartCount", 2},
                         {"state", {{"running", {{"startedAt", "2026-01-01T00:00:02Z"}}}}},
                         {"lastState", {{"terminated", {{"exitCode", 137}}}}}})),
      DecodePodView(Pod("dist-worker-1", "Pending",
                        {{"name", "tensorflow"}, {"state", {{"waiting", {{"reason", "ImagePullBackOff"}}}}}})),
  };
  auto rows = ReplicaRows(job, pods, T("2026-01-01T00:00:12Z"));
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "dist-ps-0");
  EXPECT_EQ(rows[0].state, "NotCreated");
  EXPECT_EQ(rows[1].state, "Running");
  EXPECT_EQ(rows[1].restarts, 2);
  EXPECT_EQ(rows[1].exit_code, -1);  // running now: no exit code shown
  EXPECT_EQ(rows[1].run_time, std::chrono::seconds(10));
  EXPECT_EQ(rows[1].detail, "kwok-node-0");
  EXPECT_EQ(rows[2].state, "ImagePullBackOff");
  auto table = local::FormatReplicaTable(rows, "NODE");
  EXPECT_EQ(table[0], "REPLICA                      STATE      RESTARTS EXIT CODE   RUN TIME  NODE");
  EXPECT_EQ(table[2], "dist-worker-0                Running           2         -      10.0s  kwok-node-0");
}

TEST(JobView, RowChangesArePlainLines) {
  std::vector<local::ReplicaRow> a = {{"w-0", "Pending", 0, -1, {}, ""}};
  std::vector<local::ReplicaRow> b = {{"w-0", "Running", 0, -1, {}, "node-1"}};
  std::vector<local::ReplicaRow> c = {{"w-0", "Failed", 1, 3, {}, "node-1"}};
  EXPECT_THAT(RowChanges({}, a), ::testing::ElementsAre("w-0: Pending"));
  EXPECT_THAT(RowChanges(a, a), ::testing::IsEmpty());
  EXPECT_THAT(RowChanges(a, b), ::testing::ElementsAre("w-0: Pending -> Running (node node-1)"));
  EXPECT_THAT(RowChanges(b, c), ::testing::ElementsAre("w-0: Running -> Failed (exit code 3, restarts 1)"));
}

struct WhyCase {
  const char* name;
  std::function<WhyInput()> input;
  const char* expected;  // substring; "" = not explained (running or done)
};

WhyInput Input(json job, std::vector<json> pods = {}) {
  WhyInput in;
  in.job = DecodeJobView(job);
  for (const auto& p : pods) in.pods.push_back(DecodePodView(p));
  return in;
}

json Running(const std::string& name) {
  return Pod(name, "Running", {{"name", "tensorflow"}, {"state", {{"running", json::object()}}}});
}

TEST(WhyNotRunning, Table) {
  json suspended =
      WithConditions(Job(), {kCreated, {"Suspended", "True", "TFJobSuspended", "TFJob dist is suspended."}});
  suspended["spec"]["runPolicy"]["suspend"] = true;
  json queued = suspended;
  queued["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "team-a";
  json created = WithConditions(Job(), {kCreated});
  json unschedulable_cond = json::array({{{"type", "PodScheduled"},
                                          {"status", "False"},
                                          {"reason", "Unschedulable"},
                                          {"message", "0/4 nodes are available: 4 Insufficient cpu."}}});
  std::vector<WhyCase> cases = {
      {"running",
       [&] {
         return Input(WithConditions(Job(), {kCreated, kRunning}),
                      {Running("dist-ps-0"), Running("dist-worker-0"), Running("dist-worker-1")});
       },
       ""},
      {"succeeded",
       [&] {
         return Input(WithConditions(Job(), {kCreated, {"Succeeded", "True", "x", "done"}}));
       },
       ""},
      {"failed normally",
       [&] {
         return Input(WithConditions(Job(), {kCreated, {"Failed", "True", "TFJobFailed", "x"}}));
       },
       ""},
      {"failed validation",
       [&] {
         return Input(WithConditions(Job(), {{"Failed", "True", "TFJobFailedValidation",
                                              "spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1"}}));
       },
       "TFJob dist failed validation: spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1"},
      {"suspended by hand", [&] { return Input(suspended); },
       "TFJob dist is suspended (spec.runPolicy.suspend is true): `tfjob resume dist` starts it"},
      {"suspended by Kueue, no Workload", [&] { return Input(queued); },
       "is suspended by Kueue (queue \"team-a\"): it has no Workload yet"},
      {"suspended by Kueue, not admitted",
       [&] {
         WhyInput in = Input(queued);
         in.workload = WorkloadView{"tfjob-dist-1234",
                                    {{"QuotaReserved",
                                      "False",
                                      "Pending",
                                      "couldn't assign flavors to pod set worker: insufficient quota for cpu",
                                      {}}}};
         return in;
       },
       "is suspended by Kueue (queue \"team-a\"): Workload tfjob-dist-1234 is not admitted: couldn't assign flavors "
       "to pod set worker: insufficient quota for cpu"},
      {"PodGroup pending",
       [&] {
         WhyInput in = Input(created);
         in.pod_group = PodGroupView{"podgroups.scheduling.volcano.sh", "Pending", {}};
         return in;
       },
       "its PodGroup (podgroups.scheduling.volcano.sh) is Pending, not yet Inqueue"},
      {"PodGroup inqueue does not block",
       [&] {
         WhyInput in = Input(
             created, {Pod("dist-ps-0", "Pending"), Pod("dist-worker-0", "Pending"), Pod("dist-worker-1", "Pending")});
         in.pod_group = PodGroupView{"podgroups.scheduling.volcano.sh", "Inqueue", {}};
         return in;
       },
       "3 pod(s) Pending (dist-ps-0, ...)"},
      {"image pull",
       [&] {
         return Input(created,
                      {Pod("dist-worker-0", "Pending",
                           {{"name", "tensorflow"},
                            {"state", {{"waiting", {{"reason", "ErrImagePull"}, {"message", "not found"}}}}}})});
       },
       "pod dist-worker-0 cannot pull the image of container tensorflow: ErrImagePull: not found"},
      {"unschedulable", [&] { return Input(created, {Pod("dist-worker-1", "Pending", json(), unschedulable_cond)}); },
       "pod dist-worker-1 is unschedulable: 0/4 nodes are available: 4 Insufficient cpu."},
      {"crash loop",
       [&] {
         return Input(WithConditions(Job(), {kCreated, kRunning}),
                      {Pod("dist-worker-0", "Running",
                           {{"name", "tensorflow"},
                            {"restartCount", 4},
                            {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}}})});
       },
       "container tensorflow is in CrashLoopBackOff (restarts 4)"},
      {"no operator", [&] { return Input(Job()); }, "no TFJob operator has seen it yet"},
      {"pods missing", [&] { return Input(created, {Pod("dist-ps-0", "Running")}); }, "1 of its 3 pods exist"},
      {"escaped message",
       [&] {
         return Input(
             created,
             {Pod(
                 "dist-worker-1", "Pending", json(),
                 json::array({{{"type", "PodScheduled"}, {"status", "False"}, {"message", "evil\x1b]0;title\x07"}}}))});
       },
       "is unschedulable: evil\\x1b]0;title\\a"},
  };
  for (const auto& c : cases) {
    std::string got = WhyNotRunning(c.input());
    if (std::string(c.expected).empty())
      EXPECT_EQ(got, "") << c.name;
    else
      EXPECT_THAT(got, HasSubstr(c.expected)) << c.name;
  }
}

TEST(Describe, HasEverySection) {
  json j = WithConditions(Job(), {kCreated, kRunning});
  DescribeInput in;
  in.why = Input(
      j,
      {Pod("dist-worker-0", "Running",
           {{"name", "tensorflow"},
            {"restartCount", 1},
            {"state", {{"running", {{"startedAt", "2026-01-01T00:00:05Z"}}}}},
            {"lastState",
             {{"terminated",
               {{"exitCode", 1}, {"startedAt", "2026-01-01T00:00:02Z"}, {"finishedAt", "2026-01-01T00:00:04Z"}}}}}})});
  in.events = {
      {"Normal", "SuccessfulCreatePod", "Created pod: dist-worker-0", "TFJob/dist", 1, T("2026-01-01T00:00:01Z")}};
  in.now = T("2026-01-01T00:00:20Z");
  std::string text = FormatDescribe(in);
  EXPECT_THAT(text, HasSubstr("State:       Running\n"));
  EXPECT_THAT(text, HasSubstr("Why not running: TFJob dist is not running: 1 of its 3 pods exist"));
  EXPECT_THAT(text, HasSubstr("  +2s     Running=True"));
  EXPECT_THAT(text, HasSubstr("dist-worker-0                Running           1"));
  EXPECT_THAT(text, HasSubstr("created +1s, running +2s, exit 1 at +4s, 1 restart"));
  EXPECT_THAT(text, HasSubstr("SuccessfulCreatePod"));
  EXPECT_THAT(text, HasSubstr("Created pod: dist-worker-0"));
}

TEST(Timeline, BarsShowPendingRunningAndExits) {
  JobView job = DecodeJobView(Job());
  std::vector<PodView> pods = {DecodePodView(
      Pod("dist-worker-0", "Failed",
          {{"name", "tensorflow"},
           {"state",
            {{"terminated",
              {{"exitCode", 2}, {"startedAt", "2026-01-01T00:00:05Z"}, {"finishedAt", "2026-01-01T00:00:08Z"}}}}}}))};
  auto lines = FormatReplicaTimeline(job, pods, T("2026-01-01T00:00:10Z"), 11);
  ASSERT_EQ(lines.size(), 1u);
  // 11 columns over 10 s: one per second; created at 1 s, running 5-8 s, exit 2 at 8 s.
  EXPECT_EQ(lines[0], "  dist-worker-0   ....===x    created +1s, running +5s, exit 2 at +8s");
}

TEST(Warnings, HeaderText) {
  EXPECT_EQ(WarningText(R"(299 - "unknown field \"spec.foo\"")"), "unknown field \"spec.foo\"");
  EXPECT_EQ(WarningText("299 - \"evil \x1b[2J\""), "evil \\x1b[2J");
  EXPECT_EQ(WarningText("not a warning"), "not a warning");
}

TEST(LogPrefix, LikeTfjobRun) {
  EXPECT_EQ(LogPrefix("dist", "dist-worker-0", "tensorflow", true), "worker-0");
  EXPECT_EQ(LogPrefix("dist", "dist-worker-0", "sidecar", false), "worker-0/sidecar");
  EXPECT_EQ(LogPrefix("dist", "other", "tensorflow", true), "other");
}

}  // namespace
}  // namespace tfjob::cli
