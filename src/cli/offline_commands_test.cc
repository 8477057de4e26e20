#include "cli/job_file.h"
#include "cli/main.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/manifest.h"

namespace tfjob::cli {
namespace {

namespace fs = std::filesystem;

struct CmdResult {
  int code;
  std::string out;
  std::string err;
};

CmdResult Tfjob(std::vector<std::string> args) {
  std::vector<const char*> argv = {"tfjob"};
  for (const auto& a : args) argv.push_back(a.c_str());
  std::ostringstream out, err;
  int code = Main(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class TempFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tfjob-cmd-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& content) {
    fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  fs::path dir_;
};

const fs::path kSource = TFJOB_SOURCE_DIR;

// Golden renders: every example, rendered as the operator would create it, is compared with a
// checked-in file. TFJOB_UPDATE_GOLDEN=1 rewrites the files that differ, and the test still fails
// for each one it rewrote (review the diff, then run again without it): an update run never
// passes on a render that was not what the checked-in file says.
TEST(Render, GoldenFilesForEveryExample) {
  struct Case {
    const char* example;
    std::vector<std::string> extra_args;
    const char* folder = "examples";
    const char* golden = nullptr;  // default: the example's name
  };
  std::vector<Case> cases = {
      {"ps-worker", {}},
      {"chief-ps-worker-evaluator", {"--cluster-domain", "cluster.local"}},
      {"single-worker", {}},
      {"exitcode-backoff", {}},
      {"gang-scheduling", {"--gang-scheduler-name", "volcano"}},
      // D27: kube-scheduler's own gang scheduling, the Workload and PodGroup first.
      {"gang-scheduling", {"--gang-scheduler-name", "kubernetes"}, "examples", "gang-scheduling-kubernetes"},
      // D31: render has no cluster to discover from; v1.37's v1beta1 on request.
      {"gang-scheduling",
       {"--gang-scheduler-name", "kubernetes", "--native-gang-api", "v1beta1"},
       "examples",
       "gang-scheduling-kubernetes-v1beta1"},
      // D33: the hierarchical gang, as on a v1.37 cluster that serves CompositePodGroups.
      {"gang-scheduling",
       {"--gang-scheduler-name", "kubernetes", "--native-gang-api", "v1beta1", "--composite-pod-groups"},
       "examples",
       "gang-scheduling-kubernetes-composite"},
      {"suspended", {}},
      {"all-workers", {"--namespace", "team-a"}},
      // Issue 14 item 2: a template pasted from `kubectl get pod -o yaml` gives clean pods.
      {"pasted-template", {}, "tests/compat"},
  };
  bool update = std::getenv("TFJOB_UPDATE_GOLDEN") != nullptr;
  for (const auto& c : cases) {
    std::vector<std::string> args = {"render", (kSource / c.folder / (std::string(c.example) + ".yaml")).string()};
    args.insert(args.end(), c.extra_args.begin(), c.extra_args.end());
    CmdResult r = Tfjob(args);
    ASSERT_EQ(r.code, 0) << c.example << ": " << r.err;
    fs::path golden = kSource / "tests" / "golden" / (std::string(c.golden ? c.golden : c.example) + ".yaml");
    const std::string expected = fs::exists(golden) ? ReadText(golden) : std::string();
    if (r.out == expected) continue;
    if (update) {
      std::ofstream(golden) << r.out;
      ADD_FAILURE() << "rewrote " << golden << " (TFJOB_UPDATE_GOLDEN): review the diff, then run without it";
    } else {
      EXPECT_EQ(r.out, expected) << c.example << " differs from " << golden;
    }
  }
  std::set<std::string> examples;
  for (const auto& e : fs::directory_iterator(kSource / "examples"))
    if (e.path().extension() == ".yaml") examples.insert(e.path().stem().string());
  std::set<std::string> rendered;
  for (const auto& c : cases)
    if (std::string_view(c.folder) == "examples") rendered.insert(c.example);
  EXPECT_EQ(examples, rendered) << "every example needs a golden render";
}

// D33: CompositePodGroups exist only beside v1beta1's Workload; asking for them elsewhere is a
// usage error naming the flags, not a silent flat gang.
TEST(Render, CompositePodGroupsNeedTheNativeV1beta1Gang) {
  const std::string file = (kSource / "examples" / "gang-scheduling.yaml").string();
  for (const auto& extra : std::vector<std::vector<std::string>>{
           {"--composite-pod-groups"},
           {"--gang-scheduler-name", "volcano", "--composite-pod-groups"},
           {"--gang-scheduler-name", "kubernetes", "--composite-pod-groups"},
           {"--gang-scheduler-name", "kubernetes", "--native-gang-api", "v1alpha2", "--composite-pod-groups"}}) {
    std::vector<std::string> args = {"render", file};
    args.insert(args.end(), extra.begin(), extra.end());
    CmdResult r = Tfjob(args);
    EXPECT_EQ(r.code, 2) << ::testing::PrintToString(extra);
    EXPECT_THAT(r.err, ::testing::HasSubstr("--composite-pod-groups needs --gang-scheduler-name kubernetes and "
                                            "--native-gang-api v1beta1"));
    EXPECT_EQ(r.out, "");
  }
}

TEST(Render, JsonOutputIsAV1List) {
  CmdResult r = Tfjob({"render", (kSource / "examples" / "ps-worker.yaml").string(), "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto list = nlohmann::json::parse(r.out);
  EXPECT_EQ(list["apiVersion"], "v1");
  EXPECT_EQ(list["kind"], "List");
  EXPECT_EQ(list["items"].size(), 12u);  // 6 pods + 6 services
}

TEST_F(TempFiles, RenderKeepsUnmodelledTemplateFields) {
  std::string file = Write("roundtrip.yaml", R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: rt, namespace: ns, uid: "1234"}
spec:
  tfReplicaSpecs:
    Worker:
      replicas: 1
      template:
        metadata:
          labels: {app: rt}
        spec:
          someFutureField: {enabled: true, levels: [1, 2.5, "3"]}
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions: [{key: gpu, operator: In, values: ["a100"]}]
          volumes: [{name: data, persistentVolumeClaim: {claimName: imagenet}}]
          tolerations: [{key: dedicated, operator: Equal, value: ml, effect: NoSchedule}]
          containers:
          - name: tensorflow
            image: tf
            volumeMounts: [{name: data, mountPath: /data, readOnly: true}]
            securityContext: {runAsNonRoot: true, runAsUser: 1000}
)");
  CmdResult r = Tfjob({"render", file, "-o", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto pod = nlohmann::json::parse(r.out)["items"][0];
  auto original =
      (*api::ParseManifest(ReadText(file)))[0].object["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"];
  for (const char* field : {"someFutureField", "affinity", "volumes", "tolerations"})
    EXPECT_EQ(pod["spec"][field], original[field]) << field;
  EXPECT_EQ(pod["spec"]["containers"][0]["volumeMounts"], original["containers"][0]["volumeMounts"]);
  EXPECT_EQ(pod["spec"]["containers"][0]["securityContext"], original["containers"][0]["securityContext"]);
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["uid"], "1234");
  EXPECT_EQ(pod["metadata"]["labels"]["app"], "rt");
  // YAML output reads back to the same objects.
  CmdResult y = Tfjob({"render", file});
  ASSERT_EQ(y.code, 0);
  EXPECT_EQ((*api::ParseManifest(y.out))[0].object, nlohmann::json::parse(r.out));
}

TEST(Crd, PrintsTheFileInConfig) {
  CmdResult r = Tfjob({"crd"});
  ASSERT_EQ(r.code, 0);
  EXPECT_EQ(r.out, ReadText(kSource / "config" / "crd" / "kubeflow.org_tfjobs.yaml"));
}

TEST(Version, PrintsName) {
  CmdResult r = Tfjob({"version"});
  EXPECT_EQ(r.code, 0);
  EXPECT_THAT(r.out, ::testing::StartsWith("tfjob "));
}

TEST(Usage, ErrorsExitTwo) {
  EXPECT_EQ(Tfjob({}).code, 2);
  EXPECT_EQ(Tfjob({"render"}).code, 2);
  EXPECT_EQ(Tfjob({"frobnicate"}).code, 2);
  CmdResult bad_format = Tfjob({"render", "x.yaml", "-o", "xml"});
  EXPECT_EQ(bad_format.code, 2);
  EXPECT_THAT(bad_format.err, ::testing::HasSubstr("--output"));
  CmdResult help = Tfjob({"render", "--help"});
  EXPECT_EQ(help.code, 0);
  EXPECT_THAT(help.out, ::testing::HasSubstr("--gang-scheduler-name"));
}

std::string Tf(const std::string& body) {
  return "apiVersion: kubeflow.org/v1\nkind: TFJob\n" + body;
}
const std::string kOkWorker = "    Worker:\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n";

// Malformed and invalid inputs: each gives its one clear error and exit code, never a crash.
TEST_F(TempFiles, MalformedInputsGiveExactErrors) {
  struct Case {
    const char* id;
    std::string content;
    int code;
    std::string error;  // stderr after "FILE: "
  };
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  for (char c = 'b', p = 'a'; c <= 'k'; ++c, ++p) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + p;
    bomb += "]\n";
  }
  std::string alias_string = "s: &s \"" + std::string(100'000, 'x') + "\"\nl: [";
  for (int i = 0; i < 2000; ++i) alias_string += i ? ", *s" : "*s";
  alias_string += "]\n";
  std::vector<Case> cases = {
      {"broken-yaml", Tf("metadata: {name: a\nspec: {}\n"), 1,
       "invalid YAML: line 4, column 5: while parsing a flow mapping: did not find expected ',' or '}'\n"},
      {"tab-indent", "apiVersion: kubeflow.org/v1\n\tkind: TFJob\n", 1,
       "invalid YAML: line 2, column 1: while scanning a plain scalar: found a tab character that violates "
       "indentation\n"},
      {"wrong-kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n", 1,
       "no TFJob found (kind: TFJob, apiVersion: kubeflow.org/v1); the file has: Pod\n"},
      {"wrong-apiversion",
       "apiVersion: kubeflow.org/v1alpha2\nkind: TFJob\nmetadata: {name: a}\nspec:\n  tfReplicaSpecs:\n" + kOkWorker, 1,
       "apiVersion: Unsupported value: \"kubeflow.org/v1alpha2\": supported values: \"kubeflow.org/v1\"\n"},
      {"missing-spec", Tf("metadata: {name: a}\n"), 1, "spec.tfReplicaSpecs: Required value: must be required\n"},
      {"null-replica", Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker: null\n"), 1,
       "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must be specified\n"},
      {"unknown-type",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Trainer:\n      template: {spec: {containers: [{name: "
          "tensorflow, image: tf}]}}\n"),
       1,
       "spec.tfReplicaSpecs[Trainer]: Unsupported value: \"Trainer\": supported values: \"Chief\", \"Evaluator\", "
       "\"Master\", \"PS\", \"Worker\"\n"},
      {"no-tensorflow",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      template: {spec: {containers: [{name: "
          "main, image: tf}]}}\n"),
       1,
       "spec.tfReplicaSpecs[Worker].template.spec.containers: Required value: must have at least one container with "
       "name tensorflow\n"},
      {"chief-and-master",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n" + kOkWorker +
          "    Chief: {template: {spec: {containers: [{name: tensorflow, image: tf}]}}}\n"
          "    Master: {template: {spec: {containers: [{name: tensorflow, image: tf}]}}}\n"),
       1, "spec.tfReplicaSpecs: Forbidden: must not have more than 1 Chief or Master role\n"},
      {"name-64", Tf("metadata: {name: " + std::string(64, 'x') + "}\nspec:\n  tfReplicaSpecs:\n" + kOkWorker), 1,
       "metadata.name: Invalid value: \"" + std::string(64, 'x') +
           "\": should match: must be no more than 63 characters\n"},
      {"negative-replicas",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: -3\n      template: {spec: "
          "{containers: [{name: tensorflow, image: tf}]}}\n"),
       1, "spec.tfReplicaSpecs[Worker].replicas: Invalid value: -3: must be greater than or equal to 0\n"},
      {"huge-replicas",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 99999999999\n      template: "
          "{spec: {containers: [{name: tensorflow, image: tf}]}}\n"),
       1, "spec.tfReplicaSpecs[Worker].replicas: Invalid value: 99999999999: must be a 32-bit integer\n"},
      {"too-many-replicas",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2000000000\n      template: "
          "{spec: {containers: [{name: tensorflow, image: tf}]}}\n"),
       1, "spec.tfReplicaSpecs[Worker].replicas: Invalid value: 2000000000: must be less than or equal to 10000\n"},
      {"float-replicas",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2.5\n      template: {spec: "
          "{containers: [{name: tensorflow, image: tf}]}}\n"),
       // Issue 35: the CRD's schema refuses it first, as the API server does.
       1, "spec.tfReplicaSpecs[Worker].replicas: Invalid value: 2.5: must be of type integer\n"},
      {"integral-float-replicas",  // the API server takes 2.0 as the integer 2; so does validate
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2.0\n      template: {spec: "
          "{containers: [{name: tensorflow, image: \"\"}]}}\n"),
       1, "spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value: must be required\n"},
      {"infinite-replicas",  // no JSON for it: the reader refuses it (it rendered as null before)
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 1e400\n      template: {spec: "
          "{containers: [{name: tensorflow, image: tf}]}}\n"),
       1, "line 7, column 17: \"1e400\" is not a finite number (JSON, which the API server reads, has no infinity)\n"},
      {"string-replicas",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: two\n      template: {spec: "
          "{containers: [{name: tensorflow, image: tf}]}}\n"),
       1, "spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"two\": must be of type integer\n"},
      {"duplicate-keys",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 1\n      replicas: 2\n"), 1,
       "line 8, column 7: duplicate key \"replicas\"\n"},
      {"duplicate-keys-json", R"({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "kind": "TFJob"})", 1,
       "duplicate key \"kind\"\n"},
      {"binary-garbage",
       std::string("\x7f"
                   "ELF\x02\x01\x01\0\0\0",
                   10),
       1, "not a text file (NUL byte at offset 7)\n"},
      {"invalid-utf8", "apiVersion: \xc3\x28\n", 1, "not valid UTF-8 (byte offset 12)\n"},
      {"empty-file", "", 1, "no TFJob found: the file has no documents\n"},
      {"only-comments", "# nothing here\n---\n", 1, "no TFJob found: the file has no documents\n"},
      {"scalar-document", "just some words\n", 1, "line 1: the document is not an object (found string)\n"},
      {"json-array", "[1, 2, 3]", 1, "line 1: the document is not an object (found array)\n"},
      {"json-trailing-garbage", R"({"kind": "TFJob"} x)", 1,
       "invalid JSON: parse error at line 1, column 19: syntax error while parsing value - invalid literal; last read: "
       "'\"TFJob\"} x'; expected end of input\n"},
      {"alias-bomb", bomb, 1, "document too large (more than 2,000,000 nodes after expanding aliases)\n"},
      {"deep-nesting", "a: " + std::string(300, '[') + std::string(300, ']') + "\n", 1,
       "line 1, column 259: nesting deeper than 256 levels\n"},
      {"deep-json", "{\"a\": " + std::string(5000, '[') + std::string(5000, ']') + "}", 1,
       "invalid JSON: nesting deeper than 256 levels\n"},
      // Found by the fuzzer: made yaml-cpp 0.7's loader loop forever.
      {"parser-hang",
       std::string("# successPolicy AllWorkers: thr\n ,   ems# Parameter-server tra 3\n      re\"tart1ing-.IN P"), 1,
       "invalid YAML: line 2, column 2: while parsing a block node: did not find expected node content\n"},
      // Issue 17: the file reader's limits and rules (README, "Input rules and limits").
      {"alias-big-string", alias_string, 1, "document too large (more than 32 MiB after expanding aliases)\n"},
      {"over-8-mib", std::string(api::kMaxManifestBytes + 1, '#'), 2, "input is larger than the limit of 8 MiB\n"},
      {"kind-typo",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n" + kOkWorker) + "---\n" +
           "apiVersion: kubeflow.org/v1\nkind: TfJob\nmetadata: {name: b}\n",
       1, "document 2 (line 8): kind \"TfJob\" is not TFJob (kinds are case-sensitive)\n"},
      {"kind-lower", "apiVersion: kubeflow.org/v1\nkind: tfjob\n", 1,
       "document 1 (line 1): kind \"tfjob\" is not TFJob (kinds are case-sensitive)\n"},
      {"other-kubeflow-kind", "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: p}\n", 1,
       "document 1 (line 1): kind \"PyTorchJob\" of apiVersion \"kubeflow.org/v1\" is not TFJob (tfjob reads only "
       "TFJobs)\n"},
      {"no-kind", "apiVersion: v1\nmetadata: {name: p}\n", 1,
       "document 1 (line 1): no kind (every document needs apiVersion and kind)\n"},
      {"list-item-typo", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: kubeflow.org/v1, kind: TFjob}\n", 1,
       "document 1, item 1 (line 1): kind \"TFjob\" is not TFJob (kinds are case-sensitive)\n"},
      {"control-chars-in-name",
       Tf("metadata: {name: \"x\\e[2J\\e]0;pwned\\a\\u202eabc\"}\nspec:\n  tfReplicaSpecs:\n" + kOkWorker), 1,
       "metadata.name: Invalid value: \"x\\x1b[2J\\x1b]0;pwned\\a\\u202eabc\": should match: a DNS-1035 label must "
       "consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an "
       "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
       "'[a-z]([-a-z0-9]*[a-z0-9])?')\n"},
      {"control-chars-in-kind", "apiVersion: v1\nkind: \"Config\\e[2JMap\"\n", 1,
       "no TFJob found (kind: TFJob, apiVersion: kubeflow.org/v1); the file has: Config\\x1b[2JMap\n"},
      {"bad-restart-policy",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      restartPolicy: Sometimes\n      template: "
          "{spec: {containers: [{name: tensorflow, image: tf}]}}\n"),
       1,
       "spec.tfReplicaSpecs[Worker].restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", "
       "\"ExitCode\", \"Never\", \"OnFailure\"\n"},
  };
  for (const auto& c : cases) {
    std::string file = Write(std::string(c.id) + ".yaml", c.content);
    CmdResult r = Tfjob({"validate", file});
    EXPECT_EQ(r.code, c.code) << c.id << ": " << r.err;
    EXPECT_EQ(r.err, file + ": " + c.error) << c.id;
    EXPECT_EQ(r.out, "") << c.id;
    CmdResult render = Tfjob({"render", file});
    EXPECT_EQ(render.code, c.code) << c.id;
    EXPECT_EQ(render.out, "") << c.id;
  }
}

TEST_F(TempFiles, ValidateReportsEveryErrorAndEveryFile) {
  std::string bad =
      Write("bad.yaml", Tf("metadata: {name: 0bad}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: -1\n"
                           "      template: {spec: {containers: [{name: tensorflow, image: ''}]}}\n"));
  std::string good = Write("good.yaml", Tf("metadata: {name: good}\nspec:\n  tfReplicaSpecs:\n" + kOkWorker));
  CmdResult r = Tfjob({"validate", good, bad, (dir_ / "missing.yaml").string()});
  EXPECT_EQ(r.code, 2);  // a missing file is an environment error and wins
  EXPECT_EQ(r.out, good + ": TFJob good is valid\n");
  EXPECT_THAT(r.err,
              ::testing::HasSubstr(bad + ": metadata.name: Invalid value: \"0bad\": should match: a DNS-1035 label"));
  EXPECT_THAT(r.err, ::testing::HasSubstr(bad + ": spec.tfReplicaSpecs[Worker].replicas: Invalid value: -1"));
  EXPECT_THAT(r.err, ::testing::HasSubstr(
                         bad + ": spec.tfReplicaSpecs[Worker].template.spec.containers[0].image: Required value"));
  EXPECT_THAT(r.err,
              ::testing::HasSubstr((dir_ / "missing.yaml").string() + ": cannot read: No such file or directory\n"));
  EXPECT_EQ(Tfjob({"validate", dir_.string()}).err, dir_.string() + ": cannot read: is a directory\n");
}

TEST_F(TempFiles, MultiDocumentFilesPickTheTfJobs) {
  std::string file =
      Write("multi.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n" +
                              Tf("metadata: {name: one}\nspec:\n  tfReplicaSpecs:\n" + kOkWorker) + "---\n" +
                              Tf("metadata: {name: two}\nspec:\n  tfReplicaSpecs:\n" + kOkWorker));
  CmdResult r = Tfjob({"validate", file});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, file + ": TFJob one is valid\n" + file + ": TFJob two is valid\n");
  CmdResult render = Tfjob({"render", file, "-o", "json"});
  EXPECT_EQ(nlohmann::json::parse(render.out)["items"].size(), 4u);
}

// Issue 17 item 3: unknown fields are warnings with their path (exit 0); --strict makes every
// warning an error (exit 1). Documents of other kinds are skipped with a warning.
TEST_F(TempFiles, UnknownFieldsWarnAndStrictMakesThemErrors) {
  std::string file = Write("typos.yaml", Tf("metadata: {name: typos}\nspec:\n  runPolcy: {}\n  tfReplicaSpecs:\n"
                                            "    Worker:\n      replcas: 3\n"
                                            "      template: {spec: {containers: [{name: tensorflow, image: tf, "
                                            "comand: [x]}]}}\n"));
  const std::string warnings = file + ": warning: spec.runPolcy: unknown field \"runPolcy\"\n" + file +
                               ": warning: spec.tfReplicaSpecs[Worker].replcas: unknown field \"replcas\"\n" + file +
                               ": warning: spec.tfReplicaSpecs[Worker].template.spec.containers[0].comand: unknown "
                               "field \"comand\"\n";
  CmdResult r = Tfjob({"validate", file});
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out, file + ": TFJob typos is valid\n");
  EXPECT_EQ(r.err, warnings);
  CmdResult strict = Tfjob({"validate", "--strict", file});
  EXPECT_EQ(strict.code, 1);
  EXPECT_EQ(strict.out, "");
  std::string errors = warnings;
  for (size_t p; (p = errors.find("warning: ")) != std::string::npos;) errors.erase(p, 9);
  EXPECT_EQ(strict.err, errors);
  // render (and run) print the warnings and go on.
  CmdResult render = Tfjob({"render", file, "-o", "json"});
  EXPECT_EQ(render.code, 0);
  EXPECT_EQ(render.err, warnings);
  EXPECT_EQ(nlohmann::json::parse(render.out)["items"].size(), 2u);

  std::string mixed = Write("mixed.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n---\n" +
                                              Tf("metadata: {name: one}\nspec:\n  tfReplicaSpecs:\n" + kOkWorker));
  CmdResult m = Tfjob({"validate", mixed});
  EXPECT_EQ(m.code, 0);
  EXPECT_EQ(m.err, mixed + ": warning: document 1 (line 1): skipped: kind \"ConfigMap\" is not TFJob\n");
  CmdResult ms = Tfjob({"validate", "--strict", mixed});
  EXPECT_EQ(ms.code, 1);
  EXPECT_EQ(ms.err, mixed + ": document 1 (line 1): skipped: kind \"ConfigMap\" is not TFJob\n");
  CmdResult clean = Tfjob({"validate", "--strict",
                           Write("clean.yaml", Tf("metadata: {name: ok}\nspec:\n  "
                                                  "tfReplicaSpecs:\n" +
                                                  kOkWorker))});
  EXPECT_EQ(clean.code, 0) << clean.err;
  EXPECT_EQ(clean.err, "");
}

// Issue 14 item 3 (docs/semantics.md D22): what upstream admits and runs is valid with warnings
// (exit 0); --strict makes them errors; render and run print them and go on.
TEST_F(TempFiles, SpecWarningsAreWarningsAndStrictMakesThemErrors) {
  std::string file =
      Write("odd.yaml",
            Tf("metadata: {name: odd}\nspec:\n  runPolicy: {cleanPodPolicy: none}\n  tfReplicaSpecs:\n" + kOkWorker +
               "    worker:\n      template: {spec: {containers: [{name: tensorflow, image: "
               "tf}]}}\n"));
  const std::string w1 =
      "spec.runPolicy.cleanPodPolicy: unsupported value \"none\" (supported: \"All\", \"None\", \"Running\"): "
      "treated as \"All\", as upstream does: every pod and its service are deleted when the job finishes\n";
  const std::string w2 =
      "spec.tfReplicaSpecs[worker]: \"worker\" and \"Worker\" are the same replica type: \"worker\" is used and "
      "\"Worker\" is ignored, as upstream does\n";
  CmdResult r = Tfjob({"validate", file});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, file + ": TFJob odd is valid\n");
  EXPECT_EQ(r.err, file + ": warning: " + w1 + file + ": warning: " + w2);
  CmdResult strict = Tfjob({"validate", "--strict", file});
  EXPECT_EQ(strict.code, 1);
  EXPECT_EQ(strict.out, "");
  EXPECT_EQ(strict.err, file + ": " + w1 + file + ": " + w2);
  CmdResult render = Tfjob({"render", file, "-o", "json"});
  EXPECT_EQ(render.code, 0);
  EXPECT_EQ(render.err, r.err);
  EXPECT_EQ(nlohmann::json::parse(render.out)["items"].size(), 2u);  // one Worker: "worker"'s spec
}

// Issue 14: every TFJob example of Kubeflow's training-operator repository (our own equivalents
// in tests/compat/upstream-examples, each naming the file it mirrors) is valid here, warnings
// allowed, as upstream admits and runs them.
TEST(Compat, UpstreamExamplesAreValid) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(kSource / "tests" / "compat" / "upstream-examples")) {
    if (e.path().extension() != ".yaml") continue;
    ++n;
    const std::string text = ReadText(e.path());
    EXPECT_EQ(text.rfind("# mirrors: kubeflow/training-operator ", 0), 0u) << e.path() << " names no upstream file";
    CmdResult r = Tfjob({"validate", e.path().string()});
    EXPECT_EQ(r.code, 0) << e.path() << ":\n" << r.err;
    EXPECT_THAT(r.out, ::testing::HasSubstr(" is valid\n")) << e.path();
    CmdResult render = Tfjob({"render", e.path().string(), "-o", "json"});
    EXPECT_EQ(render.code, 0) << e.path() << ":\n" << render.err;
  }
  EXPECT_GE(n, 11u);
}

// Issue 17 item 5: every rendered document reads back (YAML 1.1 and 1.2 readers) as the JSON
// output, whatever the strings hold.
TEST_F(TempFiles, RenderYamlRoundTripsSeparatorsNelAndDel) {
  std::string file =
      Write("chars.yaml", Tf("metadata: {name: chars}\nspec:\n  tfReplicaSpecs:\n    Worker:\n"
                             "      template:\n        metadata: {labels: {l: \"a\\Lb\\Nc\"}}\n"
                             "        spec:\n          containers:\n          - name: tensorflow\n"
                             "            image: tf\n            args: [\"x\\x7fy\", \"\\Px\", \"\\e\"]\n"
                             "            env: [{name: A, value: \"1\\L2\\N3\\x7f\\u00a0\\ufeff\"}]\n"));
  CmdResult json = Tfjob({"render", file, "-o", "json"});
  ASSERT_EQ(json.code, 0) << json.err;
  CmdResult yaml = Tfjob({"render", file});
  ASSERT_EQ(yaml.code, 0) << yaml.err;
  for (const char* raw : {"\u2028", "\u2029", "\u0085", "\x7f", "\x1b", "\ufeff"})
    EXPECT_EQ(yaml.out.find(raw), std::string::npos) << yaml.out;
  auto back = api::ParseManifest(yaml.out);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)[0].object, nlohmann::json::parse(json.out));
  EXPECT_EQ(nlohmann::json::parse(json.out)["items"][0]["spec"]["containers"][0]["args"][0], "x\x7fy");
}

