#include "operator/versioned_apis.h"

#include "operator/kueue_mode.h"
#include "operator/resources.h"

namespace tfjob::operator_ {

const controller::VersionedApi& PodGroupVersionedApi(core::GangScheduler gang) {
  static const controller::VersionedApi volcano{
      kVolcanoPodGroups.group, {{kVolcanoPodGroups.version, ""}}, "gang scheduling by volcano"};
  static const controller::VersionedApi plugins{
      kPluginsPodGroups.group, {{kPluginsPodGroups.version, ""}}, "gang scheduling by scheduler-plugins"};
  return gang == core::GangScheduler::kVolcano ? volcano : plugins;
}

const controller::VersionedApi& KueueVersionedApi() {
  static const controller::VersionedApi api{
      kKueueWorkloads.group,
      {{kKueueWorkloads.version, "Kueue v0.15 or later; its v1beta1 Workload has other fields"}},
      "--kueue-mode operator"};
  return api;
}

StatusOr<std::string> CheckServedByCrd(kube::RestClient& client, const controller::VersionedApi& api,
                                       const std::string& resource, const std::string& crd_kind) {
  const std::string crd = resource + "." + api.group;
  auto found = client.Get(kube::kCrds, "", crd);
  if (IsNotFound(found.status()))
    return NotFoundError(api.purpose + " needs " + crd_kind + "; crd might be missing, please install crd");
  if (!found.ok()) return found.status().WithContext("reading the CRD " + crd);
  return controller::ChooseVersion(api, controller::ServedVersionsOfCrd(*found));
}

}  // namespace tfjob::operator_
