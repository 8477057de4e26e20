// The one registration of the gang schedulers (gang_scheduler.h). A new scheduler: its file
// (gang_<name>.cc) and one line below.
#include <algorithm>
#include <cctype>

#include "tfjob/core/gang_scheduler.h"

namespace tfjob::core {

const GangSchedulerPolicy* GangSchedulerFor(const std::string& name) {
  if (name.empty() || name == "None") return nullptr;
  std::string lower = name;
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const GangSchedulerPolicy* policy : {&VolcanoGang(), &KubernetesGang()})
    if (lower == policy->name()) return policy;
  return &SchedulerPluginsGang();  // any other name: scheduler-plugins, by that scheduler name
}

}  // namespace tfjob::core
