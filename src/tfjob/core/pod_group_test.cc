#include "tfjob/core/pod_group.h"

#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::tfjob::core {
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

TEST(ComputeMinResources, OrdersByPriorityAndStopsAtMinMember) {
  std::map<std::string, int32_t> prio = {{"high", 1000}, {"low", 10}};
  // All 4 pods: 3 workers (limits 2 cpu, 2Gi + sidecar 100m) + 1 PS (500m, 1Gi).
  EXPECT_EQ(ComputeMinResources(GangJob(), prio),
            (std::map<std::string, std::string>{{"cpu", "6800m"}, {"memory", "7Gi"}}));
  // minAvailable 2: two workers first because their class is higher.
  EXPECT_EQ(ComputeMinResources(GangJob("  runPolicy: {schedulingPolicy: {minAvailable: 2}}\n"), prio),
            (std::map<std::string, std::string>{{"cpu", "4200m"}, {"memory", "4Gi"}}));
  // Without priorities, key order: PS first.
  EXPECT_EQ(ComputeMinResources(GangJob("  runPolicy: {schedulingPolicy: {minAvailable: 2}}\n"), {}),
            (std::map<std::string, std::string>{{"cpu", "2600m"}, {"memory", "3Gi"}}));
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
  EXPECT_EQ(RenderPodGroup(GangJob(), volcano, "team-a")->at("spec")["queue"], "team-a");
  RenderOptions plugins;
  plugins.gang_scheduler_name = "sp";
  json p = *RenderPodGroup(GangJob("  runPolicy: {schedulingPolicy: {scheduleTimeoutSeconds: 30}}\n"), plugins);
  EXPECT_EQ(p["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
  EXPECT_EQ(p["spec"]["minMember"], 4);
  EXPECT_EQ(p["spec"]["scheduleTimeoutSeconds"], 30);
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
  EXPECT_EQ(GangSchedulerFor("kubernetes"), GangScheduler::kKubernetes);
}

}  // namespace
}  // namespace tfjob::tfjob::core
