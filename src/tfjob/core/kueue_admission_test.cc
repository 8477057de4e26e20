#include "tfjob/core/kueue_admission.h"

#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

api::TfJob TwoTypeJob() {
  return testing::JobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\n"
      "metadata: {name: mnist, namespace: ns, uid: 6e1b7c0a-0000-4000-8000-000000000001, resourceVersion: '42',"
      " labels: {kueue.x-k8s.io/queue-name: user-queue}}\n"
      "spec:\n  runPolicy: {suspend: true}\n  tfReplicaSpecs:\n"
      "    PS:\n      replicas: 1\n      template: {metadata: {labels: {app: x}}, spec: {containers: [{name: "
      "tensorflow, image: tf}]}}\n"
      "    Worker:\n      replicas: 2\n      template: {spec: {nodeSelector: {disk: ssd}, tolerations: [{key: a, "
      "operator: Exists}], containers: [{name: tensorflow, image: tf}]}}\n");
}

// The Workload of TwoTypeJob, admitted by cluster queue `cq`: PS on flavour on-demand (cpu) and
// spot (memory), Worker on spot, worker count 2.
// The Workload as the operator's informer decodes it.
api::KueueWorkload Typed(const json& workload) {
  return testing::DecodedKueueWorkload(workload);
}

json AdmittedWorkload(const std::string& cq = "cluster-queue") {
  auto wl = RenderKueueWorkload(TwoTypeJob(), {}, KueueOptions{});
  json w = *wl;
  w["status"] = json::parse(R"({
    "conditions": [{"type": "QuotaReserved", "status": "True"}, {"type": "Admitted", "status": "True"}],
    "admission": {"clusterQueue": ")" + cq + R"(", "podSetAssignments": [
      {"name": "ps", "flavors": {"cpu": "on-demand", "memory": "spot"}, "count": 1},
      {"name": "worker", "flavors": {"cpu": "spot", "memory": "spot"}}]}
  })");
  return w;
}

const std::map<std::string, KueueFlavor> kFlavors = {
    {"on-demand", {.node_labels = {{"instance", "on-demand"}}}},
    {"spot",
     {.node_labels = {{"instance", "spot"}, {"pool", "p1"}},
      .tolerations = json::parse(R"([{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}])")}},
};

