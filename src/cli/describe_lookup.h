#pragma once
// What `tfjob describe` (docs/cli.md) reads beside the job and its pods: the objects that admit
// the job, Kueue's Workload and the gang scheduler's PodGroup (the dashboard watches Kueue's
// Workloads in the same version). The versions are found as the operator finds them
// (controller::ApiVersionTracker, docs/semantics.md D34; kube-scheduler's own gang through
// operator::NativeGangApiTracker, D31 and D33).

#include <optional>

#include "cli/job_view.h"
#include "kube/resource_path.h"
#include "kube/rest_client.h"

namespace tfjob::cli {

// Kueue's Workloads in the newest version served that the CLI reads (v1beta2, else v1beta1: what
// it reads of one is the same in both); nullopt when Kueue serves neither or discovery fails.
std::optional<kube::GroupVersionResource> ServedKueueWorkloads(kube::RestClient& client);

// Kueue's Workload that `job` (its uid) owns, in the newest version served (v1beta2, else
// v1beta1: what describe reads of it is the same in both); nullopt when Kueue is not served, the
// request fails or there is none.
std::optional<WorkloadView> FindWorkload(kube::RestClient& client, const JobView& job);

// The PodGroup named like `job`, the first found of: Volcano's, scheduler-plugins', then
// kube-scheduler's own in the version served (scheduling.k8s.io v1beta1, else v1alpha2; D27),
// and when CompositePodGroups are served, the job's CompositePodGroup with its members
// (`<job>.leaders`, `<job>.workers`, D33). nullopt when there is none.
std::optional<PodGroupView> FindPodGroup(kube::RestClient& client, const JobView& job);

}  // namespace tfjob::cli
