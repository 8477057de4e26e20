#include "local/local_rules.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::local {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::vector<std::string> Errors(const std::string& replica_specs) {
  api::TfJob job = ::tfjob::testing::JobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: a}\nspec:\n"
      "  tfReplicaSpecs:\n" +
      replica_specs);
  std::vector<std::string> out;
  for (const auto& e : LocalRunErrors(job)) out.push_back(e.ToString());
  return out;
}

// Every rule, with the path `run` and `validate --local` both print.
TEST(LocalRunErrors, EveryRuleWithItsPath) {
  const std::string w = "spec.tfReplicaSpecs[Worker].template.spec.";
  EXPECT_THAT(Errors("    Worker: {template: {spec: {containers: [{name: t, image: x, command: [python3]}]}}}\n"),
              IsEmpty());
  EXPECT_THAT(Errors("    Worker: {template: {spec: {containers: [{name: t, image: x, args: [a]}]}}}\n"),
              ElementsAre(w + "containers[0].command: Required value: a local run executes the container's command "
                              "(the image's entrypoint is not available here)"));
  EXPECT_THAT(Errors("    Worker: {template: {spec: {containers: [{name: t, image: x, command: []}]}}}\n"),
              ElementsAre(w + "containers[0].command: Required value: a local run executes the container's command "
                              "(the image's entrypoint is not available here)"));
  EXPECT_THAT(
      Errors("    Worker: {template: {spec: {containers: [{name: t, image: x, command: \"python3 train.py\"}]}}}\n"),
      ElementsAre(w + "containers[0].command: Invalid value: \"python3 train.py\": must be a list of strings"));
  EXPECT_THAT(
      Errors("    Worker:\n      template: {spec: {containers: [{name: t, image: x, command: [a], env: [{name: A, "
             "value: b}, {name: B, valueFrom: {fieldRef: {fieldPath: x}}}], envFrom: [{configMapRef: {name: "
             "c}}]}]}}\n"),
      ElementsAre(w + "containers[0].env[1].valueFrom: Unsupported value: a local run takes plain `value`s only",
                  w + "containers[0].envFrom: Unsupported value: a local run takes plain `value`s only"));
  // Init containers too, before the containers; every replica type that runs, by type.
  EXPECT_THAT(Errors("    PS: {template: {spec: {containers: [{name: t, image: x}]}}}\n"
                     "    Worker: {template: {spec: {initContainers: [{name: i, image: x}], containers: [{name: t, "
                     "image: x}]}}}\n"),
              ElementsAre("spec.tfReplicaSpecs[PS].template.spec.containers[0].command: Required value: a local run "
                          "executes the container's command (the image's entrypoint is not available here)",
                          w + "initContainers[0].command: Required value: a local run executes the container's "
                              "command (the image's entrypoint is not available here)",
                          w + "containers[0].command: Required value: a local run executes the container's command "
                              "(the image's entrypoint is not available here)"));
  // A type with no replicas does not run.
  EXPECT_THAT(Errors("    PS: {replicas: 0, template: {spec: {containers: [{name: t, image: x}]}}}\n"
                     "    Worker: {template: {spec: {containers: [{name: t, image: x, command: [a]}]}}}\n"),
              IsEmpty());
}

}  // namespace
}  // namespace tfjob::local
