#include "tfjob/core/render.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/fixtures.h"
#include "tfjob/core/naming.h"

namespace tfjob::core {
namespace {

using api::ReplicaType;
using nlohmann::json;

api::TfJob JobWith(const std::string& replica_yaml, const std::string& extra_spec = "") {
  return testing::DefaultedJobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: test-tfjob, namespace: default, uid: test-uid}\n"
      "spec:\n" +
      extra_spec + "  tfReplicaSpecs:\n" + replica_yaml);
}

TEST(RenderPod, NameLabelsOwnerAndTfConfig) {
  api::TfJob job = testing::NewTfJob(2, 1);
  RenderedPod pod = RenderPod(job, ReplicaType::kWorker, 1, RenderOptions{});
  const json& o = pod.object;
  EXPECT_EQ(o["apiVersion"], "v1");
  EXPECT_EQ(o["kind"], "Pod");
  EXPECT_EQ(o["metadata"]["name"], "test-tfjob-worker-1");
  EXPECT_EQ(o["metadata"]["namespace"], "default");
  EXPECT_EQ(o["metadata"]["labels"], json::parse(R"({
    "training.kubeflow.org/operator-name":"tfjob-controller","training.kubeflow.org/job-name":"test-tfjob",
    "training.kubeflow.org/replica-type":"worker","training.kubeflow.org/replica-index":"1"})"));
  EXPECT_EQ(o["metadata"]["ownerReferences"], json::parse(R"([{"apiVersion":"kubeflow.org/v1","kind":"TFJob",
    "name":"test-tfjob","uid":"test-uid","controller":true,"blockOwnerDeletion":true}])"));  // OR1
  const json& env = o["spec"]["containers"][0]["env"];
  ASSERT_EQ(env.size(), 1u);
  EXPECT_EQ(env[0]["name"], "TF_CONFIG");
  EXPECT_EQ(json::parse(env[0]["value"].get<std::string>())["task"], json::parse(R"({"type":"worker","index":1})"));
  EXPECT_EQ(o["spec"]["restartPolicy"], "Never");
  EXPECT_TRUE(pod.events.empty());
}

TEST(RenderPod, JobRoleMasterOnChiefOrWorkerZero) {
  api::TfJob plain = testing::NewTfJob(2, 1);
  EXPECT_EQ(
      RenderPod(plain, ReplicaType::kWorker, 0, {}).object["metadata"]["labels"]["training.kubeflow.org/job-role"],
      "master");
  EXPECT_FALSE(RenderPod(plain, ReplicaType::kWorker, 1, {})
                   .object["metadata"]["labels"]
                   .contains("training.kubeflow.org/job-role"));
  EXPECT_FALSE(RenderPod(plain, ReplicaType::kPS, 0, {})
                   .object["metadata"]["labels"]
                   .contains("training.kubeflow.org/job-role"));
  api::TfJob chief = testing::NewTfJob(2, 1, true);
  EXPECT_EQ(RenderPod(chief, ReplicaType::kChief, 0, {}).object["metadata"]["labels"]["training.kubeflow.org/job-role"],
            "master");
  EXPECT_FALSE(RenderPod(chief, ReplicaType::kWorker, 0, {})
                   .object["metadata"]["labels"]
                   .contains("training.kubeflow.org/job-role"));
}

// Cases R1-R4 of docs/semantics.md 4.4, plus the template-policy warning.
TEST(RenderPod, RestartPolicyMapping) {
  struct Case {
    const char* replica_policy;
    const char* pod_policy;
  };
  for (const Case& c :
       {Case{"ExitCode", "Never"}, Case{"Never", "Never"}, Case{"Always", "Always"}, Case{"OnFailure", "OnFailure"}}) {
    api::TfJob job = JobWith(std::string("    Worker:\n      restartPolicy: ") + c.replica_policy +
                             "\n      template: {spec: {containers: [{name: tensorflow, image: x}]}}\n");
    EXPECT_EQ(RenderPod(job, ReplicaType::kWorker, 0, {}).object["spec"]["restartPolicy"], c.pod_policy)
        << c.replica_policy;
  }
  api::TfJob overridden = JobWith(
      "    Worker:\n      restartPolicy: OnFailure\n"
      "      template: {spec: {restartPolicy: Always, containers: [{name: tensorflow, image: x}]}}\n");
  RenderedPod pod = RenderPod(overridden, ReplicaType::kWorker, 0, {});
  EXPECT_EQ(pod.object["spec"]["restartPolicy"], "OnFailure");
  EXPECT_THAT(pod.events, ::testing::ElementsAre(RenderEvent{
                              api::EventType::kWarning, "SetPodTemplateRestartPolicy",
                              "Restart policy in pod template will be overwritten by restart policy in replica spec"}));
}

