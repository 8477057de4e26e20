#pragma once
// Unknown fields of a TFJob, reported the way `kubectl apply --validate=strict` reports them
// (README, "Input rules and limits": warnings, errors only under `tfjob validate --strict`,
// admission warnings in the webhook): one message per field that no level of the object knows,
// with its full path, "spec.tfReplicaSpecs[Worker].replcas: unknown field \"replcas\"". Pure.
//
// One source: the CRD's structural schema (api/structural_schema.h), which the API server prunes
// by, at every level it describes (pod templates included, down to probes and volumes), except
// where it keeps unknown fields (x-kubernetes-preserve-unknown-fields). Besides the schema, the
// root's metadata and each pod template's metadata are checked against ObjectMeta's fields (the
// CRD leaves the root's to the API server, and a template's unknown metadata fields would be
// dropped from its pods). The status is not checked: the API server drops it on create.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tfjob::api {

// At most this many messages per object; one more line says how many were left out.
inline constexpr size_t kMaxUnknownFieldMessages = 100;

struct SchemaFindings;

// The unknown fields in `findings` (CheckTfJobSchema(tfjob)) with those of tfjob's metadata.
std::vector<std::string> UnknownFieldWarnings(const nlohmann::json& tfjob, const SchemaFindings& findings);
// The same, running the schema check.
std::vector<std::string> UnknownFieldWarnings(const nlohmann::json& tfjob);

}  // namespace tfjob::api
