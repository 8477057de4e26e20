#include "api/pod_json.h"

#include <charconv>

#include "api/json_fields.h"
#include "api/labels.h"

namespace tfjob::api {
namespace {

using nlohmann::json;

// The lenient reader of json_fields.h: a pod's field of the wrong type reads as absent.
std::string Str(const json& obj, std::string_view key) {
  return StringField(obj, key);
}

StatusOr<ChildMeta> DecodeMeta(const json& j) {
  if (!j.is_object()) return DataLossError("object is not a JSON object");
  auto m = j.find("metadata");
  if (m == j.end() || !m->is_object()) return DataLossError("object has no metadata");
  ChildMeta meta;
  meta.name = Str(*m, "name");
  meta.ns = Str(*m, "namespace");
  meta.uid = Str(*m, "uid");
  meta.resource_version = Str(*m, "resourceVersion");
  if (auto l = m->find("labels"); l != m->end() && l->is_object()) {
    meta.job_name = Str(*l, kLabelJobName);
    meta.replica_type = ParseReplicaTypeLabel(Str(*l, kLabelReplicaType));
    std::string index = Str(*l, kLabelReplicaIndex);
    int32_t v = 0;
    auto [ptr, ec] = std::from_chars(index.data(), index.data() + index.size(), v);
    if (!index.empty() && ec == std::errc() && ptr == index.data() + index.size() && v >= 0) meta.replica_index = v;
  }
  if (auto refs = m->find("ownerReferences"); refs != m->end() && refs->is_array())
    for (const json& r : *refs)
      if (r.is_object() && r.value("controller", json(false)) == true) {
        meta.controller_uid = Str(r, "uid");
      }
  if (auto d = m->find("deletionTimestamp"); d != m->end() && d->is_string())
    meta.deletion_timestamp = ParseTime(d->get<std::string>());
  return meta;
}

std::vector<ContainerStatus> DecodeContainerStatuses(const json& list) {
  std::vector<ContainerStatus> out;
  if (!list.is_array()) return out;
  for (const json& c : list) {
    if (!c.is_object()) continue;
    ContainerStatus s;
    s.name = Str(c, "name");
    if (auto rc = c.find("restartCount"); rc != c.end() && rc->is_number_integer())
      s.restart_count = rc->get<int32_t>();
    if (auto st = c.find("state"); st != c.end() && st->is_object()) {
      if (auto t = st->find("terminated"); t != st->end() && t->is_object()) {
        s.terminated = true;
        if (auto ec = t->find("exitCode"); ec != t->end() && ec->is_number_integer()) s.exit_code = ec->get<int32_t>();
        s.terminated_reason = Str(*t, "reason");
        s.terminated_message = Str(*t, "message");
      }
      if (auto w = st->find("waiting"); w != st->end() && w->is_object()) {
        s.waiting_reason = Str(*w, "reason");
        s.waiting_message = Str(*w, "message");
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

StatusOr<Pod> DecodePod(const json& j) {
  TFJOB_ASSIGN_OR_RETURN(ChildMeta meta, DecodeMeta(j));
  Pod pod;
  pod.meta = std::move(meta);
  if (auto spec = j.find("spec"); spec != j.end() && spec->is_object()) pod.node_name = Str(*spec, "nodeName");
  if (auto st = j.find("status"); st != j.end() && st->is_object()) {
    pod.phase = ParsePodPhase(Str(*st, "phase"));
    if (auto cs = st->find("containerStatuses"); cs != st->end()) pod.container_statuses = DecodeContainerStatuses(*cs);
    if (auto cs = st->find("initContainerStatuses"); cs != st->end())
      pod.init_container_statuses = DecodeContainerStatuses(*cs);
    if (auto conds = st->find("conditions"); conds != st->end() && conds->is_array()) {
      for (const json& c : *conds) {
        if (c.is_object() && Str(c, "type") == "DisruptionTarget" && Str(c, "status") == "True") {
          pod.disruption_reason = Str(c, "reason").empty() ? "DisruptionTarget" : Str(c, "reason");
          pod.disruption_message = Str(c, "message");
        }
        if (!c.is_object() || Str(c, "status") == "True") continue;
        PodCondition pc{Str(c, "type"), Str(c, "status"), Str(c, "reason"), Str(c, "message"), std::nullopt};
        if (auto t = c.find("lastTransitionTime"); t != c.end() && t->is_string())
          pc.last_transition_time = ParseTime(t->get<std::string>());
        pod.conditions.push_back(std::move(pc));
      }
    }
    if (pod.disruption_reason.empty() && pod.phase == PodPhase::kFailed && Str(*st, "reason") == "Evicted") {
      pod.disruption_reason = "Evicted";
      pod.disruption_message = Str(*st, "message");
    }
  }
  return pod;
}

StatusOr<Service> DecodeService(const json& j) {
  TFJOB_ASSIGN_OR_RETURN(ChildMeta meta, DecodeMeta(j));
  return Service{std::move(meta)};
}

}  // namespace tfjob::api
