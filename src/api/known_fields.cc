#include "api/known_fields.h"

#include <initializer_list>
#include <set>
#include <string_view>

#include "api/field_error.h"

namespace tfjob::api {
namespace {

using nlohmann::json;
using Names = std::set<std::string, std::less<>>;

// Field names: the TFJob v1 types (the CRD in config/crd) and the core/v1 and meta/v1 types of
// Kubernetes v1.36 (scripts/versions.env pins the control plane the tests run).
const Names kTfJob = {"apiVersion", "kind", "metadata", "spec", "status"};
const Names kObjectMeta = {"name",
                           "generateName",
                           "namespace",
                           "selfLink",
                           "uid",
                           "resourceVersion",
                           "generation",
                           "creationTimestamp",
                           "deletionTimestamp",
                           "deletionGracePeriodSeconds",
                           "labels",
                           "annotations",
                           "ownerReferences",
                           "finalizers",
                           "managedFields"};
const Names kSpec = {"runPolicy", "successPolicy", "tfReplicaSpecs", "enableDynamicWorker", "managedBy"};
const Names kRunPolicy = {"cleanPodPolicy", "ttlSecondsAfterFinished", "activeDeadlineSeconds",
                          "backoffLimit",   "schedulingPolicy",        "suspend",
                          "managedBy"};
const Names kSchedulingPolicy = {"minAvailable", "queue", "minResources", "priorityClass", "scheduleTimeoutSeconds"};
const Names kReplicaSpec = {"replicas", "template", "restartPolicy"};
const Names kPodTemplate = {"metadata", "spec"};
const Names kPodSpec = {"volumes",
                        "initContainers",
                        "containers",
                        "ephemeralContainers",
                        "restartPolicy",
                        "terminationGracePeriodSeconds",
                        "activeDeadlineSeconds",
                        "dnsPolicy",
                        "nodeSelector",
                        "serviceAccountName",
                        "serviceAccount",
                        "automountServiceAccountToken",
                        "nodeName",
                        "hostNetwork",
                        "hostPID",
                        "hostIPC",
                        "shareProcessNamespace",
                        "securityContext",
                        "imagePullSecrets",
                        "hostname",
                        "subdomain",
                        "affinity",
                        "schedulerName",
                        "tolerations",
                        "hostAliases",
                        "priorityClassName",
                        "priority",
                        "dnsConfig",
                        "readinessGates",
                        "runtimeClassName",
                        "enableServiceLinks",
                        "preemptionPolicy",
                        "overhead",
                        "topologySpreadConstraints",
                        "setHostnameAsFQDN",
                        "os",
                        "hostUsers",
                        "schedulingGates",
                        "resourceClaims",
                        "resources",
                        "hostnameOverride",
                        "workloadRef"};
const Names kContainer = {"name",
                          "image",
                          "command",
                          "args",
                          "workingDir",
                          "ports",
                          "envFrom",
                          "env",
                          "resources",
                          "resizePolicy",
                          "restartPolicy",
                          "restartPolicyRules",
                          "volumeMounts",
                          "volumeDevices",
                          "livenessProbe",
                          "readinessProbe",
                          "startupProbe",
                          "lifecycle",
                          "terminationMessagePath",
                          "terminationMessagePolicy",
                          "imagePullPolicy",
                          "securityContext",
                          "stdin",
                          "stdinOnce",
                          "tty"};
const Names kEnvVar = {"name", "value", "valueFrom"};
const Names kContainerPort = {"name", "hostPort", "containerPort", "protocol", "hostIP"};
const Names kResources = {"limits", "requests", "claims"};
const Names kVolumeMount = {"name",    "readOnly",         "recursiveReadOnly", "mountPath",
                            "subPath", "mountPropagation", "subPathExpr"};

class Checker {
 public:
  std::vector<std::string> Finish() && {
    if (left_out_ > 0)
      messages_.push_back(std::to_string(left_out_) + " more unknown field" + (left_out_ == 1 ? "" : "s") +
                          " not shown");
    return std::move(messages_);
  }

