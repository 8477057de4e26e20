#pragma once
// JSON codec for TFJob objects (the only place besides the CRD that knows TFJob wire names).
// Decoding never throws: a field of the wrong type becomes a FieldError naming its path
// ("spec.tfReplicaSpecs[Worker].replicas: Invalid value: \"two\": must be an integer") and is
// left unset, so `tfjob validate` can list every problem of a file at once.

#include <nlohmann/json.hpp>

#include "api/field_error.h"
#include "api/tfjob.h"
#include "common/status.h"

namespace tfjob::api {

// Decodes what it can; appends a FieldError for every field of the wrong shape.
TfJob DecodeTfJob(const nlohmann::json& j, FieldErrors* errors);
// Strict form for objects from the API server: any shape error outside the status is
// kDataLoss. A status field of the wrong shape is left unset (the controller rewrites it).
StatusOr<TfJob> DecodeTfJobStrict(const nlohmann::json& j);

nlohmann::json EncodeStatus(const JobStatus& status);
nlohmann::json EncodeObjectMeta(const ObjectMeta& meta);
nlohmann::json EncodeOwnerReference(const OwnerReference& ref);
// Decoders shared with the other object codecs (pods, services).
ObjectMeta DecodeObjectMeta(const nlohmann::json& j, const std::string& path, FieldErrors* errors);

}  // namespace tfjob::api
