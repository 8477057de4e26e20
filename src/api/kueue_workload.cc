#include "api/kueue_workload.h"

#include "api/json_fields.h"
#include "api/tfjob_json.h"

namespace tfjob::api {
namespace {

using nlohmann::json;

std::string Index(const std::string& path, size_t i) {
  return path + "[" + std::to_string(i) + "]";
}

// The list at `key` (nullptr when absent), after checking it is a list.
const json* ListAt(const FieldReader& r, std::string_view key) {
  const json* v = r.Find(key);
  if (v != nullptr && !v->is_array()) {
    r.Fail(key, *v, "must be a list");
    return nullptr;
  }
  return v;
}

// A list of core/v1 objects kept as they are (tolerations).
json OpaqueList(const FieldReader& r, std::string_view key) {
  const json* v = ListAt(r, key);
  return v != nullptr ? *v : json::array();
}

KueuePodSet DecodePodSet(const json& j, const std::string& path, FieldErrors* errors) {
  FieldReader r(j, path, errors);
  KueuePodSet p;
  p.name = r.String("name").value_or("");
  p.count = r.Integer<int32_t>("count");
  if (const json* t = r.Object("template")) p.pod_template = *t;
  if (const json* t = r.Object("topologyRequest")) {
    FieldReader tr(*t, r.Child("topologyRequest"), errors);
    p.topology_request = KueueTopologyRequest{tr.String("required"), tr.String("preferred"), tr.Bool("unconstrained")};
  }
  return p;
}

KueueWorkloadSpec DecodeSpec(const json& j, FieldErrors* errors) {
  FieldReader r(j, "spec", errors);
  KueueWorkloadSpec s;
  s.queue_name = r.String("queueName").value_or("");
  if (const json* sets = ListAt(r, "podSets"))
    for (size_t i = 0; i < sets->size(); ++i)
      s.pod_sets.push_back(DecodePodSet((*sets)[i], Index(r.Child("podSets"), i), errors));
  if (const json* ref = r.Object("priorityClassRef"); ref != nullptr && !ref->empty()) {
    FieldReader rr(*ref, r.Child("priorityClassRef"), errors);
    s.priority_class_ref = KueuePriorityClassRef{rr.String("group").value_or(""), rr.String("kind").value_or(""),
                                                 rr.String("name").value_or("")};
  }
  s.maximum_execution_time_seconds = r.Integer<int64_t>("maximumExecutionTimeSeconds");
  s.active = r.Bool("active");
  return s;
}

KueueCondition DecodeCondition(const json& j, const std::string& path, FieldErrors* errors) {
  FieldReader r(j, path, errors);
  KueueCondition c;
  c.type = r.String("type").value_or("");
  c.status = r.String("status").value_or("");
  c.reason = r.String("reason").value_or("");
  c.message = r.String("message").value_or("");
  c.observed_generation = r.Integer<int64_t>("observedGeneration");
  c.last_transition_time = r.String("lastTransitionTime").value_or("");
  return c;
}

KueueAdmission DecodeAdmission(const json& j, const std::string& path, FieldErrors* errors) {
  FieldReader r(j, path, errors);
  KueueAdmission a;
  a.cluster_queue = r.String("clusterQueue").value_or("");
  if (const json* list = ListAt(r, "podSetAssignments")) {
    for (size_t i = 0; i < list->size(); ++i) {
      FieldReader ar((*list)[i], Index(r.Child("podSetAssignments"), i), errors);
      KueuePodSetAssignment out;
      out.name = ar.String("name").value_or("");
      out.count = ar.Integer<int32_t>("count");
      for (const auto& [resource, flavor] : ar.StringMap("flavors")) out.flavors.push_back(flavor);
      out.topology_assignment = ar.Find("topologyAssignment") != nullptr;
      a.pod_set_assignments.push_back(std::move(out));
    }
  }
  return a;
}

KueueAdmissionCheck DecodeAdmissionCheck(const json& j, const std::string& path, FieldErrors* errors) {
  FieldReader r(j, path, errors);
  KueueAdmissionCheck c;
  c.name = r.String("name").value_or("");
  c.state = r.String("state").value_or("");
  c.message = r.String("message").value_or("");
  if (const json* list = ListAt(r, "podSetUpdates")) {
    for (size_t i = 0; i < list->size(); ++i) {
      FieldReader ur((*list)[i], Index(r.Child("podSetUpdates"), i), errors);
      KueuePodSetUpdate u;
      u.name = ur.String("name").value_or("");
      u.annotations = ur.StringMap("annotations");
      u.labels = ur.StringMap("labels");
      u.node_selector = ur.StringMap("nodeSelector");
      u.tolerations = OpaqueList(ur, "tolerations");
      c.pod_set_updates.push_back(std::move(u));
    }
  }
  return c;
}

KueueWorkloadStatus DecodeStatus(const json& j, FieldErrors* errors) {
  FieldReader r(j, "status", errors);
  KueueWorkloadStatus s;
  if (const json* list = ListAt(r, "conditions"))
    for (size_t i = 0; i < list->size(); ++i)
      s.conditions.push_back(DecodeCondition((*list)[i], Index(r.Child("conditions"), i), errors));
  if (const json* a = r.Object("admission")) s.admission = DecodeAdmission(*a, r.Child("admission"), errors);
  if (const json* list = ListAt(r, "admissionChecks"))
    for (size_t i = 0; i < list->size(); ++i)
      s.admission_checks.push_back(DecodeAdmissionCheck((*list)[i], Index(r.Child("admissionChecks"), i), errors));
  if (const json* list = ListAt(r, "reclaimablePods")) {
    for (size_t i = 0; i < list->size(); ++i) {
      FieldReader pr((*list)[i], Index(r.Child("reclaimablePods"), i), errors);
      s.reclaimable_pods.push_back({pr.String("name").value_or(""), pr.Integer<int64_t>("count").value_or(0)});
    }
  }
  s.accumulated_past_execution_time_seconds = r.Integer<int64_t>("accumulatedPastExecutionTimeSeconds").value_or(0);
  return s;
}

}  // namespace

const KueueCondition* KueueWorkload::Condition(std::string_view type) const {
  for (const KueueCondition& c : status.conditions)
    if (c.type == type) return &c;
  return nullptr;
}

bool KueueWorkload::ConditionTrue(std::string_view type) const {
  const KueueCondition* c = Condition(type);
  return c != nullptr && c->status == "True";
}

const OwnerReference* KueueWorkload::Controller() const {
  for (const OwnerReference& ref : metadata.owner_references)
    if (ref.controller) return &ref;
  return nullptr;
}

bool KueueWorkload::HasFinalizer(std::string_view finalizer) const {
  for (const std::string& f : finalizers)
    if (f == finalizer) return true;
  return false;
}

StatusOr<KueueWorkload> DecodeKueueWorkload(const json& object) {
  if (!object.is_object()) return DataLossError("undecodable Workload: not a JSON object");
  FieldErrors errors;
  FieldReader top(object, "", &errors);
  KueueWorkload w;
  if (const json* meta = top.Object("metadata")) {
    w.metadata = DecodeObjectMeta(*meta, "metadata", &errors);
    FieldReader mr(*meta, "metadata", &errors);
    if (const json* list = ListAt(mr, "finalizers")) {
      for (size_t i = 0; i < list->size(); ++i) {
        if ((*list)[i].is_string())
          w.finalizers.push_back((*list)[i].get<std::string>());
        else
          errors.push_back(Invalid(Index("metadata.finalizers", i), ShowJsonValue((*list)[i]), "must be a string"));
      }
    }
  }
  if (const json* spec = top.Object("spec")) w.spec = DecodeSpec(*spec, &errors);
  if (const json* status = top.Object("status")) w.status = DecodeStatus(*status, &errors);
  if (!errors.empty())
    return DataLossError("undecodable Workload " + EscapeNonPrintable(w.metadata.ns + "/" + w.metadata.name) + ": " +
                         errors.front().ToString());
  w.object = object;
  return w;
}

json EncodeKueueConditions(const std::vector<KueueCondition>& conditions) {
  json out = json::array();
  for (const KueueCondition& c : conditions) {
    json j = {{"type", c.type},
              {"status", c.status},
              {"reason", c.reason},
              {"message", c.message},
              {"lastTransitionTime", c.last_transition_time}};
    if (c.observed_generation) j["observedGeneration"] = *c.observed_generation;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace tfjob::api
