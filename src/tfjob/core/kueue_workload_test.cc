#include "tfjob/core/kueue_workload.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

constexpr char kUid[] = "6e1b7c0a-0000-4000-8000-000000000001";

// A job as the API server stores it (Kueue reads it so: not defaulted).
api::TfJob Job(const std::string& labels, const std::string& specs, const std::string& run_policy = "") {
  return testing::JobFromYaml("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata:\n  name: mnist\n  namespace: ns\n"
                              "  uid: " +
                              std::string(kUid) + "\n  labels: {" + labels + "}\n" +
                              "  annotations: {provreq.kueue.x-k8s.io/maxRunDurationSeconds: '60', other: x}\n"
                              "spec:\n" +
                              run_policy + "  tfReplicaSpecs:\n" + specs);
}

std::string Spec(const std::string& key, int replicas, const std::string& template_extra = "",
                 const std::string& pod_spec_extra = "") {
  return "    " + key + ":\n      replicas: " + std::to_string(replicas) + "\n      template: {" + template_extra +
         "spec: {" + pod_spec_extra + "containers: [{name: tensorflow, image: tf}]}}\n";
}

// The expected names are Kueue v0.17's own test expectations for kind Job, group batch
// (pkg/controller/jobframework/workload_names_test.go), and for a TFJob the same rule computed
// by hand: the first 5 hex digits of SHA-1("TFJob\nkubeflow.org\nmnist\n<uid>").
TEST(KueueWorkloadName, SameAsKueue) {
  const std::string long_name =
      "marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-social-"
      "media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-senior-"
      "architect-validation-checked-approved-by-legal-and-ops-dept";
  struct Case {
    const char* id;
    std::string kind, group, name, uid;
    size_t max;
    std::string want;
  };
  const Case cases[] = {
      {"short", "Job", "batch", "name", "uid", kKueueWorkloadNameMax, "job-name-ef3a1"},
      {"long, cut to 253", "Job", "batch", long_name, "uid", kKueueWorkloadNameMax,
       "job-marketing-campaign-autumn-2024-region-north-america-department-digital-strategy-sub-department-"
       "social-media-engagement-tracker-and-analytics-dashboard-v2-final-revision-by-engineering-team-lead-"
       "senior-architect-validation-checked-approved-by-l-218b8"},
      {"long, ShortWorkloadNames", "Job", "batch", long_name, "uid", kKueueShortWorkloadNameMax,
       "job-marketing-campaign-autumn-2024-region-north-america-d-218b8"},
      {"a TFJob", "TFJob", "kubeflow.org", "mnist", kUid, kKueueWorkloadNameMax, "tfjob-mnist-817ee"},
  };
  for (const Case& c : cases) {
    const std::string got = KueueWorkloadName(c.kind, c.group, c.name, c.uid, c.max);
    EXPECT_EQ(got, c.want) << c.id;
    EXPECT_LE(got.size(), c.max) << c.id;
  }
  EXPECT_EQ(KueueWorkloadNameForJob(Job("", Spec("Worker", 1))), "tfjob-mnist-817ee");
}

TEST(KueueLabels, QueueMaxExecTimeAndPrebuilt) {
  struct Case {
    std::string labels;
    std::string queue;
    std::optional<int32_t> max_exec;
    std::optional<std::string> prebuilt;
  };
  const Case cases[] = {
      {"", "", std::nullopt, std::nullopt},
      {"kueue.x-k8s.io/queue-name: user-queue", "user-queue", std::nullopt, std::nullopt},
      {"kueue.x-k8s.io/max-exec-time-seconds: '600'", "", 600, std::nullopt},
      {"kueue.x-k8s.io/max-exec-time-seconds: '0'", "", std::nullopt, std::nullopt},
      {"kueue.x-k8s.io/max-exec-time-seconds: '-5'", "", std::nullopt, std::nullopt},
      {"kueue.x-k8s.io/max-exec-time-seconds: 'ten'", "", std::nullopt, std::nullopt},
      {"kueue.x-k8s.io/max-exec-time-seconds: '3000000000'", "", std::nullopt, std::nullopt},
      {"kueue.x-k8s.io/prebuilt-workload-name: wl", "", std::nullopt, "wl"},
  };
  for (const Case& c : cases) {
    api::TfJob job = Job(c.labels, Spec("Worker", 1));
    EXPECT_EQ(KueueQueueName(job), c.queue) << c.labels;
    EXPECT_EQ(KueueMaxExecutionTimeSeconds(job), c.max_exec) << c.labels;
    EXPECT_EQ(KueuePrebuiltWorkloadName(job), c.prebuilt) << c.labels;
  }
}

