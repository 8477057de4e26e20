#pragma once
// The versioned APIs the operator calls beyond the core ones and kube-scheduler's own gang
// scheduling (operator/native_gang_api.h), each as a controller::VersionedApi with the versions
// this operator speaks (docs/semantics.md D34): the PodGroups of Volcano (scheduling.volcano.sh
// v1beta1) and of scheduler-plugins (scheduling.x-k8s.io v1alpha1), and Kueue's API
// (kueue.x-k8s.io v1beta2, whose Workload fields differ from v1beta1's: docs/kueue.md). Plus the
// start-up check of an API served through a CRD.

#include <string>

#include <optional>
#include <stop_token>
#include "common/status.h"
#include "controller/api_versions.h"
#include "kube/rest_client.h"

#include "common/logging.h"
#include "tfjob/core/gang_scheduler.h"

namespace tfjob::operator_ {

// The PodGroup API of a CRD-based gang scheduler (its policy's crd_api). REQUIRES: !gang.native().
controller::VersionedApi PodGroupVersionedApi(const core::GangSchedulerPolicy& gang);
// Kueue's API as --kueue-mode operator speaks it (Workloads, ResourceFlavors,
// WorkloadPriorityClasses).
const controller::VersionedApi& KueueVersionedApi();

// Start-up (docs/operator.md, section 2): the CRD `<resource>.<group>` exists and serves one of
// api.versions; returns the version to speak, the first of api.versions the CRD serves. The CRD
// rather than the group's discovery document: it is what a user installs, and the API server's
// discovery may lag behind a CRD created a moment ago. Errors, each with one message:
// kNotFound "<purpose> needs <crd_kind>; crd might be missing, please install crd" when the CRD
// does not exist; kNotFound from controller::ChooseVersion when it serves none of the versions;
// any other error of the GET, with context.
StatusOr<std::string> CheckServedByCrd(kube::RestClient& client, const controller::VersionedApi& api,
                                       const std::string& resource, const std::string& crd_kind);

// The same check at start-up, logged: one error with the CRD's name when the CRD is missing or
// serves no version this operator speaks, else the version found (api.purpose). Returns the exit
// code when the operator must not start (2; 0 when stopped meanwhile), nullopt to go on.
std::optional<int> CheckCrdApi(kube::RestClient& client, const controller::VersionedApi& api,
                               const std::string& resource, const std::string& crd_kind, std::stop_token stop,
                               const Logger& log);

}  // namespace tfjob::operator_