  // Reports the keys of `obj` (when it is an object) that are not in `known`; returns obj when
  // it is an object, so callers descend only into objects.
  const json* Keys(const json* obj, const std::string& path, const Names& known) {
    if (obj == nullptr || !obj->is_object()) return nullptr;
    for (auto it = obj->begin(); it != obj->end(); ++it) {
      if (known.contains(it.key())) continue;
      if (messages_.size() >= kMaxUnknownFieldMessages) {
        ++left_out_;
        continue;
      }
      messages_.push_back(EscapeNonPrintable(Join(path, it.key())) + ": unknown field " + QuoteValue(it.key()));
    }
    return obj;
  }

  // Every item of the list at obj[key], each checked against `known`; `each` descends further.
  template <typename Each>
  void List(const json* obj, const std::string& path, std::string_view key, const Names& known, Each each) {
    const json* list = Field(obj, key);
    if (list == nullptr || !list->is_array()) return;
    for (size_t i = 0; i < list->size(); ++i) {
      std::string item = Join(path, key) + "[" + std::to_string(i) + "]";
      if (const json* o = Keys(&(*list)[i], item, known)) each(o, item);
    }
  }

  static const json* Field(const json* obj, std::string_view key) {
    if (obj == nullptr || !obj->is_object()) return nullptr;
    auto it = obj->find(key);
    return it == obj->end() ? nullptr : &*it;
  }
  static std::string Join(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + "." + std::string(key);
  }

 private:
  std::vector<std::string> messages_;
  size_t left_out_ = 0;
};

void CheckContainers(Checker& c, const json* pod_spec, const std::string& path) {
  auto each = [&c](const json* container, const std::string& cpath) {
    c.List(container, cpath, "env", kEnvVar, [](const json*, const std::string&) {});
    c.List(container, cpath, "ports", kContainerPort, [](const json*, const std::string&) {});
    c.List(container, cpath, "volumeMounts", kVolumeMount, [](const json*, const std::string&) {});
    c.Keys(Checker::Field(container, "resources"), Checker::Join(cpath, "resources"), kResources);
  };
  c.List(pod_spec, path, "containers", kContainer, each);
  c.List(pod_spec, path, "initContainers", kContainer, each);
  Names ephemeral = kContainer;
  ephemeral.insert("targetContainerName");
  c.List(pod_spec, path, "ephemeralContainers", ephemeral, each);
}

}  // namespace

std::vector<std::string> UnknownFieldWarnings(const json& tfjob) {
  Checker c;
  const json* top = c.Keys(&tfjob, "", kTfJob);
  c.Keys(Checker::Field(top, "metadata"), "metadata", kObjectMeta);
  const json* spec = c.Keys(Checker::Field(top, "spec"), "spec", kSpec);
  const json* run_policy = c.Keys(Checker::Field(spec, "runPolicy"), "spec.runPolicy", kRunPolicy);
  c.Keys(Checker::Field(run_policy, "schedulingPolicy"), "spec.runPolicy.schedulingPolicy", kSchedulingPolicy);
  const json* specs = Checker::Field(spec, "tfReplicaSpecs");
  if (specs != nullptr && specs->is_object()) {
    for (auto it = specs->begin(); it != specs->end(); ++it) {
      std::string path = "spec.tfReplicaSpecs[" + it.key() + "]";
      const json* rs = c.Keys(&*it, path, kReplicaSpec);
      path += ".template";
      const json* tmpl = c.Keys(Checker::Field(rs, "template"), path, kPodTemplate);
      c.Keys(Checker::Field(tmpl, "metadata"), path + ".metadata", kObjectMeta);
      const json* pod_spec = c.Keys(Checker::Field(tmpl, "spec"), path + ".spec", kPodSpec);
      CheckContainers(c, pod_spec, path + ".spec");
    }
  }
  return std::move(c).Finish();
}

}  // namespace tfjob::api
