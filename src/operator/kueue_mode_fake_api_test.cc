// The operator's Kueue mode (--kueue-mode operator, docs/kueue.md) end to end without a cluster:
// TfJobController with its KueueMode against the in-process FakeApiServer; the test plays Kueue
// (it admits and evicts by writing the Workload's status) and looks at what the operator wrote.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "operator/kueue_mode.h"
#include "operator/resources.h"
#include "operator/tfjob_controller.h"
#include "testing/fake_api_server.h"
#include "testing/fake_clock.h"
#include "tfjob/core/kueue_workload.h"

namespace tfjob::operator_ {
namespace {

using nlohmann::json;

using testing::WaitUntil;

struct KueueCluster {
  FakeClock clock;
  testing::FakeApiServer server{clock};
  kube::RestClient client{server, clock, testing::UnthrottledClientOptions()};
  controller::Registry registry;
  controller::EventRecorder events{client, clock, Logger(), &registry, {.spam_burst = 1000000}};
  std::unique_ptr<TfJobController> controller;
  controller::InformerFactory informers{client, Logger()};  // after the controller: stopped before it goes

  explicit KueueCluster(const std::string& mode = "operator") {
    // Kueue's ResourceFlavor of the admissions below.
    EXPECT_TRUE(server
                    .Create(kKueueResourceFlavors, "",
                            {{"metadata", {{"name", "on-demand"}}}, {"spec", {{"nodeLabels", {{"pool", "a"}}}}}})
                    .ok());
    OperatorOptions options;
    options.workers = 2;
    options.status_count_interval = {};
    options.pod_update_batch_period = {};  // D35: likewise, a batched pass would wait forever
    options.kueue_mode = mode;
    options.kueue.topology_aware_scheduling = false;
    controller = std::make_unique<TfJobController>(client, clock, registry, events, informers, options, Logger());
    informers.Start();
    controller->Start();
    EXPECT_TRUE(WaitUntil([&] { return controller->HasSynced(); }));
    controller->StartWorkers();
  }
  ~KueueCluster() {
    controller->Stop();
    events.Stop();
  }

  // A queued job, created unsuspended (as if no webhook had defaulted suspend).
  std::string CreateJob(const std::string& name) {
    json job = testing::WorkerJobObject(name, 2);
    job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "user-queue"}};
    auto created = server.Create(kTfJobs, "default", job);
    EXPECT_TRUE(created.ok());
    return core::KueueWorkloadName("TFJob", "kubeflow.org", name, (*created)["metadata"]["uid"].get<std::string>());
  }
  json Job(const std::string& name) { return server.Get(kTfJobs, "default", name).value_or(json::object()); }
  bool Suspended(const std::string& name) {
    const json job = Job(name);
    return job.contains("spec") && job["spec"].value("runPolicy", json::object()).value("suspend", false);
  }
  std::optional<json> Workload(const std::string& name) { return server.Get(kKueueWorkloads, "default", name); }
  size_t Pods() { return server.List(kube::kPods, "default").size(); }
  // Field `field` of the Workload's condition of `type`; "" when it has none.
  static std::string Condition(const json& workload, const std::string& type, const std::string& field = "status") {
    for (const json& c : workload.value("status", json::object()).value("conditions", json::array()))
      if (c.value("type", "") == type) return c.value(field, "");
    return "";
  }
  // Kueue's scheduler: quota reserved and admitted on flavour on-demand.
  void Admit(const std::string& wl) {
    json status = {
        {"conditions",
         {{{"type", "QuotaReserved"},
           {"status", "True"},
           {"reason", "QuotaReserved"},
           {"message", "m"},
           {"lastTransitionTime", "2026-01-01T00:00:00Z"}},
          {{"type", "Admitted"},
           {"status", "True"},
           {"reason", "Admitted"},
           {"message", "m"},
           {"lastTransitionTime", "2026-01-01T00:00:00Z"}}}},
        {"admission",
         {{"clusterQueue", "cluster-queue"},
          {"podSetAssignments", {{{"name", "worker"}, {"flavors", {{"cpu", "on-demand"}}}, {"count", 2}}}}}}};
    ASSERT_TRUE(server.MergePatch(kKueueWorkloads, "default", wl, {{"status", status}}, "status").ok());
  }
  void Evict(const std::string& wl) {
    json w = *Workload(wl);
    json conditions = w["status"]["conditions"];
    conditions.push_back({{"type", "Evicted"},
                          {"status", "True"},
                          {"reason", "Preempted"},
                          {"message", "Preempted to accommodate a workload"},
                          {"lastTransitionTime", "2026-01-01T00:00:00Z"}});
    ASSERT_TRUE(
        server.MergePatch(kKueueWorkloads, "default", wl, {{"status", {{"conditions", conditions}}}}, "status").ok());
  }
};