TEST(KueueAdmittedPodSets, FlavoursLabelsAndGates) {
  const KueueOptions no_tas{.topology_aware_scheduling = false};
  auto infos = KueueAdmittedPodSets(Typed(AdmittedWorkload()), kFlavors, no_tas);
  ASSERT_TRUE(infos.ok()) << infos.status().ToString();
  ASSERT_EQ(infos->size(), 2u);
  const KueuePodSetInfo& ps = (*infos)[0];
  EXPECT_EQ(ps.name, "ps");
  EXPECT_EQ(ps.count, 1);
  // Two flavours: both flavours' labels; with one key in both, the later resource's flavour wins.
  EXPECT_EQ(ps.node_selector, (std::map<std::string, std::string>{{"instance", "spot"}, {"pool", "p1"}}));
  EXPECT_EQ(ps.labels, (std::map<std::string, std::string>{{"kueue.x-k8s.io/podset", "ps"},
                                                           {"kueue.x-k8s.io/local-queue-name", "user-queue"},
                                                           {"kueue.x-k8s.io/cluster-queue-name", "cluster-queue"}}));
  EXPECT_TRUE(ps.annotations.empty());
  const KueuePodSetInfo& worker = (*infos)[1];
  EXPECT_EQ(worker.count, 2) << "no count in the assignment: the PodSet's";
  // One flavour for two resources: its tolerations once.
  EXPECT_EQ(worker.tolerations.size(), 1u);
  EXPECT_TRUE(worker.scheduling_gates.empty());

  // A cluster queue name that is no label value is not a label.
  auto odd = KueueAdmittedPodSets(Typed(AdmittedWorkload("Cluster_Queue")), kFlavors, no_tas);
  ASSERT_TRUE(odd.ok());
  EXPECT_FALSE((*odd)[0].labels.contains("kueue.x-k8s.io/cluster-queue-name"));
  auto no_queue_labels =
      KueueAdmittedPodSets(Typed(AdmittedWorkload()), kFlavors,
                           {.topology_aware_scheduling = false, .assign_queue_labels = false});
  ASSERT_TRUE(no_queue_labels.ok());
  EXPECT_EQ((*no_queue_labels)[0].labels, (std::map<std::string, std::string>{{"kueue.x-k8s.io/podset", "ps"}}));

  // A flavour not known yet.
  EXPECT_EQ(KueueAdmittedPodSets(Typed(AdmittedWorkload()), {}, no_tas).status().code(), StatusCode::kNotFound);
  // Not admitted: nothing.
  json pending = AdmittedWorkload();
  pending["status"].erase("admission");
  auto none = KueueAdmittedPodSets(Typed(pending), kFlavors, no_tas);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(KueueAdmittedPodSets, TopologyAssignment) {
  json w = AdmittedWorkload();
  w["status"]["admission"]["podSetAssignments"][1]["topologyAssignment"] = {{"levels", {"block"}}};
  // The PS PodSet asked for a block, the worker PodSet for nothing.
  w["spec"]["podSets"][0]["topologyRequest"] = {{"required", "block"}, {"podIndexLabel", "x"}};
  w["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"] = {{"levels", {"block"}}};
  auto infos = KueueAdmittedPodSets(Typed(w), kFlavors, KueueOptions{});
  ASSERT_TRUE(infos.ok());
  const json gate = json::array({{{"name", "kueue.x-k8s.io/topology"}}});
  EXPECT_EQ((*infos)[0].scheduling_gates, gate);
  EXPECT_EQ((*infos)[0].annotations,
            (std::map<std::string, std::string>{{"kueue.x-k8s.io/workload", "tfjob-mnist-817ee"}}));
  EXPECT_EQ((*infos)[1].scheduling_gates, gate);
  EXPECT_EQ((*infos)[1].annotations,
            (std::map<std::string, std::string>{{"kueue.x-k8s.io/podset-unconstrained-topology", "true"},
                                                {"kueue.x-k8s.io/workload", "tfjob-mnist-817ee"}}));
}

TEST(KueueAdmittedPodSets, PodSetUpdatesOfAdmissionChecks) {
  struct Case {
    const char* id;
    std::string checks;
    StatusCode code;
    std::map<std::string, std::string> worker_selector;
  };
  const Case cases[] = {
      {"an update adds its node labels",
       R"([{"name": "prov", "podSetUpdates": [{"name": "worker", "nodeSelector": {"zone": "a"}}]}])", StatusCode::kOk,
       {{"instance", "spot"}, {"pool", "p1"}, {"zone", "a"}}},
      {"the same value again is no conflict",
       R"([{"name": "prov", "podSetUpdates": [{"name": "worker", "nodeSelector": {"pool": "p1"}}]}])",
       StatusCode::kOk, {{"instance", "spot"}, {"pool", "p1"}}},
      {"another podset's update does not apply",
       R"([{"name": "prov", "podSetUpdates": [{"name": "ps", "nodeSelector": {"zone": "a"}}]}])", StatusCode::kOk,
       {{"instance", "spot"}, {"pool", "p1"}}},
      {"a conflict with the flavour",
       R"([{"name": "prov", "podSetUpdates": [{"name": "worker", "nodeSelector": {"pool": "p2"}}]}])",
       StatusCode::kInvalidArgument, {}},
      {"a label conflict with the podset label",
       R"([{"name": "prov", "podSetUpdates": [{"name": "worker", "labels": {"kueue.x-k8s.io/podset": "x"}}]}])",
       StatusCode::kInvalidArgument, {}},
  };
  for (const Case& c : cases) {
    json w = AdmittedWorkload();
    w["status"]["admissionChecks"] = json::parse(c.checks);
    auto infos = KueueAdmittedPodSets(Typed(w), kFlavors, KueueOptions{.topology_aware_scheduling = false});
    EXPECT_EQ(infos.status().code(), c.code) << c.id;
    if (infos.ok()) {
      EXPECT_EQ((*infos)[1].node_selector, c.worker_selector) << c.id;
    }
  }
}

TEST(MergePodSetInfo, AddsAndRefusesConflicts) {
  const json tmpl = json::parse(R"({"metadata": {"labels": {"app": "x"}}, "spec": {"nodeSelector": {"disk": "ssd"},
    "tolerations": [{"key": "a"}], "containers": [{"name": "tensorflow"}]}})");
  KueuePodSetInfo info{.labels = {{"kueue.x-k8s.io/podset", "worker"}},
                       .node_selector = {{"pool", "p1"}},
                       .tolerations = json::parse(R"([{"key": "a"}, {"key": "spot"}])"),
                       .scheduling_gates = json::parse(R"([{"name": "kueue.x-k8s.io/topology"}])")};
  auto merged = MergePodSetInfo(tmpl, info);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(*merged, json::parse(R"({"metadata": {"labels": {"app": "x", "kueue.x-k8s.io/podset": "worker"}},
    "spec": {"nodeSelector": {"disk": "ssd", "pool": "p1"}, "tolerations": [{"key": "a"}, {"key": "spot"}],
    "schedulingGates": [{"name": "kueue.x-k8s.io/topology"}], "containers": [{"name": "tensorflow"}]}})"));
  // Merging twice changes nothing more.
  EXPECT_EQ(*MergePodSetInfo(*merged, info), *merged);
  info.node_selector = {{"disk", "hdd"}};
  EXPECT_EQ(MergePodSetInfo(tmpl, info).status().code(), StatusCode::kInvalidArgument);
}

