#include "tfjob/core/tf_config.h"

#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::core {
namespace {

using api::ReplicaType;

// Job `dist-mnist` in `kubeflow` with the given replica lines (type: count[, port]).
api::TfJob DistMnist(std::vector<std::tuple<std::string, int, int>> replicas, bool dynamic = false) {
  std::string yaml =
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: dist-mnist, namespace: kubeflow}\nspec:\n";
  if (dynamic) yaml += "  enableDynamicWorker: true\n";
  yaml += "  tfReplicaSpecs:\n";
  for (const auto& [type, n, port] : replicas) {
    yaml += "    " + type + ":\n      replicas: " + std::to_string(n) +
            "\n      template: {spec: {containers: [{name: tensorflow, image: tf";
    if (port != 0) yaml += ", ports: [{name: tfjob-port, containerPort: " + std::to_string(port) + "}]";
    yaml += "}]}}\n";
  }
  return testing::DefaultedJobFromYaml(yaml);
}

struct Case {
  const char* id;
  api::TfJob job;
  ReplicaType type;
  int index;
  std::string cluster_domain;
  std::optional<std::string> expected;
};

TEST(GenTfConfig, SpecExamplesT1ToT12AreByteExact) {
  const std::string ps_worker_cluster =
      R"({"ps":["dist-mnist-ps-0.kubeflow.svc:2222","dist-mnist-ps-1.kubeflow.svc:2222"],"worker":["dist-mnist-worker-0.kubeflow.svc:2222","dist-mnist-worker-1.kubeflow.svc:2222","dist-mnist-worker-2.kubeflow.svc:2222"]})";
  const std::string full_cluster =
      R"({"chief":["dist-mnist-chief-0.kubeflow.svc:2222"],"evaluator":["dist-mnist-evaluator-0.kubeflow.svc:2222"],"ps":["dist-mnist-ps-0.kubeflow.svc:2222"],"worker":["dist-mnist-worker-0.kubeflow.svc:2222","dist-mnist-worker-1.kubeflow.svc:2222"]})";
  auto full = DistMnist({{"Chief", 1, 0}, {"Worker", 2, 0}, {"PS", 1, 0}, {"Evaluator", 1, 0}});
  std::vector<Case> cases = {
      {"T1", DistMnist({{"PS", 2, 0}, {"Worker", 3, 0}}), ReplicaType::kWorker, 1, "",
       R"({"cluster":)" + ps_worker_cluster + R"(,"task":{"type":"worker","index":1},"environment":"cloud"})"},
      {"T2", DistMnist({{"PS", 2, 0}, {"Worker", 3, 0}}), ReplicaType::kPS, 0, "",
       R"({"cluster":)" + ps_worker_cluster + R"(,"task":{"type":"ps","index":0},"environment":"cloud"})"},
      {"T3", full, ReplicaType::kChief, 0, "",
       R"({"cluster":)" + full_cluster + R"(,"task":{"type":"chief","index":0},"environment":"cloud"})"},
      {"T4", full, ReplicaType::kEvaluator, 0, "",
       R"({"cluster":)" + full_cluster + R"(,"task":{"type":"evaluator","index":0},"environment":"cloud"})"},
      {"T5", DistMnist({{"Master", 1, 0}, {"Worker", 1, 0}}), ReplicaType::kMaster, 0, "",
       R"({"cluster":{"master":["dist-mnist-master-0.kubeflow.svc:2222"],"worker":["dist-mnist-worker-0.kubeflow.svc:2222"]},"task":{"type":"master","index":0},"environment":"cloud"})"},
      {"T6", DistMnist({{"PS", 1, 0}, {"Worker", 2, 3333}}), ReplicaType::kWorker, 0, "",
       R"({"cluster":{"ps":["dist-mnist-ps-0.kubeflow.svc:2222"],"worker":["dist-mnist-worker-0.kubeflow.svc:3333","dist-mnist-worker-1.kubeflow.svc:3333"]},"task":{"type":"worker","index":0},"environment":"cloud"})"},
      {"T7", DistMnist({{"PS", 1, 0}, {"Worker", 1, 0}}), ReplicaType::kWorker, 0, "cluster.local",
       R"({"cluster":{"ps":["dist-mnist-ps-0.kubeflow.svc.cluster.local:2222"],"worker":["dist-mnist-worker-0.kubeflow.svc.cluster.local:2222"]},"task":{"type":"worker","index":0},"environment":"cloud"})"},
      {"T8", DistMnist({{"PS", 2, 0}, {"Worker", 2, 0}}, true), ReplicaType::kWorker, 1, "",
       R"({"cluster":{"worker":{"1":"dist-mnist-worker-1.kubeflow.svc:2222"},"ps":["dist-mnist-ps-0.kubeflow.svc:2222","dist-mnist-ps-1.kubeflow.svc:2222"]},"task":{"type":"worker","index":1}})"},
      {"T9", DistMnist({{"PS", 2, 0}, {"Worker", 2, 0}}, true), ReplicaType::kPS, 1, "",
       R"({"cluster":{"worker":{},"ps":["dist-mnist-ps-1.kubeflow.svc:2222"]},"task":{"type":"ps","index":1}})"},
      {"T10", DistMnist({{"Chief", 1, 0}, {"Worker", 2, 0}}, true), ReplicaType::kWorker, 0, "",
       R"({"cluster":{"worker":{"0":"dist-mnist-worker-0.kubeflow.svc:2222"},"ps":null},"task":{"type":"worker","index":0}})"},
      {"T11", DistMnist({{"Chief", 1, 0}, {"Worker", 2, 0}}, true), ReplicaType::kChief, 0, "",
       R"({"cluster":{"worker":{},"ps":[]},"task":{"type":"chief","index":0}})"},
      {"T12", DistMnist({{"Worker", 1, 0}}), ReplicaType::kWorker, 0, "", std::nullopt},
  };
  for (const auto& c : cases) {
    TfConfigOptions options;
    options.cluster_domain = c.cluster_domain;
    EXPECT_EQ(GenTfConfig(c.job, c.type, c.index, options), c.expected) << c.id;
  }
}