// `tfjob run` end to end in-process: the replicas are real processes (forks of this test binary
// running sh), the outcome line and the exit code are the job's.
std::string ShJob(const std::string& name, const std::string& script) {
  return Tf("metadata: {name: " + name +
            "}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 2\n      restartPolicy: Never\n"
            "      template: {spec: {containers: [{name: tensorflow, image: tf, command: [sh, -c, '" +
            script + "']}]}}\n");
}

TEST_F(TempFiles, RunSucceedsAndFailsAsTheReplicasDo) {
  CmdResult ok = Tfjob({"run", Write("ok.yaml", ShJob("ok", "echo hello from $TF_CONFIG_X")), "--grace-period", "1"});
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
  EXPECT_THAT(ok.out, ::testing::HasSubstr("[worker-0] hello from"));
  EXPECT_THAT(ok.out, ::testing::HasSubstr("TFJob ok Succeeded: "));
  CmdResult failed = Tfjob({"run", Write("bad.yaml", ShJob("bad", "exit 3")), "--quiet"});
  EXPECT_EQ(failed.code, 1) << failed.out << failed.err;
  EXPECT_THAT(failed.out, ::testing::HasSubstr("TFJob bad Failed: "));
}

TEST_F(TempFiles, RunRefusesAFileWithoutExactlyOneJob) {
  std::string two = Write("two.yaml", ShJob("a", "true") + "---\n" + ShJob("b", "true"));
  CmdResult r = Tfjob({"run", two});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err, two + ": tfjob run takes a file with exactly one TFJob (found 2)\n");
  r = Tfjob({"run", dir_.string() + "/missing.yaml"});
  EXPECT_EQ(r.code, 2);
  EXPECT_THAT(r.err, ::testing::HasSubstr("missing.yaml: cannot read: No such file or directory"));
}

