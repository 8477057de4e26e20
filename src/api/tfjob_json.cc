#include "api/tfjob_json.h"

#include <limits>

#include "api/json_fields.h"

namespace tfjob::api {
namespace {

using nlohmann::json;

using Reader = FieldReader;

RunPolicy DecodeRunPolicy(const json& j, const std::string& path, FieldErrors* errors) {
  Reader r(j, path, errors);
  RunPolicy p;
  p.clean_pod_policy = r.String("cleanPodPolicy");
  p.ttl_seconds_after_finished = r.Integer<int32_t>("ttlSecondsAfterFinished");
  p.active_deadline_seconds = r.Integer<int64_t>("activeDeadlineSeconds");
  p.backoff_limit = r.Integer<int32_t>("backoffLimit");
  p.suspend = r.Bool("suspend");
  p.managed_by = r.String("managedBy");
  if (const json* sp = r.Object("schedulingPolicy")) {
    Reader s(*sp, r.Child("schedulingPolicy"), errors);
    SchedulingPolicy out;
    out.min_available = s.Integer<int32_t>("minAvailable");
    out.queue = s.String("queue").value_or("");
    out.priority_class = s.String("priorityClass").value_or("");
    out.schedule_timeout_seconds = s.Integer<int32_t>("scheduleTimeoutSeconds");
    if (const json* mr = s.Object("minResources")) {
      for (auto it = mr->begin(); it != mr->end(); ++it) {
        if (it->is_string())
          out.min_resources[it.key()] = it->get<std::string>();
        else if (it->is_number())
          out.min_resources[it.key()] = it->dump();
        else
          errors->push_back(
              Invalid(s.Child("minResources") + "[" + it.key() + "]", ShowJsonValue(*it), "must be a quantity"));
      }
    }
    p.scheduling_policy = std::move(out);
  }
  return p;
}

ReplicaSpec DecodeReplicaSpec(const json& j, const std::string& path, FieldErrors* errors) {
  Reader r(j, path, errors);
  ReplicaSpec s;
  s.replicas = r.Integer<int32_t>("replicas");
  s.restart_policy = r.String("restartPolicy").value_or("");
  if (const json* t = r.Object("template")) s.pod_template = *t;
  return s;
}

JobStatus DecodeStatus(const json& j, FieldErrors* errors) {
  Reader r(j, "status", errors);
  JobStatus st;
  st.start_time = r.Timestamp("startTime");
  st.completion_time = r.Timestamp("completionTime");
  st.last_reconcile_time = r.Timestamp("lastReconcileTime");
  if (const json* conds = r.Find("conditions")) {
    if (!conds->is_array()) {
      r.Fail("conditions", *conds, "must be a list");
    } else {
      for (size_t i = 0; i < conds->size(); ++i) {
        Reader c((*conds)[i], "status.conditions[" + std::to_string(i) + "]", errors);
        JobCondition cond;
        cond.type = c.String("type").value_or("");
        cond.status = c.String("status").value_or("");
        cond.reason = c.String("reason").value_or("");
        cond.message = c.String("message").value_or("");
        cond.last_update_time = c.Timestamp("lastUpdateTime");
        cond.last_transition_time = c.Timestamp("lastTransitionTime");
        st.conditions.push_back(std::move(cond));
      }
    }
  }
  if (const json* rs = r.Object("replicaStatuses")) {
    for (auto it = rs->begin(); it != rs->end(); ++it) {
      Reader s(*it, "status.replicaStatuses." + it.key(), errors);
      ReplicaStatus out;
      out.active = s.Integer<int32_t>("active").value_or(0);
      out.succeeded = s.Integer<int32_t>("succeeded").value_or(0);
      out.failed = s.Integer<int32_t>("failed").value_or(0);
      out.restarts = s.Integer<int32_t>("restarts").value_or(0);
      out.disruptions = s.Integer<int32_t>("disruptions").value_or(0);
      st.replica_statuses[it.key()] = out;
    }
  }
  return st;
}

}  // namespace

ObjectMeta DecodeObjectMeta(const json& j, const std::string& path, FieldErrors* errors) {
  Reader r(j, path, errors);
  ObjectMeta m;
  m.name = r.String("name").value_or("");
  m.generate_name = r.String("generateName").value_or("");
  m.ns = r.String("namespace").value_or("");
  m.uid = r.String("uid").value_or("");
  m.resource_version = r.String("resourceVersion").value_or("");
  m.generation = r.Integer<int64_t>("generation").value_or(0);
  m.labels = r.StringMap("labels");
  m.annotations = r.StringMap("annotations");
  m.creation_timestamp = r.Timestamp("creationTimestamp");
  m.deletion_timestamp = r.Timestamp("deletionTimestamp");
  if (const json* refs = r.Find("ownerReferences"); refs != nullptr && refs->is_array()) {
    for (size_t i = 0; i < refs->size(); ++i) {
      Reader o((*refs)[i], r.Child("ownerReferences") + "[" + std::to_string(i) + "]", errors);
      OwnerReference ref;
      ref.api_version = o.String("apiVersion").value_or("");
      ref.kind = o.String("kind").value_or("");
      ref.name = o.String("name").value_or("");
      ref.uid = o.String("uid").value_or("");
      ref.controller = o.Bool("controller").value_or(false);
      ref.block_owner_deletion = o.Bool("blockOwnerDeletion").value_or(false);
      m.owner_references.push_back(std::move(ref));
    }
  }
  return m;
}

TfJob DecodeTfJob(const json& j, FieldErrors* errors) {
  TfJob job;
  Reader top(j, "", errors);
  job.api_version = top.String("apiVersion").value_or("");
  job.kind = top.String("kind").value_or("");
  if (const json* meta = top.Object("metadata")) job.metadata = DecodeObjectMeta(*meta, "metadata", errors);
  if (const json* spec = top.Object("spec")) {
    Reader s(*spec, "spec", errors);
    if (const json* rp = s.Object("runPolicy")) job.spec.run_policy = DecodeRunPolicy(*rp, "spec.runPolicy", errors);
    job.spec.success_policy = s.String("successPolicy");
    job.spec.enable_dynamic_worker = s.Bool("enableDynamicWorker").value_or(false);
    job.spec.managed_by = s.String("managedBy");
    if (const json* specs = s.Object("tfReplicaSpecs")) {
      job.spec.has_replica_specs = true;
      for (auto it = specs->begin(); it != specs->end(); ++it) {
        std::string path = "spec.tfReplicaSpecs[" + it.key() + "]";
        if (it->is_null()) {
          job.spec.replica_specs[it.key()] = std::nullopt;
        } else if (!it->is_object()) {
          errors->push_back(Invalid(path, ShowJsonValue(*it), "must be an object"));
          job.spec.replica_specs[it.key()] = std::nullopt;
        } else {
          job.spec.replica_specs[it.key()] = DecodeReplicaSpec(*it, path, errors);
        }
      }
    }
  }
  if (const json* st = top.Object("status")) job.status = DecodeStatus(*st, errors);
  return job;
}

StatusOr<TfJob> DecodeTfJobStrict(const json& j) {
  FieldErrors errors;
  TfJob job = DecodeTfJob(j, &errors);
  // The status is the controller's own output: a value it cannot read (another writer's
  // "0001-01-01T00:00:00Z", which the schema admits) is left unset and rewritten by the next
  // status write. Rejecting the object instead would hide the whole job from the controller.
  std::erase_if(errors, [](const FieldError& e) { return e.field.starts_with("status."); });
  if (!errors.empty()) return DataLossError("undecodable TFJob: " + AggregateMessage(errors));
  return job;
}

json EncodeOwnerReference(const OwnerReference& ref) {
  return json{{"apiVersion", ref.api_version},
              {"kind", ref.kind},
              {"name", ref.name},
              {"uid", ref.uid},
              {"controller", ref.controller},
              {"blockOwnerDeletion", ref.block_owner_deletion}};
}

json EncodeObjectMeta(const ObjectMeta& m) {
  json j = json::object();
  if (!m.name.empty()) j["name"] = m.name;
  if (!m.generate_name.empty()) j["generateName"] = m.generate_name;
  if (!m.ns.empty()) j["namespace"] = m.ns;
  if (!m.uid.empty()) j["uid"] = m.uid;
  if (!m.resource_version.empty()) j["resourceVersion"] = m.resource_version;
  if (m.generation != 0) j["generation"] = m.generation;
  if (!m.labels.empty()) j["labels"] = m.labels;
  if (!m.annotations.empty()) j["annotations"] = m.annotations;
  if (!m.owner_references.empty()) {
    json refs = json::array();
    for (const auto& r : m.owner_references) refs.push_back(EncodeOwnerReference(r));
    j["ownerReferences"] = std::move(refs);
  }
  if (m.creation_timestamp) j["creationTimestamp"] = FormatTime(*m.creation_timestamp);
  if (m.deletion_timestamp) j["deletionTimestamp"] = FormatTime(*m.deletion_timestamp);
  return j;
}

json EncodeStatus(const JobStatus& st) {
  json j = json::object();
  json conds = json::array();
  for (const auto& c : st.conditions) {
    json cj = {{"type", c.type}, {"status", c.status}};
    if (!c.reason.empty()) cj["reason"] = c.reason;
    if (!c.message.empty()) cj["message"] = c.message;
    if (c.last_update_time) cj["lastUpdateTime"] = FormatTime(*c.last_update_time);
    if (c.last_transition_time) cj["lastTransitionTime"] = FormatTime(*c.last_transition_time);
    conds.push_back(std::move(cj));
  }
  j["conditions"] = std::move(conds);
  json rs = json::object();
  for (const auto& [k, v] : st.replica_statuses) {
    json r = json::object();
    if (v.active != 0) r["active"] = v.active;
    if (v.succeeded != 0) r["succeeded"] = v.succeeded;
    if (v.failed != 0) r["failed"] = v.failed;
    if (v.restarts != 0) r["restarts"] = v.restarts;
    if (v.disruptions != 0) r["disruptions"] = v.disruptions;
    rs[k] = std::move(r);
  }
  j["replicaStatuses"] = std::move(rs);
  if (st.start_time) j["startTime"] = FormatTime(*st.start_time);
  if (st.completion_time) j["completionTime"] = FormatTime(*st.completion_time);
  if (st.last_reconcile_time) j["lastReconcileTime"] = FormatTime(*st.last_reconcile_time);
  return j;
}

}  // namespace tfjob::api