TEST(RenderPod, TemplateFieldsPassThroughAndOperatorLabelsWin) {
  api::TfJob job = JobWith(
      "    Worker:\n      replicas: 1\n      template:\n        metadata:\n"
      "          labels: {label1: '1', training.kubeflow.org/replica-index: '9'}\n"
      "          annotations: {annotation1: '1'}\n        spec:\n"
      "          futureField: {nested: [1, 2]}\n          affinity: {nodeAffinity: {x: y}}\n"
      "          volumes: [{name: data, emptyDir: {}}]\n          containers:\n"
      "          - {name: tensorflow, image: x, env: [{name: A, value: b}], volumeMounts: [{name: data, mountPath: "
      "/d}]}\n"
      "          - {name: sidecar, image: y}\n");
  const json o = RenderPod(job, ReplicaType::kWorker, 0, {}).object;
  EXPECT_EQ(o["metadata"]["labels"]["label1"], "1");  // P5
  EXPECT_EQ(o["metadata"]["annotations"], json::parse(R"({"annotation1":"1"})"));
  EXPECT_EQ(o["metadata"]["labels"]["training.kubeflow.org/replica-index"], "0");
  EXPECT_EQ(o["spec"]["futureField"], json::parse(R"({"nested":[1,2]})"));
  EXPECT_EQ(o["spec"]["affinity"], json::parse(R"({"nodeAffinity":{"x":"y"}})"));
  EXPECT_EQ(o["spec"]["volumes"], json::parse(R"([{"name":"data","emptyDir":{}}])"));
  EXPECT_EQ(o["spec"]["containers"][0]["env"], json::parse(R"([{"name":"A","value":"b"}])"));  // not distributed
  EXPECT_FALSE(o["spec"]["containers"][1].contains("env"));
}

// Issue 14 item 2 (docs/semantics.md 2.5): of the template's metadata only labels, annotations and
// finalizers reach the pod, as upstream; a template pasted from `kubectl get -o yaml` keeps
// resourceVersion, uid, creationTimestamp, managedFields, ownerReferences, ... out of the create.
TEST(RenderPod, OnlyLabelsAnnotationsAndFinalizersOfTheTemplateMetadata) {
  api::TfJob job = JobWith(
      "    Worker:\n      template:\n        metadata:\n"
      "          name: old-pod-name\n          generateName: old-\n          namespace: elsewhere\n"
      "          uid: 5d1f7c9e-0000-4000-8000-000000000001\n          resourceVersion: '123456'\n"
      "          generation: 3\n          creationTimestamp: '2024-05-01T10:00:00Z'\n"
      "          deletionTimestamp: '2024-05-02T10:00:00Z'\n          deletionGracePeriodSeconds: 30\n"
      "          selfLink: /api/v1/namespaces/elsewhere/pods/old-pod-name\n"
      "          ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: rs, uid: u, controller: true}]\n"
      "          managedFields: [{manager: kubectl, operation: Update, apiVersion: v1}]\n"
      "          labels: {app: mnist}\n          annotations: {team: ml}\n"
      "          finalizers: [example.com/keep]\n"
      "        spec: {containers: [{name: tensorflow, image: x}]}\n");
  const json meta = RenderPod(job, ReplicaType::kWorker, 0, {}).object["metadata"];
  std::vector<std::string> keys;
  for (auto it = meta.begin(); it != meta.end(); ++it) keys.push_back(it.key());
  EXPECT_THAT(keys, ::testing::UnorderedElementsAre("name", "namespace", "labels", "annotations", "finalizers",
                                                    "ownerReferences"));
  EXPECT_EQ(meta["name"], "test-tfjob-worker-0");
  EXPECT_EQ(meta["namespace"], "default");
  EXPECT_EQ(meta["labels"]["app"], "mnist");
  EXPECT_EQ(meta["annotations"], json::parse(R"({"team":"ml"})"));
  EXPECT_EQ(meta["finalizers"], json::parse(R"(["example.com/keep"])"));
  ASSERT_EQ(meta["ownerReferences"].size(), 1u);  // only the job's
  EXPECT_EQ(meta["ownerReferences"][0]["kind"], "TFJob");
  // Without any of the three, none appears (upstream's empty maps are omitted on the wire).
  const json bare = RenderPod(JobWith("    Worker:\n      template:\n        metadata: {creationTimestamp: null}\n"
                                      "        spec: {containers: [{name: tensorflow, image: x}]}\n"),
                              ReplicaType::kWorker, 0, {})
                        .object["metadata"];
  EXPECT_FALSE(bare.contains("annotations"));
  EXPECT_FALSE(bare.contains("finalizers"));
  EXPECT_FALSE(bare.contains("creationTimestamp"));
}

