#include "tfjob/core/pod_group.h"

#include "tfjob/core/gang_scheduler.h"

#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

api::TfJob GangJob(const std::string& run_policy = "") {
  return testing::DefaultedJobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: g, namespace: ns, uid: u, annotations: {a: b}}\n"
      "spec:\n" +
      run_policy +
      "  tfReplicaSpecs:\n"
      "    PS:\n      replicas: 1\n      template: {spec: {priorityClassName: low, containers: [{name: tensorflow, "
      "image: x,"
      " resources: {requests: {cpu: 500m, memory: 1Gi}}}]}}\n"
      "    Worker:\n      replicas: 3\n      template: {spec: {priorityClassName: high, containers: [{name: "
      "tensorflow, image: x,"
      " resources: {limits: {cpu: '2', memory: 2Gi}}}, {name: side, image: y, resources: {requests: {cpu: "
      "100m}}}]}}\n");
}

TEST(PodGroupMinMember, MinAvailableOrSum) {
  EXPECT_EQ(PodGroupMinMember(GangJob()), 4);
  EXPECT_EQ(PodGroupMinMember(GangJob("  runPolicy: {schedulingPolicy: {minAvailable: 2}}\n")), 2);
}

// docs/semantics.md 2.8: replica types sorted by their template's PriorityClass value, highest
// first (unknown or missing classes count 0, equal values in key order), then the first
// minMember pods summed. GangJob: PS x1 (class "low"; requests 500m, 1Gi), Worker x3 (class
// "high"; limits 2, 2Gi plus a sidecar requesting 100m, so 2100m and 2Gi per worker).
TEST(ComputeMinResources, OrdersReplicaTypesByPriorityClassValue) {
  using Resources = std::map<std::string, std::string>;
  const std::string min2 = "  runPolicy: {schedulingPolicy: {minAvailable: 2}}\n";
  struct Case {
    const char* name;
    std::string run_policy;
    std::map<std::string, int32_t> priorities;
    Resources want;
  };
  const Case cases[] = {
      {"all pods, any order", "", {{"high", 1000}, {"low", 10}}, {{"cpu", "6800m"}, {"memory", "7Gi"}}},
      {"workers first: their class is higher",
       min2,
       {{"high", 1000}, {"low", 10}},
       {{"cpu", "4200m"}, {"memory", "4Gi"}}},
      {"PS first: its class is higher", min2, {{"high", 10}, {"low", 1000}}, {{"cpu", "2600m"}, {"memory", "3Gi"}}},
      {"no classes known: key order, PS first", min2, {}, {{"cpu", "2600m"}, {"memory", "3Gi"}}},
      {"equal values: key order", min2, {{"high", 7}, {"low", 7}}, {{"cpu", "2600m"}, {"memory", "3Gi"}}},
      {"a class not named by any template changes nothing",
       min2,
       {{"other", 5000}},
       {{"cpu", "2600m"}, {"memory", "3Gi"}}},
      {"a negative value sorts below a missing class (0)", min2, {{"high", -5}}, {{"cpu", "2600m"}, {"memory", "3Gi"}}},
      {"only the known class counts: workers 1 > PS 0", min2, {{"high", 1}}, {{"cpu", "4200m"}, {"memory", "4Gi"}}},
      {"minAvailable 1: the top class only",
       "  runPolicy: {schedulingPolicy: {minAvailable: 1}}\n",
       {{"high", 1000}},
       {{"cpu", "2100m"}, {"memory", "2Gi"}}},
      {"minAvailable 0: nothing", "  runPolicy: {schedulingPolicy: {minAvailable: 0}}\n", {{"high", 1}}, {}},
      {"minAvailable above the replicas: every pod once",
       "  runPolicy: {schedulingPolicy: {minAvailable: 9}}\n",
       {{"low", 1}},
       {{"cpu", "6800m"}, {"memory", "7Gi"}}},
  };
  for (const Case& c : cases) EXPECT_EQ(ComputeMinResources(GangJob(c.run_policy), c.priorities), c.want) << c.name;
}

