#pragma once
// Type-checked reads of JSON that comes from outside (files, the API server, other clients):
// a missing field or one of the wrong type gives the fallback, never an exception.

#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace tfjob::api {

// obj[key] when obj is an object and the field is a string, else "".
std::string StringField(const nlohmann::json& obj, std::string_view key);
// obj[key] when it is an integer that fits, else `fallback`.
int64_t IntField(const nlohmann::json& obj, std::string_view key, int64_t fallback = 0);
// obj[key] when it is an object, else an empty object.
const nlohmann::json& ObjectField(const nlohmann::json& obj, std::string_view key);

}  // namespace tfjob::api
