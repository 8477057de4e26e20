#pragma once
// A PriorityClass (scheduling.k8s.io/v1) trimmed to what tfjob reads of it: its value (int32,
// required) and globalDefault. Decoded once for every reader of the one PriorityClass informer
// (the gang's computed minResources, docs/semantics.md 2.8; Kueue's Workload priority,
// docs/kueue.md). Kueue's WorkloadPriorityClasses have the same `value`.

#include <cstdint>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tfjob::api {

struct PriorityClass {
  int32_t value = 0;
  bool global_default = false;
  friend bool operator==(const PriorityClass&, const PriorityClass&) = default;
};

// kInvalidArgument "a priority class without an int32 value" when `value` is missing, not an
// integer or out of int32's range.
StatusOr<int32_t> DecodePriorityValue(const nlohmann::json& object);
StatusOr<PriorityClass> DecodePriorityClass(const nlohmann::json& object);

}  // namespace tfjob::api
