#include "tfjob/core/kueue_workload.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>

#include "api/json_fields.h"
#include "api/labels.h"
#include "api/tfjob_json.h"
#include "common/sha1.h"
#include "tfjob/core/naming.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

constexpr size_t kHashLength = 5;

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

const api::ReplicaSpec* SpecOf(const api::TfJob& job, api::ReplicaType type) {
  for (const auto& typed : api::ReplicaSpecsByType(job.spec))
    if (typed.type == type) return typed.spec;
  return nullptr;
}

// The template's string annotation `key`, if set.
std::optional<std::string> Annotation(const json& pod_template, std::string_view key) {
  const json& annotations = api::ObjectField(api::ObjectField(pod_template, "metadata"), "annotations");
  auto it = annotations.find(std::string(key));
  if (it == annotations.end() || !it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

// Go's strconv.ParseInt(s, 10, 32): an optional sign and decimal digits, in range.
std::optional<int32_t> ParseInt32(std::string_view s) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  int32_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

// Go's strconv.ParseBool.
std::optional<bool> ParseBool(std::string_view s) {
  static const std::set<std::string_view> kTrue = {"1", "t", "T", "TRUE", "true", "True"};
  static const std::set<std::string_view> kFalse = {"0", "f", "F", "FALSE", "false", "False"};
  if (kTrue.contains(s)) return true;
  if (kFalse.contains(s)) return false;
  return std::nullopt;
}

// The PodSet's topologyRequest from the template's annotations (Kueue's builder with a pod index
// label, so never null). Required wins over preferred over unconstrained; a slice layer needs
// both the slice topology and its size.
StatusOr<json> TopologyRequest(const json& pod_template) {
  json request = json::object();
  auto required = Annotation(pod_template, kKueueRequiredTopology);
  auto preferred = Annotation(pod_template, kKueuePreferredTopology);
  auto unconstrained = Annotation(pod_template, kKueueUnconstrainedTopology);
  if (required) {
    request["required"] = *required;
  } else if (preferred) {
    request["preferred"] = *preferred;
  } else if (unconstrained) {
    auto b = ParseBool(*unconstrained);
    if (!b)
      return Status(StatusCode::kInvalidArgument,
                    std::string(kKueueUnconstrainedTopology) + ": not a boolean: \"" + *unconstrained + "\"");
    request["unconstrained"] = *b;
  }
  auto slice_topology = Annotation(pod_template, kKueueSliceRequiredTopology);
  auto slice_size = Annotation(pod_template, kKueueSliceSize);
  if (slice_topology && slice_size) {
    auto size = ParseInt32(*slice_size);
    if (!size)
      return Status(StatusCode::kInvalidArgument,
                    std::string(kKueueSliceSize) + ": not a 32-bit integer: \"" + *slice_size + "\"");
    request["podSetSliceRequiredTopology"] = *slice_topology;
    request["podSetSliceSize"] = *size;
  }
  request["podIndexLabel"] = std::string(api::kLabelReplicaIndex);
  auto group = Annotation(pod_template, kKueuePodSetGroupName);
  if (group && (required || preferred)) request["podSetGroupName"] = *group;
  return request;
}

// Duplicate env entries of one container reduced to the last of each name, at the place of the
// first (Kueue sanitizes PodSets so).
void DedupeEnv(json* container) {
  if (!container->is_object()) return;
  auto env = container->find("env");
  if (env == container->end() || !env->is_array()) return;
  std::vector<std::string> order;
  std::map<std::string, json> last;
  json unnamed = json::array();
  for (const json& e : *env) {
    if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) {
      unnamed.push_back(e);
      continue;
    }
    const std::string name = e["name"].get<std::string>();
    if (!last.contains(name)) order.push_back(name);
    last[name] = e;
  }
  json out = json::array();
  for (const std::string& name : order) out.push_back(last[name]);
  for (json& e : unnamed) out.push_back(std::move(e));
  *env = std::move(out);
}

json SanitizedTemplate(json pod_template) {
  if (!pod_template.is_object()) return json::object();
  auto spec = pod_template.find("spec");
  if (spec == pod_template.end() || !spec->is_object()) return pod_template;
  for (const char* field : {"containers", "initContainers"}) {
    auto list = spec->find(field);
    if (list == spec->end() || !list->is_array()) continue;
    for (json& c : *list) DedupeEnv(&c);
  }
  return pod_template;
}

// obj[key] when it is a list, else an empty list.
json List(const json& obj, const char* key) {
  if (!obj.is_object()) return json::array();
  auto it = obj.find(key);
  return it != obj.end() && it->is_array() ? *it : json::array();
}

// A condition of `type` is True (any of them, should there be two).
bool HasTrueCondition(const api::KueueWorkload& workload, std::string_view type) {
  for (const api::KueueCondition& c : workload.status.conditions)
    if (c.type == type && c.status == "True") return true;
  return false;
}

}  // namespace