TEST(KueuePodSetOrder, ChiefMasterPsWorkerEvaluator) {
  api::TfJob job =
      Job("", Spec("Evaluator", 1) + Spec("Worker", 2) + Spec("PS", 1) + Spec("Chief", 1));
  EXPECT_THAT(KueuePodSetOrder(job), ::testing::ElementsAre(api::ReplicaType::kChief, api::ReplicaType::kPS,
                                                            api::ReplicaType::kWorker, api::ReplicaType::kEvaluator));
  // A lower-case key counts as its type, as defaulting keeps it (api::ReplicaSpecsByType).
  EXPECT_THAT(KueuePodSetOrder(Job("", Spec("worker", 2) + Spec("Master", 1))),
              ::testing::ElementsAre(api::ReplicaType::kMaster, api::ReplicaType::kWorker));
  EXPECT_EQ(KueuePodSetName(api::ReplicaType::kPS), "ps");
}

TEST(KueueWorkloadPriority, LabelThenSchedulingPolicyThenTemplatesThenDefault) {
  const KueuePriorityClasses classes{.priority_classes = {{"high", 1000}, {"low", 10}, {"tmpl", 50}},
                                     .workload_priority_classes = {{"wp", 77}}};
  KueuePriorityClasses with_default = classes;
  with_default.global_default = {{"dflt", 5}};
  const std::string ps_low = Spec("PS", 1, "", "priorityClassName: low, ");
  const std::string worker_tmpl = Spec("Worker", 1, "", "priorityClassName: tmpl, ");
  const std::string sp_high = "  runPolicy: {schedulingPolicy: {priorityClass: high}}\n";
  struct Case {
    const char* id;
    api::TfJob job;
    KueuePriorityClasses classes;
    KueuePriority want;
  };
  const Case cases[] = {
      {"the label names a WorkloadPriorityClass", Job("kueue.x-k8s.io/priority-class: wp", ps_low, sp_high),
       classes, {"WorkloadPriorityClass", "wp", 77}},
      {"schedulingPolicy.priorityClass", Job("", ps_low, sp_high), classes, {"PriorityClass", "high", 1000}},
      {"the first template in PodSet order: PS before Worker", Job("", worker_tmpl + ps_low), classes,
       {"PriorityClass", "low", 10}},
      {"a later template when the first names none", Job("", Spec("PS", 1) + worker_tmpl), classes,
       {"PriorityClass", "tmpl", 50}},
      {"none: the global default", Job("", Spec("Worker", 1)), with_default, {"PriorityClass", "dflt", 5}},
      {"none and no default: 0", Job("", Spec("Worker", 1)), classes, {}},
      {"an empty label is no label", Job("kueue.x-k8s.io/priority-class: ''", ps_low), classes,
       {"PriorityClass", "low", 10}},
  };
  for (const Case& c : cases) {
    auto got = KueueWorkloadPriority(c.job, c.classes);
    ASSERT_TRUE(got.ok()) << c.id << ": " << got.status().ToString();
    EXPECT_EQ(*got, c.want) << c.id;
  }
  EXPECT_EQ(KueueWorkloadPriority(Job("kueue.x-k8s.io/priority-class: gone", ps_low), classes).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(KueueWorkloadPriority(Job("", Spec("Worker", 1, "", "priorityClassName: gone, ")), classes)
                .status()
                .code(),
            StatusCode::kNotFound);
  EXPECT_EQ(KueuePriorityClassRef({"WorkloadPriorityClass", "wp", 77}),
            json({{"group", "kueue.x-k8s.io"}, {"kind", "WorkloadPriorityClass"}, {"name", "wp"}}));
  EXPECT_EQ(KueuePriorityClassRef({"PriorityClass", "high", 1000}),
            json({{"group", "scheduling.k8s.io"}, {"kind", "PriorityClass"}, {"name", "high"}}));
  EXPECT_TRUE(KueuePriorityClassRef({}).is_null());
}

TEST(KueuePodSets, TopologyRequestFromAnnotations) {
  auto with = [](const std::string& annotations) {
    return Job("", Spec("Worker", 4, "metadata: {annotations: {" + annotations + "}}, "));
  };
  const std::string index = "training.kubeflow.org/replica-index";
  struct Case {
    const char* id;
    std::string annotations;
    json want;
  };
  const Case cases[] = {
      {"none: the pod index label only", "", {{"podIndexLabel", index}}},
      {"required", "kueue.x-k8s.io/podset-required-topology: block",
       {{"required", "block"}, {"podIndexLabel", index}}},
      {"required wins over preferred",
       "kueue.x-k8s.io/podset-required-topology: block, kueue.x-k8s.io/podset-preferred-topology: rack",
       {{"required", "block"}, {"podIndexLabel", index}}},
      {"preferred with a group name",
       "kueue.x-k8s.io/podset-preferred-topology: rack, kueue.x-k8s.io/podset-group-name: g",
       {{"preferred", "rack"}, {"podIndexLabel", index}, {"podSetGroupName", "g"}}},
      {"a group name alone is ignored", "kueue.x-k8s.io/podset-group-name: g", {{"podIndexLabel", index}}},
      {"unconstrained", "kueue.x-k8s.io/podset-unconstrained-topology: 'true'",
       {{"unconstrained", true}, {"podIndexLabel", index}}},
      {"a slice layer",
       "kueue.x-k8s.io/podset-required-topology: block, kueue.x-k8s.io/podset-slice-required-topology: rack, "
       "kueue.x-k8s.io/podset-slice-size: '2'",
       {{"required", "block"}, {"podSetSliceRequiredTopology", "rack"}, {"podSetSliceSize", 2},
        {"podIndexLabel", index}}},
      {"a slice topology without a size is ignored", "kueue.x-k8s.io/podset-slice-required-topology: rack",
       {{"podIndexLabel", index}}},
  };
  for (const Case& c : cases) {
    auto got = KueuePodSets(with(c.annotations), KueueOptions{});
    ASSERT_TRUE(got.ok()) << c.id << ": " << got.status().ToString();
    EXPECT_EQ((*got)[0]["topologyRequest"], c.want) << c.id;
  }
  EXPECT_EQ(KueuePodSets(with("kueue.x-k8s.io/podset-unconstrained-topology: maybe"), {}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(KueuePodSets(with("kueue.x-k8s.io/podset-slice-required-topology: r, kueue.x-k8s.io/podset-slice-size: x"),
                         {})
                .status()
                .code(),
            StatusCode::kInvalidArgument);
  // Without topology-aware scheduling there is no topologyRequest, and a bad annotation is not read.
  auto off = KueuePodSets(with("kueue.x-k8s.io/podset-unconstrained-topology: maybe"),
                          KueueOptions{.topology_aware_scheduling = false});
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE((*off)[0].contains("topologyRequest"));
}

TEST(KueuePodSets, NamesCountsAndTemplatesAsWritten) {
  api::TfJob job = testing::JobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: j, namespace: ns, uid: u}\nspec:\n"
      "  tfReplicaSpecs:\n"
      "    Worker:\n      replicas: 3\n      template: {metadata: {labels: {a: b}}, spec: {containers: [{name: "
      "tensorflow, image: tf, env: [{name: A, value: '1'}, {name: B, value: '2'}, {name: A, value: '3'}]}]}}\n"
      "    Chief:\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n");
  auto got = KueuePodSets(job, KueueOptions{.topology_aware_scheduling = false});
  ASSERT_TRUE(got.ok());
  const json want = json::parse(R"([
    {"name": "chief", "count": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}},
    {"name": "worker", "count": 3, "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
      {"name": "tensorflow", "image": "tf", "env": [{"name": "A", "value": "3"}, {"name": "B", "value": "2"}]}]}}}
  ])");
  EXPECT_EQ(*got, want);
}

