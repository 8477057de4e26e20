#pragma once
// Type-checked reads of JSON that comes from outside (files, the API server, other clients),
// the one place that reads JSON fields, in two modes: the lenient functions (a missing field or
// one of the wrong type gives the fallback: objects the operator only looks at, such as pods),
// and FieldReader, which records each error under the field's full path (objects users write:
// the TFJob). Never an exception.

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/field_error.h"
#include "api/time.h"

namespace tfjob::api {

// obj[key] when obj is an object and the field is a string, else "".
std::string StringField(const nlohmann::json& obj, std::string_view key);
// obj[key] when it is an integer that fits, else `fallback`.
int64_t IntField(const nlohmann::json& obj, std::string_view key, int64_t fallback = 0);
// obj[key] when it is an object, else an empty object.
const nlohmann::json& ObjectField(const nlohmann::json& obj, std::string_view key);
// Whether the API server is deleting `object`: its metadata has a deletionTimestamp (the object
// stays until its finalizers are gone).
bool BeingDeleted(const nlohmann::json& object);

// A value as validation messages show it: strings quoted (Go's %q), anything else as JSON.
std::string ShowJsonValue(const nlohmann::json& v);

// The strict reader: typed fields of one JSON object, each shape error recorded under its full
// field path ("spec.runPolicy.backoffLimit: Invalid value: \"x\": must be an integer"). A
// null field reads as absent. The TFJob codec (tfjob_json.cc) reads through it; nested objects
// get a reader of their own with the child path (Child(key)).
class FieldReader {
 public:
  FieldReader(const nlohmann::json& obj, std::string path, FieldErrors* errors)
      : obj_(obj), path_(std::move(path)), errors_(errors) {}

  std::string Child(std::string_view key) const {
    return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
  }
  const nlohmann::json* Find(std::string_view key) const {
    if (!obj_.is_object()) return nullptr;
    auto it = obj_.find(std::string(key));
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool Has(std::string_view key) const { return obj_.is_object() && obj_.contains(std::string(key)); }

  std::optional<std::string> String(std::string_view key) const {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) {
      Fail(key, *v, "must be a string");
      return std::nullopt;
    }
    return v->get<std::string>();
  }
  std::optional<bool> Bool(std::string_view key) const {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) {
      Fail(key, *v, "must be a boolean");
      return std::nullopt;
    }
    return v->get<bool>();
  }
  template <typename Int>
  std::optional<Int> Integer(std::string_view key) const {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return std::nullopt;
    if (v->is_number_unsigned()) {
      auto u = v->get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<Int>::max())) {
        Fail(key, *v, sizeof(Int) == 4 ? "must be a 32-bit integer" : "must be a 64-bit integer");
        return std::nullopt;
      }
      return static_cast<Int>(u);
    }
    if (v->is_number_integer()) {
      auto i = v->get<int64_t>();
      if (i < std::numeric_limits<Int>::min() || i > std::numeric_limits<Int>::max()) {
        Fail(key, *v, sizeof(Int) == 4 ? "must be a 32-bit integer" : "must be a 64-bit integer");
        return std::nullopt;
      }
      return static_cast<Int>(i);
    }
    if (v->is_number_float() && std::trunc(v->get<double>()) == v->get<double>() &&
        std::fabs(v->get<double>()) <= 9007199254740992.0) {
      // An integral number written with a fraction (2.0), within 2^53: the API server takes it as
      // an integer (as the schema check does, api/structural_schema.h).
      double d = v->get<double>();
      const double min = static_cast<double>(std::numeric_limits<Int>::min());  // -2^31 or -2^63, exact
      if (d >= min && d < -min) return static_cast<Int>(d);
      Fail(key, *v, sizeof(Int) == 4 ? "must be a 32-bit integer" : "must be a 64-bit integer");
      return std::nullopt;
    }
    Fail(key, *v, "must be an integer");
    return std::nullopt;
  }
  std::optional<Time> Timestamp(std::string_view key) const {
    auto s = String(key);
    if (!s) return std::nullopt;
    auto t = ParseTime(*s);
    if (!t) Fail(key, nlohmann::json(*s), "must be an RFC 3339 time");
    return t;
  }
  std::map<std::string, std::string> StringMap(std::string_view key) const {
    std::map<std::string, std::string> out;
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return out;
    if (!v->is_object()) {
      Fail(key, *v, "must be an object");
      return out;
    }
    for (auto it = v->begin(); it != v->end(); ++it) {
      if (it->is_string()) {
        out[it.key()] = it->get<std::string>();
      } else if (it->is_null()) {
        out[it.key()] = "";
      } else {
        errors_->push_back(Invalid(Child(key) + "[" + it.key() + "]", ShowJsonValue(*it), "must be a string"));
      }
    }
    return out;
  }
  // Returns the object at key (or nullptr) after checking it is an object.
  const nlohmann::json* Object(std::string_view key) const {
    const nlohmann::json* v = Find(key);
    if (v == nullptr) return nullptr;
    if (!v->is_object()) {
      Fail(key, *v, "must be an object");
      return nullptr;
    }
    return v;
  }

  void Fail(std::string_view key, const nlohmann::json& v, std::string detail) const {
    errors_->push_back(Invalid(Child(key), ShowJsonValue(v), std::move(detail)));
  }

 private:
  const nlohmann::json& obj_;
  std::string path_;
  FieldErrors* errors_;
};

}  // namespace tfjob::api
