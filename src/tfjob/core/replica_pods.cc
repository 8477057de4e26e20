#include "tfjob/core/replica_pods.h"

#include "tfjob/core/naming.h"

namespace tfjob::core {
namespace {

std::optional<int32_t> IndexOf(const api::Pod& pod) {
  if (pod.meta.replica_index < 0) return std::nullopt;
  return pod.meta.replica_index;
}

}  // namespace

std::vector<const api::Pod*> FilterPodsForReplicaType(const std::vector<const api::Pod*>& pods, api::ReplicaType type) {
  std::vector<const api::Pod*> out;
  for (const api::Pod* p : pods) {
    if (p->meta.replica_type == type) out.push_back(p);
  }
  return out;
}

int32_t CalculatePodSliceSize(const std::vector<const api::Pod*>& pods, int32_t replicas) {
  int32_t size = replicas;
  for (const api::Pod* p : pods)
    if (auto i = IndexOf(*p); i && *i + 1 > size) size = *i + 1;
  return size;
}

std::vector<std::vector<const api::Pod*>> SlicePodsByIndex(const std::vector<const api::Pod*>& pods, int32_t replicas) {
  std::vector<std::vector<const api::Pod*>> slices(static_cast<size_t>(CalculatePodSliceSize(pods, replicas)));
  for (const api::Pod* p : pods)
    if (auto i = IndexOf(*p)) slices[static_cast<size_t>(*i)].push_back(p);
  return slices;
}

void CountPod(const api::Pod& pod, api::ReplicaStatus* status) {
  switch (pod.phase) {
    case api::PodPhase::kRunning:
      if (pod.meta.deletion_timestamp)
        ++status->failed;
      else
        ++status->active;
      break;
    case api::PodPhase::kSucceeded: ++status->succeeded; break;
    case api::PodPhase::kFailed: ++status->failed; break;
    default: break;
  }
}

std::optional<int32_t> TensorflowExitCode(const api::Pod& pod) {
  for (const auto& c : pod.container_statuses)
    if (c.name == api::kDefaultContainerName && c.terminated) return c.exit_code;
  return std::nullopt;
}

bool IsWorker0Completed(const api::TfJob& job, const std::vector<const api::Pod*>& pods) {
  auto it = job.spec.replica_specs.find("Worker");
  if (it == job.spec.replica_specs.end() || !it->second) return true;
  auto workers = FilterPodsForReplicaType(pods, api::ReplicaType::kWorker);
  auto slices = SlicePodsByIndex(workers, api::ReplicasOrDefault(*it->second));
  if (slices.empty() || slices[0].size() != 1) return false;
  const api::Pod& w0 = *slices[0][0];
  return w0.phase == api::PodPhase::kSucceeded && TensorflowExitCode(w0) == 0;
}

}  // namespace tfjob::core
