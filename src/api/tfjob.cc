#include "api/tfjob.h"

#include <cctype>

namespace tfjob::api {

std::string_view ReplicaTypeName(ReplicaType t) {
  switch (t) {
    case ReplicaType::kChief: return "Chief";
    case ReplicaType::kEvaluator: return "Evaluator";
    case ReplicaType::kMaster: return "Master";
    case ReplicaType::kPS: return "PS";
    case ReplicaType::kWorker: return "Worker";
  }
  return "";
}

std::string_view ReplicaTypeLabel(ReplicaType t) {
  switch (t) {
    case ReplicaType::kChief: return "chief";
    case ReplicaType::kEvaluator: return "evaluator";
    case ReplicaType::kMaster: return "master";
    case ReplicaType::kPS: return "ps";
    case ReplicaType::kWorker: return "worker";
  }
  return "";
}

std::optional<ReplicaType> ParseReplicaType(std::string_view key) {
  for (ReplicaType t : kAllReplicaTypes)
    if (ReplicaTypeName(t) == key) return t;
  return std::nullopt;
}

const std::string* ReplicaSpecKey(const TfJobSpec& spec, ReplicaType type) {
  const std::string canonical(ReplicaTypeName(type));
  const std::string* found = nullptr;
  for (const auto& [key, value] : spec.replica_specs) {
    if (key == canonical) {
      if (found == nullptr) found = &key;
    } else if (ParseReplicaTypeFold(key) == type) {
      return &key;
    }
  }
  return found;
}

std::vector<TypedReplicaSpec> ReplicaSpecsByType(const TfJobSpec& spec) {
  std::vector<TypedReplicaSpec> out;
  for (ReplicaType t : kAllReplicaTypes)
    if (const std::string* key = ReplicaSpecKey(spec, t))
      if (const auto& value = spec.replica_specs.at(*key)) out.push_back({t, &*value});
  return out;
}

int64_t TotalReplicas(const TfJobSpec& spec) {
  int64_t total = 0;
  for (const auto& [type, s] : ReplicaSpecsByType(spec)) total += ReplicasOrDefault(*s);
  return total;
}

std::optional<ReplicaType> ParseReplicaTypeLabel(std::string_view label) {
  for (ReplicaType t : kAllReplicaTypes)
    if (ReplicaTypeLabel(t) == label) return t;
  return std::nullopt;
}

std::optional<ReplicaType> ParseReplicaTypeFold(std::string_view key) {
  for (ReplicaType t : kAllReplicaTypes) {
    std::string_view name = ReplicaTypeName(t);
    if (name.size() != key.size()) continue;
    bool same = true;
    for (size_t i = 0; i < key.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(key[i])) == std::tolower(static_cast<unsigned char>(name[i]));
    if (same) return t;
  }
  return std::nullopt;
}

}  // namespace tfjob::api