// Issue 35 item 4: what the API server refuses by the CRD's schema (with our own CRD) is refused,
// without --strict, with the field's path.
TEST_F(TempFiles, ValidateRefusesWhatTheApiServerRefuses) {
  const std::string c = "spec.tfReplicaSpecs[Worker].template.spec.containers[0]";
  struct Case {
    const char* id;
    const char* container;  // the fields of the one container after name and image
    std::string error;
  };
  const Case cases[] = {
      {"command-string", "command: \"python3 train.py\"",
       c + ".command: Invalid value: \"python3 train.py\": must be of type array"},
      {"cpu-lots", "command: [python3], resources: {limits: {cpu: lots}}",
       c + ".resources.limits[cpu]: Invalid value: \"lots\": should match '^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))"
           "(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$'"},
      {"env-map", "command: [python3], env: [{name: A, value: {nested: map}}]",
       c + ".env[0].value: Invalid value: {\"nested\":\"map\"}: must be of type string"},
      {"port-string", "ports: [{containerPort: http}]",
       c + ".ports[0].containerPort: Invalid value: \"http\": must be of type integer"},
  };
  for (const auto& k : cases) {
    std::string file = Write(std::string(k.id) + ".yaml",
                             Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      template: {spec: "
                                "{containers: [{name: tensorflow, image: tf, " +
                                std::string(k.container) + "}]}}\n"));
    CmdResult r = Tfjob({"validate", file});
    EXPECT_EQ(r.code, 1) << k.id << ": " << r.err;
    EXPECT_EQ(r.err, file + ": " + k.error + "\n") << k.id;
    EXPECT_EQ(r.out, "") << k.id;
  }
}

