#pragma once
// Decoding full Pod and Service JSON objects into trimmed records (nlohmann-based; the
// operator's watch path has its own streaming decoder).

#include <nlohmann/json.hpp>

#include "api/pod.h"
#include "common/status.h"

namespace tfjob::api {

// kDataLoss when the object is not a Pod-shaped JSON object.
StatusOr<Pod> DecodePod(const nlohmann::json& j);
StatusOr<Service> DecodeService(const nlohmann::json& j);

}  // namespace tfjob::api
