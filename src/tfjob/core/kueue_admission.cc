#include "tfjob/core/kueue_admission.h"

#include <algorithm>
#include <set>

#include "api/json_fields.h"

namespace tfjob::core {
namespace {

using nlohmann::json;
using StringMap = std::map<std::string, std::string>;

StringMap ToStringMap(const json& obj) {
  StringMap out;
  if (!obj.is_object()) return out;
  for (auto it = obj.begin(); it != obj.end(); ++it)
    if (it->is_string()) out[it.key()] = it->get<std::string>();
  return out;
}

json ToList(const json& list) {
  return list.is_array() ? list : json::array();
}

// obj[key] when it is a list, else an empty list.
json List(const json& obj, const char* key) {
  if (!obj.is_object()) return json::array();
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? *it : json::array();
}

// Kueue's map merge: a key already set to another value is a conflict; else `from` is copied in.
Status MergeMap(const StringMap& from, const char* what, StringMap* into) {
  for (const auto& [k, v] : from) {
    auto it = into->find(k);
    if (it != into->end() && it->second != v)
      return Status(StatusCode::kInvalidArgument, std::string("conflict for ") + what + ": key " + k + " is \"" +
                                                      it->second + "\", the admission sets \"" + v + "\"");
  }
  for (const auto& [k, v] : from) (*into)[k] = v;
  return OkStatus();
}

// Appends the entries of `from` that `into` lacks.
void MergeList(const json& from, json* into) {
  for (const json& e : ToList(from))
    if (std::find(into->begin(), into->end(), e) == into->end()) into->push_back(e);
}

Status MergeInfo(const KueuePodSetInfo& from, KueuePodSetInfo* into) {
  TFJOB_RETURN_IF_ERROR(MergeMap(from.annotations, "annotations", &into->annotations));
  TFJOB_RETURN_IF_ERROR(MergeMap(from.labels, "labels", &into->labels));
  TFJOB_RETURN_IF_ERROR(MergeMap(from.node_selector, "nodeSelector", &into->node_selector));
  MergeList(from.tolerations, &into->tolerations);
  MergeList(from.scheduling_gates, &into->scheduling_gates);
  return OkStatus();
}

// DNS-1123 label: what a label value must be to name the ClusterQueue.
bool IsDns1123Label(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  return std::all_of(s.begin(), s.end(), [&](char c) { return alnum(c) || c == '-'; });
}

// A field of `obj` as a map or list, set when not empty and removed otherwise.
void SetMapField(json* obj, const char* key, const StringMap& value) {
  if (value.empty())
    obj->erase(key);
  else
    (*obj)[key] = value;
}
void SetListField(json* obj, const char* key, const json& value) {
  if (value.empty())
    obj->erase(key);
  else
    (*obj)[key] = value;
}

// The template's own info: what a merge starts from and a restore compares with.
KueuePodSetInfo TemplateInfo(const json& pod_template) {
  const json& meta = api::ObjectField(pod_template, "metadata");
  const json& spec = api::ObjectField(pod_template, "spec");
  KueuePodSetInfo info;
  info.annotations = ToStringMap(api::ObjectField(meta, "annotations"));
  info.labels = ToStringMap(api::ObjectField(meta, "labels"));
  info.node_selector = ToStringMap(api::ObjectField(spec, "nodeSelector"));
  info.tolerations = List(spec, "tolerations");
  info.scheduling_gates = List(spec, "schedulingGates");
  return info;
}

// Writes the five fields of `info` into the template (the others stay).
json WriteInfo(json pod_template, const KueuePodSetInfo& info) {
  if (!pod_template.is_object()) pod_template = json::object();
  json& meta = pod_template["metadata"];
  if (!meta.is_object()) meta = json::object();
  json& spec = pod_template["spec"];
  if (!spec.is_object()) spec = json::object();
  SetMapField(&meta, "annotations", info.annotations);
  SetMapField(&meta, "labels", info.labels);
  if (meta.empty()) pod_template.erase("metadata");
  SetMapField(&spec, "nodeSelector", info.node_selector);
  SetListField(&spec, "tolerations", info.tolerations);
  SetListField(&spec, "schedulingGates", info.scheduling_gates);
  return pod_template;
}

bool TopologyUnspecified(const api::KueuePodSet& pod_set) {
  const auto& request = pod_set.topology_request;
  return !request || (!request->preferred && !request->required && !request->unconstrained);
}

// RFC 7386 difference: applying it to `from` gives `to`.
json MergeDiff(const json& from, const json& to) {
  if (!from.is_object() || !to.is_object()) return to;
  json diff = json::object();
  for (auto it = from.begin(); it != from.end(); ++it)
    if (!to.contains(it.key())) diff[it.key()] = nullptr;
  for (auto it = to.begin(); it != to.end(); ++it) {
    auto old = from.find(it.key());
    if (old == from.end())
      diff[it.key()] = *it;
    else if (*old != *it)
      diff[it.key()] = MergeDiff(*old, *it);
  }
  return diff;
}

const api::ReplicaSpec* SpecOf(const api::TfJob& job, api::ReplicaType type, std::string* key) {
  const std::string* k = api::ReplicaSpecKey(job.spec, type);
  if (!k) return nullptr;
  auto it = job.spec.replica_specs.find(*k);
  if (it == job.spec.replica_specs.end() || !it->second) return nullptr;
  *key = *k;
  return &*it->second;
}

}  // namespace

namespace {

// One assignment's info before the admission checks' updates: count, topology gate, flavours,
// the workload annotation, the podset and queue labels.
StatusOr<KueuePodSetInfo> AssignmentInfo(const api::KueueWorkload& workload,
                                         const api::KueuePodSetAssignment& assignment, const api::KueuePodSet& pod_set,
                                         const std::map<std::string, KueueFlavor>& flavors,
                                         const KueueOptions& options) {
  KueuePodSetInfo info;
  info.name = assignment.name;
  info.count = assignment.count.value_or(pod_set.count.value_or(0));
  if (options.topology_aware_scheduling && assignment.topology_assignment) {
    if (TopologyUnspecified(pod_set)) info.annotations[std::string(kKueueUnconstrainedTopology)] = "true";
    info.scheduling_gates.push_back({{"name", std::string(kKueueTopologyGate)}});
  }
  // Each flavour once; resources in key order (Kueue walks a Go map here, so its order of
  // tolerations from several flavours is not defined).
  std::set<std::string> seen;
  for (const std::string& ref : assignment.flavors) {
    if (!seen.insert(ref).second) continue;
    auto flavor = flavors.find(ref);
    if (flavor == flavors.end()) return Status(StatusCode::kNotFound, "ResourceFlavor \"" + ref + "\" not found");
    for (const auto& [k, v] : flavor->second.node_labels) info.node_selector[k] = v;
    for (const json& t : ToList(flavor->second.tolerations)) info.tolerations.push_back(t);
  }
  if (options.topology_aware_scheduling)
    info.annotations[std::string(kKueueWorkloadAnnotation)] = workload.metadata.name;
  info.labels[std::string(kKueuePodSetLabel)] = info.name;
  if (options.assign_queue_labels) {
    info.labels[std::string(kKueueLocalQueueLabel)] = workload.spec.queue_name;
    const std::string cq = workload.status.admission ? workload.status.admission->cluster_queue : "";
    if (IsDns1123Label(cq)) info.labels[std::string(kKueueClusterQueueLabel)] = cq;
  }
  return info;
}

// Each admission check's first podSetUpdate for the PodSet, merged in.
Status ApplyPodSetUpdates(const api::KueueWorkload& workload, KueuePodSetInfo* info) {
  for (const api::KueueAdmissionCheck& check : workload.status.admission_checks) {
    for (const api::KueuePodSetUpdate& update : check.pod_set_updates) {
      if (update.name != info->name) continue;
      KueuePodSetInfo from;
      from.annotations = update.annotations;
      from.labels = update.labels;
      from.node_selector = update.node_selector;
      from.tolerations = update.tolerations;
      if (Status s = MergeInfo(from, info); !s.ok()) return s.WithContext("admission check \"" + check.name + "\"");
      break;
    }
  }
  return OkStatus();
}

}  // namespace

StatusOr<std::vector<KueuePodSetInfo>> KueueAdmittedPodSets(const api::KueueWorkload& workload,
                                                            const std::map<std::string, KueueFlavor>& flavors,
                                                            const KueueOptions& options) {
  static const std::vector<api::KueuePodSetAssignment> kNone;
  const auto& assignments = workload.status.admission ? workload.status.admission->pod_set_assignments : kNone;
  const std::vector<api::KueuePodSet>& pod_sets = workload.spec.pod_sets;
  std::vector<KueuePodSetInfo> out;
  for (size_t i = 0; i < assignments.size(); ++i) {
    if (i >= pod_sets.size())
      return Status(StatusCode::kInvalidArgument, "admission has more podSetAssignments than the Workload has podSets");
    auto info = AssignmentInfo(workload, assignments[i], pod_sets[i], flavors, options);
    if (!info.ok()) return info.status();
    TFJOB_RETURN_IF_ERROR(ApplyPodSetUpdates(workload, &*info));
    out.push_back(*std::move(info));
  }
  return out;
}

std::vector<KueuePodSetInfo> KueueOriginalPodSets(const api::KueueWorkload& workload) {
  std::vector<KueuePodSetInfo> out;
  for (const api::KueuePodSet& pod_set : workload.spec.pod_sets) {
    KueuePodSetInfo info = TemplateInfo(pod_set.pod_template);
    info.name = pod_set.name;
    info.count = pod_set.count.value_or(0);
    out.push_back(std::move(info));
  }
  return out;
}

StatusOr<json> MergePodSetInfo(json pod_template, const KueuePodSetInfo& info) {
  KueuePodSetInfo merged = TemplateInfo(pod_template);
  TFJOB_RETURN_IF_ERROR(MergeInfo(info, &merged));
  return WriteInfo(std::move(pod_template), merged);
}

json RestorePodSetInfo(json pod_template, const KueuePodSetInfo& info) {
  // Fields already equal stay as written (an empty map is not replaced by an absent one).
  KueuePodSetInfo current = TemplateInfo(pod_template);
  KueuePodSetInfo target = info;
  target.name = current.name;
  target.count = current.count;
  if (current == target) return pod_template;
  return WriteInfo(std::move(pod_template), info);
}

StatusOr<KueueJobUpdate> KueueStartJob(const api::TfJob& job, const std::vector<KueuePodSetInfo>& infos) {
  const std::vector<api::ReplicaType> order = KueuePodSetOrder(job);
  if (infos.size() != order.size())
    return Status(StatusCode::kInvalidArgument, "the admission has " + std::to_string(infos.size()) +
                                                    " podsets, the job " + std::to_string(order.size()));
  KueueJobUpdate update{.suspend = false};
  for (api::ReplicaType type : order) {
    const std::string name = KueuePodSetName(type);
    auto info = std::find_if(infos.begin(), infos.end(), [&](const KueuePodSetInfo& i) { return i.name == name; });
    if (info == infos.end())
      return Status(StatusCode::kInvalidArgument, "the admission has no podset \"" + name + "\"");
    std::string key;
    const api::ReplicaSpec* spec = SpecOf(job, type, &key);
    auto merged = MergePodSetInfo(spec->pod_template, *info);
    if (!merged.ok()) return merged.status().WithContext("podset \"" + name + "\"");
    if (*merged != spec->pod_template) update.templates[key] = *std::move(merged);
  }
  return update;
}

KueueJobUpdate KueueStopJob(const api::TfJob& job, const std::vector<KueuePodSetInfo>& infos) {
  KueueJobUpdate update{.suspend = true};
  for (api::ReplicaType type : KueuePodSetOrder(job)) {
    const std::string name = KueuePodSetName(type);
    auto info = std::find_if(infos.begin(), infos.end(), [&](const KueuePodSetInfo& i) { return i.name == name; });
    if (info == infos.end()) continue;
    std::string key;
    const api::ReplicaSpec* spec = SpecOf(job, type, &key);
    json restored = RestorePodSetInfo(spec->pod_template, *info);
    if (restored != spec->pod_template) update.templates[key] = std::move(restored);
  }
  return update;
}

json KueueJobMergePatch(const api::TfJob& job, const KueueJobUpdate& update) {
  json patch = {{"spec", {{"runPolicy", {{"suspend", update.suspend}}}}}};
  if (update.spec_managed_by) patch["spec"]["managedBy"] = *update.spec_managed_by;
  if (!job.metadata.resource_version.empty()) patch["metadata"] = {{"resourceVersion", job.metadata.resource_version}};
  for (const auto& [key, pod_template] : update.templates) {
    auto it = job.spec.replica_specs.find(key);
    const json old = it != job.spec.replica_specs.end() && it->second ? it->second->pod_template : json::object();
    patch["spec"]["tfReplicaSpecs"][key]["template"] = MergeDiff(old, pod_template);
  }
  return patch;
}

}  // namespace tfjob::core
