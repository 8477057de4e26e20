#include "tfjob/core/naming.h"

#include <algorithm>
#include <cctype>

namespace tfjob::core {

std::string GenGeneralName(std::string_view job_name, std::string_view replica_type, int64_t index) {
  std::string rt(replica_type);
  std::transform(rt.begin(), rt.end(), rt.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  std::string name = std::string(job_name) + "-" + rt + "-" + std::to_string(index);
  std::replace(name.begin(), name.end(), '/', '-');
  return name;
}

std::string ReplicaName(std::string_view job_name, api::ReplicaType type, int64_t index) {
  return GenGeneralName(job_name, api::ReplicaTypeLabel(type), index);
}

std::map<std::string, std::string> GenLabels(std::string_view job_name) {
  std::string name(job_name);
  std::replace(name.begin(), name.end(), '/', '-');
  return {{std::string(kLabelOperatorName), std::string(kControllerName)}, {std::string(kLabelJobName), name}};
}

std::map<std::string, std::string> ReplicaLabels(std::string_view job_name, api::ReplicaType type, int64_t index) {
  auto labels = GenLabels(job_name);
  labels[std::string(kLabelReplicaType)] = std::string(api::ReplicaTypeLabel(type));
  labels[std::string(kLabelReplicaIndex)] = std::to_string(index);
  return labels;
}

bool IsMasterRole(const api::TfJob& job, api::ReplicaType type, int64_t index) {
  bool has_chief_or_master = false;
  for (const auto& [key, spec] : job.spec.replica_specs) {
    auto t = api::ParseReplicaType(key);
    if (t && api::IsChiefOrMaster(*t)) has_chief_or_master = true;
  }
  if (has_chief_or_master) return api::IsChiefOrMaster(type);
  return type == api::ReplicaType::kWorker && index == 0;
}

api::OwnerReference GenOwnerReference(const api::TfJob& job) {
  return api::OwnerReference{
      std::string(api::kApiVersion), std::string(api::kKind), job.metadata.name, job.metadata.uid, true, true};
}

}  // namespace tfjob::core
