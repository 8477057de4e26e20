#include "tfjob/core/kueue_multikueue.h"

#include <string>

#include "tfjob/core/kueue_workload.h"

namespace tfjob::core {
namespace {

bool ForMultiKueue(const api::TfJob& job) {
  return job.spec.run_policy.managed_by == api::kManagedByMultiKueue;
}

// The Workload's controller owner reference names this job (by uid), or there is none.
bool ControllerIsJobOrNone(const api::KueueWorkload& workload, const std::string& uid) {
  const api::OwnerReference* controller = workload.Controller();
  return !controller || (!uid.empty() && controller->uid == uid);
}

}  // namespace

std::string_view MultiKueueRoleName(MultiKueueRole role) {
  switch (role) {
    case MultiKueueRole::kNone: return "None";
    case MultiKueueRole::kManager: return "Manager";
    case MultiKueueRole::kCopy: return "Copy";
    case MultiKueueRole::kUnproven: return "Unproven";
  }
  return "?";
}

MultiKueueRole MultiKueueRoleOf(const api::TfJob& job, const std::optional<api::KueueWorkload>& prebuilt) {
  if (!ForMultiKueue(job)) return MultiKueueRole::kNone;
  const std::string* origin_label = JobLabel(job, kKueueMultiKueueOriginLabel);
  if (!origin_label) return MultiKueueRole::kManager;
  const std::string& origin = *origin_label;
  auto name = KueuePrebuiltWorkloadName(job);
  if (origin.empty() || job.spec.managed_by || !name || name->empty() || !prebuilt) return MultiKueueRole::kUnproven;
  const api::ObjectMeta& meta = prebuilt->metadata;
  if (meta.name != *name || meta.ns != job.metadata.ns) return MultiKueueRole::kUnproven;
  auto label = meta.labels.find(std::string(kKueueMultiKueueOriginLabel));
  if (label == meta.labels.end() || label->second != origin) return MultiKueueRole::kUnproven;
  if (!ControllerIsJobOrNone(*prebuilt, job.metadata.uid)) return MultiKueueRole::kUnproven;
  return MultiKueueRole::kCopy;
}

bool NeedsSpecManagedBy(const api::TfJob& job) {
  return MultiKueueRoleOf(job, std::nullopt) == MultiKueueRole::kManager &&
         job.spec.managed_by != job.spec.run_policy.managed_by;
}

}  // namespace tfjob::core
