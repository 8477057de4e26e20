#include "tfjob/core/kueue_multikueue.h"

#include <string>

#include "api/json_fields.h"
#include "tfjob/core/kueue_workload.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

bool ForMultiKueue(const api::TfJob& job) {
  return job.spec.run_policy.managed_by == api::kManagedByMultiKueue;
}

// The Workload's controller owner reference names this job (by uid), or there is none.
bool ControllerIsJobOrNone(const json& workload, const std::string& uid) {
  const json& meta = api::ObjectField(workload, "metadata");
  auto refs = meta.find("ownerReferences");
  if (refs == meta.end() || !refs->is_array()) return true;
  for (const json& ref : *refs) {
    auto controller = ref.find("controller");
    if (controller != ref.end() && controller->is_boolean() && controller->get<bool>())
      return !uid.empty() && api::StringField(ref, "uid") == uid;
  }
  return true;
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

MultiKueueRole MultiKueueRoleOf(const api::TfJob& job, const std::optional<json>& prebuilt) {
  if (!ForMultiKueue(job)) return MultiKueueRole::kNone;
  const std::string* origin_label = JobLabel(job, kKueueMultiKueueOriginLabel);
  if (!origin_label) return MultiKueueRole::kManager;
  const std::string& origin = *origin_label;
  auto name = KueuePrebuiltWorkloadName(job);
  if (origin.empty() || job.spec.managed_by || !name || name->empty() || !prebuilt) return MultiKueueRole::kUnproven;
  const json& meta = api::ObjectField(*prebuilt, "metadata");
  if (api::StringField(meta, "name") != *name || api::StringField(meta, "namespace") != job.metadata.ns)
    return MultiKueueRole::kUnproven;
  const json& labels = api::ObjectField(meta, "labels");
  if (api::StringField(labels, kKueueMultiKueueOriginLabel) != origin) return MultiKueueRole::kUnproven;
  if (!ControllerIsJobOrNone(*prebuilt, job.metadata.uid)) return MultiKueueRole::kUnproven;
  return MultiKueueRole::kCopy;
}

bool NeedsSpecManagedBy(const api::TfJob& job) {
  return MultiKueueRoleOf(job, std::nullopt) == MultiKueueRole::kManager &&
         job.spec.managed_by != job.spec.run_policy.managed_by;
}

}  // namespace tfjob::core
