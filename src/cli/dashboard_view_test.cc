#include "cli/dashboard_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::cli::dashboard {
namespace {

using nlohmann::json;

api::Time T(const char* s) {
  return *api::ParseTime(s);
}

// A pod of job "dist" whose main container has `status` (containerStatuses[0]).
PodView Pod(const std::string& phase, json status, const std::string& uid = "u0") {
  json p = {{"metadata",
             {{"name", "dist-worker-0"},
              {"uid", uid},
              {"creationTimestamp", "2026-01-01T00:00:00Z"},
              {"labels", {{"training.kubeflow.org/replica-type", "worker"}}}}},
            {"spec", {{"nodeName", "node-a"}}},
            {"status", {{"phase", phase}, {"startTime", "2026-01-01T00:00:01Z"}}}};
  if (!status.is_null()) {
    status["name"] = "tensorflow";
    p["status"]["containerStatuses"] = json::array({status});
  }
  return DecodePodView(p);
}

struct AttemptCase {
  const char* what;
  std::string phase;
  json status;
  // (instance, outcome, exit code, start, end or "")
  std::vector<std::tuple<int, std::string, int, std::string, std::string>> want;
};

TEST(ExtractAttempts, Table) {
  const std::vector<AttemptCase> cases = {
      {"pending, no container status: from the pod's creation",
       "Pending",
       json(),
       {{0, "pending", -1, "2026-01-01T00:00:00Z", ""}}},
      {"waiting to be created",
       "Pending",
       {{"restartCount", 0}, {"state", {{"waiting", {{"reason", "ContainerCreating"}}}}}},
       {{0, "pending", -1, "2026-01-01T00:00:00Z", ""}}},
      {"running",
       "Running",
       {{"restartCount", 0}, {"state", {{"running", {{"startedAt", "2026-01-01T00:00:02Z"}}}}}},
       {{0, "running", -1, "2026-01-01T00:00:02Z", ""}}},
      {"ended with 0",
       "Succeeded",
       {{"restartCount", 0},
        {"state",
         {{"terminated",
           {{"exitCode", 0}, {"startedAt", "2026-01-01T00:00:02Z"}, {"finishedAt", "2026-01-01T00:00:09Z"}}}}}},
       {{0, "succeeded", 0, "2026-01-01T00:00:02Z", "2026-01-01T00:00:09Z"}}},
      {"restarted in place: the last instance and the current one",
       "Running",
       {{"restartCount", 2},
        {"state", {{"running", {{"startedAt", "2026-01-01T00:00:20Z"}}}}},
        {"lastState",
         {{"terminated",
           {{"exitCode", 137},
            {"reason", "OOMKilled"},
            {"startedAt", "2026-01-01T00:00:10Z"},
            {"finishedAt", "2026-01-01T00:00:15Z"}}}}}},
       {{1, "failed", 137, "2026-01-01T00:00:10Z", "2026-01-01T00:00:15Z"},
        {2, "running", -1, "2026-01-01T00:00:20Z", ""}}},
      {"crash loop: only the last instance",
       "Running",
       {{"restartCount", 1},
        {"state", {{"waiting", {{"reason", "CrashLoopBackOff"}}}}},
        {"lastState",
         {{"terminated",
           {{"exitCode", 1}, {"startedAt", "2026-01-01T00:00:02Z"}, {"finishedAt", "2026-01-01T00:00:04Z"}}}}}},
       {{0, "failed", 1, "2026-01-01T00:00:02Z", "2026-01-01T00:00:04Z"}}},
      {"failed without a container status (evicted)",
       "Failed",
       json(),
       {{0, "failed", -1, "2026-01-01T00:00:01Z", "2026-01-01T00:00:01Z"}}},
  };
  for (const auto& c : cases) {
    auto got = ExtractAttempts("dist", Pod(c.phase, c.status));
    ASSERT_EQ(got.size(), c.want.size()) << c.what;
    for (size_t i = 0; i < got.size(); ++i) {
      const auto& [instance, outcome, code, start, end] = c.want[i];
      EXPECT_EQ(got[i].replica, "worker-0") << c.what;
      EXPECT_EQ(got[i].node, "node-a") << c.what;
      EXPECT_EQ(got[i].instance, instance) << c.what;
      EXPECT_EQ(got[i].outcome, outcome) << c.what;
      EXPECT_EQ(got[i].exit_code, code) << c.what;
      EXPECT_EQ(got[i].start, T(start.c_str())) << c.what;
      EXPECT_EQ(got[i].end, end.empty() ? std::nullopt : std::optional(T(end.c_str()))) << c.what;
    }
  }
}

TEST(MergeAttempts, OneBarPerPodAndInstanceAndDeletedEnds) {
  std::vector<Attempt> history;
  // Pod u1 pending, then running, then failed (exit 137), deleted; pod u2 (same name) running.
  MergeAttempts(history, ExtractAttempts("dist", Pod("Pending", json(), "u1")), 10);
  MergeAttempts(
      history,
      ExtractAttempts(
          "dist", Pod("Running",
                      {{"restartCount", 0}, {"state", {{"running", {{"startedAt", "2026-01-01T00:00:02Z"}}}}}}, "u1")),
      10);
  ASSERT_EQ(history.size(), 1u);
  EXPECT_EQ(history[0].outcome, "running");
  MergeAttempts(history,
                ExtractAttempts("dist", Pod("Failed",
                                            {{"restartCount", 0},
                                             {"state",
                                              {{"terminated",
                                                {{"exitCode", 137},
                                                 {"startedAt", "2026-01-01T00:00:02Z"},
                                                 {"finishedAt", "2026-01-01T00:00:05Z"}}}}}},
                                            "u1")),
                10);
  EndDeleted(history, "u1", T("2026-01-01T00:00:06Z"));
  EXPECT_EQ(history[0].outcome, "failed");  // it had ended: its outcome stays
  MergeAttempts(
      history,
      ExtractAttempts(
          "dist", Pod("Running",
                      {{"restartCount", 0}, {"state", {{"running", {{"startedAt", "2026-01-01T00:00:08Z"}}}}}}, "u2")),
      10);
  ASSERT_EQ(history.size(), 2u);
  EndDeleted(history, "u2", T("2026-01-01T00:00:09Z"));
  EXPECT_EQ(history[1].outcome, "deleted");
  EXPECT_EQ(history[1].end, T("2026-01-01T00:00:09Z"));
  json j = AttemptsJson(history);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["exitCode"], 137);
  EXPECT_EQ(j[1]["exitCode"], nullptr);
}

