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
StatusOr<tfjob::core::NativeGangApi> ChooseNativeGangApi(const nlohmann::json& api_group);

kube::GroupVersionResource NativeWorkloads(tfjob::core::NativeGangApi api);
kube::GroupVersionResource NativePodGroups(tfjob::core::NativeGangApi api);
// The version of a scheduling.k8s.io resource in one of the versions above; nullopt otherwise.
std::optional<tfjob::core::NativeGangApi> NativeGangApiOf(const kube::GroupVersionResource& gvr);
// Whether a failed call says its version is not (or no longer) served: 404 or 406.
using controller::VersionNotServed;

// The version in use, shared by the informers (as their ListWatchSpec::gvr_source), the
// reconcile (RenderOptions) and the writes: a controller::ApiVersionTracker of
// NativeGangVersionedApi() whose versions are read as core::NativeGangApi. Thread-safe.
class NativeGangApiTracker {
 public:
  static constexpr std::chrono::seconds kMinInterval = controller::ApiVersionTracker::kMinInterval;

  NativeGangApiTracker(kube::RestClient& client, tfjob::core::NativeGangApi initial, Logger log);

  tfjob::core::NativeGangApi current() const;
  // GET /apis/scheduling.k8s.io and ChooseNativeGangApi; on success that version is used from
  // now on (a change is logged). On failure the version in use stays.
  StatusOr<tfjob::core::NativeGangApi> Discover();
  // A call of `gvr` failed with `status`: when that says the version is not served and it is
  // still the version in use, discovers again (at most once per kMinInterval).
  void CallFailed(const kube::GroupVersionResource& gvr, const Status& status) { tracker_.CallFailed(gvr, status); }
  // Discoveries made (for tests and logs).
  int discoveries() const { return tracker_.discoveries(); }
  controller::ApiVersionTracker& tracker() { return tracker_; }
  const controller::ApiVersionTracker& tracker() const { return tracker_; }

 private:
  controller::ApiVersionTracker tracker_;
};

}  // namespace tfjob::operator_
