// The one registration of the operator's gang integrations (gang_integration.h), and what both
// kinds share.
#include "operator/gang_integration.h"

#include "api/json_fields.h"
#include "api/object_key.h"
#include "operator/native_gang_api.h"
#include "operator/versioned_apis.h"
#include "tfjob/core/composite_gang.h"

namespace tfjob::operator_ {

std::unique_ptr<GangIntegration> MakeGangIntegration(kube::RestClient& client, const OperatorOptions& options,
                                                     Logger log) {
  const core::GangSchedulerPolicy* policy = core::GangSchedulerFor(options.gang_scheduler_name);
  if (!policy) return nullptr;
  return policy->native() ? MakeNativeGang(*policy, client, options, std::move(log))
                          : MakeCrdGang(*policy, client, options, std::move(log));
}

std::optional<int> CheckGangApi(kube::RestClient& client, OperatorOptions* options, std::stop_token stop,
                                const Logger& log) {
  const core::GangSchedulerPolicy* policy = core::GangSchedulerFor(options->gang_scheduler_name);
  if (!policy) return std::nullopt;
  if (policy->native()) return CheckNativeGangApi(client, options, stop, log);
  return CheckCrdApi(client, PodGroupVersionedApi(*policy), "podgroups", "the PodGroup CRD", stop, log);
}

void GangIntegration::WatchPriorityClasses(controller::InformerFactory& informers) {
  priority_classes_ = &controller::PriorityClassInformer(informers);
}

void GangIntegration::ObservePriorityClasses(const api::TfJob& job, core::ObservedState& observed) const {
  for (const auto& [type, spec] : job.spec.replica_specs) {
    if (!spec) continue;
    std::string name = api::StringField(api::ObjectField(spec->pod_template, "spec"), "priorityClassName");
    if (name.empty()) continue;
    if (auto pc = priority_classes_->store().Get(name)) observed.priority_classes[name] = pc->value;
  }
}

controller::InformerHandlers<nlohmann::json> EnqueueOwningJob(std::function<void(const std::string&)> enqueue) {
  auto on_event = [enqueue](const std::shared_ptr<const nlohmann::json>& object) {
    const nlohmann::json& m = api::ObjectField(*object, "metadata");
    enqueue(api::ObjectKey{api::StringField(m, "namespace"), core::JobNameOfGangObject(api::StringField(m, "name"))}
                .String());
  };
  return {on_event, [on_event](const auto&, const auto& n) { on_event(n); }, on_event};
}

}  // namespace tfjob::operator_
