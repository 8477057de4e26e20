#include "cmd/commands.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/manifest.h"

namespace tfjob::cmd {
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
// checked-in file. TFJOB_UPDATE_GOLDEN=1 rewrites them (review the diff!).
TEST(Render, GoldenFilesForEveryExample) {
  struct Case {
    const char* example;
    std::vector<std::string> extra_args;
  };
  std::vector<Case> cases = {
      {"ps-worker", {}},
      {"chief-ps-worker-evaluator", {"--cluster-domain", "cluster.local"}},
      {"single-worker", {}},
      {"exitcode-backoff", {}},
      {"gang-scheduling", {"--gang-scheduler-name", "volcano"}},
      {"suspended", {}},
      {"all-workers", {"--namespace", "team-a"}},
  };
  bool update = std::getenv("TFJOB_UPDATE_GOLDEN") != nullptr;
  for (const auto& c : cases) {
    std::vector<std::string> args = {"render", (kSource / "examples" / (std::string(c.example) + ".yaml")).string()};
    args.insert(args.end(), c.extra_args.begin(), c.extra_args.end());
    CmdResult r = Tfjob(args);
    ASSERT_EQ(r.code, 0) << c.example << ": " << r.err;
    fs::path golden = kSource / "tests" / "golden" / (std::string(c.example) + ".yaml");
    if (update) std::ofstream(golden) << r.out;
    EXPECT_EQ(r.out, ReadText(golden)) << c.example << " differs from " << golden;
  }
  std::set<std::string> examples;
  for (const auto& e : fs::directory_iterator(kSource / "examples"))
    if (e.path().extension() == ".yaml") examples.insert(e.path().stem().string());
  EXPECT_EQ(examples.size(), cases.size()) << "every example needs a golden render";
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
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: 1e400\n      template: {spec: "
          "{containers: [{name: tensorflow, image: tf}]}}\n"),
       1, "spec.tfReplicaSpecs[Worker].replicas: Invalid value: null: must be an integer\n"},
      {"string-replicas",
       Tf("metadata: {name: a}\nspec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: two\n      template: {spec: "
          "{containers: [{name: tensorflow, image: tf}]}}\n"),
       1, "spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"two\": must be an integer\n"},
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

}  // namespace
}  // namespace tfjob::cmd
