#include "operator/versioned_apis.h"

#include "api/exit_codes.h"
#include "operator/resources.h"

namespace tfjob::operator_ {

controller::VersionedApi PodGroupVersionedApi(const core::GangSchedulerPolicy& gang) {
  const core::GangCrdApi api = gang.crd_api();
  return controller::VersionedApi{api.group, {{api.version, ""}}, api.purpose};
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

std::optional<int> CheckCrdApi(kube::RestClient& client, const controller::VersionedApi& api,
                               const std::string& resource, const std::string& crd_kind, std::stop_token stop,
                               const Logger& log) {
  auto found = CheckServedByCrd(client, api, resource, crd_kind);
  if (stop.stop_requested()) return api::kExitOk;
  const std::string crd = resource + "." + api.group;
  if (found.ok()) {
    log.Info(api.purpose, {{"api", api.group + "/" + *found}});
    return std::nullopt;
  }
  if (IsNotFound(found.status()))
    log.Error(std::string(found.status().message()), {{"crd", crd}});
  else
    log.Error("cannot check for " + crd_kind, {{"crd", crd}, {"error", found.status().message()}});
  return api::kExitUsage;
}

}  // namespace tfjob::operator_
