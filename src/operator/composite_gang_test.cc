// The hierarchical gang of docs/semantics.md D33 in the operator: discovery of CompositePodGroups
// (pure, then the tracker against the FakeApiServer), and the controller's writes against the
// FakeApiServer: their order (Workload, CompositePodGroup, PodGroups, pods), the deletes on
// suspend (PodGroups, CompositePodGroup, Workload), and a job whose Workload is flat staying flat.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "operator/native_gang_api.h"
#include "operator/resources.h"
#include "operator/tfjob_controller.h"
#include "testing/fake_api_server.h"
#include "testing/fake_clock.h"
#include "testing/fixtures.h"
#include "tfjob/core/composite_gang.h"

namespace tfjob::operator_ {
namespace {

using core::NativeGangApi;
using nlohmann::json;
using ::tfjob::testing::WaitUntil;

json Group(const std::vector<std::string>& versions) {
  json list = json::array();
  for (const auto& v : versions) list.push_back({{"groupVersion", "scheduling.k8s.io/" + v}, {"version", v}});
  return {{"kind", "APIGroup"}, {"name", "scheduling.k8s.io"}, {"versions", list}};
}

json Resources(const std::vector<std::string>& names) {
  json list = json::array();
  for (const auto& n : names) list.push_back({{"name", n}, {"namespaced", true}});
  return {{"kind", "APIResourceList"}, {"groupVersion", "scheduling.k8s.io/v1alpha3"}, {"resources", list}};
}

TEST(ServesCompositePodGroups, NeedsV1alpha3AndItsResource) {
  struct Case {
    std::string name;
    json group, resources;
    bool want;
  };
  const std::vector<Case> cases = {
      {"v1.37 with the gate", Group({"v1", "v1beta1", "v1alpha3"}),
       Resources({"workloads", "podgroups", "compositepodgroups"}), true},
      {"v1alpha3 without the CompositePodGroup gate", Group({"v1", "v1beta1", "v1alpha3"}),
       Resources({"workloads", "podgroups"}), false},
      {"the subresource only is not the resource", Group({"v1", "v1alpha3"}), Resources({"compositepodgroups/status"}),
       false},
      {"v1alpha3 not listed", Group({"v1", "v1beta1"}), Resources({"compositepodgroups"}), false},
      {"no resource list (a 404)", Group({"v1", "v1beta1", "v1alpha3"}), json::object(), false},
      {"resources not a list", Group({"v1alpha3"}), json{{"resources", "compositepodgroups"}}, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(ServesCompositePodGroups(c.group, c.resources), c.want);
  }
  EXPECT_EQ(NativeCompositePodGroups(),
            (kube::GroupVersionResource{"scheduling.k8s.io", "v1alpha3", "compositepodgroups"}));
}

struct Server {
  FakeClock clock;
  ::tfjob::testing::FakeApiServer server{clock};
  kube::RestClient client{server, clock, ::tfjob::testing::UnthrottledClientOptions()};
  void ServeComposite(bool on) {
    server.ServeVersions("scheduling.k8s.io", {"v1", "v1beta1", "v1alpha3"});
    server.ServeResources("scheduling.k8s.io", "v1alpha3",
                          on ? std::vector<std::string>{"workloads", "podgroups", "compositepodgroups"}
                             : std::vector<std::string>{"workloads", "podgroups"});
  }
};

// Discovered with the version; a 404 of the CompositePodGroups (the gate turned off) discovers again.
TEST(NativeGangApiTracker, DiscoversCompositePodGroups) {
  Server s;
  s.ServeComposite(true);
  NativeGangApiTracker tracker(s.client, NativeGangApi::kV1alpha2, Logger());
  ASSERT_TRUE(tracker.Discover().ok());
  EXPECT_EQ(tracker.current(), NativeGangApi::kV1beta1);
  EXPECT_TRUE(tracker.composite_pod_groups());

  s.ServeComposite(false);
  tracker.CallFailed(NativeCompositePodGroups(), UnavailableError("connection refused"));
  EXPECT_EQ(tracker.discoveries(), 1);
  tracker.CallFailed(NativeCompositePodGroups(), NotFoundError("404"));
  EXPECT_EQ(tracker.discoveries(), 2);
  EXPECT_FALSE(tracker.composite_pod_groups());
  EXPECT_EQ(tracker.current(), NativeGangApi::kV1beta1);

  // v1alpha2 beside v1alpha3 (not a real server): no hierarchy without v1beta1's PodGroups.
  s.server.ServeVersions("scheduling.k8s.io", {"v1", "v1alpha2", "v1alpha3"});
  s.server.ServeResources("scheduling.k8s.io", "v1alpha3", {"compositepodgroups"});
  ASSERT_TRUE(tracker.Discover().ok());
  EXPECT_EQ(tracker.current(), NativeGangApi::kV1alpha2);
  EXPECT_FALSE(tracker.composite_pod_groups());
}

// A PS + 2 workers + an evaluator job.
json MixJob(const std::string& name) {
  json job = ::tfjob::testing::WorkerJobObject(name, 2);
  json& specs = job["spec"]["tfReplicaSpecs"];
  specs["PS"] = specs["Worker"];
  specs["PS"]["replicas"] = 1;
  specs["Evaluator"] = specs["PS"];
  return job;
}

struct CompositeCluster : Server {
  controller::Registry registry;
  controller::EventRecorder events{client, clock, Logger(), &registry, {.spam_burst = 1000000}};
  OperatorOptions options;
  std::unique_ptr<TfJobController> controller;
  controller::InformerFactory informers{client, Logger()};  // after the controller: stopped before it goes

  // `workloads`: there before the operator starts.
  explicit CompositeCluster(bool composite = true, const std::vector<json>& workloads = {}) {
    ServeComposite(composite);
    for (const auto& w : workloads)
      EXPECT_TRUE(server.Create(NativeWorkloads(NativeGangApi::kV1beta1), "default", w).ok());
    options.workers = 2;
    options.write_concurrency = 4;
    options.status_count_interval = {};
    options.pod_update_batch_period = {};  // D35: likewise, a batched pass would wait forever
    options.gang_scheduler_name = "kubernetes";
    options.native_gang_api = NativeGangApi::kV1beta1;  // what the start-up discovery found
    options.native_composite_pod_groups = composite;
    controller = std::make_unique<TfJobController>(client, clock, registry, events, informers, options, Logger());
    informers.Start();
    controller->Start();
    EXPECT_TRUE(WaitUntil([&] { return controller->HasSynced(); }));
    controller->StartWorkers();
  }
  ~CompositeCluster() {
    controller->Stop();
    events.Stop();
  }
  std::optional<json> Get(const kube::GroupVersionResource& gvr, const std::string& name) {
    return server.Get(gvr, "default", name);
  }
  // The successful writes of `verb` on the gang's resources and pods, in order: "resource name".
  std::vector<std::string> Writes(const std::string& verb) {
    std::vector<std::string> out;
    for (const auto& r : server.requests()) {
      if (r.verb != verb || r.code >= 300 || r.subresource != "") continue;
      if (r.resource != "workloads" && r.resource != "compositepodgroups" && r.resource != "podgroups" &&
          r.resource != "pods")
        continue;
      std::string name = r.name;
      if (name.empty()) name = json::parse(r.body)["metadata"].value("name", "");
      out.push_back(r.resource + " " + name);
    }
    return out;
  }
};

const auto kBetaPodGroups = NativePodGroups(NativeGangApi::kV1beta1);
const auto kBetaWorkloads = NativeWorkloads(NativeGangApi::kV1beta1);

TEST(CompositeGangController, CreatesTheHierarchyInOrderAndDeletesItOnSuspend) {
  CompositeCluster k;
  ASSERT_TRUE(k.server.Create(kTfJobs, "default", MixJob("mix")).ok());
  ASSERT_TRUE(WaitUntil([&] { return k.server.List(kube::kPods, "default").size() == 4; }));
  auto w = k.Get(kBetaWorkloads, "mix");
  ASSERT_TRUE(w);
  EXPECT_TRUE(::tfjob::testing::DecodedSchedulingWorkload(*w).composite);
  auto cpg = k.Get(NativeCompositePodGroups(), "mix");
  ASSERT_TRUE(cpg);
  EXPECT_EQ((*cpg)["spec"]["schedulingPolicy"], json::parse(R"({"gang":{"minGroupCount":2}})"));
  auto leaders = k.Get(kBetaPodGroups, "mix.leaders");
  auto workers = k.Get(kBetaPodGroups, "mix.workers");
  ASSERT_TRUE(leaders && workers);
  EXPECT_EQ((*leaders)["spec"]["parentCompositePodGroupName"], "mix");
  EXPECT_EQ((*workers)["spec"]["schedulingPolicy"], json::parse(R"({"gang":{"minCount":2}})"));
  EXPECT_FALSE(k.Get(kBetaPodGroups, "mix")) << "no flat PodGroup";
  std::map<std::string, json> groups;
  for (const auto& p : k.server.List(kube::kPods, "default"))
    groups[p["metadata"]["name"]] = p["spec"].value("schedulingGroup", json());
  EXPECT_EQ(groups, (std::map<std::string, json>{{"mix-ps-0", {{"podGroupName", "mix.leaders"}}},
                                                 {"mix-worker-0", {{"podGroupName", "mix.workers"}}},
                                                 {"mix-worker-1", {{"podGroupName", "mix.workers"}}},
                                                 {"mix-evaluator-0", nullptr}}));
  // KEP-6089's order: the Workload, the CompositePodGroup, its PodGroups, then the pods.
  std::vector<std::string> creates = k.Writes("create");
  ASSERT_GE(creates.size(), 5u);
  EXPECT_THAT(std::vector<std::string>(creates.begin(), creates.begin() + 4),
              ::testing::ElementsAre("workloads mix", "compositepodgroups mix", "podgroups mix.leaders",
                                     "podgroups mix.workers"));
  EXPECT_EQ(creates.size(), 8u) << ::testing::PrintToString(creates);

  k.server.ClearRequests();
  auto job = k.server.Get(kTfJobs, "default", "mix");
  ASSERT_TRUE(job);
  ASSERT_TRUE(
      k.server.MergePatch(kTfJobs, "default", "mix", json::parse(R"({"spec":{"runPolicy":{"suspend":true}}})")).ok());
  ASSERT_TRUE(WaitUntil([&] {
    return !k.Get(kBetaWorkloads, "mix") && !k.Get(NativeCompositePodGroups(), "mix") &&
           !k.Get(kBetaPodGroups, "mix.leaders") && !k.Get(kBetaPodGroups, "mix.workers") &&
           k.server.List(kube::kPods, "default").empty();
  })) << ::testing::PrintToString(k.Writes("delete"));
  std::vector<std::string> gang_deletes;
  for (const auto& d : k.Writes("delete"))
    if (d.rfind("pods ", 0) != 0) gang_deletes.push_back(d);
  EXPECT_THAT(gang_deletes, ::testing::ElementsAre("podgroups mix.leaders", "podgroups mix.workers",
                                                   "compositepodgroups mix", "workloads mix"));
}

// Not served, or a job with workers only: the flat gang of D31, every pod in <job>.
TEST(CompositeGangController, FlatWhereTheHierarchyDoesNotApply) {
  for (bool served : {false, true}) {
    SCOPED_TRACE(served ? "served, workers only" : "not served, PS and workers");
    CompositeCluster k(served);
    json job = served ? ::tfjob::testing::WorkerJobObject("flat", 2) : MixJob("flat");
    ASSERT_TRUE(k.server.Create(kTfJobs, "default", job).ok());
    const size_t pods = served ? 2 : 4;
    ASSERT_TRUE(WaitUntil([&] { return k.server.List(kube::kPods, "default").size() == pods; }));
    EXPECT_TRUE(k.Get(kBetaPodGroups, "flat"));
    EXPECT_FALSE(k.Get(NativeCompositePodGroups(), "flat"));
    EXPECT_FALSE(::tfjob::testing::DecodedSchedulingWorkload(*k.Get(kBetaWorkloads, "flat")).composite);
    for (const auto& p : k.server.List(kube::kPods, "default"))
      EXPECT_EQ(p["spec"]["schedulingGroup"], json::parse(R"({"podGroupName":"flat"})"));
  }
}

// A job whose Workload is flat (made before the cluster served CompositePodGroups) keeps it:
// its templates cannot change, and its pods name <job>.
TEST(CompositeGangController, AnExistingFlatWorkloadKeepsItsShape) {
  const json flat = {{"apiVersion", "scheduling.k8s.io/v1beta1"},
                     {"kind", "Workload"},
                     {"metadata", {{"name", "old"}}},
                     {"spec",
                      {{"podGroupTemplates",
                        json::array({{{"name", "tfjob"}, {"schedulingPolicy", {{"gang", {{"minCount", 3}}}}}}})}}}};
  CompositeCluster k(true, {flat});
  ASSERT_TRUE(k.server.Create(kTfJobs, "default", MixJob("old")).ok());
  ASSERT_TRUE(WaitUntil([&] { return k.server.List(kube::kPods, "default").size() == 4; }));
  EXPECT_TRUE(k.Get(kBetaPodGroups, "old"));
  EXPECT_FALSE(k.Get(NativeCompositePodGroups(), "old"));
  EXPECT_FALSE(k.Get(kBetaPodGroups, "old.leaders"));
  for (const auto& p : k.server.List(kube::kPods, "default"))
    EXPECT_EQ(p["spec"]["schedulingGroup"], json::parse(R"({"podGroupName":"old"})"));
}

}  // namespace
}  // namespace tfjob::operator_
