#pragma once
// The API resources the TFJob controller works with beyond the core ones (pods, services,
// events, leases): defined once in kube/tfjob_resources.h, shared with the CLI.

#include "kube/tfjob_resources.h"

namespace tfjob::operator_ {

using kube::CrdName;
using kube::kNativePodGroups;
using kube::kNativeWorkloads;
using kube::kPluginsPodGroups;
using kube::kPriorityClasses;
using kube::kTfJobs;
using kube::kVolcanoPodGroups;

}  // namespace tfjob::operator_
