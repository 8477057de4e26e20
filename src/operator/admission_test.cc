#include "operator/admission.h"

#include <gtest/gtest.h>

namespace tfjob::operator_ {
namespace {

using nlohmann::json;

json Worker(json containers) {
  return {{"replicas", 2}, {"template", {{"spec", {{"containers", std::move(containers)}}}}}};
}

json Job(const std::string& name, json specs, json run_policy = nullptr) {
  json job = {{"apiVersion", "kubeflow.org/v1"},
              {"kind", "TFJob"},
              {"metadata", {{"name", name}, {"namespace", "default"}}},
              {"spec", {{"tfReplicaSpecs", std::move(specs)}}}};
  if (!run_policy.is_null()) job["spec"]["runPolicy"] = std::move(run_policy);
  return job;
}

const json kGoodSpecs = {{"Worker", Worker(json::array({{{"name", "tensorflow"}, {"image", "tf"}}}))}};

json Review(const std::string& operation, json object, json old_object = nullptr) {
  json request = {{"uid", "705ab4f5-6393-11e8-b7cc-42010a800002"},
                  {"kind", {{"group", "kubeflow.org"}, {"version", "v1"}, {"kind", "TFJob"}}},
                  {"operation", operation},
                  {"object", std::move(object)}};
  if (!old_object.is_null()) request["oldObject"] = std::move(old_object);
  return {{"apiVersion", "admission.k8s.io/v1"}, {"kind", "AdmissionReview"}, {"request", std::move(request)}};
}

json Answer(const json& review) {
  auto answer = ReviewTfJob(review);
  EXPECT_TRUE(answer.ok()) << answer.status().ToString();
  EXPECT_EQ((*answer)["apiVersion"], "admission.k8s.io/v1");
  EXPECT_EQ((*answer)["kind"], "AdmissionReview");
  EXPECT_EQ((*answer)["response"]["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
  return (*answer)["response"];
}

TEST(ReviewTfJob, ValidJobIsAllowedWithoutStatus) {
  json r = Answer(Review("CREATE", Job("test", kGoodSpecs, {{"managedBy", "kubeflow.org/training-operator"}})));
  EXPECT_EQ(r["allowed"], true);
  EXPECT_FALSE(r.contains("status"));
  EXPECT_FALSE(r.contains("warnings"));
}

// Unknown fields (README, "Input rules and limits") are admitted with admission warnings.
TEST(ReviewTfJob, UnknownFieldsAreAdmissionWarnings) {
  json job = Job("test", kGoodSpecs);
  job["spec"]["tfReplicaSpecs"]["Worker"]["replcas"] = 3;
  job["spec"]["runPolcy"] = json::object();
  json r = Answer(Review("CREATE", job));
  EXPECT_EQ(r["allowed"], true);
  EXPECT_EQ(r["warnings"], json::parse(R"(["spec.runPolcy: unknown field \"runPolcy\"",
      "spec.tfReplicaSpecs[Worker].replcas: unknown field \"replcas\""])"));
  job["metadata"]["name"] = "0bad";  // denied: the warnings come too
  json denied = Answer(Review("UPDATE", job, Job("test", kGoodSpecs)));
  EXPECT_EQ(denied["allowed"], false);
  EXPECT_EQ(denied["warnings"].size(), 2u);
}

// The webhook renders docs/semantics.md 4.2's cases as upstream's Denied answer: 403, every error, aggregated.
TEST(ReviewTfJob, DenialListsEveryErrorAggregated) {
  struct Case {
    std::string name;
    json job;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"W3 no containers", Job("test", {{"Worker", Worker(json::array())}}),
       "[spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must be specified, "
       "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one container "
       "with name tensorflow]"},
      {"W4 empty image", Job("test", {{"Worker", Worker(json::array({{{"name", "tensorflow"}, {"image", ""}}}))}}),
       "spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value: must be required"},
      {"W6 chief and master", Job("test", {{"Chief", kGoodSpecs["Worker"]}, {"Master", kGoodSpecs["Worker"]}}),
       "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"},
      {"W7 managedBy", Job("test", kGoodSpecs, {{"managedBy", "other-job-controller"}}),
       "spec.runPolicy.managedBy: Unsupported value: \"other-job-controller\": supported values: "
       "\"kubeflow.org/training-operator\", \"kueue.x-k8s.io/multikueue\""},
      {"wrong type", Job("test", {{"Worker", {{"replicas", "two"}, {"template", kGoodSpecs["Worker"]["template"]}}}}),
       "spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"two\": must be an integer"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    json r = Answer(Review("CREATE", c.job));
    EXPECT_EQ(r["allowed"], false);
    EXPECT_EQ(r["status"]["code"], 403);
    EXPECT_EQ(r["status"]["reason"], "Forbidden");
    EXPECT_EQ(r["status"]["message"], c.message);
  }
}

// Issue 14 item 3 (docs/semantics.md D22): what upstream's webhook admits and upstream runs is
// admitted, with admission warnings (kubectl prints "Warning: ..."), after the unknown fields.
TEST(ReviewTfJob, OddButRunnableSpecsAreAdmittedWithWarnings) {
  json job = Job("test",
                 {{"Worker", kGoodSpecs["Worker"]},
                  {"worker", kGoodSpecs["Worker"]},
                  {"Master", kGoodSpecs["Worker"]},
                  {"chief", kGoodSpecs["Worker"]}},
                 {{"cleanPodPolicy", "none"}, {"ttlSecondsAfterFinished", -1}});
  job["spec"]["successPolicy"] = "AllWorker";
  job["spec"]["runPolcy"] = json::object();
  for (const char* op : {"CREATE", "UPDATE"}) {
    SCOPED_TRACE(op);
    json r = Answer(Review(op, job, job));
    EXPECT_EQ(r["allowed"], true) << r.dump();
    EXPECT_FALSE(r.contains("status"));
    ASSERT_EQ(r["warnings"].size(), 6u) << r["warnings"].dump();
    EXPECT_EQ(r["warnings"][0], "spec.runPolcy: unknown field \"runPolcy\"");
    EXPECT_EQ(r["warnings"][1].get<std::string>().rfind("spec.runPolicy.cleanPodPolicy: unsupported value \"none\"", 0),
              0u);
    EXPECT_EQ(r["warnings"][2].get<std::string>().rfind("spec.successPolicy: unsupported value \"AllWorker\"", 0), 0u);
    EXPECT_EQ(r["warnings"][3].get<std::string>().rfind("spec.runPolicy.ttlSecondsAfterFinished: negative value -1", 0),
              0u);
    EXPECT_EQ(r["warnings"][4].get<std::string>().rfind("spec.tfReplicaSpecs[worker]: \"worker\" and \"Worker\"", 0),
              0u);
    EXPECT_EQ(r["warnings"][5].get<std::string>().rfind("spec.tfReplicaSpecs[chief]: \"chief\" is read as", 0), 0u);
  }
  // What cannot run is still denied, with the warnings alongside.
  json bad = Job("test", kGoodSpecs, {{"backoffLimit", -1}, {"cleanPodPolicy", "none"}});
  json r = Answer(Review("CREATE", bad));
  EXPECT_EQ(r["allowed"], false);
  EXPECT_EQ(r["status"]["message"],
            "spec.runPolicy.backoffLimit: Invalid value: -1: must be greater than or equal to 0");
  EXPECT_EQ(r["warnings"].size(), 1u);
}

TEST(ReviewTfJob, UpdateMayNotChangeManagedByOrQueue) {
  json old_job = Job("test", kGoodSpecs, {{"schedulingPolicy", {{"queue", "a"}}}});
  json same = old_job;
  same["metadata"]["labels"] = {{"x", "y"}};
  EXPECT_EQ(Answer(Review("UPDATE", same, old_job))["allowed"], true);

  json changed =
      Job("test", kGoodSpecs, {{"managedBy", "kueue.x-k8s.io/multikueue"}, {"schedulingPolicy", {{"queue", "b"}}}});
  json r = Answer(Review("UPDATE", changed, old_job));
  EXPECT_EQ(r["allowed"], false);
  EXPECT_EQ(r["status"]["message"],
            "[spec.runPolicy.managedBy: Invalid value: \"kueue.x-k8s.io/multikueue\": field is immutable, "
            "spec.runPolicy.schedulingPolicy.queue: Invalid value: \"b\": spec.runPolicy.schedulingPolicy.queue is "
            "immutable]");
}

TEST(ReviewTfJob, CreateIgnoresImmutabilityAndDeleteIsNotValidated) {
  EXPECT_EQ(Answer(Review("CREATE", Job("test", kGoodSpecs, {{"managedBy", "kueue.x-k8s.io/multikueue"}})))["allowed"],
            true);
  EXPECT_EQ(Answer(Review("DELETE", nullptr))["allowed"], true);
}

TEST(ReviewTfJob, MalformedReviewsAreRejected) {
  EXPECT_FALSE(ReviewTfJob(json::array()).ok());
  EXPECT_FALSE(ReviewTfJob({{"kind", "AdmissionReview"}}).ok());
  EXPECT_FALSE(ReviewTfJob({{"kind", "AdmissionReview"}, {"request", {{"operation", "CREATE"}}}}).ok());
  json no_object = Review("CREATE", nullptr);
  EXPECT_EQ(Answer(no_object)["allowed"], false);
}

TEST(ServeTfJobReview, AnswersHttp) {
  auto [code, body] = ServeTfJobReview("{not json");
  EXPECT_EQ(code, 400);
  EXPECT_EQ(json::parse(body)["error"], "request body is not JSON");
  std::tie(code, body) = ServeTfJobReview(Review("CREATE", Job("00test", kGoodSpecs)).dump());
  EXPECT_EQ(code, 200);
  json r = json::parse(body)["response"];
  EXPECT_EQ(r["allowed"], false);
  EXPECT_EQ(r["status"]["message"].get<std::string>().rfind("metadata.name: Invalid value: \"00test\"", 0), 0u);
}

// The mutating webhook (docs/kueue.md): a queued job is suspended on create, nothing else changes.
std::string Unbase64(const std::string& in) {
  static const std::string kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t v = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    v = (v << 6) | static_cast<uint32_t>(kAlphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  return out;
}

json Queued(json run_policy = nullptr, std::string queue = "user-queue") {
  json job = Job("test", kGoodSpecs, std::move(run_policy));
  job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", queue}};
  return job;
}

TEST(DefaultTfJob, SuspendsAQueuedJobOnCreate) {
  const json kAddSuspend = json::array({{{"op", "add"}, {"path", "/spec/runPolicy/suspend"}, {"value", true}}});
  struct Case {
    std::string name;
    std::string operation;
    json object;
    json patch;  // null: none
  } cases[] = {
      {"no runPolicy", "CREATE", Queued(),
       json::array({{{"op", "add"}, {"path", "/spec/runPolicy"}, {"value", {{"suspend", true}}}}})},
      {"runPolicy without suspend", "CREATE", Queued({{"backoffLimit", 3}}), kAddSuspend},
      {"suspend false", "CREATE", Queued({{"suspend", false}}), kAddSuspend},
      {"suspend of the wrong type", "CREATE", Queued({{"suspend", "no"}}), kAddSuspend},
      {"already suspended", "CREATE", Queued({{"suspend", true}}), nullptr},
      {"empty queue name", "CREATE", Queued(nullptr, ""), nullptr},
      {"no label", "CREATE", Job("test", kGoodSpecs), nullptr},
      {"no spec", "CREATE", json{{"metadata", {{"labels", {{"kueue.x-k8s.io/queue-name", "q"}}}}}}, nullptr},
      {"update is not defaulted", "UPDATE", Queued(), nullptr},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto answer = DefaultTfJob(Review(c.operation, c.object));
    ASSERT_TRUE(answer.ok()) << answer.status().ToString();
    const json& r = (*answer)["response"];
    EXPECT_EQ(r["uid"], "705ab4f5-6393-11e8-b7cc-42010a800002");
    EXPECT_EQ(r["allowed"], true);
    if (c.patch.is_null()) {
      EXPECT_FALSE(r.contains("patch"));
      EXPECT_FALSE(r.contains("patchType"));
    } else {
      EXPECT_EQ(r["patchType"], "JSONPatch");
      EXPECT_EQ(json::parse(Unbase64(r["patch"].get<std::string>())), c.patch);
    }
  }
}

TEST(DefaultTfJob, MalformedReviewsAreRejected) {
  EXPECT_FALSE(DefaultTfJob(json::array()).ok());
  EXPECT_FALSE(DefaultTfJob({{"kind", "AdmissionReview"}, {"request", {{"operation", "CREATE"}}}}).ok());
  auto [code, body] = ServeTfJobDefaulting("{not json");
  EXPECT_EQ(code, 400);
  std::tie(code, body) = ServeTfJobDefaulting(Review("CREATE", Queued()).dump());
  EXPECT_EQ(code, 200);
  EXPECT_EQ(json::parse(body)["response"]["patchType"], "JSONPatch");
}

// The review's own fields with the wrong JSON type are a 400 or read as absent, never an
// exception out of the webhook's handler (nlohmann's value() throws on a type mismatch).
TEST(ReviewTfJob, FieldsOfTheWrongTypeAreRefusedNotThrown) {
  json not_kind = Review("CREATE", Job("test", kGoodSpecs));
  not_kind["kind"] = 5;
  EXPECT_EQ(ServeTfJobReview(not_kind.dump()).first, 400);
  json bad_operation = Review("CREATE", Job("test", kGoodSpecs));
  bad_operation["request"]["operation"] = json::array({"CREATE"});
  auto [code, body] = ServeTfJobReview(bad_operation.dump());
  EXPECT_EQ(code, 200) << body;
  EXPECT_EQ(json::parse(body)["response"]["allowed"], true) << "an unknown operation is not validated, as DELETE";
  json bad_version = Review("CREATE", Job("test", kGoodSpecs));
  bad_version["apiVersion"] = json::object();
  auto [code2, body2] = ServeTfJobReview(bad_version.dump());
  EXPECT_EQ(code2, 200) << body2;
  EXPECT_EQ(json::parse(body2)["apiVersion"], "admission.k8s.io/v1");
}

}  // namespace
}  // namespace tfjob::operator_
