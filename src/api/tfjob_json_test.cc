#include "api/tfjob_json.h"

#include "api/pod_json.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::api {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;

std::vector<std::string> DecodeErrors(const json& j) {
  FieldErrors errors;
  DecodeTfJob(j, &errors);
  std::vector<std::string> out;
  for (const auto& e : errors) out.push_back(e.ToString());
  return out;
}

TEST(DecodeTfJob, WrongTypesNameTheirField) {
  json j = json::parse(R"({"apiVersion":"kubeflow.org/v1","kind":"TFJob","metadata":{"name":"a"},
    "spec":{"runPolicy":{"backoffLimit":"three","suspend":"yes"},
            "tfReplicaSpecs":{"Worker":{"replicas":"two","template":[]},"PS":{"replicas":3000000000}}}})");
  EXPECT_THAT(DecodeErrors(j),
              ElementsAre("spec.runPolicy.backoffLimit: Invalid value: \"three\": must be an integer",
                          "spec.runPolicy.suspend: Invalid value: \"yes\": must be a boolean",
                          "spec.tfReplicaSpecs[PS].replicas: Invalid value: 3000000000: must be a 32-bit integer",
                          "spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"two\": must be an integer",
                          "spec.tfReplicaSpecs[Worker].template: Invalid value: []: must be an object"));
}

TEST(DecodeTfJob, FloatReplicasAreNotIntegers) {
  json j = json::parse(R"({"spec":{"tfReplicaSpecs":{"Worker":{"replicas":1e20}}}})");
  EXPECT_THAT(DecodeErrors(j),
              ElementsAre("spec.tfReplicaSpecs[Worker].replicas: Invalid value: 1e+20: must be an integer"));
}

// Issue 35: the API server takes an integral number written with a fraction as an integer.
TEST(DecodeTfJob, IntegralFloatsAreIntegers) {
  FieldErrors errors;
  TfJob job = DecodeTfJob(json::parse(R"({"spec":{"runPolicy":{"backoffLimit":3.0},
    "tfReplicaSpecs":{"Worker":{"replicas":2.0},"PS":{"replicas":3e9}}}})"),
                          &errors);
  EXPECT_EQ(job.spec.run_policy.backoff_limit, 3);
  EXPECT_EQ(job.spec.replica_specs.at("Worker")->replicas, 2);
  EXPECT_THAT(DecodeErrors(json::parse(R"({"spec":{"tfReplicaSpecs":{"PS":{"replicas":3e9}}}})")),
              ElementsAre("spec.tfReplicaSpecs[PS].replicas: Invalid value: 3000000000.0: must be a 32-bit integer"));
}

TEST(EncodeStatus, OmitsZeroCountersAndRoundTrips) {
  JobStatus st;
  st.replica_statuses["Worker"] = ReplicaStatus{2, 0, 1, 3, 4};
  st.replica_statuses["PS"] = ReplicaStatus{};
  st.start_time = Time(std::chrono::seconds(1767225600));
  st.conditions.push_back({"Created", "True", "TFJobCreated", "TFJob a is created.", st.start_time, st.start_time});
  json j = EncodeStatus(st);
  EXPECT_EQ(j["replicaStatuses"]["PS"], json::object());
  EXPECT_EQ(j["replicaStatuses"]["Worker"], json::parse(R"({"active":2,"disruptions":4,"failed":1,"restarts":3})"));
  EXPECT_EQ(j["startTime"], "2026-01-01T00:00:00Z");
  FieldErrors errors;
  TfJob back = DecodeTfJob(json{{"status", j}}, &errors);
  EXPECT_TRUE(errors.empty());
  EXPECT_EQ(back.status, st);
}

// D21: a pod's disruption comes from its DisruptionTarget condition (status True), or from a
// kubelet eviction reported only as status.reason Evicted.
TEST(DecodePod, DisruptionTargetAndEvicted) {
  json pod = json::parse(R"({"metadata": {"name": "p", "uid": "u"}, "status": {"phase": "Running", "conditions": [
      {"type": "Ready", "status": "True"},
      {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI", "message": "Eviction API: evicting"}]}})");
  auto p = DecodePod(pod);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->disruption_reason, "EvictionByEvictionAPI");
  EXPECT_EQ(p->disruption_message, "Eviction API: evicting");
  EXPECT_TRUE(p->conditions.empty());  // only conditions that are not True are kept
  pod["status"]["conditions"][1]["status"] = "False";
  EXPECT_EQ(DecodePod(pod)->disruption_reason, "");
  json evicted = json::parse(R"({"metadata": {"name": "p"}, "status": {"phase": "Failed", "reason": "Evicted",
      "message": "The node was low on resource: memory."}})");
  EXPECT_EQ(DecodePod(evicted)->disruption_reason, "Evicted");
  EXPECT_EQ(DecodePod(evicted)->disruption_message, "The node was low on resource: memory.");
  evicted["status"]["phase"] = "Running";
  EXPECT_EQ(DecodePod(evicted)->disruption_reason, "");
}

TEST(DecodeTfJobStrict, ShapeErrorsAreDataLoss) {
  auto r = DecodeTfJobStrict(json::parse(R"({"metadata":{"name":5}})"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(), "undecodable TFJob: metadata.name: Invalid value: 5: must be a string");
}

// The schema admits any RFC 3339 time; ours ends at 2262. A status we cannot read must not
// hide the job from the controller (it was skipped, and a deleted one was kept forever).
TEST(DecodeTfJobStrict, UnreadableStatusFieldsAreLeftUnset) {
  auto r = DecodeTfJobStrict(json::parse(R"({"metadata":{"name":"a"},
    "spec":{"tfReplicaSpecs":{"Worker":{"replicas":2}}},
    "status":{"startTime":"0001-01-01T00:00:00Z","completionTime":"9999-12-31T23:59:59Z",
              "conditions":[{"type":"Created","status":"True","lastTransitionTime":"0001-01-01T00:00:00Z"}]}})"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->spec.replica_specs.at("Worker")->replicas, 2);
  EXPECT_FALSE(r->status.start_time.has_value());
  EXPECT_FALSE(r->status.completion_time.has_value());
  ASSERT_EQ(r->status.conditions.size(), 1u);
  EXPECT_EQ(r->status.conditions[0].type, "Created");
  EXPECT_FALSE(r->status.conditions[0].last_transition_time.has_value());
}

TEST(DecodeTfJobStrict, SpecShapeErrorsStillFailNextToStatusOnes) {
  auto r = DecodeTfJobStrict(json::parse(R"({"spec":{"tfReplicaSpecs":{"Worker":{"replicas":"two"}}},
    "status":{"startTime":"0001-01-01T00:00:00Z"}})"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(r.status().message(),
            "undecodable TFJob: spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"two\": must be an integer");
}

}  // namespace
}  // namespace tfjob::api
