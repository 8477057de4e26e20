#include "api/kueue_workload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::api {
namespace {

using nlohmann::json;

// A Workload as Kueue serves it once admitted (kueue.x-k8s.io/v1beta2).
const char kAdmitted[] = R"({
  "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
  "metadata": {"name": "tfjob-mnist-1a2b3", "namespace": "ns", "resourceVersion": "11", "generation": 2,
               "labels": {"kueue.x-k8s.io/job-uid": "u1"},
               "finalizers": ["kueue.x-k8s.io/resource-in-use"],
               "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist", "uid": "u1",
                                    "controller": true}]},
  "spec": {"queueName": "user-queue", "active": true, "priority": 5, "maximumExecutionTimeSeconds": 60,
           "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
           "podSets": [{"name": "worker", "count": 2, "template": {"spec": {"containers": [{"name": "tf"}]}},
                        "topologyRequest": {"required": "rack", "podIndexLabel": "x"}}]},
  "status": {
    "conditions": [{"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "ok",
                    "lastTransitionTime": "2026-12-03T09:00:00Z", "observedGeneration": 2}],
    "admission": {"clusterQueue": "cq", "podSetAssignments": [
        {"name": "worker", "count": 2, "flavors": {"memory": "big", "cpu": "default"}, "topologyAssignment": {}}]},
    "admissionChecks": [{"name": "prov", "state": "Ready", "message": "",
                         "podSetUpdates": [{"name": "worker", "labels": {"a": "b"},
                                            "tolerations": [{"key": "k", "operator": "Exists"}]}]}],
    "reclaimablePods": [{"name": "worker", "count": 1}],
    "accumulatedPastExecutionTimeSeconds": 30}})";

TEST(DecodeKueueWorkload, ReadsWhatTheCoreUses) {
  const json object = json::parse(kAdmitted);
  StatusOr<KueueWorkload> w = DecodeKueueWorkload(object);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->metadata.name, "tfjob-mnist-1a2b3");
  EXPECT_EQ(w->metadata.ns, "ns");
  EXPECT_EQ(w->metadata.resource_version, "11");
  EXPECT_EQ(w->metadata.generation, 2);
  EXPECT_THAT(w->finalizers, ::testing::ElementsAre("kueue.x-k8s.io/resource-in-use"));
  EXPECT_TRUE(w->HasFinalizer("kueue.x-k8s.io/resource-in-use"));
  ASSERT_NE(w->Controller(), nullptr);
  EXPECT_EQ(w->Controller()->uid, "u1");
  EXPECT_EQ(w->spec.queue_name, "user-queue");
  EXPECT_EQ(w->spec.active, true);
  EXPECT_EQ(w->spec.maximum_execution_time_seconds, 60);
  EXPECT_EQ(w->spec.priority_class_ref, (KueuePriorityClassRef{"kueue.x-k8s.io", "WorkloadPriorityClass", "high"}));
  ASSERT_EQ(w->spec.pod_sets.size(), 1u);
  EXPECT_EQ(w->spec.pod_sets[0].name, "worker");
  EXPECT_EQ(w->spec.pod_sets[0].count, 2);
  EXPECT_EQ(w->spec.pod_sets[0].pod_template, object["spec"]["podSets"][0]["template"]);
  EXPECT_EQ(w->spec.pod_sets[0].topology_request, (KueueTopologyRequest{"rack", std::nullopt, std::nullopt}));
  EXPECT_TRUE(w->ConditionTrue("QuotaReserved"));
  EXPECT_FALSE(w->ConditionTrue("Admitted"));
  EXPECT_EQ(w->Condition("QuotaReserved")->last_transition_time, "2026-12-03T09:00:00Z");
  ASSERT_TRUE(w->status.admission);
  EXPECT_EQ(w->status.admission->cluster_queue, "cq");
  // Flavours in the order of the resource names.
  EXPECT_EQ(w->status.admission->pod_set_assignments,
            (std::vector<KueuePodSetAssignment>{{"worker", 2, {"default", "big"}, true}}));
  ASSERT_EQ(w->status.admission_checks.size(), 1u);
  EXPECT_EQ(w->status.admission_checks[0].pod_set_updates[0].labels, (std::map<std::string, std::string>{{"a", "b"}}));
  EXPECT_EQ(w->status.admission_checks[0].pod_set_updates[0].tolerations,
            json::parse(R"([{"key": "k", "operator": "Exists"}])"));
  EXPECT_EQ(w->status.reclaimable_pods, (std::vector<KueueReclaimablePod>{{"worker", 1}}));
  EXPECT_EQ(w->status.accumulated_past_execution_time_seconds, 30);
  EXPECT_EQ(w->object, object);
}