TEST(RenderKueueWorkload, TheWholeObject) {
  api::TfJob job = Job("kueue.x-k8s.io/queue-name: user-queue, kueue.x-k8s.io/max-exec-time-seconds: '120', team: a",
                       Spec("Worker", 2) + Spec("PS", 1));
  auto got = RenderKueueWorkload(job, {"PriorityClass", "high", 1000},
                                 KueueOptions{.topology_aware_scheduling = false, .label_keys_to_copy = {"team", "x"}});
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  const json want = json::parse(R"({
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
    "metadata": {
      "name": "tfjob-mnist-817ee", "namespace": "ns",
      "labels": {"team": "a", "kueue.x-k8s.io/job-uid": "6e1b7c0a-0000-4000-8000-000000000001"},
      "annotations": {"provreq.kueue.x-k8s.io/maxRunDurationSeconds": "60"},
      "finalizers": ["kueue.x-k8s.io/resource-in-use"],
      "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "name": "mnist",
                           "uid": "6e1b7c0a-0000-4000-8000-000000000001", "controller": true,
                           "blockOwnerDeletion": true}]},
    "spec": {
      "queueName": "user-queue",
      "podSets": [
        {"name": "ps", "count": 1, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}},
        {"name": "worker", "count": 2, "template": {"spec": {"containers": [{"name": "tensorflow", "image": "tf"}]}}}],
      "priority": 1000,
      "priorityClassRef": {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"},
      "maximumExecutionTimeSeconds": 120}
  })");
  EXPECT_EQ(*got, want) << got->dump(2);
  // No class: priority 0 and no reference.
  auto plain = RenderKueueWorkload(Job("", Spec("Worker", 1)), {}, KueueOptions{});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ((*plain)["spec"]["priority"], 0);
  EXPECT_FALSE((*plain)["spec"].contains("priorityClassRef"));
  EXPECT_FALSE((*plain)["spec"].contains("maximumExecutionTimeSeconds"));
  EXPECT_EQ((*plain)["spec"]["queueName"], "");
}