TEST(MergeAttempts, BoundedOldestEndedFirst) {
  std::vector<Attempt> history;
  for (int i = 0; i < 5; ++i) {
    Attempt a;
    a.uid = "u" + std::to_string(i);
    a.outcome = i == 0 ? "running" : "failed";
    if (i > 0) a.end = T("2026-01-01T00:00:05Z");
    MergeAttempts(history, {a}, 3);
  }
  ASSERT_EQ(history.size(), 3u);
  EXPECT_EQ(history[0].uid, "u0");  // the running one stays
  EXPECT_EQ(history[1].uid, "u3");
  EXPECT_EQ(history[2].uid, "u4");
}

TEST(JobRow, CountsQueueAndAdmission) {
  json job = {{"metadata",
               {{"name", "d"},
                {"namespace", "ns"},
                {"uid", "u"},
                {"creationTimestamp", "2026-01-01T00:00:00Z"},
                {"labels", {{"kueue.x-k8s.io/queue-name", "<img src=x onerror=alert(1)>"}}}}},
              {"spec", {{"tfReplicaSpecs", {{"Worker", {{"replicas", 3}}}, {"PS", json::object()}}}}},
              {"status",
               {{"replicaStatuses", {{"Worker", {{"active", 2}, {"succeeded", 1}, {"restarts", 4}}}}},
                {"conditions", json::array({{{"type", "Running"}, {"status", "True"}}})}}}};
  JobView v = DecodeJobView(job);
  json row = JobRow(v, std::nullopt);
  EXPECT_EQ(row["key"], "ns/d");
  EXPECT_EQ(row["state"], "Running");
  EXPECT_EQ(row["restarts"], 4);
  EXPECT_EQ(row["queue"], "<img src=x onerror=alert(1)>");  // data stays data; the page shows it as text
  EXPECT_EQ(row["admission"], "no workload");
  EXPECT_EQ(row["replicas"][1],
            json({{"type", "Worker"}, {"running", 2}, {"succeeded", 1}, {"failed", 0}, {"wanted", 3}}));
  EXPECT_EQ(row["replicas"][0]["wanted"], 1);

  struct Case {
    std::vector<std::pair<std::string, std::string>> conditions;
    std::string want;
  };
  for (const Case& c : std::vector<Case>{{{}, "pending"},
                                         {{{"QuotaReserved", "True"}}, "quota reserved"},
                                         {{{"QuotaReserved", "True"}, {"Admitted", "True"}}, "admitted"},
                                         {{{"Admitted", "True"}, {"Evicted", "True"}}, "evicted: Preempted"}}) {
    WorkloadView w{"wl", {}};
    for (const auto& [type, status] : c.conditions) w.conditions.push_back({type, status, "Preempted", "", {}});
    EXPECT_EQ(Admission(v, w), c.want);
  }
  v.queue = "";
  EXPECT_EQ(Admission(v, std::nullopt), "");
}

