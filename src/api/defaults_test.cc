#include "api/defaults.h"

#include <gtest/gtest.h>

#include "api/tfjob_file.h"

namespace tfjob::api {
namespace {

using nlohmann::json;

TfJob Load(const std::string& yaml) {
  auto jobs = LoadTfJobs(yaml);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  return (*jobs)[0].job;
}

std::string WorkerJob(const std::string& replica_fields, const std::string& container_extra = "",
                      const std::string& key = "Worker", const std::string& run_policy = "") {
  return "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: j}\nspec:\n" + run_policy +
         "  tfReplicaSpecs:\n    " + key + ":\n" + replica_fields +
         "      template:\n        spec:\n          containers:\n          - name: tensorflow\n"
         "            image: tf\n" +
         container_extra;
}

// Cases D1-D6 of docs/semantics.md 4.1.
TEST(SetDefaults, D1KeepsRestartPolicyAndExistingPortSetsReplicasAndPolicies) {
  TfJob job = Load(
      WorkerJob("      restartPolicy: Always\n", "            ports: [{name: tfjob-port, containerPort: 2222}]\n"));
  SetDefaults(job);
  const ReplicaSpec& w = *job.spec.replica_specs.at("Worker");
  EXPECT_EQ(w.replicas, 1);
  EXPECT_EQ(w.restart_policy, "Always");
  EXPECT_EQ(w.pod_template["spec"]["containers"][0]["ports"],
            json::parse(R"([{"name":"tfjob-port","containerPort":2222}])"));
  EXPECT_EQ(job.spec.run_policy.clean_pod_policy, "None");
  EXPECT_EQ(job.spec.success_policy, "");
}

TEST(SetDefaults, D2EmptyRestartPolicyBecomesNever) {
  TfJob job = Load(WorkerJob(""));
  SetDefaults(job);
  EXPECT_EQ(job.spec.replica_specs.at("Worker")->restart_policy, "Never");
  EXPECT_EQ(job.spec.replica_specs.at("Worker")->replicas, 1);
}

TEST(SetDefaults, D3AddsTheDefaultPort) {
  TfJob job = Load(WorkerJob("      replicas: 1\n      restartPolicy: Always\n"));
  SetDefaults(job);
  EXPECT_EQ(job.spec.replica_specs.at("Worker")->pod_template["spec"]["containers"][0]["ports"],
            json::parse(R"([{"name":"tfjob-port","containerPort":2222}])"));
}

TEST(SetDefaults, D4KeepsACustomPortAndAppendsTheDefault) {
  TfJob job = Load(WorkerJob("", "            ports: [{name: customPort, containerPort: 1234}]\n"));
  SetDefaults(job);
  EXPECT_EQ(job.spec.replica_specs.at("Worker")->pod_template["spec"]["containers"][0]["ports"],
            json::parse(R"([{"name":"customPort","containerPort":1234},{"name":"tfjob-port","containerPort":2222}])"));
}

TEST(SetDefaults, D5KeepsCleanPodPolicyAll) {
  TfJob job = Load(WorkerJob("", "", "Worker", "  runPolicy: {cleanPodPolicy: All}\n"));
  SetDefaults(job);
  EXPECT_EQ(job.spec.run_policy.clean_pod_policy, "All");
}

TEST(SetDefaults, D6NormalisesReplicaTypeKeys) {
  for (const char* key : {"WORKER", "worker", "wOrKeR"}) {
    TfJob job = Load(WorkerJob("", "", key));
    SetDefaults(job);
    EXPECT_EQ(job.spec.replica_specs.size(), 1u);
    EXPECT_TRUE(job.spec.replica_specs.contains("Worker")) << key;
  }
  TfJob ps = Load(WorkerJob("", "", "ps"));
  SetDefaults(ps);
  EXPECT_TRUE(ps.spec.replica_specs.contains("PS"));
}

TEST(SetDefaults, PortGoesToContainerZeroWhenNoTensorflowContainer) {
  TfJob job = Load(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: j}\nspec:\n  tfReplicaSpecs:\n    Worker:\n"
      "      template: {spec: {containers: [{name: main, image: x}, {name: side, image: y}]}}\n");
  SetDefaults(job);
  const json& cs = job.spec.replica_specs.at("Worker")->pod_template["spec"]["containers"];
  EXPECT_EQ(cs[0]["ports"], json::parse(R"([{"name":"tfjob-port","containerPort":2222}])"));
  EXPECT_FALSE(cs[1].contains("ports"));
}

TEST(SetDefaults, IsIdempotentAndSurvivesMalformedTemplates) {
  TfJob job = Load(WorkerJob("", "            ports: [{name: tfjob-port, containerPort: 3333}]\n"));
  SetDefaults(job);
  TfJob again = job;
  SetDefaults(again);
  EXPECT_EQ(job, again);
  EXPECT_EQ(TfJobPort(*job.spec.replica_specs.at("Worker")), 3333);

  TfJob odd = Load(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: j}\nspec:\n  tfReplicaSpecs:\n"
      "    Worker: {template: {spec: {containers: 7}}}\n    PS: null\n    Chief: {}\n");
  SetDefaults(odd);  // must not crash
  EXPECT_EQ(odd.spec.replica_specs.at("Worker")->replicas, 1);
}

}  // namespace
}  // namespace tfjob::api
