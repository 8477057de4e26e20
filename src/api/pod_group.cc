#include "api/pod_group.h"

#include "api/json_fields.h"
#include "api/tfjob_json.h"

namespace tfjob::api {
namespace {

using nlohmann::json;

// metadata, when present, decoded into *meta.
void DecodeMeta(const FieldReader& top, ObjectMeta* meta, FieldErrors* errors) {
  if (const json* m = top.Object("metadata")) *meta = DecodeObjectMeta(*m, "metadata", errors);
}

Status Undecodable(const char* kind, const ObjectMeta& meta, const FieldErrors& errors) {
  return DataLossError(std::string("undecodable ") + kind + " " + EscapeNonPrintable(meta.ns + "/" + meta.name) + ": " +
                       errors.front().ToString());
}

// spec.schedulingPolicy.gang.minCount, type-checked.
std::optional<int64_t> DecodeGangMinCount(const json& spec, FieldErrors* errors) {
  FieldReader r(spec, "spec", errors);
  const json* policy = r.Object("schedulingPolicy");
  if (policy == nullptr) return std::nullopt;
  FieldReader p(*policy, r.Child("schedulingPolicy"), errors);
  const json* gang = p.Object("gang");
  if (gang == nullptr) return std::nullopt;
  return FieldReader(*gang, p.Child("gang"), errors).Integer<int64_t>("minCount");
}

}  // namespace

StatusOr<PodGroup> DecodePodGroup(const json& object) {
  if (!object.is_object()) return DataLossError("undecodable PodGroup: not a JSON object");
  FieldErrors errors;
  FieldReader top(object, "", &errors);
  PodGroup pg;
  DecodeMeta(top, &pg.metadata, &errors);
  if (const json* spec = top.Object("spec")) {
    pg.spec = *spec;
    pg.queue = FieldReader(*spec, "spec", &errors).String("queue").value_or("");
    pg.gang_min_count = DecodeGangMinCount(*spec, &errors);
  }
  if (const json* status = top.Object("status"))
    pg.phase = FieldReader(*status, "status", &errors).String("phase").value_or("");
  if (!errors.empty()) return Undecodable("PodGroup", pg.metadata, errors);
  return pg;
}

StatusOr<SchedulingWorkload> DecodeSchedulingWorkload(const json& object) {
  if (!object.is_object()) return DataLossError("undecodable Workload: not a JSON object");
  FieldErrors errors;
  FieldReader top(object, "", &errors);
  SchedulingWorkload w;
  DecodeMeta(top, &w.metadata, &errors);
  if (const json* spec = top.Object("spec")) {
    FieldReader r(*spec, "spec", &errors);
    if (const json* templates = r.Find("compositePodGroupTemplates")) {
      if (templates->is_array())
        w.composite = !templates->empty();
      else
        r.Fail("compositePodGroupTemplates", *templates, "must be a list");
    }
  }
  if (!errors.empty()) return Undecodable("Workload", w.metadata, errors);
  return w;
}

std::optional<int64_t> GangMinCountOf(const json& spec) {
  FieldErrors ignored;
  return DecodeGangMinCount(spec, &ignored);
}

}  // namespace tfjob::api
