#include "tfjob/core/render.h"

#include "tfjob/core/gang_scheduler.h"

#include "api/json_fields.h"

#include <algorithm>
#include <cctype>

#include "api/defaults.h"
#include "api/tfjob_json.h"
#include "tfjob/core/composite_gang.h"
#include "tfjob/core/naming.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

constexpr std::string_view kRestartPolicyWarning =
    "Restart policy in pod template will be overwritten by restart policy in replica spec";
constexpr std::string_view kSchedulerNameWarning =
    "Another scheduler is specified when gang-scheduling is enabled and it will not be overwritten";

json OwnerRefs(const api::TfJob& job) {
  return json::array({api::EncodeOwnerReference(GenOwnerReference(job))});
}

const json& EmptyObject() {
  static const json* const empty = new json(json::object());
  return *empty;
}

// obj[key] is a string and not empty.
bool NonEmptyString(const json& obj, std::string_view key) {
  return !api::StringField(obj, key).empty();
}

// The pod's metadata: only labels, annotations and finalizers come from the template's
// (docs/semantics.md 2.5): a template pasted from `kubectl get -o yaml` carries resourceVersion,
// uid, creationTimestamp, managedFields, ownerReferences ..., which a pod create would refuse or
// misread.
json PodMetadata(const api::TfJob& job, api::ReplicaType type, int32_t index, const json& tmeta,
                 const RenderOptions& options) {
  json meta = json::object();
  meta["name"] = ReplicaName(job.metadata.name, type, index);
  meta["namespace"] = job.metadata.ns;
  if (auto a = tmeta.find("annotations"); a != tmeta.end() && a->is_object() && !a->empty()) meta["annotations"] = *a;
  if (auto f = tmeta.find("finalizers"); f != tmeta.end() && f->is_array() && !f->empty()) meta["finalizers"] = *f;
  json labels = api::ObjectField(tmeta, "labels");
  for (const auto& [k, v] : ReplicaLabels(job.metadata.name, type, index)) labels[k] = v;
  if (IsMasterRole(job, type, index)) labels[std::string(kLabelJobRole)] = kJobRoleMaster;
  if (const GangSchedulerPolicy* gang = GangSchedulerFor(options.gang_scheduler_name)) {
    json annotations = api::ObjectField(meta, "annotations");
    gang->LabelPod(job, type, labels, annotations);
    if (!annotations.empty()) meta["annotations"] = std::move(annotations);
  }
  meta["labels"] = std::move(labels);
  meta["ownerReferences"] = OwnerRefs(job);
  return meta;
}

// TF_CONFIG appended to the tensorflow container's env (none: nothing to add).
void AddTfConfig(const std::optional<std::string>& config, json& pod_spec) {
  if (!config) return;
  json pod_tmpl = {{"spec", std::move(pod_spec)}};
  if (json* c = api::FindTensorflowContainer(pod_tmpl)) {
    json& env = (*c)["env"];
    if (!env.is_array()) env = json::array();
    env.push_back({{"name", "TF_CONFIG"}, {"value", *config}});
  }
  pod_spec = std::move(pod_tmpl["spec"]);
}

// Some replica's template names a scheduler other than the gang scheduler's.
bool AnotherSchedulerNamed(const api::TfJob& job, const std::string& scheduler) {
  for (const auto& [k, other] : job.spec.replica_specs) {
    if (!other || !other->pod_template.is_object()) continue;
    const json& os = other->pod_template.value("spec", json::object());
    if (!os.is_object()) continue;
    auto sn = os.find("schedulerName");
    if (sn != os.end() && sn->is_string() && !sn->get<std::string>().empty() && *sn != scheduler) return true;
  }
  return false;
}

const json* TensorflowContainer(const api::TfJob& job, api::ReplicaType type) {
  const api::ReplicaSpec& spec = *job.spec.replica_specs.at(std::string(api::ReplicaTypeName(type)));
  return api::FindTensorflowContainer(spec.pod_template);
}

}  // namespace

std::vector<RenderEvent> PodTemplateEvents(const api::TfJob& job, api::ReplicaType type, const RenderOptions& options) {
  const api::ReplicaSpec& spec = *job.spec.replica_specs.at(std::string(api::ReplicaTypeName(type)));
  const json& tmpl = spec.pod_template.is_object() ? spec.pod_template : EmptyObject();
  std::vector<RenderEvent> out;
  if (NonEmptyString(api::ObjectField(tmpl, "spec"), "restartPolicy"))
    out.push_back({api::EventType::kWarning, "SetPodTemplateRestartPolicy", std::string(kRestartPolicyWarning)});
  const GangSchedulerPolicy* gang = GangSchedulerFor(options.gang_scheduler_name);
  const std::optional<std::string> scheduler = gang ? gang->SchedulerName(options) : std::nullopt;
  if (scheduler && AnotherSchedulerNamed(job, *scheduler))
    out.push_back({api::EventType::kWarning, "SetPodTemplateSchedulerName", std::string(kSchedulerNameWarning)});
  return out;
}

