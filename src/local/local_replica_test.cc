#include "local/local_replica.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::local {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

constexpr std::string_view kPod = R"y(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: pod}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 2
      template:
        spec:
          initContainers:
          - name: setup
            image: busybox
            command: [sh, -c, "echo $(WHO)"]
            env: [{name: WHO, value: init}]
          containers:
          - name: sidecar
            image: busybox
            command: [sh, -c, "echo $(NAME) $$(NAME) $(MISSING)"]
            env: [{name: NAME, value: side}]
          - name: tensorflow
            image: tf
            command: [python3, train.py]
            args: ["--config=$(TF_CONFIG)", "--dir=$(OUT)"]
            workingDir: /tmp
            env:
            - {name: BASE, value: /data}
            - {name: OUT, value: "$(BASE)/out-$(LATER)"}
            - {name: LATER, value: x}
)y";

TEST(LocalReplicaFor, KeepsEveryContainerAndExpandsReferencesAsTheKubelet) {
  api::TfJob job = testing::DefaultedJobFromYaml(kPod);
  PortMap ports{{{api::ReplicaType::kWorker, 0}, 4000}, {{api::ReplicaType::kWorker, 1}, 4001}};
  auto r = LocalReplicaFor(job, api::ReplicaType::kWorker, 1, ports);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->name, "pod-worker-1");
  ASSERT_EQ(r->init_containers.size(), 1u);
  EXPECT_THAT(r->init_containers[0].argv, ElementsAre("sh", "-c", "echo init"));
  ASSERT_EQ(r->containers.size(), 2u);
  EXPECT_EQ(r->main, 1u);
  EXPECT_EQ(r->image, "tf");
  EXPECT_THAT(r->containers[0].argv, ElementsAre("sh", "-c", "echo side $(NAME) $(MISSING)"));
  const LocalContainer& tf = r->main_container();
  EXPECT_EQ(tf.working_dir, "/tmp");
  ASSERT_EQ(tf.env.size(), 4u);
  EXPECT_THAT(tf.env[1], Pair("OUT", "/data/out-$(LATER)"));  // LATER is defined after OUT
  EXPECT_EQ(tf.env[3].first, "TF_CONFIG");
  EXPECT_THAT(tf.env[3].second, HasSubstr("\"worker\":[\"127.0.0.1:4000\",\"127.0.0.1:4001\"]"));
  EXPECT_EQ(tf.argv[2], "--config=" + tf.env[3].second);  // command and args see every variable
  EXPECT_EQ(tf.argv[3], "--dir=/data/out-$(LATER)");
}

// Issue 35 item 2: each container's GPUs, and every resources field a local run does not apply
// (the container's and the pod's own), for the note at start.
TEST(LocalReplicaFor, Issue35GpusAndTheResourcesNotApplied) {
  api::TfJob job = testing::DefaultedJobFromYaml(R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: g}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          resources: {limits: {cpu: "8"}}
          containers:
          - name: tensorflow
            image: tf
            command: [python3, train.py]
            resources: {limits: {nvidia.com/gpu: 2, memory: 8Gi}, requests: {cpu: "1"}}
          - name: sidecar
            image: busybox
            command: [sleep, "1"]
)");
  auto r = LocalReplicaFor(job, api::ReplicaType::kWorker, 0, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->containers[0].gpus, 2);
  EXPECT_EQ(r->containers[1].gpus, 0);
  EXPECT_THAT(r->containers[0].unapplied_resources, ElementsAre("limits.memory", "requests.cpu"));
  EXPECT_THAT(r->unapplied_pod_resources, ElementsAre("pod limits.cpu"));
}

TEST(LocalReplicaFor, AGpuCountThatIsNotWholeIsRefusedWithItsPath) {
  api::TfJob job = testing::DefaultedJobFromYaml(R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: g}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          containers:
          - {name: tensorflow, image: tf, command: [python3], resources: {limits: {nvidia.com/gpu: "0.5"}}}
)");
  auto r = LocalReplicaFor(job, api::ReplicaType::kWorker, 0, {});
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("spec.tfReplicaSpecs[Worker].template.spec.containers[0].resources.limits[nvidia.com/gpu]: "
                        "Invalid value: \"0.5\": must be a whole number of GPUs"));
}

TEST(LocalReplicaFor, EnvFromIsRefusedWithItsPath) {
  api::TfJob job = testing::DefaultedJobFromYaml(R"(
apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: p}
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          initContainers:
          - {name: i, image: x, command: ["true"], envFrom: [{configMapRef: {name: c}}]}
          containers:
          - {name: tensorflow, image: x, command: ["true"]}
)");
  auto r = LocalReplicaFor(job, api::ReplicaType::kWorker, 0, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(),
              HasSubstr("spec.tfReplicaSpecs[Worker].template.spec.initContainers[0].envFrom: Unsupported value"));
}

TEST(ProcessEnvironment, TheContainersVariablesWinOverTheBase) {
  EXPECT_THAT(ProcessEnvironment({{"PATH", "/bin"}, {"A", "base"}, {"HOME", "/root"}}, {{"A", "mine"}, {"B", "b"}}),
              ElementsAre("PATH=/bin", "HOME=/root", "A=mine", "B=b"));
}

TEST(KeptByCleanEnv, KeepsWhatAShellNeedsOnly) {
  for (const char* kept : {"PATH", "HOME", "LANG", "LC_ALL", "TERM", "TZ"}) EXPECT_TRUE(KeptByCleanEnv(kept)) << kept;
  for (const char* dropped : {"VIRTUAL_ENV", "PYTHONPATH", "SSH_AUTH_SOCK", "KUBECONFIG", "TF_CONFIG"})
    EXPECT_FALSE(KeptByCleanEnv(dropped)) << dropped;
}

}  // namespace
}  // namespace tfjob::local
