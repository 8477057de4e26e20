#include "operator/native_gang_api.h"

#include "tfjob/core/pod_group.h"

namespace tfjob::operator_ {

using nlohmann::json;
namespace core = ::tfjob::tfjob::core;

namespace {

// A version of NativeGangVersionedApi() as the core's enum.
core::NativeGangApi ApiOfVersion(const std::string& version) {
  return NativeGangApiOf({std::string(core::kNativeSchedulingGroup), version, ""})
      .value_or(core::NativeGangApi::kV1alpha2);
}

}  // namespace

const controller::VersionedApi& NativeGangVersionedApi() {
  static const controller::VersionedApi api{
      std::string(core::kNativeSchedulingGroup),
      {{std::string(core::NativeGangApiVersion(core::NativeGangApi::kV1beta1)),
        "Kubernetes v1.37: feature gate GenericWorkload=true, --runtime-config=scheduling.k8s.io/v1beta1=true"},
       {std::string(core::NativeGangApiVersion(core::NativeGangApi::kV1alpha2)),
        "v1.36: feature gates GenericWorkload=true,GangScheduling=true, "
        "--runtime-config=scheduling.k8s.io/v1alpha2=true"}},
      "gang scheduling by kubernetes"};
  return api;
}

StatusOr<core::NativeGangApi> ChooseNativeGangApi(const json& api_group) {
  auto chosen = controller::ChooseVersion(NativeGangVersionedApi(), controller::ServedVersions(api_group));
  if (!chosen.ok()) return chosen.status();
  return ApiOfVersion(*chosen);
}

kube::GroupVersionResource NativeWorkloads(core::NativeGangApi api) {
  return {std::string(core::kNativeSchedulingGroup), std::string(core::NativeGangApiVersion(api)), "workloads"};
}

kube::GroupVersionResource NativePodGroups(core::NativeGangApi api) {
  return {std::string(core::kNativeSchedulingGroup), std::string(core::NativeGangApiVersion(api)), "podgroups"};
}

std::optional<core::NativeGangApi> NativeGangApiOf(const kube::GroupVersionResource& gvr) {
  if (gvr.group != core::kNativeSchedulingGroup) return std::nullopt;
  for (core::NativeGangApi api : {core::NativeGangApi::kV1alpha2, core::NativeGangApi::kV1beta1})
    if (gvr.version == core::NativeGangApiVersion(api)) return api;
  return std::nullopt;
}

NativeGangApiTracker::NativeGangApiTracker(kube::RestClient& client, core::NativeGangApi initial, Logger log)
    : tracker_(client, NativeGangVersionedApi(), std::string(core::NativeGangApiVersion(initial)), std::move(log)) {}

core::NativeGangApi NativeGangApiTracker::current() const {
  return ApiOfVersion(tracker_.current());
}

StatusOr<core::NativeGangApi> NativeGangApiTracker::Discover() {
  auto found = tracker_.Discover();
  if (!found.ok()) return found.status();
  return ApiOfVersion(*found);
}

}  // namespace tfjob::operator_