TEST(RestorePodSetInfo, SetsTheFiveFieldsBack) {
  const json original = json::parse(R"({"metadata": {"labels": {"app": "x"}},
    "spec": {"containers": [{"name": "tensorflow"}]}})");
  KueuePodSetInfo info{.labels = {{"app", "x"}}};
  const json admitted = json::parse(R"({"metadata": {"labels": {"app": "x", "kueue.x-k8s.io/podset": "ps"},
    "annotations": {"kueue.x-k8s.io/workload": "w"}}, "spec": {"nodeSelector": {"pool": "p1"},
    "tolerations": [{"key": "spot"}], "schedulingGates": [{"name": "g"}], "containers": [{"name": "tensorflow"}]}})");
  EXPECT_EQ(RestorePodSetInfo(admitted, info), original);
  EXPECT_EQ(RestorePodSetInfo(original, info), original);
  // Empty maps that the original has stay as written.
  json with_empty = original;
  with_empty["spec"]["nodeSelector"] = json::object();
  EXPECT_EQ(RestorePodSetInfo(with_empty, info), with_empty);
}

TEST(KueueStartAndStopJob, RoundTrip) {
  const api::TfJob job = TwoTypeJob();
  const json w = AdmittedWorkload();
  auto infos = KueueAdmittedPodSets(Typed(w), kFlavors, KueueOptions{.topology_aware_scheduling = false});
  ASSERT_TRUE(infos.ok());
  auto start = KueueStartJob(job, *infos);
  ASSERT_TRUE(start.ok()) << start.status().ToString();
  EXPECT_FALSE(start->suspend);
  ASSERT_EQ(start->templates.size(), 2u);
  EXPECT_EQ(start->templates.at("Worker")["spec"]["nodeSelector"],
            json({{"disk", "ssd"}, {"instance", "spot"}, {"pool", "p1"}}));
  EXPECT_EQ(start->templates.at("Worker")["spec"]["tolerations"].size(), 2u);
  EXPECT_EQ(start->templates.at("PS")["metadata"]["labels"]["kueue.x-k8s.io/podset"], "ps");

  // The merge patch: resourceVersion, suspend, and per template only the difference.
  const json patch = KueueJobMergePatch(job, *start);
  EXPECT_EQ(patch["metadata"], json({{"resourceVersion", "42"}}));
  EXPECT_EQ(patch["spec"]["runPolicy"], json({{"suspend", false}}));
  EXPECT_EQ(patch["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"],
            json({{"instance", "spot"}, {"pool", "p1"}}));
  EXPECT_FALSE(patch["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"].contains("containers"));

  // The job as admitted, then stopped: the templates come back from the Workload's copy.
  api::TfJob running = job;
  for (const auto& [key, tmpl] : start->templates) running.spec.replica_specs[key]->pod_template = tmpl;
  KueueJobUpdate stop = KueueStopJob(running, KueueOriginalPodSets(Typed(w)));
  EXPECT_TRUE(stop.suspend);
  ASSERT_EQ(stop.templates.size(), 2u);
  for (const auto& [key, tmpl] : stop.templates)
    EXPECT_EQ(tmpl, job.spec.replica_specs.at(key)->pod_template) << key;
  const json undo = KueueJobMergePatch(running, stop);
  EXPECT_EQ(undo["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["nodeSelector"],
            json({{"instance", nullptr}, {"pool", nullptr}}));
  // Stopping the job as it was changes no template; with no infos none either.
  EXPECT_TRUE(KueueStopJob(job, KueueOriginalPodSets(Typed(w))).templates.empty());
  EXPECT_TRUE(KueueStopJob(running, {}).templates.empty());

  // Infos that do not fit the job: permanent.
  std::vector<KueuePodSetInfo> one = {(*infos)[0]};
  EXPECT_EQ(KueueStartJob(job, one).status().code(), StatusCode::kInvalidArgument);
  std::vector<KueuePodSetInfo> renamed = *infos;
  renamed[1].name = "evaluator";
  EXPECT_EQ(KueueStartJob(job, renamed).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfjob::core
