#include "api/json_fields.h"

namespace tfjob::api {

namespace {
const nlohmann::json* Find(const nlohmann::json& obj, std::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  return it == obj.end() ? nullptr : &*it;
}
}  // namespace

std::string StringField(const nlohmann::json& obj, std::string_view key) {
  const nlohmann::json* v = Find(obj, key);
  return v != nullptr && v->is_string() ? v->get<std::string>() : std::string();
}

int64_t IntField(const nlohmann::json& obj, std::string_view key, int64_t fallback) {
  const nlohmann::json* v = Find(obj, key);
  if (v == nullptr) return fallback;
  if (v->is_number_integer()) return v->get<int64_t>();
  if (v->is_number_unsigned() && v->get<uint64_t>() <= static_cast<uint64_t>(INT64_MAX)) return v->get<int64_t>();
  return fallback;
}

const nlohmann::json& ObjectField(const nlohmann::json& obj, std::string_view key) {
  static const nlohmann::json kEmpty = nlohmann::json::object();
  const nlohmann::json* v = Find(obj, key);
  return v != nullptr && v->is_object() ? *v : kEmpty;
}

bool BeingDeleted(const nlohmann::json& object) {
  return ObjectField(object, "metadata").contains("deletionTimestamp");
}

std::string ShowJsonValue(const nlohmann::json& v) {
  if (v.is_string()) return QuoteValue(v.get<std::string>());
  return EscapeNonPrintable(v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

}  // namespace tfjob::api