TEST(DecodeKueueWorkload, AbsentFieldsAreEmpty) {
  StatusOr<KueueWorkload> w = DecodeKueueWorkload(json::parse(R"({"metadata": {"name": "w"},
      "spec": {"priorityClassRef": {}, "podSets": [{"name": "ps", "topologyRequest": null}]},
      "status": {"admission": null}})"));
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_FALSE(w->spec.priority_class_ref);
  EXPECT_FALSE(w->spec.maximum_execution_time_seconds);
  EXPECT_FALSE(w->spec.pod_sets[0].count);
  EXPECT_FALSE(w->spec.pod_sets[0].topology_request);
  EXPECT_FALSE(w->status.admission);
  EXPECT_EQ(w->Controller(), nullptr);
  EXPECT_EQ(w->Condition("Admitted"), nullptr);
}

TEST(DecodeKueueWorkload, MalformedNamesTheField) {
  struct Case {
    const char* object;
    const char* want;
  } cases[] = {
      {R"({"metadata": {"name": "w", "namespace": "ns"}, "spec": {"podSets": [{"name": "a", "count": "two"}]}})",
       "undecodable Workload ns/w: spec.podSets[0].count: Invalid value: \"two\": must be an integer"},
      {R"({"metadata": {"name": "w"}, "spec": {"podSets": {}}})",
       "undecodable Workload /w: spec.podSets: Invalid value: {}: must be a list"},
      {R"({"metadata": {"name": "w", "finalizers": ["a", 1]}})",
       "undecodable Workload /w: metadata.finalizers[1]: Invalid value: 1: must be a string"},
      {R"({"status": {"conditions": [{"type": "Admitted", "status": true}]}})",
       "undecodable Workload /: status.conditions[0].status: Invalid value: true: must be a string"},
      {R"({"status": {"admission": {"podSetAssignments": [{"name": "w", "flavors": {"cpu": 1}}]}}})",
       "undecodable Workload /: status.admission.podSetAssignments[0].flavors[cpu]: Invalid value: 1: "
       "must be a string"},
      {R"({"status": {"admissionChecks": [{"name": "c", "podSetUpdates": [{"tolerations": {}}]}]}})",
       "undecodable Workload /: status.admissionChecks[0].podSetUpdates[0].tolerations: Invalid value: {}: "
       "must be a list"},
      {R"({"spec": {"active": "yes"}})",
       "undecodable Workload /: spec.active: Invalid value: \"yes\": must be a boolean"},
      {R"([])", "undecodable Workload: not a JSON object"},
  };
  for (const Case& c : cases) {
    StatusOr<KueueWorkload> w = DecodeKueueWorkload(json::parse(c.object));
    ASSERT_FALSE(w.ok()) << c.object;
    EXPECT_EQ(w.status().code(), StatusCode::kDataLoss) << c.object;
    EXPECT_EQ(w.status().message(), c.want) << c.object;
  }
}

TEST(EncodeKueueConditions, EveryFieldObservedGenerationWhenSet) {
  const std::vector<KueueCondition> conditions = {
      {"Admitted", "True", "Admitted", "ok", 3, "2026-12-03T09:00:00Z"},
      {"PodsReady", "False", "WaitForStart", "", std::nullopt, "2026-12-03T09:01:00Z"}};
  EXPECT_EQ(EncodeKueueConditions(conditions), json::parse(R"([
    {"type": "Admitted", "status": "True", "reason": "Admitted", "message": "ok", "observedGeneration": 3,
     "lastTransitionTime": "2026-12-03T09:00:00Z"},
    {"type": "PodsReady", "status": "False", "reason": "WaitForStart", "message": "",
     "lastTransitionTime": "2026-12-03T09:01:00Z"}])"));
}

}  // namespace
}  // namespace tfjob::api
