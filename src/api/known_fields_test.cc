#include "api/known_fields.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/manifest.h"

namespace tfjob::api {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Warnings(const std::string& yaml) {
  auto docs = ParseManifest(yaml);
  EXPECT_TRUE(docs.ok()) << docs.status().ToString();
  return UnknownFieldWarnings((*docs)[0].object);
}

TEST(UnknownFieldWarnings, NoneForAFullyWrittenJob) {
  EXPECT_THAT(Warnings(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: a, namespace: n, labels: {anything: goes}, annotations: {x: y}}
spec:
  successPolicy: AllWorkers
  enableDynamicWorker: false
  runPolicy:
    cleanPodPolicy: None
    backoffLimit: 3
    schedulingPolicy: {minAvailable: 1, queue: q, minResources: {cpu: 1}}
  tfReplicaSpecs:
    Worker:
      replicas: 2
      restartPolicy: OnFailure
      template:
        metadata: {labels: {app: a}}
        spec:
          nodeSelector: {anyKey: v}
          tolerations: [{key: k, operator: Exists}]
          affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: []}}}
          containers:
          - name: tensorflow
            image: tf
            command: [python]
            args: [train.py]
            env: [{name: A, value: b}, {name: B, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
            ports: [{name: tfjob-port, containerPort: 2222, protocol: TCP}]
            resources: {limits: {nvidia.com/gpu: 1}, requests: {cpu: 1}}
            volumeMounts: [{name: d, mountPath: /d}]
status: {anything: 1}
)"),
              ElementsAre());
}

// The typos of issue 17 item 3, each with its full path (depth first, in key order; the metadata
// of the object first, of each template last).
TEST(UnknownFieldWarnings, EveryLevelWithItsPath) {
  EXPECT_THAT(Warnings(R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadta: {name: a}
metadata: {name: a, lables: {a: b}}
spec:
  runPolcy: {backoffLimit: 1}
  runPolicy: {backofLimit: 1, schedulingPolicy: {queeu: q}}
  tfReplicaSpecs:
    Worker:
      replcas: 3
      template:
        metdata: {}
        metadata: {labls: {}}
        spec:
          restartPolcy: Never
          initContainers: [{name: i, image: i, comand: [x]}]
          containers:
          - name: tensorflow
            image: tf
            comand: [python]
            env: [{name: A, valeu: b}]
            ports: [{containerport: 1}]
            resources: {limit: {cpu: 1}}
            volumeMounts: [{name: d, mountpath: /d}]
)"),
              ElementsAre("metadata.lables: unknown field \"lables\"", "metadta: unknown field \"metadta\"",
                          "spec.runPolcy: unknown field \"runPolcy\"",
                          "spec.runPolicy.backofLimit: unknown field \"backofLimit\"",
                          "spec.runPolicy.schedulingPolicy.queeu: unknown field \"queeu\"",
                          "spec.tfReplicaSpecs[Worker].replcas: unknown field \"replcas\"",
                          "spec.tfReplicaSpecs[Worker].template.metdata: unknown field \"metdata\"",
                          "spec.tfReplicaSpecs[Worker].template.spec.containers[0].comand: unknown field \"comand\"",
                          "spec.tfReplicaSpecs[Worker].template.spec.containers[0].env[0].valeu: unknown field "
                          "\"valeu\"",
                          "spec.tfReplicaSpecs[Worker].template.spec.containers[0].ports[0].containerport: unknown "
                          "field \"containerport\"",
                          "spec.tfReplicaSpecs[Worker].template.spec.containers[0].resources.limit: unknown field "
                          "\"limit\"",
                          "spec.tfReplicaSpecs[Worker].template.spec.containers[0].volumeMounts[0].mountpath: "
                          "unknown field \"mountpath\"",
                          "spec.tfReplicaSpecs[Worker].template.spec.initContainers[0].comand: unknown field "
                          "\"comand\"",
                          "spec.tfReplicaSpecs[Worker].template.spec.restartPolcy: unknown field \"restartPolcy\"",
                          "spec.tfReplicaSpecs[Worker].template.metadata.labls: unknown field \"labls\""));
}

// Issue 35: the schema of the CRD is the one source, so every level it describes is checked,
// down to affinity, probes and volumes, and a field it keeps (template metadata's own) is not.
TEST(UnknownFieldWarnings, EveryLevelTheCrdDescribes) {
  EXPECT_THAT(Warnings(R"(kind: TFJob
spec:
  tfReplicaSpecs:
    Worker:
      template:
        spec:
          affinity: {nodeAffinity: {whateverDeeper: 1}}
          volumes: [{name: v, emptyDir: {medum: Memory}}]
          containers:
          - name: tensorflow
            image: tf
            livenessProbe: {httpGet: {port: 80, pth: /}}
)"),
              ElementsAre("spec.tfReplicaSpecs[Worker].template.spec.affinity.nodeAffinity.whateverDeeper: unknown "
                          "field \"whateverDeeper\"",
                          "spec.tfReplicaSpecs[Worker].template.spec.containers[0].livenessProbe.httpGet.pth: unknown "
                          "field \"pth\"",
                          "spec.tfReplicaSpecs[Worker].template.spec.volumes[0].emptyDir.medum: unknown field "
                          "\"medum\""));
}

TEST(UnknownFieldWarnings, NamesAreEscapedAndTheCountIsBounded) {
  EXPECT_THAT(Warnings("kind: TFJob\n\"x\\e[2J\\u202e\": 1\n"),
              ElementsAre("x\\x1b[2J\\u202e: unknown field \"x\\x1b[2J\\u202e\""));
  std::string many = "kind: TFJob\n";
  for (int i = 0; i < 150; ++i) many += "f" + std::to_string(i) + ": 1\n";
  auto w = Warnings(many);
  ASSERT_EQ(w.size(), kMaxUnknownFieldMessages + 1);
  EXPECT_EQ(w.back(), "50 more unknown fields not shown");
}

}  // namespace
}  // namespace tfjob::api
