#include "cli/describe_lookup.h"

#include "api/json_fields.h"
#include "common/logging.h"
#include "controller/api_versions.h"
#include "kube/tfjob_resources.h"
#include "operator/native_gang_api.h"
#include "tfjob/core/composite_gang.h"

namespace tfjob::cli {
namespace {

using nlohmann::json;

// Kueue's Workload as describe reads it: the newest version the server serves.
const controller::VersionedApi& KueueReadApi() {
  static const controller::VersionedApi api{
      kube::kKueueWorkloadsV1beta2.group,
      {{kube::kKueueWorkloadsV1beta2.version, ""}, {kube::kKueueWorkloadsV1beta1.version, ""}},
      "reading Kueue's Workloads"};
  return api;
}

std::string KindOf(const kube::GroupVersionResource& gvr) {
  return gvr.resource + "." + gvr.group;
}

// A kube-scheduler group (D27): named, no phase, its conditions.
PodGroupView NativeView(const kube::GroupVersionResource& gvr, const json& object) {
  PodGroupView v = DecodePodGroupView(KindOf(gvr), object);
  v.native = true;
  v.name = api::StringField(api::ObjectField(object, "metadata"), "name");
  return v;
}

std::optional<PodGroupView> FindNativePodGroup(kube::RestClient& client, const JobView& job) {
  operator_::NativeGangApiTracker tracker(client, core::NativeGangApi::kV1beta1, Logger());
  auto served = tracker.Discover();
  if (!served.ok()) return std::nullopt;  // not served (or discovery refused): nothing to show
  const kube::GroupVersionResource pod_groups = operator_::NativePodGroups(*served);
  if (auto pg = client.Get(pod_groups, job.ns, job.name); pg.ok()) return NativeView(pod_groups, *pg);
  if (!tracker.composite_pod_groups()) return std::nullopt;
  const kube::GroupVersionResource composites = operator_::NativeCompositePodGroups();
  auto cpg = client.Get(composites, job.ns, job.name);
  if (!cpg.ok()) return std::nullopt;
  PodGroupView view = NativeView(composites, *cpg);
  for (core::CompositeMember m : core::kCompositeMembers)
    if (auto member = client.Get(pod_groups, job.ns, core::CompositeMemberPodGroupName(job.name, m)); member.ok())
      view.members.push_back(NativeView(pod_groups, *member));
  return view;
}

}  // namespace

std::optional<kube::GroupVersionResource> ServedKueueWorkloads(kube::RestClient& client) {
  controller::ApiVersionTracker tracker(client, KueueReadApi(), KueueReadApi().versions.front().version, Logger());
  if (!tracker.Discover().ok()) return std::nullopt;  // no Kueue (404), or discovery refused
  return tracker.Resource(kube::kKueueWorkloadsV1beta2.resource);
}

std::optional<WorkloadView> FindWorkload(kube::RestClient& client, const JobView& job) {
  auto workloads = ServedKueueWorkloads(client);
  if (!workloads) return std::nullopt;  // nothing to show
  auto list = client.ListAll(*workloads, job.ns, {}, nullptr);
  if (!list.ok()) return std::nullopt;
  for (const auto& w : *list) {
    const json& meta = api::ObjectField(w, "metadata");
    if (auto refs = meta.find("ownerReferences"); refs != meta.end() && refs->is_array())
      for (const auto& r : *refs)
        if (api::StringField(r, "uid") == job.uid) return DecodeWorkloadView(w);
  }
  return std::nullopt;
}

std::optional<PodGroupView> FindPodGroup(kube::RestClient& client, const JobView& job) {
  for (const auto* gvr : {&kube::kVolcanoPodGroups, &kube::kPluginsPodGroups}) {
    auto pg = client.Get(*gvr, job.ns, job.name);
    if (pg.ok()) return DecodePodGroupView(KindOf(*gvr), *pg);
  }
  return FindNativePodGroup(client, job);
}

}  // namespace tfjob::cli
