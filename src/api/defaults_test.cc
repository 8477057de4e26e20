#include "api/defaults.h"

#include <gtest/gtest.h>

#include "api/tfjob_file.h"

namespace tfjob::api {
namespace {

using nlohmann::json;

// The first TFJob of a fixture. A fixture that does not load is a fatal failure here, before
// anything reads the job (gtest's ASSERT needs a void function: callers wrap it in
// ASSERT_NO_FATAL_FAILURE).
void LoadFirst(const std::string& yaml, TfJob* out) {
  auto jobs = LoadTfJobs(yaml);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_FALSE(jobs->empty());
  *out = std::move(jobs->front().job);
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
  TfJob job;
  ASSERT_NO_FATAL_FAILURE(LoadFirst(
      WorkerJob("      restartPolicy: Always\n", "            ports: [{name: tfjob-port, containerPort: 2222}]\n"),
      &job));
  SetDefaults(job);
  const ReplicaSpec& w = job.spec.replica_specs.at("Worker").value();
  EXPECT_EQ(w.replicas, 1);
  EXPECT_EQ(w.restart_policy, "Always");
  EXPECT_EQ(w.pod_template["spec"]["containers"][0]["ports"],
            json::parse(R"([{"name":"tfjob-port","containerPort":2222}])"));
  EXPECT_EQ(job.spec.run_policy.clean_pod_policy, "None");
  EXPECT_EQ(job.spec.success_policy, "");
}

TEST(SetDefaults, D2EmptyRestartPolicyBecomesNever) {
  TfJob job;
  ASSERT_NO_FATAL_FAILURE(LoadFirst(WorkerJob(""), &job));
  SetDefaults(job);
  EXPECT_EQ(job.spec.replica_specs.at("Worker").value().restart_policy, "Never");
  EXPECT_EQ(job.spec.replica_specs.at("Worker").value().replicas, 1);
}

TEST(SetDefaults, D3AddsTheDefaultPort) {
  TfJob job;
  ASSERT_NO_FATAL_FAILURE(LoadFirst(WorkerJob("      replicas: 1\n      restartPolicy: Always\n"), &job));
  SetDefaults(job);
  EXPECT_EQ(job.spec.replica_specs.at("Worker").value().pod_template["spec"]["containers"][0]["ports"],
            json::parse(R"([{"name":"tfjob-port","containerPort":2222}])"));
}

TEST(SetDefaults, D4KeepsACustomPortAndAppendsTheDefault) {
  TfJob job;
  ASSERT_NO_FATAL_FAILURE(
      LoadFirst(WorkerJob("", "            ports: [{name: customPort, containerPort: 1234}]\n"), &job));
  SetDefaults(job);
  EXPECT_EQ(job.spec.replica_specs.at("Worker").value().pod_template["spec"]["containers"][0]["ports"],
            json::parse(R"([{"name":"customPort","containerPort":1234},{"name":"tfjob-port","containerPort":2222}])"));
}

TEST(SetDefaults, D5KeepsCleanPodPolicyAll) {
  TfJob job;
  ASSERT_NO_FATAL_FAILURE(LoadFirst(WorkerJob("", "", "Worker", "  runPolicy: {cleanPodPolicy: All}\n"), &job));
  SetDefaults(job);
  EXPECT_EQ(job.spec.run_policy.clean_pod_policy, "All");
}

TEST(SetDefaults, D6NormalisesReplicaTypeKeys) {
  for (const char* key : {"WORKER", "worker", "wOrKeR"}) {
    TfJob job;
    ASSERT_NO_FATAL_FAILURE(LoadFirst(WorkerJob("", "", key), &job));
    SetDefaults(job);
    EXPECT_EQ(job.spec.replica_specs.size(), 1u);
    EXPECT_TRUE(job.spec.replica_specs.contains("Worker")) << key;
  }
  TfJob ps;
  ASSERT_NO_FATAL_FAILURE(LoadFirst(WorkerJob("", "", "ps"), &ps));
  SetDefaults(ps);
  EXPECT_TRUE(ps.spec.replica_specs.contains("PS"));
}

TEST(SetDefaults, PortGoesToContainerZeroWhenNoTensorflowContainer) {
  TfJob job;
  ASSERT_NO_FATAL_FAILURE(
      LoadFirst("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: j}\nspec:\n  tfReplicaSpecs:\n    Worker:\n"
                "      template: {spec: {containers: [{name: main, image: x}, {name: side, image: y}]}}\n",
                &job));
  SetDefaults(job);
  const json& cs = job.spec.replica_specs.at("Worker").value().pod_template["spec"]["containers"];
  EXPECT_EQ(cs[0]["ports"], json::parse(R"([{"name":"tfjob-port","containerPort":2222}])"));
  EXPECT_FALSE(cs[1].contains("ports"));
}

TEST(SetDefaults, IsIdempotentAndSurvivesMalformedTemplates) {
  TfJob job;
  ASSERT_NO_FATAL_FAILURE(
      LoadFirst(WorkerJob("", "            ports: [{name: tfjob-port, containerPort: 3333}]\n"), &job));
  SetDefaults(job);
  TfJob again = job;
  SetDefaults(again);
  EXPECT_EQ(job, again);
  EXPECT_EQ(TfJobPort(job.spec.replica_specs.at("Worker").value()), 3333);

  TfJob odd;
  ASSERT_NO_FATAL_FAILURE(
      LoadFirst("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: j}\nspec:\n  tfReplicaSpecs:\n"
                "    Worker: {template: {spec: {containers: 7}}}\n    PS: null\n    Chief: {}\n",
                &odd));
  SetDefaults(odd);  // must not crash
  EXPECT_EQ(odd.spec.replica_specs.at("Worker").value().replicas, 1);
}

}  // namespace
}  // namespace tfjob::api
