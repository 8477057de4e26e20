#include "api/priority_class.h"

#include "api/json_fields.h"

namespace tfjob::api {

StatusOr<int32_t> DecodePriorityValue(const nlohmann::json& object) {
  const int64_t v = IntField(object, "value", INT64_MIN);
  if (v < INT32_MIN || v > INT32_MAX) return InvalidArgumentError("a priority class without an int32 value");
  return static_cast<int32_t>(v);
}

StatusOr<PriorityClass> DecodePriorityClass(const nlohmann::json& object) {
  StatusOr<int32_t> value = DecodePriorityValue(object);
  if (!value.ok()) return value.status();
  auto global = object.find("globalDefault");
  return PriorityClass{*value, global != object.end() && global->is_boolean() && global->get<bool>()};
}

}  // namespace tfjob::api
