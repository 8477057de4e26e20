#pragma once
// The gang schedulers' group objects as the operator observes them, decoded once where they
// enter the process (the gang integrations' informers, operator/gang_crd.cc and gang_native.cc),
// so that the pure core reads typed fields, never JSON (docs/architecture.md, "Gang
// scheduling"):
//   - PodGroup: Volcano's (scheduling.volcano.sh/v1beta1), scheduler-plugins'
//     (scheduling.x-k8s.io/v1alpha1), kube-scheduler's own (scheduling.k8s.io/v1alpha2 and
//     v1beta1, docs/semantics.md D27, D31) and D33's CompositePodGroup (v1beta1): the fields they
//     share by name, each absent where a kind has none;
//   - SchedulingWorkload: kube-scheduler's Workload (scheduling.k8s.io v1alpha2/v1beta1), trimmed
//     to whether it is D33's composite one.
// The PodGroup's spec also stays whole, as opaque payload: the core compares it with the spec it
// renders (a CRD PodGroup whose spec differs is updated, docs/semantics.md 2.8).

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/tfjob.h"
#include "common/status.h"

namespace tfjob::api {

struct PodGroup {
  ObjectMeta metadata;
  std::string phase;  // status.phase ("" while no scheduler has looked at it)
  std::string queue;  // spec.queue (Volcano)
  // spec.schedulingPolicy.gang.minCount (scheduling.k8s.io); nullopt for the basic policy.
  std::optional<int64_t> gang_min_count;
  // The whole spec as served: compared whole, never read field by field.
  nlohmann::json spec = nlohmann::json::object();
  friend bool operator==(const PodGroup&, const PodGroup&) = default;
};

struct SchedulingWorkload {
  ObjectMeta metadata;
  bool composite = false;  // spec.compositePodGroupTemplates is not empty (D33)
  friend bool operator==(const SchedulingWorkload&, const SchedulingWorkload&) = default;
};

// kDataLoss naming the first field of the wrong shape ("undecodable PodGroup ns/name:
// spec.schedulingPolicy.gang.minCount: Invalid value: \"3\": must be an integer"); an absent (or
// null) field reads as empty.
StatusOr<PodGroup> DecodePodGroup(const nlohmann::json& object);
StatusOr<SchedulingWorkload> DecodeSchedulingWorkload(const nlohmann::json& object);

// The gang minCount of a scheduling.k8s.io PodGroup's spec, or of a Workload's PodGroupTemplate
// (the same schedulingPolicy); nullopt for the basic policy or a spec of another shape.
std::optional<int64_t> GangMinCountOf(const nlohmann::json& spec);

}  // namespace tfjob::api