TEST(KueueWorkloadMatchesJob, Equivalence) {
  api::TfJob job = Job("kueue.x-k8s.io/max-exec-time-seconds: '60'", Spec("Worker", 2, "", "tolerations: [{key: t}], "));
  auto rendered = RenderKueueWorkload(job, {}, KueueOptions{});
  ASSERT_TRUE(rendered.ok());
  const json pod_sets = (*rendered)["spec"]["podSets"];
  auto edit = [&](auto f) {
    json wl = *rendered;
    f(wl);
    return wl;
  };
  struct Case {
    const char* id;
    json workload;
    bool want;
  };
  const Case cases[] = {
      {"as rendered", *rendered, true},
      {"labels and annotations of the template do not count",
       edit([](json& w) { w["spec"]["podSets"][0]["template"]["metadata"] = {{"labels", {{"x", "y"}}}}; }), true},
      {"another owner", edit([](json& w) { w["metadata"]["ownerReferences"][0]["name"] = "other"; }), false},
      {"another count", edit([](json& w) { w["spec"]["podSets"][0]["count"] = 3; }), false},
      {"another image",
       edit([](json& w) { w["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["image"] = "x"; }), false},
      {"another max exec time", edit([](json& w) { w["spec"]["maximumExecutionTimeSeconds"] = 61; }), false},
      {"no max exec time", edit([](json& w) { w["spec"].erase("maximumExecutionTimeSeconds"); }), false},
      {"other tolerations, not reserved",
       edit([](json& w) { w["spec"]["podSets"][0]["template"]["spec"]["tolerations"] = json::array(); }), false},
      {"other tolerations, quota reserved", edit([](json& w) {
         w["spec"]["podSets"][0]["template"]["spec"]["tolerations"] = json::array();
         w["status"]["conditions"] = {{{"type", "QuotaReserved"}, {"status", "True"}}};
       }),
       true},
      {"another podset", edit([](json& w) { w["spec"]["podSets"][0]["name"] = "ps"; }), false},
  };
  for (const Case& c : cases) EXPECT_EQ(KueueWorkloadMatchesJob(job, pod_sets, testing::DecodedKueueWorkload(c.workload)), c.want) << c.id;
}

}  // namespace
}  // namespace tfjob::core