// A container with a requests map (even an empty one) adds only its requests; limits stand in
// only when requests is absent. Init containers do not count.
TEST(ComputeMinResources, RequestsOrElseLimitsOfContainersOnly) {
  api::TfJob job = testing::DefaultedJobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: g, namespace: ns}\nspec:\n  tfReplicaSpecs:\n"
      "    Worker:\n      replicas: 2\n      template: {spec: {initContainers: [{name: i, image: x, resources: "
      "{requests: {cpu: '9'}}}], containers: [{name: tensorflow, image: x, resources: {requests: {}, limits: {cpu: "
      "'4'}}}, {name: b, image: y, resources: {limits: {nvidia.com/gpu: 1}}}]}}\n");
  EXPECT_EQ(ComputeMinResources(job, {}), (std::map<std::string, std::string>{{"nvidia.com/gpu", "2"}}));
}

TEST(RenderPodGroup, VolcanoAndSchedulerPlugins) {
  RenderOptions off;
  EXPECT_FALSE(RenderPodGroup(GangJob(), off));
  RenderOptions volcano;
  volcano.gang_scheduler_name = "volcano";
  json v = *RenderPodGroup(GangJob("  runPolicy: {schedulingPolicy: {priorityClass: pc, minResources: {cpu: '8'}}}\n"),
                           volcano);
  EXPECT_EQ(v["apiVersion"], "scheduling.volcano.sh/v1beta1");
  EXPECT_EQ(v["metadata"]["name"], "g");
  EXPECT_EQ(v["metadata"]["annotations"], json::parse(R"({"a":"b"})"));
  EXPECT_EQ(v["spec"],
            json::parse(R"({"minMember":4,"queue":"default","priorityClassName":"pc","minResources":{"cpu":"8"}})"));
  RenderOptions plugins;
  plugins.gang_scheduler_name = "sp";
  json p = *RenderPodGroup(GangJob("  runPolicy: {schedulingPolicy: {scheduleTimeoutSeconds: 30}}\n"), plugins);
  EXPECT_EQ(p["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ(p["spec"]["minMember"], 4);
  EXPECT_EQ(p["spec"]["scheduleTimeoutSeconds"], 30);
}

// Volcano's queue (docs/semantics.md 2.8), as upstream: an existing PodGroup's non-empty queue is
// kept, even over schedulingPolicy.queue; then schedulingPolicy.queue; then "default".
TEST(RenderPodGroup, VolcanoQueuePrecedence) {
  RenderOptions volcano;
  volcano.gang_scheduler_name = "volcano";
  struct Case {
    std::string job_queue, existing, want;
  };
  const Case cases[] = {
      {"", "", "default"}, {"team-j", "", "team-j"}, {"", "team-e", "team-e"}, {"team-j", "team-e", "team-e"}};
  for (const Case& c : cases) {
    std::string rp = c.job_queue.empty() ? "" : "  runPolicy: {schedulingPolicy: {queue: " + c.job_queue + "}}\n";
    EXPECT_EQ(RenderPodGroup(GangJob(rp), volcano, c.existing)->at("spec")["queue"], c.want)
        << "job queue '" << c.job_queue << "', existing '" << c.existing << "'";
  }
}

// The priorities reach the rendered PodGroup, unless schedulingPolicy.minResources is given.
TEST(RenderPodGroup, ComputedMinResourcesUseThePriorities) {
  RenderOptions plugins;
  plugins.gang_scheduler_name = "sp";
  const std::string min2 = "  runPolicy: {schedulingPolicy: {minAvailable: 2}}\n";
  EXPECT_EQ(RenderPodGroup(GangJob(min2), plugins, "", {{"high", 1000}})->at("spec")["minResources"],
            json::parse(R"({"cpu":"4200m","memory":"4Gi"})"));
  EXPECT_EQ(RenderPodGroup(GangJob(min2), plugins)->at("spec")["minResources"],
            json::parse(R"({"cpu":"2600m","memory":"3Gi"})"));
  EXPECT_EQ(RenderPodGroup(GangJob("  runPolicy: {schedulingPolicy: {minAvailable: 2, minResources: {cpu: '1'}}}\n"),
                           plugins, "", {{"high", 1000}})
                ->at("spec")["minResources"],
            json::parse(R"({"cpu":"1"})"));
}

// Issue 25 item 8: the offline render (RenderJob, `tfjob render`) knows the PriorityClasses
// every cluster has, so a computed minResources is counted in the cluster's order. Before, both
// classes counted 0 there and PS (key order) came before the critical workers.
TEST(RenderJob, ComputedMinResourcesKnowTheBuiltinPriorityClasses) {
  api::TfJob job = testing::DefaultedJobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: g, namespace: ns, uid: u}\n"
      "spec:\n  runPolicy: {schedulingPolicy: {minAvailable: 1}}\n  tfReplicaSpecs:\n"
      "    PS:\n      replicas: 1\n      template: {spec: {priorityClassName: system-cluster-critical, containers: "
      "[{name: tensorflow, image: x, resources: {requests: {cpu: '1'}}}]}}\n"
      "    Worker:\n      replicas: 2\n      template: {spec: {priorityClassName: system-node-critical, containers: "
      "[{name: tensorflow, image: x, resources: {requests: {cpu: '2'}}}]}}\n");
  EXPECT_EQ(BuiltinPriorityClasses().at("system-node-critical"), 2000001000);
  EXPECT_EQ(BuiltinPriorityClasses().at("system-cluster-critical"), 2000000000);
  RenderOptions volcano;
  volcano.gang_scheduler_name = "volcano";
  auto rendered = RenderJob(job, volcano);
  ASSERT_TRUE(rendered.ok()) << rendered.status().message();
  const json* pg = nullptr;
  for (const auto& o : rendered->objects)
    if (o.value("kind", "") == "PodGroup") pg = &o;
  ASSERT_NE(pg, nullptr);
  EXPECT_EQ(pg->at("spec")["minResources"], json::parse(R"({"cpu":"2"})")) << "the node-critical workers come first";
}