const std::string* JobLabel(const api::TfJob& job, std::string_view key) {
  auto it = job.metadata.labels.find(std::string(key));
  return it == job.metadata.labels.end() ? nullptr : &it->second;
}

std::string KueueWorkloadName(std::string_view kind, std::string_view group, std::string_view owner_name,
                              std::string_view owner_uid, size_t max_length) {
  std::string prefix = Lower(kind) + "-" + std::string(owner_name);
  const size_t max_prefix = max_length - 1 - kHashLength;
  if (prefix.size() > max_prefix) prefix.resize(max_prefix);
  std::string hashed;
  hashed.append(kind).append("\n").append(group).append("\n").append(owner_name).append("\n").append(owner_uid);
  return prefix + "-" + Sha1Hex(hashed).substr(0, kHashLength);
}

std::string KueueWorkloadNameForJob(const api::TfJob& job, size_t max_length) {
  return KueueWorkloadName(api::kKind, api::kGroup, job.metadata.name, job.metadata.uid, max_length);
}

std::string KueueQueueName(const api::TfJob& job) {
  const std::string* v = JobLabel(job, kLabelKueueQueueName);
  return v ? *v : "";
}

std::optional<int32_t> KueueMaxExecutionTimeSeconds(const api::TfJob& job) {
  const std::string* v = JobLabel(job, kKueueMaxExecTimeLabel);
  if (!v) return std::nullopt;
  auto parsed = ParseInt32(*v);
  if (!parsed || *parsed <= 0) return std::nullopt;
  return parsed;
}

std::optional<std::string> KueuePrebuiltWorkloadName(const api::TfJob& job) {
  const std::string* v = JobLabel(job, kKueuePrebuiltWorkloadLabel);
  if (!v) return std::nullopt;
  return *v;
}

std::vector<api::ReplicaType> KueuePodSetOrder(const api::TfJob& job) {
  static constexpr api::ReplicaType kOrder[] = {api::ReplicaType::kChief, api::ReplicaType::kMaster,
                                                api::ReplicaType::kPS, api::ReplicaType::kWorker,
                                                api::ReplicaType::kEvaluator};
  std::vector<api::ReplicaType> out;
  for (api::ReplicaType t : kOrder)
    if (SpecOf(job, t)) out.push_back(t);
  return out;
}

std::string KueuePodSetName(api::ReplicaType type) {
  return Lower(api::ReplicaTypeName(type));
}

StatusOr<KueuePriority> KueueWorkloadPriority(const api::TfJob& job, const KueuePriorityClasses& classes) {
  if (const std::string* wpc = JobLabel(job, kKueuePriorityClassLabel); wpc && !wpc->empty()) {
    auto it = classes.workload_priority_classes.find(*wpc);
    if (it == classes.workload_priority_classes.end())
      return Status(StatusCode::kNotFound, "WorkloadPriorityClass \"" + *wpc + "\" not found");
    return KueuePriority{"WorkloadPriorityClass", *wpc, it->second};
  }
  std::string pc;
  const auto& sp = job.spec.run_policy.scheduling_policy;
  if (sp && !sp->priority_class.empty()) {
    pc = sp->priority_class;
  } else {
    for (api::ReplicaType t : KueuePodSetOrder(job)) {
      const json& pod_spec = api::ObjectField(SpecOf(job, t)->pod_template, "spec");
      auto name = pod_spec.find("priorityClassName");
      if (name != pod_spec.end() && name->is_string() && !name->get<std::string>().empty()) {
        pc = name->get<std::string>();
        break;
      }
    }
  }
  if (pc.empty()) {
    if (classes.global_default)
      return KueuePriority{"PriorityClass", classes.global_default->first, classes.global_default->second};
    return KueuePriority{};
  }
  auto it = classes.priority_classes.find(pc);
  if (it == classes.priority_classes.end())
    return Status(StatusCode::kNotFound, "PriorityClass \"" + pc + "\" not found");
  return KueuePriority{"PriorityClass", pc, it->second};
}

