#pragma once
// Which version of kube-scheduler's Workload API (group scheduling.k8s.io) the operator speaks
// with --gang-scheduler-name kubernetes (docs/semantics.md D31): v1beta1 (Kubernetes v1.37) when
// the API server serves it, else v1alpha2 (v1.36). Found by discovery at start-up, and found again
// when a call of the version in use answers 404 or 406: a cluster upgraded under a running
// operator needs no restart. The version is a value handed to the pure core
// (core::RenderOptions::native_gang_api), never a global. The discovery itself is the shared
// controller::ApiVersionTracker (docs/semantics.md D34); this file maps its versions to
// core::NativeGangApi.

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/logging.h"
#include "common/status.h"
#include "controller/api_versions.h"
#include "kube/resource_path.h"
#include "kube/rest_client.h"
#include "tfjob/core/render.h"

namespace tfjob::operator_ {

// scheduling.k8s.io as a versioned API: v1beta1, then v1alpha2, with what each needs.
const controller::VersionedApi& NativeGangVersionedApi();

// Pure: the version to speak, from the APIGroup document of GET /apis/scheduling.k8s.io
// (`versions[].version`): v1beta1 if served, else v1alpha2. kNotFound, naming what the cluster
// needs, when it serves neither (v1alpha3 alone is not enough: it is v1.37's alpha, whose
// PodGroups kube-scheduler does not read).
StatusOr<core::NativeGangApi> ChooseNativeGangApi(const nlohmann::json& api_group);

// D33: whether the API server serves CompositePodGroups: the APIGroup document lists v1alpha3
// and that version's APIResourceList (GET /apis/scheduling.k8s.io/v1alpha3, `resources[].name`)
// names compositepodgroups, which kube-apiserver serves only with the alpha CompositePodGroup
// gate on. v1alpha2 gangs never use it (RenderOptions::composite_pod_groups needs v1beta1).
bool ServesCompositePodGroups(const nlohmann::json& api_group, const nlohmann::json& v1alpha3_resources);
// scheduling.k8s.io/v1alpha3 compositepodgroups (the one version that has them).
kube::GroupVersionResource NativeCompositePodGroups();

kube::GroupVersionResource NativeWorkloads(core::NativeGangApi api);
kube::GroupVersionResource NativePodGroups(core::NativeGangApi api);
// The version of a scheduling.k8s.io resource in one of the versions above; nullopt otherwise.
std::optional<core::NativeGangApi> NativeGangApiOf(const kube::GroupVersionResource& gvr);
// Whether a failed call says its version is not (or no longer) served: 404 or 406.
using controller::VersionNotServed;

// The version in use, shared by the informers (as their ListWatchSpec::gvr_source), the
// reconcile (RenderOptions) and the writes: a controller::ApiVersionTracker of
// NativeGangVersionedApi() whose versions are read as core::NativeGangApi. Thread-safe.
class NativeGangApiTracker {
 public:
  static constexpr std::chrono::seconds kMinInterval = controller::ApiVersionTracker::kMinInterval;

  NativeGangApiTracker(kube::RestClient& client, core::NativeGangApi initial, Logger log,
                       bool initial_composite = false);

  core::NativeGangApi current() const;
  // D33: the API server serves CompositePodGroups (ServesCompositePodGroups), as last discovered.
  bool composite_pod_groups() const TFJOB_EXCLUDES(mu_);
  // GET /apis/scheduling.k8s.io and ChooseNativeGangApi; on success that version is used from
  // now on (a change is logged). With v1beta1 and v1alpha3 listed, also GET
  // /apis/scheduling.k8s.io/v1alpha3 for composite_pod_groups (a failure there: not served).
  // On failure the version in use stays.
  StatusOr<core::NativeGangApi> Discover();
  // A call of `gvr` failed with `status`: when that says the version is not served and it is
  // still the version in use (or `gvr` is NativeCompositePodGroups while they are thought
  // served), discovers again (at most once per kMinInterval).
  void CallFailed(const kube::GroupVersionResource& gvr, const Status& status) TFJOB_EXCLUDES(mu_);
  // Discoveries made (for tests and logs).
  int discoveries() const { return tracker_.discoveries(); }
  controller::ApiVersionTracker& tracker() { return tracker_; }
  const controller::ApiVersionTracker& tracker() const { return tracker_; }

 private:
  // What a discovery of v1beta1 says beside the version: whether CompositePodGroups are served.
  void LearnComposite(const nlohmann::json& api_group, const std::string& version) TFJOB_EXCLUDES(mu_);

  controller::ApiVersionTracker tracker_;
  kube::RestClient& client_;
  Logger log_;
  mutable Mutex mu_;  // guards the members below
  bool composite_ TFJOB_GUARDED_BY(mu_);
  controller::RediscoveryThrottle composite_prompts_ TFJOB_GUARDED_BY(mu_);
};

}  // namespace tfjob::operator_
