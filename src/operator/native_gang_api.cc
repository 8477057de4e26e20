#include "operator/native_gang_api.h"

#include <set>

#include "api/json_fields.h"
#include "tfjob/core/composite_gang.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::operator_ {

using nlohmann::json;
namespace core = ::tfjob::tfjob::core;

StatusOr<core::NativeGangApi> ChooseNativeGangApi(const json& api_group) {
  std::set<std::string> served;
  if (api_group.is_object() && api_group.contains("versions") && api_group["versions"].is_array())
    for (const json& v : api_group["versions"]) served.insert(api::StringField(v, "version"));
  if (served.contains("v1beta1")) return core::NativeGangApi::kV1beta1;
  if (served.contains("v1alpha2")) return core::NativeGangApi::kV1alpha2;
  std::string listed;
  for (const auto& v : served) listed += (listed.empty() ? "" : ", ") + v;
  return NotFoundError(
      "gang scheduling by kubernetes needs scheduling.k8s.io/v1beta1 (Kubernetes v1.37: feature gate "
      "GenericWorkload=true, --runtime-config=scheduling.k8s.io/v1beta1=true) or scheduling.k8s.io/v1alpha2 "
      "(v1.36: feature gates GenericWorkload=true,GangScheduling=true, "
      "--runtime-config=scheduling.k8s.io/v1alpha2=true); the API server serves " +
      (listed.empty() ? std::string("neither") : "only " + listed));
}

namespace {

bool ListsVersion(const json& api_group, const std::string& version) {
  if (!api_group.is_object() || !api_group.contains("versions") || !api_group["versions"].is_array()) return false;
  for (const json& v : api_group["versions"])
    if (api::StringField(v, "version") == version) return true;
  return false;
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

bool VersionNotServed(const Status& status) {
  return IsNotFound(status) || IsNotAcceptable(status);
}

NativeGangApiTracker::NativeGangApiTracker(kube::RestClient& client, core::NativeGangApi initial, Logger log,
                                           bool initial_composite)
    : client_(client), log_(std::move(log)), current_(initial), composite_(initial_composite) {}

bool NativeGangApiTracker::composite_pod_groups() const {
  MutexLock lock(mu_);
  return composite_;
}

core::NativeGangApi NativeGangApiTracker::current() const {
  MutexLock lock(mu_);
  return current_;
}

int NativeGangApiTracker::discoveries() const {
  MutexLock lock(mu_);
  return discoveries_;
}

StatusOr<core::NativeGangApi> NativeGangApiTracker::Discover() {
  {
    MutexLock lock(mu_);
    ++discoveries_;
  }
  auto group = client_.GetApiGroup(std::string(core::kNativeSchedulingGroup));
  // A 404 of the group itself is a server that serves no version of it.
  StatusOr<core::NativeGangApi> chosen = group.ok()                   ? ChooseNativeGangApi(*group)
                                         : IsNotFound(group.status()) ? ChooseNativeGangApi(json::object())
                                                                      : StatusOr<core::NativeGangApi>(group.status());
  if (!chosen.ok()) return chosen.status();
  // D33: CompositePodGroups, only beside v1beta1 (v1alpha2's PodGroups cannot name a parent).
  bool composite = false;
  if (*chosen == core::NativeGangApi::kV1beta1 && ListsVersion(*group, std::string(core::kCompositePodGroupVersion))) {
    auto resources = client_.GetApiResources(std::string(core::kNativeSchedulingGroup),
                                             std::string(core::kCompositePodGroupVersion));
    composite = resources.ok() && ServesCompositePodGroups(*group, *resources);
  }
  core::NativeGangApi before;
  bool composite_before;
  {
    MutexLock lock(mu_);
    before = current_;
    composite_before = composite_;
    current_ = *chosen;
    composite_ = composite;
  }
  if (before != *chosen)
    log_.Info("speaking another version of the Workload API",
              {{"from", core::NativeGangApiGroupVersion(before)}, {"to", core::NativeGangApiGroupVersion(*chosen)}});
  if (composite_before != composite) log_.Info("CompositePodGroups", {{"served", composite ? "true" : "false"}});
  return chosen;
}

void NativeGangApiTracker::CallFailed(const kube::GroupVersionResource& gvr, const Status& status) {
  if (!VersionNotServed(status)) return;
  auto used = NativeGangApiOf(gvr);
  {
    MutexLock lock(mu_);
    const bool composite_call = gvr == NativeCompositePodGroups() && composite_;
    if (!composite_call && (!used || *used != current_)) return;  // another call found the new version already
    const Clock::SteadyTime now = client_.clock().SteadyNow();
    if (last_prompted_ && now - *last_prompted_ < kMinInterval) return;
    last_prompted_ = now;
  }
  log_.Info("the Workload API answered as if its version were not served; discovering again",
            {{"resource", gvr.group + "/" + gvr.version + "/" + gvr.resource}, {"error", status.message()}});
  auto found = Discover();
  if (!found.ok())
    log_.Error("cannot find a served version of the Workload API", {{"error", found.status().message()}});
}

}  // namespace tfjob::operator_
