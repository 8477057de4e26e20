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