TEST(JobPage, WhyYamlAndEventsInOrder) {
  PageInput in;
  in.job = {{"metadata", {{"name", "d"}, {"namespace", "ns"}, {"uid", "u"}}},
            {"spec", {{"runPolicy", {{"suspend", true}}}, {"tfReplicaSpecs", {{"Worker", json::object()}}}}}};
  in.events = {{"Normal", "B", "second", "TFJob/d", 1, T("2026-01-01T00:00:02Z")},
               {"Warning", "A", "<script>x</script>", "TFJob/d", 2, T("2026-01-01T00:00:01Z")}};
  in.now = T("2026-01-01T00:00:03Z");
  json page = JobPage(in);
  EXPECT_THAT(page["why"].get<std::string>(), ::testing::HasSubstr("suspended"));
  EXPECT_THAT(page["yaml"].get<std::string>(), ::testing::HasSubstr("suspend: true"));
  ASSERT_EQ(page["events"].size(), 2u);
  EXPECT_EQ(page["events"][0]["message"], "<script>x</script>");
  EXPECT_EQ(page["events"][0]["count"], 2);
  EXPECT_EQ(page["workload"], nullptr);
}

TEST(Trimmed, DropsManagedFieldsAndLastApplied) {
  json o = {{"metadata",
             {{"name", "a"},
              {"managedFields", json::array({1})},
              {"annotations", {{"kubectl.kubernetes.io/last-applied-configuration", "{}"}}}}}};
  EXPECT_EQ(Trimmed(o), json({{"metadata", {{"name", "a"}}}}));
}

TEST(HostAllowed, Table) {
  struct Case {
    std::string host;
    bool loopback_only;
    bool want;
  };
  for (const Case& c : std::vector<Case>{
           {"127.0.0.1:8090", true, true},
           {"localhost:8090", true, true},
           {"[::1]:8090", true, true},
           {"127.0.0.1:8091", true, false},     // another port
           {"127.0.0.1", true, false},          // no port
           {"evil.example:8090", true, false},  // DNS rebinding
           {"127.0.0.1.evil.example:8090", true, false},
           {"localhost:8090x", true, false},
           {"", true, false},
           {"evil.example:8090", false, true},  // not loopback: the token protects it
       })
    EXPECT_EQ(HostAllowed(c.host, 8090, c.loopback_only), c.want) << c.host;
}

TEST(Secrets, TokenAndCsrf) {
  EXPECT_TRUE(SameSecret("abc", "abc"));
  EXPECT_FALSE(SameSecret("abc", "abd"));
  EXPECT_FALSE(SameSecret("abc", "ab"));
  EXPECT_FALSE(SameSecret("", ""));  // no token set matches nothing
  EXPECT_EQ(RequestToken("q", "tfjob_dashboard=c"), "q");
  EXPECT_EQ(RequestToken("", "a=1; tfjob_dashboard=c; b=2"), "c");
  EXPECT_EQ(RequestToken("", "xtfjob_dashboard=c"), "");
  EXPECT_EQ(RequestToken("", ""), "");

  struct Case {
    ActionRequest req;
    bool ok;
  };
  const std::string host = "127.0.0.1:8090";
  for (const Case& c : std::vector<Case>{
           {{"application/json", "tok", "", host}, true},
           {{"application/json; charset=utf-8", "tok", "http://127.0.0.1:8090", host}, true},
           {{"text/plain", "tok", "", host}, false},  // a cross-site form's type
           {{"application/x-www-form-urlencoded", "tok", "", host}, false},
           {{"application/json", "", "", host}, false},                        // no token
           {{"application/json", "tok2", "", host}, false},                    // wrong token
           {{"application/json", "tok", "http://evil.example", host}, false},  // another origin
           {{"application/json", "tok", "null", host}, false},
       })
    EXPECT_EQ(CheckAction(c.req, "tok").ok(), c.ok)
        << c.req.content_type << " " << c.req.csrf_header << " " << c.req.origin;
}

TEST(QueryParam, Table) {
  EXPECT_EQ(QueryParam("ns=a&name=b", "name"), "b");
  EXPECT_EQ(QueryParam("ns=a%2Fb&name=c+d", "ns"), "a/b");
  EXPECT_EQ(QueryParam("ns=a&name=c+d", "name"), "c d");
  EXPECT_EQ(QueryParam("ns=%zz", "ns"), "");
  EXPECT_EQ(QueryParam("ns=%4", "ns"), "");
  EXPECT_EQ(QueryParam("nsx=1", "ns"), "");
  EXPECT_EQ(QueryParam("wait", "wait"), "");
  EXPECT_EQ(QueryParam("", "ns"), "");
}

}  // namespace
}  // namespace tfjob::cli::dashboard
