#pragma once
// Names, labels and owner references of the objects the operator creates for a TFJob
// (docs/semantics.md 2.1, 2.2, 2.4). Deterministic: the same job always yields the same names,
// so a repeated create meets AlreadyExists instead of making a duplicate (style.md R12).

#include <map>
#include <string>
#include <string_view>

#include "api/labels.h"
#include "api/tfjob.h"

namespace tfjob::core {

inline constexpr std::string_view kControllerName = "tfjob-controller";
// The label keys are the API's (api/labels.h).
using api::kLabelJobName;
using api::kLabelJobRole;
using api::kLabelOperatorName;
using api::kLabelReplicaIndex;
using api::kLabelReplicaType;
inline constexpr std::string_view kJobRoleMaster = "master";

// "<job>-<lowercase rt>-<index>" with every '/' replaced by '-'. `replica_type` is the spec
// key as written (upstream lower-cases it).
std::string GenGeneralName(std::string_view job_name, std::string_view replica_type, int64_t index);
std::string ReplicaName(std::string_view job_name, api::ReplicaType type, int64_t index);

// Base labels: operator-name and job-name. Also the selector of a job's pods and services (the
// CLI lists a job's pods by job-name alone: cli::JobPodSelector).
std::map<std::string, std::string> GenLabels(std::string_view job_name);
// Base labels + replica-type + replica-index.
std::map<std::string, std::string> ReplicaLabels(std::string_view job_name, api::ReplicaType type, int64_t index);

// True when pods of this type/index carry job-role=master: every Chief/Master pod if the job
// has a Chief or Master spec, otherwise Worker 0.
bool IsMasterRole(const api::TfJob& job, api::ReplicaType type, int64_t index);

// The controller owner reference of every child of `job`.
api::OwnerReference GenOwnerReference(const api::TfJob& job);

}  // namespace tfjob::core
