#pragma once
// Validation of a TFJob: upstream's webhook checks (docs/semantics.md 1.8, V1-V8) in their
// order, plus D11 (unknown replica types) and the checks of D25 (what cannot run); warnings for
// what upstream runs but looks wrong (D22). Runs on the object as written
// (before defaulting). Every error is returned, in a stable order: object-level checks first,
// then replica types in key order.

#include "api/field_error.h"
#include "api/tfjob.h"

namespace tfjob::api {

// Upper bound on replicas of one type: rendering is linear in it, and nothing sane asks more.
inline constexpr int32_t kMaxReplicasPerType = 10000;

// Errors: what upstream's webhook refuses (V1-V8), and what cannot run (D11, D25).
FieldErrors ValidateTfJob(const TfJob& job);
// Warnings (D22): inputs upstream admits and runs, that are probably not what the author meant
// (an unknown cleanPodPolicy or successPolicy, "Worker" next to "worker", a lower-case chief
// beside Master, negative values upstream tolerates). One "path: message" line each, saying what
// the job does with it. The webhook returns them as admission warnings, `tfjob validate` prints
// them (errors under --strict), the controller records them as one Warning event.
std::vector<std::string> SpecWarnings(const TfJob& job);
// Update rules (webhook UPDATE): ValidateTfJob(new_job) plus immutable managedBy (V2) and
// schedulingPolicy.queue.
FieldErrors ValidateTfJobUpdate(const TfJob& old_job, const TfJob& new_job);

// k8s IsDNS1035Label messages ("must be no more than 63 characters", "a DNS-1035 label ...").
std::vector<std::string> Dns1035LabelErrors(const std::string& value);

}  // namespace tfjob::api