json KueuePriorityClassRef(const KueuePriority& priority) {
  if (priority.kind.empty()) return nullptr;
  const bool workload_class = priority.kind == "WorkloadPriorityClass";
  return {{"group", workload_class ? std::string(kKueueGroup) : std::string("scheduling.k8s.io")},
          {"kind", priority.kind},
          {"name", priority.name}};
}

StatusOr<json> KueuePodSets(const api::TfJob& job, const KueueOptions& options) {
  json pod_sets = json::array();
  for (api::ReplicaType t : KueuePodSetOrder(job)) {
    const api::ReplicaSpec& spec = *SpecOf(job, t);
    json pod_set = {{"name", KueuePodSetName(t)},
                    {"count", api::ReplicasOrDefault(spec)},
                    {"template", SanitizedTemplate(spec.pod_template)}};
    if (options.topology_aware_scheduling) {
      auto request = TopologyRequest(spec.pod_template);
      if (!request.ok())
        return request.status().WithContext("spec.tfReplicaSpecs[" + std::string(api::ReplicaTypeName(t)) +
                                            "].template.metadata.annotations");
      pod_set["topologyRequest"] = *std::move(request);
    }
    pod_sets.push_back(std::move(pod_set));
  }
  return pod_sets;
}

StatusOr<json> RenderKueueWorkload(const api::TfJob& job, const KueuePriority& priority, const KueueOptions& options) {
  auto pod_sets = KueuePodSets(job, options);
  if (!pod_sets.ok()) return pod_sets.status();
  json labels = json::object();
  for (const std::string& key : options.label_keys_to_copy)
    if (const std::string* v = JobLabel(job, key)) labels[key] = *v;
  // A uid is always a valid label value (36 characters of [0-9a-f-]); an empty one is not set.
  if (!job.metadata.uid.empty()) labels[std::string(kKueueJobUidLabel)] = job.metadata.uid;
  json meta = {{"name", KueueWorkloadNameForJob(job, options.max_name_length)},
               {"namespace", job.metadata.ns},
               {"finalizers", json::array({std::string(kKueueResourceInUseFinalizer)})},
               {"ownerReferences", json::array({api::EncodeOwnerReference(GenOwnerReference(job))})}};
  if (!labels.empty()) meta["labels"] = std::move(labels);
  json annotations = json::object();
  for (const auto& [k, v] : job.metadata.annotations)
    if (k.starts_with(kKueueProvReqAnnotationPrefix)) annotations[k] = v;
  if (!annotations.empty()) meta["annotations"] = std::move(annotations);
  json spec = {{"queueName", KueueQueueName(job)}, {"podSets", *std::move(pod_sets)}, {"priority", priority.value}};
  if (json ref = KueuePriorityClassRef(priority); !ref.is_null()) spec["priorityClassRef"] = std::move(ref);
  if (auto max_exec = KueueMaxExecutionTimeSeconds(job)) spec["maximumExecutionTimeSeconds"] = *max_exec;
  return json{{"apiVersion", std::string(kKueueApiVersion)},
              {"kind", "Workload"},
              {"metadata", std::move(meta)},
              {"spec", std::move(spec)}};
}

bool KueueWorkloadMatchesJob(const api::TfJob& job, const json& pod_sets, const api::KueueWorkload& workload) {
  std::string owner;
  for (const api::OwnerReference& ref : workload.metadata.owner_references)
    if (ref.controller) owner = ref.name;
  if (owner != job.metadata.name) return false;
  if (workload.spec.maximum_execution_time_seconds.value_or(-1) != KueueMaxExecutionTimeSeconds(job).value_or(-1))
    return false;
  const std::vector<api::KueuePodSet>& wl_sets = workload.spec.pod_sets;
  if (wl_sets.size() != pod_sets.size()) return false;
  const bool ignore_tolerations = HasTrueCondition(workload, "QuotaReserved");
  for (size_t i = 0; i < pod_sets.size(); ++i) {
    // `pod_sets` is rendered here (KueuePodSets): every PodSet has its name, count and template.
    const json& a = pod_sets[i];
    const api::KueuePodSet& b = wl_sets[i];
    if (a.at("name") != b.name || a.at("count") != b.count.value_or(-1)) return false;
    const json& sa = api::ObjectField(a.at("template"), "spec");
    const json& sb = api::ObjectField(b.pod_template, "spec");
    for (const char* field : {"containers", "initContainers"})
      if (List(sa, field) != List(sb, field)) return false;
    if (!ignore_tolerations && List(sa, "tolerations") != List(sb, "tolerations")) return false;
  }
  return true;
}

}  // namespace tfjob::core
