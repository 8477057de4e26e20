#pragma once
// The API resources the TFJob controller works with beyond the core ones (pods, services,
// events, leases): defined once in kube/tfjob_resources.h, shared with the CLI.

#include "kube/tfjob_resources.h"

namespace tfjob::operator_ {

using kube::CrdName;
using kube::kPluginsPodGroups;
using kube::kPriorityClasses;
using kube::kTfJobs;
using kube::kVolcanoPodGroups;
// Kueue's API as --kueue-mode operator speaks it (v1beta2; docs/kueue.md).
inline const kube::GroupVersionResource& kKueueWorkloads = kube::kKueueWorkloadsV1beta2;
using kube::kKueueResourceFlavors;
using kube::kKueueWorkloadPriorityClasses;
// kube-scheduler's own gang scheduling (--gang-scheduler-name kubernetes, docs/semantics.md D27):
// its version is discovered, see operator/native_gang_api.h (NativeWorkloads, NativePodGroups).

}  // namespace tfjob::operator_