TEST(RenderPod, GangSchedulingVolcanoAndSchedulerPlugins) {
  api::TfJob job = testing::NewTfJob(2, 0);
  RenderOptions volcano;
  volcano.gang_scheduler_name = "Volcano";
  json v = RenderPod(job, ReplicaType::kWorker, 1, volcano).object;
  EXPECT_EQ(v["spec"]["schedulerName"], "volcano");
  EXPECT_EQ(v["metadata"]["annotations"],
            json::parse(R"({"scheduling.k8s.io/group-name":"test-tfjob","volcano.sh/task-spec":"worker"})"));
  RenderOptions plugins;
  plugins.gang_scheduler_name = "scheduler-plugins-scheduler";
  json p = RenderPod(job, ReplicaType::kWorker, 1, plugins).object;
  EXPECT_EQ(p["spec"]["schedulerName"], "scheduler-plugins-scheduler");
  EXPECT_EQ(p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"], "test-tfjob");
  EXPECT_FALSE(p["metadata"].contains("annotations"));
}

// D27: with kube-scheduler's own gang scheduling every pod names the job's PodGroup; the
// scheduler name stays the template's (the default scheduler does the gang scheduling).
TEST(RenderPod, GangSchedulingKubernetesNamesThePodGroup) {
  api::TfJob job = JobWith(
      "    PS: {template: {spec: {schedulerName: my-sched, schedulingGroup: {podGroupName: other},"
      " containers: [{name: tensorflow, image: x}]}}}\n"
      "    Worker: {template: {spec: {containers: [{name: tensorflow, image: x}]}}}\n");
  RenderOptions opts;
  opts.gang_scheduler_name = "kubernetes";
  for (ReplicaType type : {ReplicaType::kPS, ReplicaType::kWorker}) {
    RenderedPod pod = RenderPod(job, type, 0, opts);
    EXPECT_EQ(pod.object["spec"]["schedulingGroup"], json::parse(R"({"podGroupName":"test-tfjob"})"));
    EXPECT_TRUE(pod.events.empty());
    EXPECT_FALSE(pod.object["metadata"].contains("annotations"));
    EXPECT_FALSE(pod.object["metadata"]["labels"].contains("scheduling.x-k8s.io/pod-group"));
  }
  EXPECT_EQ(RenderPod(job, ReplicaType::kPS, 0, opts).object["spec"]["schedulerName"], "my-sched");
  EXPECT_FALSE(RenderPod(job, ReplicaType::kWorker, 0, opts).object["spec"].contains("schedulerName"));
  EXPECT_FALSE(RenderPod(job, ReplicaType::kWorker, 0, RenderOptions{}).object["spec"].contains("schedulingGroup"));
  // RenderJob: the Workload, then its PodGroup, then the pods and services.
  auto rendered = RenderJob(job, opts);
  ASSERT_TRUE(rendered.ok());
  std::vector<std::string> kinds;
  for (const json& o : rendered->objects) kinds.push_back(o["kind"]);
  EXPECT_EQ(kinds, (std::vector<std::string>{"Workload", "PodGroup", "Pod", "Service", "Pod", "Service"}));
}

// GS1: a custom schedulerName in any template is kept, with a warning.
TEST(RenderPod, CustomSchedulerNameIsKeptWithWarning) {
  api::TfJob job = JobWith(
      "    PS: {template: {spec: {schedulerName: my-sched, containers: [{name: tensorflow, image: x}]}}}\n"
      "    Worker: {template: {spec: {containers: [{name: tensorflow, image: x}]}}}\n");
  RenderOptions opts;
  opts.gang_scheduler_name = "volcano";
  RenderedPod ps = RenderPod(job, ReplicaType::kPS, 0, opts);
  EXPECT_EQ(ps.object["spec"]["schedulerName"], "my-sched");
  ASSERT_EQ(ps.events.size(), 1u);
  EXPECT_EQ(ps.events[0].reason, "SetPodTemplateSchedulerName");
  RenderedPod worker = RenderPod(job, ReplicaType::kWorker, 0, opts);
  EXPECT_EQ(worker.object["spec"]["schedulerName"], "volcano");
  EXPECT_EQ(worker.events.size(), 1u);
  EXPECT_TRUE(RenderPod(testing::NewTfJob(1, 1), ReplicaType::kWorker, 0, opts).events.empty());
}

// SV2 of docs/semantics.md 4.12, with D15.
TEST(RenderService, HeadlessWithTensorflowPorts) {
  auto svc = RenderService(testing::NewTfJob(1, 0), ReplicaType::kWorker, 0);
  ASSERT_TRUE(svc.ok());
  EXPECT_EQ(*svc, json::parse(R"({"apiVersion":"v1","kind":"Service",
    "metadata":{"name":"test-tfjob-worker-0","namespace":"default",
      "labels":{"training.kubeflow.org/job-name":"test-tfjob","training.kubeflow.org/operator-name":"tfjob-controller",
                "training.kubeflow.org/replica-index":"0","training.kubeflow.org/replica-type":"worker"},
      "ownerReferences":[{"apiVersion":"kubeflow.org/v1","kind":"TFJob","name":"test-tfjob","uid":"test-uid",
                          "controller":true,"blockOwnerDeletion":true}]},
    "spec":{"clusterIP":"None","publishNotReadyAddresses":true,"ports":[{"name":"tfjob-port","port":2222}],
      "selector":{"training.kubeflow.org/job-name":"test-tfjob","training.kubeflow.org/operator-name":"tfjob-controller",
                  "training.kubeflow.org/replica-index":"0","training.kubeflow.org/replica-type":"worker"}}})"));
}

// Found by the fuzzer: a port with `name: null` crashed the renderer.
TEST(RenderService, PortsWithoutAStringNameGetAnEmptyName) {
  api::TfJob job = JobWith(
      "    Worker: {template: {spec: {containers: [{name: tensorflow, image: x, ports: [{name: null, containerPort: "
      "5}]}]}}}\n");
  auto svc = RenderService(job, ReplicaType::kWorker, 0);
  ASSERT_TRUE(svc.ok());
  EXPECT_EQ((*svc)["spec"]["ports"][0], json::parse(R"({"name":"","port":5})"));
}

TEST(RenderService, NoTensorflowContainerIsAnError) {
  api::TfJob job = JobWith("    Worker: {template: {spec: {containers: [{name: main, image: x}]}}}\n");
  EXPECT_FALSE(HasService(job, ReplicaType::kWorker));
  auto svc = RenderService(job, ReplicaType::kWorker, 0);
  ASSERT_FALSE(svc.ok());
  EXPECT_EQ(svc.status().message(), "failed to find the port");
  EXPECT_TRUE(HasService(testing::NewTfJob(1, 0), ReplicaType::kWorker));
}

TEST(Naming, LB1AndGeneralNames) {
  auto labels = GenLabels("test/key");
  EXPECT_EQ(labels.at("training.kubeflow.org/job-name"), "test-key");
  EXPECT_EQ(labels.at("training.kubeflow.org/operator-name"), "tfjob-controller");
  EXPECT_EQ(GenGeneralName("1/2/3/4/5", "WORKER", 1), "1-2-3-4-5-worker-1");
  EXPECT_EQ(GenGeneralName("test-tfjob", "", 0), "test-tfjob--0");
  EXPECT_EQ(ReplicaName("mnist", ReplicaType::kEvaluator, 0), "mnist-evaluator-0");
}

TEST(RenderJob, StableOrderPodsThenServicesPerType) {
  auto rendered = RenderJob(testing::NewTfJob(2, 1), RenderOptions{});
  ASSERT_TRUE(rendered.ok());
  std::vector<std::string> names;
  for (const auto& o : rendered->objects)
    names.push_back(o["kind"].get<std::string>() + "/" + o["metadata"]["name"].get<std::string>());
  EXPECT_THAT(names, ::testing::ElementsAre("Pod/test-tfjob-ps-0", "Service/test-tfjob-ps-0", "Pod/test-tfjob-worker-0",
                                            "Pod/test-tfjob-worker-1", "Service/test-tfjob-worker-0",
                                            "Service/test-tfjob-worker-1"));
}

}  // namespace
}  // namespace tfjob::core