// Issue 35 item 4: `validate --local` and `run` go through one check (local/local_rules.h), so
// on every file of this table they agree: both accept, or both refuse with the same lines.
TEST_F(TempFiles, ValidateLocalAndRunNeverDisagree) {
  const std::string c = "spec.tfReplicaSpecs[Worker].template.spec.containers[0]";
  const std::string needs_command =
      ".command: Required value: a local run executes the container's command (the "
      "image's entrypoint is not available here)";
  struct Case {
    const char* id;
    const char* container;       // after name and image
    bool valid_for_the_cluster;  // plain `validate`
    std::string error;           // of validate --local and run; empty: both accept
  };
  const Case cases[] = {
      {"runs", "command: [\"true\"], env: [{name: A, value: b}]", true, ""},
      {"no-command", "args: [train.py]", true, c + needs_command},
      {"value-from", "command: [\"true\"], env: [{name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]", true,
       c + ".env[0].valueFrom: Unsupported value: a local run takes plain `value`s only"},
      {"env-from", "command: [\"true\"], envFrom: [{configMapRef: {name: c}}]", true,
       c + ".envFrom: Unsupported value: a local run takes plain `value`s only"},
      {"command-string", "command: \"true\"", false, c + ".command: Invalid value: \"true\": must be of type array"},
      {"cpu-lots", "command: [\"true\"], resources: {limits: {cpu: lots}}", false,
       c + ".resources.limits[cpu]: Invalid value: \"lots\": should match '"},
  };
  for (const auto& k : cases) {
    std::string file = Write(std::string(k.id) + ".yaml",
                             Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      template: {spec: "
                                "{containers: [{name: tensorflow, image: tf, " +
                                std::string(k.container) + "}]}}\n"));
    CmdResult plain = Tfjob({"validate", file});
    EXPECT_EQ(plain.code == 0, k.valid_for_the_cluster) << k.id << ": " << plain.err;
    CmdResult local = Tfjob({"validate", "--local", file});
    CmdResult run = Tfjob({"run", file, "--quiet", "--grace-period", "1"});
    if (k.error.empty()) {
      EXPECT_EQ(local.code, 0) << k.id << ": " << local.err;
      EXPECT_EQ(local.out, file + ": TFJob a is valid\n");
      EXPECT_EQ(run.code, 0) << k.id << ": " << run.err;
      continue;
    }
    EXPECT_EQ(local.code, 1) << k.id;
    EXPECT_THAT(local.err, ::testing::StartsWith(file + ": " + k.error)) << k.id;
    EXPECT_EQ(run.err, local.err) << k.id << ": the same lines";
    // run's exit code: 1 for what the cluster refuses too, 2 for what only a local run cannot run.
    EXPECT_EQ(run.code, k.valid_for_the_cluster ? 2 : 1) << k.id;
    EXPECT_EQ(run.out, "") << k.id << ": nothing started";
  }
  // A file of two jobs: `run` takes exactly one.
  std::string two = Write("two.yaml", Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n" + kOkWorker) + "---\n" +
                                          Tf("metadata: {name: b}\nspec:\n  tfReplicaSpecs:\n" + kOkWorker));
  CmdResult local = Tfjob({"validate", "--local", two});
  EXPECT_EQ(local.code, 1);
  EXPECT_EQ(local.err, two + ": TFJob a: spec.tfReplicaSpecs[Worker].template.spec.containers[0]" + needs_command +
                           "\n" + two + ": TFJob b: spec.tfReplicaSpecs[Worker].template.spec.containers[0]" +
                           needs_command + "\n" + two + ": tfjob run takes a file with exactly one TFJob (found 2)\n");
  EXPECT_EQ(Tfjob({"run", two}).err, local.err);
}

// Issue 35 item 5: --version, and a mistyped command named as such with the nearest one.
TEST(Usage, VersionFlagAndUnknownCommands) {
  CmdResult version = Tfjob({"--version"});
  EXPECT_EQ(version.code, 0);
  EXPECT_EQ(version.out, Tfjob({"version"}).out);
  CmdResult typo = Tfjob({"rnu", "job.yaml"});
  EXPECT_EQ(typo.code, 2);
  EXPECT_EQ(typo.out, "");
  EXPECT_EQ(typo.err, "tfjob: unknown command \"rnu\"; did you mean \"run\"?\nRun 'tfjob --help' for usage.\n");
  CmdResult help_of_typo = Tfjob({"dashbord", "--help"});
  EXPECT_EQ(help_of_typo.code, 2) << "not the root's help with exit 0";
  EXPECT_EQ(help_of_typo.out, "");
  EXPECT_THAT(help_of_typo.err, ::testing::StartsWith("tfjob: unknown command \"dashbord\""));
  EXPECT_THAT(Tfjob({"--help"}).out, ::testing::HasSubstr("--version"));
}

}  // namespace
}  // namespace tfjob::cli