// D27: --gang-scheduler-name kubernetes renders kube-scheduler's own Workload API
// (scheduling.k8s.io/v1alpha2): the gang's minCount is minAvailable, else every replica.
TEST(RenderNative, WorkloadAndPodGroupPerMinAvailable) {
  struct Case {
    std::string name;
    std::string run_policy;
    json policy;
  };
  const std::vector<Case> cases = {
      {"every replica by default", "", json::parse(R"({"gang":{"minCount":4}})")},
      {"minAvailable", "  runPolicy: {schedulingPolicy: {minAvailable: 2}}\n",
       json::parse(R"({"gang":{"minCount":2}})")},
      {"minAvailable 0: no gang", "  runPolicy: {schedulingPolicy: {minAvailable: 0}}\n",
       json::parse(R"({"basic":{}})")},
  };
  RenderOptions native;
  native.gang_scheduler_name = "Kubernetes";
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    api::TfJob job = GangJob(c.run_policy);
    std::optional<json> w = RenderWorkload(job, native);
    ASSERT_TRUE(w);
    EXPECT_EQ(*w, json::parse(R"({"apiVersion":"scheduling.k8s.io/v1alpha2","kind":"Workload",
      "metadata":{"name":"g","namespace":"ns","ownerReferences":[{"apiVersion":"kubeflow.org/v1","kind":"TFJob",
        "name":"g","uid":"u","controller":true,"blockOwnerDeletion":true}]},
      "spec":{"controllerRef":{"apiGroup":"kubeflow.org","kind":"TFJob","name":"g"},
        "podGroupTemplates":[{"name":"tfjob","schedulingPolicy":)" +
                              c.policy.dump() + "}]}}"));
    std::optional<json> pg = RenderPodGroup(job, native);
    ASSERT_TRUE(pg);
    EXPECT_EQ((*pg)["apiVersion"], "scheduling.k8s.io/v1alpha2");
    EXPECT_EQ((*pg)["kind"], "PodGroup");
    EXPECT_EQ((*pg)["metadata"], (*w)["metadata"]);
    EXPECT_EQ((*pg)["spec"], json::parse(R"({"podGroupTemplateRef":{"workload":{"workloadName":"g",
      "podGroupTemplateName":"tfjob"}},"schedulingPolicy":)" +
                                         c.policy.dump() + "}"));
  }
  for (const char* other : {"", "volcano", "sp"}) {
    RenderOptions o;
    o.gang_scheduler_name = other;
    EXPECT_FALSE(RenderWorkload(GangJob(), o)) << other;
  }
  EXPECT_EQ(GangSchedulerFor("kubernetes"), &KubernetesGang());
}