TEST(GenTfConfig, EvaluatorCanBeLeftOutOfTheCluster) {
  auto job = DistMnist({{"Worker", 1, 0}, {"Evaluator", 1, 0}});
  TfConfigOptions options;
  options.evaluator_in_cluster = false;
  EXPECT_EQ(
      GenTfConfig(job, ReplicaType::kEvaluator, 0, options),
      R"({"cluster":{"worker":["dist-mnist-worker-0.kubeflow.svc:2222"]},"task":{"type":"evaluator","index":0},"environment":"cloud"})");
}

TEST(GenTfConfig, EndpointFunctionReplacesServiceNames) {
  auto job = DistMnist({{"PS", 1, 0}, {"Worker", 1, 0}});
  TfConfigOptions options;
  options.endpoint = [](api::ReplicaType t, int32_t i, int32_t) {
    return "127.0.0.1:" + std::to_string(20000 + 10 * static_cast<int>(t) + i);
  };
  EXPECT_EQ(
      GenTfConfig(job, ReplicaType::kWorker, 0, options),
      R"({"cluster":{"ps":["127.0.0.1:20030"],"worker":["127.0.0.1:20040"]},"task":{"type":"worker","index":0},"environment":"cloud"})");
}

// Cases I1-I4 of docs/semantics.md 4.4.
TEST(IsDistributed, SpecCases) {
  EXPECT_FALSE(IsDistributed(DistMnist({{"Worker", 1, 0}})));                  // I1
  EXPECT_TRUE(IsDistributed(DistMnist({{"Worker", 1, 0}, {"PS", 1, 0}})));     // I2
  EXPECT_FALSE(IsDistributed(DistMnist({{"PS", 1, 0}})));                      // I3
  EXPECT_TRUE(IsDistributed(DistMnist({{"Worker", 1, 0}, {"Chief", 1, 0}})));  // I4
  EXPECT_TRUE(IsDistributed(DistMnist({{"Worker", 0, 0}})));                   // sum 0 counts as distributed
}

}  // namespace
}  // namespace tfjob::core
