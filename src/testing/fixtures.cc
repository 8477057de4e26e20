#include "testing/fixtures.h"

#include <cstdio>
#include <cstdlib>

#include "api/defaults.h"
#include "api/tfjob_file.h"
#include "tfjob/core/naming.h"

namespace tfjob::testing {

api::TfJob JobFromYaml(std::string_view yaml) {
  auto jobs = api::LoadTfJobs(yaml);
  if (!jobs.ok() || jobs->size() != 1 || !(*jobs)[0].decode_errors.empty()) {
    std::fprintf(stderr, "bad fixture: %s\n", jobs.ok() ? "decode errors" : jobs.status().ToString().c_str());
    std::abort();
  }
  return (*jobs)[0].job;
}

namespace {
template <typename T>
T DecodedOrAbort(StatusOr<T> decoded) {
  if (!decoded.ok()) {
    std::fprintf(stderr, "bad fixture: %s\n", decoded.status().ToString().c_str());
    std::abort();
  }
  return *std::move(decoded);
}
}  // namespace

api::KueueWorkload DecodedKueueWorkload(const nlohmann::json& object) {
  return DecodedOrAbort(api::DecodeKueueWorkload(object));
}

api::PodGroup DecodedPodGroup(const nlohmann::json& object) {
  return DecodedOrAbort(api::DecodePodGroup(object));
}

api::SchedulingWorkload DecodedSchedulingWorkload(const nlohmann::json& object) {
  return DecodedOrAbort(api::DecodeSchedulingWorkload(object));
}

api::TfJob DefaultedJobFromYaml(std::string_view yaml) {
  api::TfJob job = JobFromYaml(yaml);
  api::SetDefaults(job);
  return job;
}

api::TfJob NewTfJob(int workers, int ps, bool with_chief) {
  std::string yaml = R"(apiVersion: kubeflow.org/v1
kind: TFJob
metadata: {name: test-tfjob, namespace: default, uid: test-uid}
spec:
  tfReplicaSpecs:
)";
  auto replica = [](const char* type, int n) {
    return std::string("    ") + type + ":\n      replicas: " + std::to_string(n) +
           "\n      template:\n        spec:\n          containers:\n"
           "          - name: tensorflow\n            image: test-image-for-kubeflow-training-operator:latest\n"
           "            ports: [{name: tfjob-port, containerPort: 2222}]\n";
  };
  if (with_chief) yaml += replica("Chief", 1);
  if (ps > 0) yaml += replica("PS", ps);
  if (workers > 0) yaml += replica("Worker", workers);
  return DefaultedJobFromYaml(yaml);
}

namespace {
api::ChildMeta ChildOf(const std::string& job_name, std::string_view replica_type_label, int index,
                       std::string owner_uid, const std::string& uid_suffix) {
  api::ChildMeta meta;
  meta.name = core::GenGeneralName(job_name, replica_type_label, index);
  meta.ns = "default";
  meta.uid = meta.name + uid_suffix;
  meta.job_name = job_name;
  meta.replica_type = api::ParseReplicaTypeLabel(replica_type_label);
  meta.replica_index = index;
  meta.controller_uid = std::move(owner_uid);
  return meta;
}
}  // namespace

api::Pod MakePod(const std::string& job_name, std::string_view replica_type_label, int index, api::PodPhase phase,
                 std::string owner_uid) {
  api::Pod pod;
  pod.meta = ChildOf(job_name, replica_type_label, index, std::move(owner_uid), "-uid");
  pod.phase = phase;
  return pod;
}

api::Service MakeService(const std::string& job_name, std::string_view replica_type_label, int index,
                         std::string owner_uid) {
  return api::Service{ChildOf(job_name, replica_type_label, index, std::move(owner_uid), "-svc-uid")};
}

api::Pod& WithExitCode(api::Pod& pod, int exit_code) {
  api::ContainerStatus s;
  s.name = "tensorflow";
  s.terminated = true;
  s.exit_code = exit_code;
  pod.container_statuses.push_back(s);
  return pod;
}

}  // namespace tfjob::testing
