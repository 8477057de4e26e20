#include "operator/native_gang_api.h"

#include <algorithm>
#include <vector>

#include "api/json_fields.h"
#include "tfjob/core/composite_gang.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::operator_ {

using nlohmann::json;

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

namespace {

bool ListsVersion(const json& api_group, const std::string& version) {
  const std::vector<std::string> served = controller::ServedVersions(api_group);
  return std::find(served.begin(), served.end(), version) != served.end();
}

}  // namespace

bool ServesCompositePodGroups(const json& api_group, const json& v1alpha3_resources) {
  if (!ListsVersion(api_group, std::string(core::kCompositePodGroupVersion))) return false;
  if (!v1alpha3_resources.is_object() || !v1alpha3_resources.contains("resources") ||
      !v1alpha3_resources["resources"].is_array())
    return false;
  for (const json& r : v1alpha3_resources["resources"])
    if (api::StringField(r, "name") == "compositepodgroups") return true;
  return false;
}

kube::GroupVersionResource NativeCompositePodGroups() {
  return {std::string(core::kNativeSchedulingGroup), std::string(core::kCompositePodGroupVersion),
          "compositepodgroups"};
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

NativeGangApiTracker::NativeGangApiTracker(kube::RestClient& client, core::NativeGangApi initial, Logger log,
                                           bool initial_composite)
    : tracker_(client, NativeGangVersionedApi(), std::string(core::NativeGangApiVersion(initial)), log),
      client_(client),
      log_(std::move(log)),
      composite_(initial_composite) {
  tracker_.set_on_discovered(
      [this](const json& api_group, const std::string& version) { LearnComposite(api_group, version); });
}

bool NativeGangApiTracker::composite_pod_groups() const {
  MutexLock lock(mu_);
  return composite_;
}

void NativeGangApiTracker::LearnComposite(const json& api_group, const std::string& version) {
  // D33: CompositePodGroups, only beside v1beta1 (v1alpha2's PodGroups cannot name a parent).
  bool composite = false;
  if (ApiOfVersion(version) == core::NativeGangApi::kV1beta1 &&
      ListsVersion(api_group, std::string(core::kCompositePodGroupVersion))) {
    auto resources = client_.GetApiResources(std::string(core::kNativeSchedulingGroup),
                                             std::string(core::kCompositePodGroupVersion));
    composite = resources.ok() && ServesCompositePodGroups(api_group, *resources);
  }
  bool before;
  {
    MutexLock lock(mu_);
    before = composite_;
    composite_ = composite;
  }
  if (before != composite) log_.Info("CompositePodGroups", {{"served", composite ? "true" : "false"}});
}

core::NativeGangApi NativeGangApiTracker::current() const {
  return ApiOfVersion(tracker_.current());
}

StatusOr<core::NativeGangApi> NativeGangApiTracker::Discover() {
  auto found = tracker_.Discover();
  if (!found.ok()) return found.status();
  return ApiOfVersion(*found);
}

void NativeGangApiTracker::CallFailed(const kube::GroupVersionResource& gvr, const Status& status) {
  if (gvr != NativeCompositePodGroups()) {
    tracker_.CallFailed(gvr, status);
    return;
  }
  if (!VersionNotServed(status)) return;
  {
    MutexLock lock(mu_);
    if (!composite_) return;  // another call found them gone already
    if (!composite_prompts_.Allow(client_.clock().SteadyNow())) return;
  }
  log_.Info("CompositePodGroups answered as if not served; discovering again", {{"error", status.message()}});
  auto found = Discover();
  if (!found.ok())
    log_.Error("cannot find a served version of the Workload API", {{"error", found.status().message()}});
}

}  // namespace tfjob::operator_
