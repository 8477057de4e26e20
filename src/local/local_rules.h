#pragma once
// What `tfjob run` needs of a job file beyond what a cluster needs (docs/local.md, README's local
// quick start): every container and init container of a replica that runs has a `command` (a
// local run executes it; the image's entrypoint is not available here), and its environment is
// plain `value`s (no `env[].valueFrom`, no `envFrom`: there is no API server to read them from).
//
// The one place these rules live: `tfjob run` applies them to each pod it renders
// (LocalReplicaFor) and, through cli/job_file.h's CheckFile, to the file before anything starts;
// `tfjob validate --local` applies them through the same CheckFile, so the two never disagree.
// What depends on this machine (a command found on PATH, GPUs, open files) is checked by
// LocalRunner::Prepare only. Pure.

#include <string>

#include <nlohmann/json.hpp>

#include "api/field_error.h"
#include "api/tfjob.h"

namespace tfjob::local {

// The rules for one container (or init container) at `path`
// ("spec.tfReplicaSpecs[Worker].template.spec.containers[0]"), in field order.
api::FieldErrors ContainerRunErrors(const nlohmann::json& container, const std::string& path);

// The rules for every container and init container of every replica type that has replicas, in
// the order of api::ReplicaSpecsByType, the type named as the renderer names it ("Worker").
api::FieldErrors LocalRunErrors(const api::TfJob& job);

}  // namespace tfjob::local
