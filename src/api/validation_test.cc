#include "api/validation.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/defaults.h"
#include "api/tfjob_file.h"

namespace tfjob::api {
namespace {

using ::testing::ElementsAre;

// The first TFJob of a fixture. A fixture that does not load is a fatal failure here, before
// anything reads the job (gtest's ASSERT needs a void function; callers test HasFatalFailure).
void LoadFirst(const std::string& yaml, LoadedTfJob* out) {
  auto jobs = LoadTfJobs(yaml);
  ASSERT_TRUE(jobs.ok()) << jobs.status().ToString();
  ASSERT_FALSE(jobs->empty());
  *out = std::move(jobs->front());
}

TfJob FirstJob(const std::string& yaml) {
  LoadedTfJob loaded;
  LoadFirst(yaml, &loaded);
  return loaded.job;
}

std::vector<std::string> Errors(const std::string& yaml) {
  LoadedTfJob loaded;
  LoadFirst(yaml, &loaded);
  if (::testing::Test::HasFatalFailure()) return {"(the fixture did not load)"};
  std::vector<std::string> out;
  for (const auto& e : loaded.decode_errors) out.push_back(e.ToString());
  for (const auto& e : ValidateTfJob(loaded.job)) out.push_back(e.ToString());
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

std::vector<std::string> Warnings(const std::string& yaml) {
  LoadedTfJob loaded;
  LoadFirst(yaml, &loaded);
  if (::testing::Test::HasFatalFailure()) return {"(the fixture did not load)"};
  return SpecWarnings(loaded.job);
}

const std::string kTf = "      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n";

// D22 / D25 (docs/semantics.md 6): every odd input either runs upstream, and is admitted with a
// warning saying what it does, or cannot run (or upstream refuses it too), and is an error.
TEST(ValidateTfJob, AdmitsWithWarningsWhatUpstreamRunsAndRefusesWhatCannotRun) {
  struct Case {
    const char* id;
    std::string specs;
    std::string run_policy;  // "  runPolicy: {...}\n" and other spec fields
    std::vector<std::string> errors;
    std::vector<std::string> warnings;
  };
  const std::string kReplicasRange = ": must be greater than or equal to 0";
  const std::vector<Case> cases = {
      {"plain", kWorker, "", {}, {}},
      // upstream's clean-up deletes every pod unless the policy is exactly None or Running
      {"cleanPodPolicy unknown",
       kWorker,
       "  runPolicy: {cleanPodPolicy: Some}\n",
       {},
       {"spec.runPolicy.cleanPodPolicy: unsupported value \"Some\" (supported: \"All\", \"None\", \"Running\"): "
        "treated as \"All\", as upstream does: every pod and its service are deleted when the job finishes"}},
      {"cleanPodPolicy lower case",
       kWorker,
       "  runPolicy: {cleanPodPolicy: none}\n",
       {},
       {"spec.runPolicy.cleanPodPolicy: unsupported value \"none\" (supported: \"All\", \"None\", \"Running\"): "
        "treated as \"All\", as upstream does: every pod and its service are deleted when the job finishes"}},
      {"cleanPodPolicy empty",
       kWorker,
       "  runPolicy: {cleanPodPolicy: ''}\n",
       {},
       {"spec.runPolicy.cleanPodPolicy: unsupported value \"\" (supported: \"All\", \"None\", \"Running\"): "
        "treated as \"All\", as upstream does: every pod and its service are deleted when the job finishes"}},
      {"cleanPodPolicy known", kWorker, "  runPolicy: {cleanPodPolicy: Running}\n", {}, {}},
      // upstream only compares successPolicy with AllWorkers
      {"successPolicy unknown",
       kWorker,
       "  successPolicy: Majority\n",
       {},
       {"spec.successPolicy: unsupported value \"Majority\" (supported: \"\", \"AllWorkers\"): treated as \"\", the "
        "default, as upstream does: the job succeeds when worker 0 (or the chief) does"}},
      {"successPolicy AllWorkers", kWorker, "  successPolicy: AllWorkers\n", {}, {}},
      // the job is deleted right after it finishes, upstream and here
      {"ttl negative",
       kWorker,
       "  runPolicy: {ttlSecondsAfterFinished: -5}\n",
       {},
       {"spec.runPolicy.ttlSecondsAfterFinished: negative value -5: the job is deleted as soon as it finishes, as "
        "with 0 (upstream does the same)"}},
      {"ttl zero", kWorker, "  runPolicy: {ttlSecondsAfterFinished: 0}\n", {}, {}},
      // upstream fails the job on its first pass, before any pod: it cannot run
      {"backoffLimit negative",
       kWorker,
       "  runPolicy: {backoffLimit: -2}\n",
       {"spec.runPolicy.backoffLimit: Invalid value: -2" + kReplicasRange},
       {}},
      {"backoffLimit zero", kWorker, "  runPolicy: {backoffLimit: 0}\n", {}, {}},
      // upstream fails the job on the pass after it creates the pods: it cannot run
      {"activeDeadlineSeconds negative",
       kWorker,
       "  runPolicy: {activeDeadlineSeconds: -1}\n",
       {"spec.runPolicy.activeDeadlineSeconds: Invalid value: -1" + kReplicasRange},
       {}},
      {"activeDeadlineSeconds zero",
       kWorker,
       "  runPolicy: {activeDeadlineSeconds: 0}\n",
       {},
       {"spec.runPolicy.activeDeadlineSeconds: 0: the job fails with the deadline message as soon as it starts"}},
      // used only by gang scheduling, passed through as upstream does
      {"minAvailable negative",
       kWorker,
       "  runPolicy: {schedulingPolicy: {minAvailable: -3}}\n",
       {},
       {"spec.runPolicy.schedulingPolicy.minAvailable: negative value -3: passed to the PodGroup as it is, as "
        "upstream does (ignored without gang scheduling); a minMember below 1 holds no pod back"}},
      {"scheduleTimeoutSeconds negative",
       kWorker,
       "  runPolicy: {schedulingPolicy: {scheduleTimeoutSeconds: -1}}\n",
       {},
       {"spec.runPolicy.schedulingPolicy.scheduleTimeoutSeconds: negative value -1: passed to the PodGroup as it "
        "is, as upstream does (ignored without gang scheduling)"}},
      {"minResources negative",
       kWorker,
       "  runPolicy: {schedulingPolicy: {minResources: {cpu: '-1'}}}\n",
       {},
       {"spec.runPolicy.schedulingPolicy.minResources[cpu]: negative quantity \"-1\": passed to the PodGroup as it "
        "is, as upstream does (ignored without gang scheduling)"}},
      // upstream's CRD schema refuses what is not a quantity
      {"minResources not a quantity",
       kWorker,
       "  runPolicy: {schedulingPolicy: {minResources: {cpu: lots}}}\n",
       {"spec.runPolicy.schedulingPolicy.minResources[cpu]: Invalid value: \"lots\": must be a quantity (for "
        "example 4, 500m, 16Gi)"},
       {}},
      // upstream creates and deletes pod 0 over and over: cannot run
      {"replicas negative",
       "    Worker:\n      replicas: -1\n" + kTf,
       "",
       {"spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1" + kReplicasRange},
       {}},
      // the pod create is refused by the API server: cannot run
      {"restartPolicy unknown",
       "    Worker:\n      restartPolicy: Sometimes\n" + kTf,
       "",
       {"spec.tfReplicaSpecs[Worker].restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", "
        "\"ExitCode\", \"Never\", \"OnFailure\""},
       {}},
      {"containerPort 0",
       "    Worker:\n      template: {spec: {containers: [{name: tensorflow, image: tf, ports: [{name: tfjob-port, "
       "containerPort: 0}]}]}}\n",
       "",
       {"spec.tfReplicaSpecs[Worker].template.spec.containers[0].ports[0].containerPort: Invalid value: 0: must be "
        "between 1 and 65535, inclusive"},
       {}},
      // case variants (docs/semantics.md 1.7): one lower-case key is simply renamed
      {"worker lower case", "    worker:\n" + kTf, "", {}, {}},
      // "worker" and "Worker": upstream moves "worker" over "Worker", and runs that
      {"Worker and worker",
       kWorker + "    worker:\n" + kTf,
       "",
       {},
       {"spec.tfReplicaSpecs[worker]: \"worker\" and \"Worker\" are the same replica type: \"worker\" is used and "
        "\"Worker\" is ignored, as upstream does"}},
      {"ps and PS",
       "    PS:\n" + kTf + kWorker + "    ps:\n" + kTf,
       "",
       {},
       {"spec.tfReplicaSpecs[ps]: \"ps\" and \"PS\" are the same replica type: \"ps\" is used and \"PS\" is "
        "ignored, as upstream does"}},
      // two variants without the canonical key, or three keys: upstream keeps a second key whose
      // pods have the same names as the first's
      {"worker and WORKER",
       "    WORKER:\n" + kTf + "    worker:\n" + kTf,
       "",
       {"spec.tfReplicaSpecs[worker]: Duplicate value: \"Worker\""},
       {}},
      {"three spellings",
       "    WORKER:\n" + kTf + kWorker + "    worker:\n" + kTf,
       "",
       {"spec.tfReplicaSpecs[Worker]: Duplicate value: \"Worker\"",
        "spec.tfReplicaSpecs[worker]: Duplicate value: \"Worker\""},
       {}},
      // V8 counts only the exact keys Chief and Master, as upstream's webhook does
      {"Chief and Master",
       "    Chief:\n" + kTf + "    Master:\n" + kTf,
       "",
       {"spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role"},
       {}},
      {"chief beside Master",
       "    Master:\n" + kTf + "    chief:\n" + kTf,
       "",
       {},
       {"spec.tfReplicaSpecs[chief]: \"chief\" is read as \"Chief\", so the job has both a Chief and a Master, as "
        "upstream runs it: both roles run, TF_CONFIG lists both, and the first of them to succeed or fail decides "
        "the job"}},
      {"master beside Chief",
       "    Chief:\n" + kTf + "    master:\n" + kTf,
       "",
       {},
       {"spec.tfReplicaSpecs[master]: \"master\" is read as \"Master\", so the job has both a Chief and a Master, "
        "as upstream runs it: both roles run, TF_CONFIG lists both, and the first of them to succeed or fail "
        "decides the job"}},
      {"D11 unknown type stays an error",
       kWorker + "    Foo:\n" + kTf,
       "",
       {"spec.tfReplicaSpecs[Foo]: Unsupported value: \"Foo\": supported values: \"Chief\", \"Evaluator\", "
        "\"Master\", \"PS\", \"Worker\""},
       {}},
  };
  for (const Case& c : cases) {
    const std::string yaml = Job("test", c.specs, c.run_policy);
    EXPECT_THAT(Errors(yaml), ::testing::ElementsAreArray(c.errors)) << c.id;
    EXPECT_THAT(Warnings(yaml), ::testing::ElementsAreArray(c.warnings)) << c.id;
    // The API server may cut admission warnings longer than 256 characters.
    for (const auto& w : c.warnings) EXPECT_LE(w.size(), 256u) << w;
  }
}

// What the warnings promise is what the defaulted job does.
TEST(ValidateTfJob, WarnedInputsRunAsTheWarningsSay) {
  auto defaulted = [](const std::string& yaml) {
    TfJob job = FirstJob(yaml);
    SetDefaults(job);
    return job;
  };
  for (const char* policy : {"Some", "none", "''", "all"})
    EXPECT_EQ(defaulted(Job("t", kWorker, std::string("  runPolicy: {cleanPodPolicy: ") + policy + "}\n"))
                  .spec.run_policy.clean_pod_policy,
              "All")
        << policy;
  for (const char* policy : {"None", "Running", "All"})
    EXPECT_EQ(defaulted(Job("t", kWorker, std::string("  runPolicy: {cleanPodPolicy: ") + policy + "}\n"))
                  .spec.run_policy.clean_pod_policy,
              policy);
  TfJob pair = defaulted(Job("t", kWorker + "    worker:\n      replicas: 5\n" + kTf));
  ASSERT_FALSE(HasFatalFailure());
  ASSERT_EQ(pair.spec.replica_specs.size(), 1u);
  EXPECT_EQ(pair.spec.replica_specs.at("Worker").value().replicas, 5);  // "worker"'s spec, as upstream
  TfJob both = defaulted(Job("t", "    Master:\n" + kTf + "    chief:\n" + kTf));
  EXPECT_TRUE(both.spec.replica_specs.contains("Chief"));
  EXPECT_TRUE(both.spec.replica_specs.contains("Master"));
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
  auto load = [](const std::string& rp) { return FirstJob(Job("test", kWorker, rp)); };
  TfJob old_job = load("  runPolicy: {schedulingPolicy: {queue: a}}\n");
  TfJob new_job = load("  runPolicy: {managedBy: kueue.x-k8s.io/multikueue, schedulingPolicy: {queue: b}}\n");
  ASSERT_FALSE(HasFatalFailure());
  std::vector<std::string> errors;
  for (const auto& e : ValidateTfJobUpdate(old_job, new_job)) errors.push_back(e.ToString());
  EXPECT_THAT(errors,
              ElementsAre("spec.runPolicy.managedBy: Invalid value: \"kueue.x-k8s.io/multikueue\": field is immutable",
                          "spec.runPolicy.schedulingPolicy.queue: Invalid value: \"b\": "
                          "spec.runPolicy.schedulingPolicy.queue is immutable"));
  EXPECT_TRUE(ValidateTfJobUpdate(old_job, old_job).empty());
}

// D32: spec.managedBy repeats runPolicy.managedBy (Kueue's generic MultiKueue adapter reads it).
TEST(ValidateTfJob, SpecManagedByRepeatsRunPolicyManagedBy) {
  const std::string mk = "kueue.x-k8s.io/multikueue";
  EXPECT_THAT(Errors(Job("test", kWorker, "  managedBy: " + mk + "\n  runPolicy: {managedBy: " + mk + "}\n")),
              ElementsAre());
  EXPECT_THAT(Errors(Job("test", kWorker, "  managedBy: " + mk + "\n")),
              ElementsAre("spec.managedBy: Invalid value: \"kueue.x-k8s.io/multikueue\": "
                          "must equal spec.runPolicy.managedBy (unset)"));
  EXPECT_THAT(Errors(Job("test", kWorker,
                         "  managedBy: " + mk + "\n  runPolicy: {managedBy: kubeflow.org/training-operator}\n")),
              ElementsAre("spec.managedBy: Invalid value: \"kueue.x-k8s.io/multikueue\": "
                          "must equal spec.runPolicy.managedBy (\"kubeflow.org/training-operator\")"));
}

TEST(ValidateTfJobUpdate, SpecManagedBySetOnceThenImmutable) {
  auto load = [](const std::string& rp) { return FirstJob(Job("test", kWorker, rp)); };
  TfJob unset = load("  runPolicy: {managedBy: kueue.x-k8s.io/multikueue}\n");
  TfJob set = load("  managedBy: kueue.x-k8s.io/multikueue\n  runPolicy: {managedBy: kueue.x-k8s.io/multikueue}\n");
  ASSERT_FALSE(HasFatalFailure());
  EXPECT_TRUE(ValidateTfJobUpdate(unset, set).empty());  // the operator's mirror write
  std::vector<std::string> errors;
  for (const auto& e : ValidateTfJobUpdate(set, unset)) errors.push_back(e.ToString());
  EXPECT_THAT(errors, ElementsAre("spec.managedBy: Invalid value: null: field is immutable once set"));
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