TEST(KueueMode, QueuesAdmitsAndEvictsThroughItsOwnWorkload) {
  KueueCluster c;
  const std::string wl = c.CreateJob("mnist");

  // The job created unsuspended is suspended, its Workload created; no pod meanwhile.
  ASSERT_TRUE(WaitUntil([&] { return c.Suspended("mnist") && c.Workload(wl).has_value(); }));
  const json created = *c.Workload(wl);
  EXPECT_EQ(created["spec"]["queueName"], "user-queue");
  EXPECT_EQ(created["spec"]["podSets"][0]["name"], "worker");
  EXPECT_EQ(created["spec"]["podSets"][0]["count"], 2);
  EXPECT_EQ(created["metadata"]["ownerReferences"][0]["name"], "mnist");
  EXPECT_EQ(created["metadata"]["ownerReferences"][0]["controller"], true);
  EXPECT_EQ(c.Pods(), 0u);
  EXPECT_EQ(c.server.List(kKueueWorkloads, "default").size(), 1u);

  // Admitted: the flavour's node labels go into the template, the job runs, its pods carry them.
  c.Admit(wl);
  ASSERT_TRUE(WaitUntil([&] { return !c.Suspended("mnist") && c.Pods() == 2; }));
  const json tmpl = c.Job("mnist")["spec"]["tfReplicaSpecs"]["Worker"]["template"];
  EXPECT_EQ(tmpl["spec"]["nodeSelector"], json({{"pool", "a"}}));
  EXPECT_EQ(tmpl["metadata"]["labels"]["kueue.x-k8s.io/podset"], "worker");
  for (const json& pod : c.server.List(kube::kPods, "default")) EXPECT_EQ(pod["spec"]["nodeSelector"]["pool"], "a");

  // Evicted: the job stops with its template restored, its pods go, then the reservation is
  // cleared with Requeued (a preemption: True).
  c.Evict(wl);
  ASSERT_TRUE(WaitUntil([&] {
    auto w = c.Workload(wl);
    return w && c.Condition(*w, "QuotaReserved") == "False";
  }));
  EXPECT_TRUE(c.Suspended("mnist"));
  EXPECT_EQ(c.Pods(), 0u);
  EXPECT_FALSE(c.Job("mnist")["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].contains("nodeSelector"));
  const json evicted = *c.Workload(wl);
  EXPECT_FALSE(evicted["status"].contains("admission"));
  EXPECT_EQ(c.Condition(evicted, "Requeued"), "True");
  EXPECT_EQ(c.Condition(evicted, "Admitted"), "False");
  EXPECT_EQ(c.server.List(kKueueWorkloads, "default").size(), 1u) << "never a second Workload";
}

TEST(KueueMode, FinishedJobFinishesItsWorkload) {
  KueueCluster c;
  const std::string wl = c.CreateJob("done");
  ASSERT_TRUE(WaitUntil([&] { return c.Workload(wl).has_value(); }));
  c.Admit(wl);
  ASSERT_TRUE(WaitUntil([&] { return c.Pods() == 2; }));
  // The kubelet: every pod succeeds.
  for (const json& pod : c.server.List(kube::kPods, "default")) {
    json status = {
        {"phase", "Succeeded"},
        {"containerStatuses",
         {{{"name", "tensorflow"}, {"state", {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}}}}}}};
    ASSERT_TRUE(c.server
                    .MergePatch(kube::kPods, "default", pod["metadata"]["name"].get<std::string>(),
                                {{"status", status}}, "status")
                    .ok());
  }
  ASSERT_TRUE(WaitUntil([&] {
    auto w = c.Workload(wl);
    return w && c.Condition(*w, "Finished") == "True";
  }));
  EXPECT_EQ(c.Condition(*c.Workload(wl), "Finished", "reason"), "Succeeded");
  // Finished: Kueue's finalizer is gone, so the Workload goes with its job.
  ASSERT_TRUE(WaitUntil(
      [&] { return !c.Workload(wl)->contains("metadata") || !(*c.Workload(wl))["metadata"].contains("finalizers"); }));
}

TEST(KueueMode, DeletedJobReleasesItsWorkload) {
  KueueCluster c;
  const std::string wl = c.CreateJob("gone");
  ASSERT_TRUE(WaitUntil([&] { return c.Workload(wl).has_value(); }));
  EXPECT_EQ((*c.Workload(wl))["metadata"]["finalizers"], json({"kueue.x-k8s.io/resource-in-use"}));
  // The fake has no garbage collector: the test checks that nothing of Kueue's holds it any more.
  ASSERT_TRUE(c.server.Delete(kTfJobs, "default", "gone").ok());
  ASSERT_TRUE(WaitUntil([&] { return !(*c.Workload(wl))["metadata"].contains("finalizers"); }));
}

TEST(KueueMode, OffByDefault) {
  KueueCluster c("integration");
  c.CreateJob("plain");
  // Without the mode a queued job is Kueue's integration's business: the operator runs it as it is.
  ASSERT_TRUE(WaitUntil([&] { return c.Pods() == 2; }));
  EXPECT_TRUE(c.server.List(kKueueWorkloads, "default").empty());
  EXPECT_EQ(OperatorOptions{}.kueue_mode, "integration");
}

// Issue 36: one cache per process. With a gang scheduler and Kueue's operator mode, both read the
// PriorityClasses: the process lists and watches them once.
TEST(KueueMode, SharesThePriorityClassesWithTheGang) {
  FakeClock clock;
  testing::FakeApiServer server{clock};
  kube::RestClient client{server, clock, testing::UnthrottledClientOptions()};
  controller::Registry registry;
  controller::EventRecorder events{client, clock, Logger(), &registry};
  OperatorOptions options;
  options.gang_scheduler_name = "volcano";
  options.kueue_mode = "operator";
  options.kueue.topology_aware_scheduling = false;
  controller::InformerFactory informers{client, Logger()};
  {
    TfJobController controller(client, clock, registry, events, informers, options, Logger());
    EXPECT_EQ(informers.CountOf("priorityclasses"), 1u);
    informers.Start();
    ASSERT_TRUE(WaitUntil([&] { return controller.HasSynced(); }));
    int lists = 0;
    for (const auto& r : server.requests())
      if (r.verb == "list" && r.resource == "priorityclasses") ++lists;
    EXPECT_EQ(lists, 1);
    informers.Stop();
  }
  events.Stop();
}

}  // namespace
}  // namespace tfjob::operator_
