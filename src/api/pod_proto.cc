#include "api/pod_proto.h"

#include "api/proto_wire.h"

namespace tfjob::api {
namespace {

using nlohmann::json;
using Field = ProtoReader::Field;
using Wire = ProtoReader::WireType;

// Calls `read` for every field of `message`; false when the message, or what `read` made of a
// field, is malformed.
template <typename Read>
bool ForEachField(std::string_view message, Read&& read) {
  ProtoReader r(message);
  Field f;
  while (r.Next(&f))
    if (!read(f)) return false;
  return r.ok();
}

void SetString(json& obj, const char* key, const Field& f) {
  if (f.type == Wire::kBytes) obj[key] = f.String();
}

void SetInt32(json& obj, const char* key, const Field& f) {
  if (f.type == Wire::kVarint) obj[key] = static_cast<int32_t>(f.Int());
}

bool SetTime(json& obj, const char* key, const Field& f) {
  if (f.type != Wire::kBytes) return true;
  auto text = ProtoTimeText(f.bytes);
  if (!text) return false;
  obj[key] = *text;
  return true;
}

// A map<string, string> entry: key = 1, value = 2.
bool MapEntry(std::string_view entry, json& map) {
  std::string key, value;
  bool ok = ForEachField(entry, [&](const Field& f) {
    if (f.number == 1) key = f.String();
    if (f.number == 2) value = f.String();
    return true;
  });
  if (ok) map[key] = value;
  return ok;
}

// OwnerReference: uid = 4, controller = 6.
bool OwnerReference(std::string_view message, json& refs) {
  json ref = json::object();
  bool ok = ForEachField(message, [&](const Field& f) {
    if (f.number == 4) SetString(ref, "uid", f);
    if (f.number == 6 && f.type == Wire::kVarint) ref["controller"] = f.Bool();
    return true;
  });
  refs.push_back(std::move(ref));
  return ok;
}

// ObjectMeta: name = 1, namespace = 3, uid = 5, resourceVersion = 6, deletionTimestamp = 9,
// labels = 11, ownerReferences = 13.
bool ObjectMeta(std::string_view message, json& meta) {
  return ForEachField(message, [&](const Field& f) {
    switch (f.number) {
      case 1: SetString(meta, "name", f); return true;
      case 3: SetString(meta, "namespace", f); return true;
      case 5: SetString(meta, "uid", f); return true;
      case 6: SetString(meta, "resourceVersion", f); return true;
      case 9: return SetTime(meta, "deletionTimestamp", f);
      case 11: return f.type != Wire::kBytes || MapEntry(f.bytes, meta["labels"]);
      case 13: return f.type != Wire::kBytes || OwnerReference(f.bytes, meta["ownerReferences"]);
      default: return true;
    }
  });
}

// ContainerStateWaiting: reason = 1, message = 2. ContainerStateTerminated: exitCode = 1,
// reason = 3, message = 4.
bool ContainerState(std::string_view message, json& state) {
  return ForEachField(message, [&](const Field& f) {
    if (f.type != Wire::kBytes || (f.number != 1 && f.number != 3)) return true;
    json& out = state[f.number == 1 ? "waiting" : "terminated"];
    out = json::object();
    const bool waiting = f.number == 1;
    return ForEachField(f.bytes, [&](const Field& g) {
      if (waiting && g.number == 1) SetString(out, "reason", g);
      if (waiting && g.number == 2) SetString(out, "message", g);
      if (!waiting && g.number == 1) SetInt32(out, "exitCode", g);
      if (!waiting && g.number == 3) SetString(out, "reason", g);
      if (!waiting && g.number == 4) SetString(out, "message", g);
      return true;
    });
  });
}

// ContainerStatus: name = 1, state = 2, restartCount = 5.
bool ContainerStatus(std::string_view message, json& list) {
  json status = json::object();
  bool ok = ForEachField(message, [&](const Field& f) {
    if (f.number == 1) SetString(status, "name", f);
    if (f.number == 5) SetInt32(status, "restartCount", f);
    if (f.number == 2 && f.type == Wire::kBytes) return ContainerState(f.bytes, status["state"]);
    return true;
  });
  list.push_back(std::move(status));
  return ok;
}

// PodCondition: type = 1, status = 2, lastTransitionTime = 4, reason = 5, message = 6.
bool PodCondition(std::string_view message, json& list) {
  json c = json::object();
  bool ok = ForEachField(message, [&](const Field& f) {
    switch (f.number) {
      case 1: SetString(c, "type", f); return true;
      case 2: SetString(c, "status", f); return true;
      case 4: return SetTime(c, "lastTransitionTime", f);
      case 5: SetString(c, "reason", f); return true;
      case 6: SetString(c, "message", f); return true;
      default: return true;
    }
  });
  list.push_back(std::move(c));
  return ok;
}

// PodStatus: phase = 1, conditions = 2, message = 3, reason = 4, containerStatuses = 8,
// initContainerStatuses = 10.
bool PodStatus(std::string_view message, json& status) {
  return ForEachField(message, [&](const Field& f) {
    switch (f.number) {
      case 1: SetString(status, "phase", f); return true;
      case 3: SetString(status, "message", f); return true;
      case 4: SetString(status, "reason", f); return true;
      case 2: return f.type != Wire::kBytes || PodCondition(f.bytes, status["conditions"]);
      case 8: return f.type != Wire::kBytes || ContainerStatus(f.bytes, status["containerStatuses"]);
      case 10: return f.type != Wire::kBytes || ContainerStatus(f.bytes, status["initContainerStatuses"]);
      default: return true;
    }
  });
}

}  // namespace

StatusOr<json> PodProtoToJson(std::string_view pod) {
  json out = {{"metadata", json::object()}, {"spec", json::object()}, {"status", json::object()}};
  // Pod: metadata = 1, spec = 2 (of it nodeName = 10), status = 3.
  bool ok = ForEachField(pod, [&](const Field& f) {
    if (f.type != Wire::kBytes) return true;
    if (f.number == 1) return ObjectMeta(f.bytes, out["metadata"]);
    if (f.number == 3) return PodStatus(f.bytes, out["status"]);
    if (f.number != 2) return true;
    return ForEachField(f.bytes, [&](const Field& g) {
      if (g.number == 10) SetString(out["spec"], "nodeName", g);
      return true;
    });
  });
  if (!ok) return DataLossError("undecodable Pod (protobuf): malformed message");
  return out;
}

}  // namespace tfjob::api
