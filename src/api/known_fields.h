#pragma once
// Unknown fields of a TFJob, reported the way `kubectl apply --validate=strict` reports them for
// a typed schema (README, "Input rules and limits": warnings, errors only under `tfjob validate
// --strict`, admission warnings in the webhook): one message per field that no level of the object knows, with its full
// path, "spec.tfReplicaSpecs[Worker].replcas: unknown field \"replcas\"". Pure.
//
// Levels checked: the object, metadata, spec, runPolicy, schedulingPolicy, every replica spec,
// its template (metadata, spec), the pod spec (core/v1 PodSpec of Kubernetes v1.36), its
// containers, init and ephemeral containers (Container), their env, ports, resources and
// volumeMounts. Maps (labels, annotations, nodeSelector, resources.limits) and everything
// deeper (volumes, affinity, probes, securityContext) are not checked. The status is not either:
// it is the controller's output.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tfjob::api {

// At most this many messages per object; one more line says how many were left out.
inline constexpr size_t kMaxUnknownFieldMessages = 100;

std::vector<std::string> UnknownFieldWarnings(const nlohmann::json& tfjob);

}  // namespace tfjob::api
