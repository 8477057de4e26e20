#include "api/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/tfjob_file.h"

namespace tfjob::api {
namespace {

using ::testing::ElementsAre;

std::vector<std::string> Errors(const std::string& yaml) {
  auto jobs = LoadTfJobs(yaml);
  EXPECT_TRUE(jobs.ok()) << jobs.status().ToString();
  std::vector<std::string> out;
  for (const auto& e : (*jobs)[0].decode_errors) out.push_back(e.ToString());
  for (const auto& e : ValidateTfJob((*jobs)[0].job)) out.push_back(e.ToString());
  return out;
}

std::string Job(const std::string& name, const std::string& specs, const std::string& run_policy = "") {
  return "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: " + name + "}\nspec:\n" + run_policy +
         "  tfReplicaSpecs:\n" + specs;
}

const std::string kWorker =
    "    Worker:\n      replicas: 2\n      restartPolicy: OnFailure\n"
    "      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n";

const char* kDns1035 =
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for "
    "validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

// Cases W1-W7 of docs/semantics.md 4.2.
TEST(ValidateTfJob, W1ValidJob) {
  EXPECT_THAT(Errors(Job("test", kWorker, "  runPolicy: {managedBy: kubeflow.org/training-operator}\n")),
              ElementsAre());
}

TEST(ValidateTfJob, W2InvalidName) {
  EXPECT_THAT(Errors(Job("00test", kWorker)),
              ElementsAre(std::string("metadata.name: Invalid value: \"00test\": should match: ") + kDns1035));
}

TEST(ValidateTfJob, W3NoContainersGivesTwoErrors) {
  EXPECT_THAT(Errors(Job("test", "    Worker:\n      template: {spec: {containers: []}}\n")),
              ElementsAre("spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must be specified",
                          "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must have at least "
                          "one container with name tensorflow"));
}

TEST(ValidateTfJob, W4EmptyImage) {
  EXPECT_THAT(
      Errors(Job("test", "    Worker:\n      template: {spec: {containers: [{name: tensorflow, image: ''}]}}\n")),
      ElementsAre("spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value: must be required"));
}

TEST(ValidateTfJob, W5NoTensorflowContainer) {
  EXPECT_THAT(Errors(Job("test", "    Worker:\n      template: {spec: {containers: [{name: '', image: tf}]}}\n")),
              ElementsAre("spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must have at least "
                          "one container with name tensorflow"));
}

TEST(ValidateTfJob, W6ChiefAndMaster) {
  std::string specs =
      "    Chief:\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n"
      "    Master:\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n";
  EXPECT_THAT(Errors(Job("test", specs)),
              ElementsAre("spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"));
}

TEST(ValidateTfJob, W7UnsupportedManagedBy) {
  EXPECT_THAT(Errors(Job("test", kWorker, "  runPolicy: {managedBy: other-job-controller}\n")),
              ElementsAre("spec.runPolicy.managedBy: Unsupported value: \"other-job-controller\": supported values: "
                          "\"kubeflow.org/training-operator\", \"kueue.x-k8s.io/multikueue\""));
}

TEST(ValidateTfJob, MissingReplicaSpecs) {
  EXPECT_THAT(Errors("apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: a}\nspec: {}\n"),
              ElementsAre("spec.tfReplicaSpecs: Required value: must be required"));
}

TEST(ValidateTfJob, NullReplicaSpecIsRequiredContainersOnly) {
  EXPECT_THAT(Errors(Job("test", "    Worker: null\n")),
              ElementsAre("spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must be specified"));
}

TEST(ValidateTfJob, D11UnknownReplicaTypeIsRejected) {
  EXPECT_THAT(
      Errors(
          Job("test", kWorker + "    Foo:\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n")),
      ElementsAre("spec.tfReplicaSpecs[Foo]: Unsupported value: \"Foo\": supported values: \"Chief\", \"Evaluator\", "
                  "\"Master\", \"PS\", \"Worker\""));
}

TEST(ValidateTfJob, LowerCaseKeysAreAcceptedButNotTwiceForOneType) {
  EXPECT_THAT(
      Errors(Job("test", "    worker:\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n")),
      ElementsAre());
  EXPECT_THAT(
      Errors(Job("test",
                 kWorker + "    worker:\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n")),
      ElementsAre("spec.tfReplicaSpecs[worker]: Duplicate value: \"Worker\""));
  // chief + Master normalise to two chief-like roles.
  EXPECT_THAT(Errors(Job("test",
                         "    chief:\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n"
                         "    Master:\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n")),
              ElementsAre("spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"));
}

TEST(ValidateTfJob, RangeChecks) {
  std::string specs =
      "    Worker:\n      replicas: -1\n      restartPolicy: Sometimes\n"
      "      template: {spec: {containers: [{name: tensorflow, image: tf, ports: [{name: tfjob-port, containerPort: "
      "0}]}]}}\n";
  std::string rp =
      "  runPolicy: {cleanPodPolicy: Some, ttlSecondsAfterFinished: -5, activeDeadlineSeconds: -1, "
      "backoffLimit: -2, schedulingPolicy: {minAvailable: -3, minResources: {cpu: lots}}}\n"
      "  successPolicy: Majority\n";
  EXPECT_THAT(
      Errors(Job("test", specs, rp)),
      ElementsAre(
          "spec.runPolicy.cleanPodPolicy: Unsupported value: \"Some\": supported values: \"All\", \"None\", "
          "\"Running\"",
          "spec.runPolicy.ttlSecondsAfterFinished: Invalid value: -5: must be greater than or equal to 0",
          "spec.runPolicy.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
          "spec.runPolicy.backoffLimit: Invalid value: -2: must be greater than or equal to 0",
          "spec.runPolicy.schedulingPolicy.minAvailable: Invalid value: -3: must be greater than or equal to 0",
          "spec.runPolicy.schedulingPolicy.minResources[cpu]: Invalid value: \"lots\": must be a non-negative quantity",
          "spec.successPolicy: Unsupported value: \"Majority\": supported values: \"\", \"AllWorkers\"",
          "spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1: must be greater than or equal to 0",
          "spec.tfReplicaSpecs[Worker].restartPolicy: Unsupported value: \"Sometimes\": supported values: "
          "\"Always\", \"ExitCode\", \"Never\", \"OnFailure\"",
          "spec.tfReplicaSpecs[Worker].template.spec.containers[0].ports[0].containerPort: Invalid value: 0: "
          "must be between 1 and 65535, inclusive"));
}

TEST(ValidateTfJob, NameTooLongForChildren) {
  std::string name(60, 'a');
  EXPECT_THAT(Errors(Job(name, kWorker)),
              ElementsAre("metadata.name: Invalid value: \"" + name + "\": too long: the pod and service name \"" +
                          name + "-worker-1\" would exceed 63 characters"));
  std::string longer(64, 'a');
  EXPECT_THAT(Errors(Job(longer, kWorker)), ElementsAre("metadata.name: Invalid value: \"" + longer +
                                                        "\": should match: must be no more than 63 characters"));
}

TEST(ValidateTfJobUpdate, ManagedByAndQueueAreImmutable) {
  auto load = [](const std::string& rp) { return (*LoadTfJobs(Job("test", kWorker, rp)))[0].job; };
  TfJob old_job = load("  runPolicy: {schedulingPolicy: {queue: a}}\n");
  TfJob new_job = load("  runPolicy: {managedBy: kueue.x-k8s.io/multikueue, schedulingPolicy: {queue: b}}\n");
  std::vector<std::string> errors;
  for (const auto& e : ValidateTfJobUpdate(old_job, new_job)) errors.push_back(e.ToString());
  EXPECT_THAT(errors,
              ElementsAre("spec.runPolicy.managedBy: Invalid value: \"kueue.x-k8s.io/multikueue\": field is immutable",
                          "spec.runPolicy.schedulingPolicy.queue: Invalid value: \"b\": "
                          "spec.runPolicy.schedulingPolicy.queue is immutable"));
  EXPECT_TRUE(ValidateTfJobUpdate(old_job, old_job).empty());
}

TEST(AggregateMessage, OneOrMany) {
  FieldErrors one = {Required("a", "x")};
  EXPECT_EQ(AggregateMessage(one), "a: Required value: x");
  FieldErrors two = {Required("a", "x"), Forbidden("b", "y")};
  EXPECT_EQ(AggregateMessage(two), "[a: Required value: x, b: Forbidden: y]");
}

// Issue 17 item 4: values are quoted as Go's %q does, so input cannot reach a terminal as a
// control sequence or flip the text's direction; ordinary values are unchanged.
TEST(QuoteValue, EscapesWhatGoQuoteEscapes) {
  EXPECT_EQ(QuoteValue("00-mnist"), "\"00-mnist\"");
  EXPECT_EQ(QuoteValue("a\"b\\c"), "\"a\\\"b\\\\c\"");
  EXPECT_EQ(QuoteValue("caf\u00e9 \u65e5\u672c \U0001F600"), "\"caf\u00e9 \u65e5\u672c \U0001F600\"");
  EXPECT_EQ(QuoteValue("\x1b[31mred\x07"), "\"\\x1b[31mred\\a\"");
  EXPECT_EQ(QuoteValue("\t\n\r\v\f\b"), "\"\\t\\n\\r\\v\\f\\b\"");
  EXPECT_EQ(QuoteValue("x\x7fy"), "\"x\\x7fy\"");
  EXPECT_EQ(QuoteValue("\xff\xfe"), "\"\\xff\\xfe\"");
  EXPECT_EQ(QuoteValue("\xed\xa0\x80"), "\"\\xed\\xa0\\x80\"");  // a surrogate is not UTF-8
  EXPECT_EQ(QuoteValue("\u0085\u00a0\u00ad"), "\"\\u0085\\u00a0\\u00ad\"");
  EXPECT_EQ(QuoteValue("abc\u202edef"), "\"abc\\u202edef\"");
  EXPECT_EQ(QuoteValue("\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069"),
            "\"\\u202a\\u202b\\u202c\\u202d\\u2066\\u2067\\u2068\\u2069\"");
  EXPECT_EQ(QuoteValue("\u200b\u2028\u2029\ufeff"), "\"\\u200b\\u2028\\u2029\\ufeff\"");
  EXPECT_EQ(QuoteValue("\U000e0001"), "\"\\U000e0001\"");
  EXPECT_EQ(EscapeNonPrintable("spec.tfReplicaSpecs[W\x1b]0;x\x07]"), "spec.tfReplicaSpecs[W\\x1b]0;x\\a]");
  EXPECT_EQ(EscapeNonPrintable("a \"b\" \\c"), "a \"b\" \\c");  // quotes and backslashes stay
}

TEST(ValidateTfJob, ControlCharactersInValuesAndKeysAreEscaped) {
  auto errors = Errors(Job("\"a\\e[2J\\u202e\"", kWorker));
  ASSERT_FALSE(errors.empty());
  EXPECT_EQ(errors[0], std::string("metadata.name: Invalid value: \"a\\x1b[2J\\u202e\": should match: ") + kDns1035);
  auto keys = Errors(
      Job("test", "    \"W\\e]0;t\\a\":\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n"));
  ASSERT_FALSE(keys.empty());
  EXPECT_EQ(keys[0],
            "spec.tfReplicaSpecs[W\\x1b]0;t\\a]: Unsupported value: \"W\\x1b]0;t\\a\": supported values: \"Chief\", "
            "\"Evaluator\", \"Master\", \"PS\", \"Worker\"");
}

}  // namespace
}  // namespace tfjob::api