// D31: the same gang in scheduling.k8s.io/v1beta1 (Kubernetes v1.37): the PodGroup names its
// template by workloadRef, and a gang (not the basic policy) is disrupted whole.
TEST(RenderNative, V1beta1WorkloadAndPodGroup) {
  struct Case {
    std::string name;
    std::string run_policy;
    json policy;
    json disruption;  // null: none
  };
  const json all = json::parse(R"({"all":{}})");
  const std::vector<Case> cases = {
      {"every replica by default", "", json::parse(R"({"gang":{"minCount":4}})"), all},
      {"minAvailable", "  runPolicy: {schedulingPolicy: {minAvailable: 2}}\n",
       json::parse(R"({"gang":{"minCount":2}})"), all},
      {"minAvailable 0: basic, no disruption mode", "  runPolicy: {schedulingPolicy: {minAvailable: 0}}\n",
       json::parse(R"({"basic":{}})"), nullptr},
  };
  RenderOptions native;
  native.gang_scheduler_name = "kubernetes";
  native.native_gang_api = NativeGangApi::kV1beta1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    api::TfJob job = GangJob(c.run_policy);
    std::optional<json> w = RenderWorkload(job, native);
    ASSERT_TRUE(w);
    json tmpl = {{"name", "tfjob"}, {"schedulingPolicy", c.policy}};
    if (!c.disruption.is_null()) tmpl["disruptionMode"] = c.disruption;
    EXPECT_EQ(*w, json::parse(R"({"apiVersion":"scheduling.k8s.io/v1beta1","kind":"Workload",
      "metadata":{"name":"g","namespace":"ns","ownerReferences":[{"apiVersion":"kubeflow.org/v1","kind":"TFJob",
        "name":"g","uid":"u","controller":true,"blockOwnerDeletion":true}]},
      "spec":{"controllerRef":{"apiGroup":"kubeflow.org","kind":"TFJob","name":"g"},
        "podGroupTemplates":[)" +
                              tmpl.dump() + "]}}"));
    std::optional<json> pg = RenderPodGroup(job, native);
    ASSERT_TRUE(pg);
    json spec = {{"workloadRef", {{"workloadName", "g"}, {"templateName", "tfjob"}}}, {"schedulingPolicy", c.policy}};
    if (!c.disruption.is_null()) spec["disruptionMode"] = c.disruption;
    EXPECT_EQ(*pg, (json{{"apiVersion", "scheduling.k8s.io/v1beta1"},
                         {"kind", "PodGroup"},
                         {"metadata", (*w)["metadata"]},
                         {"spec", spec}}));
    EXPECT_EQ(NativeGangMinCount((*pg)["spec"]), NativeGangMinCount(tmpl));
  }
  EXPECT_EQ(NativeGangApiGroupVersion(NativeGangApi::kV1alpha2), "scheduling.k8s.io/v1alpha2");
  EXPECT_EQ(NativeGangApiGroupVersion(NativeGangApi::kV1beta1), "scheduling.k8s.io/v1beta1");
  EXPECT_EQ(NativeGangMinCount(json::parse(R"({"schedulingPolicy":{"gang":{"minCount":3}}})")), 3);
  EXPECT_EQ(NativeGangMinCount(json::parse(R"({"schedulingPolicy":{"basic":{}}})")), std::nullopt);
  EXPECT_EQ(NativeGangMinCount(json::object()), std::nullopt);
}

// The pods are the same in both versions: spec.schedulingGroup.podGroupName.
TEST(RenderNative, PodsNameTheGroupInBothVersions) {
  for (NativeGangApi api : {NativeGangApi::kV1alpha2, NativeGangApi::kV1beta1}) {
    RenderOptions native;
    native.gang_scheduler_name = "kubernetes";
    native.native_gang_api = api;
    auto rendered = RenderJob(GangJob(), native);
    ASSERT_TRUE(rendered.ok()) << rendered.status().message();
    ASSERT_GE(rendered->objects.size(), 3u);
    EXPECT_EQ(rendered->objects[0]["kind"], "Workload");
    EXPECT_EQ(rendered->objects[1]["kind"], "PodGroup");
    for (const auto& o : rendered->objects) {
      if (o["kind"] == "Pod") {
        EXPECT_EQ(o["spec"]["schedulingGroup"], json::parse(R"({"podGroupName":"g"})"));
      } else if (o["kind"] != "Service") {
        EXPECT_EQ(o["apiVersion"], NativeGangApiGroupVersion(api));
      }
    }
  }
}

}  // namespace
}  // namespace tfjob::core