namespace {

api::TfJob Defaulted(api::TfJob job) {
  api::SetDefaults(job);
  return job;
}

}  // namespace

PodRenderer::PodRenderer(api::TfJob job, RenderOptions options)
    : job_(Defaulted(std::move(job))), options_(std::move(options)), tf_config_(job_, options_.tf_config) {}

json PodRenderer::Render(api::ReplicaType type, int32_t index) const {
  return RenderWithEvents(type, index).object;
}

RenderedPod PodRenderer::RenderWithEvents(api::ReplicaType type, int32_t index) const {
  return RenderPod(job_, type, index, options_, tf_config_);
}

StatusOr<json> PodRenderer::RenderService(api::ReplicaType type, int32_t index) const {
  return core::RenderService(job_, type, index);
}

RenderedPod RenderPod(const api::TfJob& job, api::ReplicaType type, int32_t index, const RenderOptions& options) {
  return RenderPod(job, type, index, options, TfConfigGenerator(job, options.tf_config));
}

RenderedPod RenderPod(const api::TfJob& job, api::ReplicaType type, int32_t index, const RenderOptions& options,
                      const TfConfigGenerator& tf_config) {
  const api::ReplicaSpec& spec = *job.spec.replica_specs.at(std::string(api::ReplicaTypeName(type)));
  const json& tmpl = spec.pod_template.is_object() ? spec.pod_template : EmptyObject();
  RenderedPod out;
  json meta = PodMetadata(job, type, index, api::ObjectField(tmpl, "metadata"), options);
  json pod_spec = api::ObjectField(tmpl, "spec");
  AddTfConfig(tf_config.For(type, index), pod_spec);
  out.events = PodTemplateEvents(job, type, options);
  // ExitCode is ours: the kubelet never restarts such a pod, the operator decides (3.4 c).
  pod_spec["restartPolicy"] = spec.restart_policy == api::RestartPolicy::kExitCode
                                  ? std::string(api::EnumName(api::RestartPolicy::kNever))
                                  : spec.restart_policy.text();
  if (const GangSchedulerPolicy* gang = GangSchedulerFor(options.gang_scheduler_name))
    gang->SchedulePod(job, type, options, pod_spec);
  out.object = {{"apiVersion", "v1"}, {"kind", "Pod"}, {"metadata", std::move(meta)}, {"spec", std::move(pod_spec)}};
  return out;
}

bool HasService(const api::TfJob& job, api::ReplicaType type) {
  return TensorflowContainer(job, type) != nullptr;
}

StatusOr<json> RenderService(const api::TfJob& job, api::ReplicaType type, int32_t index) {
  const json* c = TensorflowContainer(job, type);
  if (c == nullptr) return InvalidArgumentError("failed to find the port");
  json ports = json::array();
  if (auto p = c->find("ports"); p != c->end() && p->is_array()) {
    for (const json& port : *p) {
      if (!port.is_object() || !port.contains("containerPort")) continue;
      ports.push_back({{"name", api::StringField(port, "name")}, {"port", port["containerPort"]}});
    }
  }
  auto labels = ReplicaLabels(job.metadata.name, type, index);
  json meta = {{"name", ReplicaName(job.metadata.name, type, index)},
               {"namespace", job.metadata.ns},
               {"labels", labels},
               {"ownerReferences", OwnerRefs(job)}};
  json svc_spec = {
      {"clusterIP", "None"}, {"selector", labels}, {"ports", std::move(ports)}, {"publishNotReadyAddresses", true}};
  return json{{"apiVersion", "v1"}, {"kind", "Service"}, {"metadata", std::move(meta)}, {"spec", std::move(svc_spec)}};
}

StatusOr<RenderedJob> RenderJob(const api::TfJob& job, const RenderOptions& options) {
  RenderedJob out;
  const PodRenderer renderer(job, options);
  if (auto workload = RenderWorkload(job, options)) out.objects.push_back(std::move(*workload));
  if (auto pg = RenderPodGroup(job, options, "", BuiltinPriorityClasses())) out.objects.push_back(std::move(*pg));
  if (UsesCompositeGang(job, options)) {  // D33: the CompositePodGroup, then its PodGroups
    out.objects.push_back(RenderCompositePodGroup(job));
    for (CompositeMember m : kCompositeMembers) out.objects.push_back(RenderCompositeMemberPodGroup(job, m));
  }
  for (const auto& [type, spec] : api::ReplicaSpecsByType(job.spec)) {
    for (int32_t i = 0; i < api::ReplicasOrDefault(*spec); ++i) {
      RenderedPod pod = renderer.RenderWithEvents(type, i);
      out.objects.push_back(std::move(pod.object));
      for (auto& e : pod.events)
        if (std::find(out.events.begin(), out.events.end(), e) == out.events.end()) out.events.push_back(std::move(e));
    }
    for (int32_t i = 0; i < api::ReplicasOrDefault(*spec); ++i) {
      TFJOB_ASSIGN_OR_RETURN(json svc, renderer.RenderService(type, i));
      out.objects.push_back(std::move(svc));
    }
  }
  return out;
}

}  // namespace tfjob::core
