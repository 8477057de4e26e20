#include "api/field_error.h"

namespace tfjob::api {

std::string QuoteValue(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  out += '"';
  return out;
}

std::string FieldError::ToString() const {
  std::string out = field + ": ";
  switch (type) {
    case FieldErrorType::kRequired: out += "Required value"; break;
    case FieldErrorType::kInvalid: out += "Invalid value: " + value; break;
    case FieldErrorType::kNotSupported: out += "Unsupported value: " + value; break;
    case FieldErrorType::kForbidden: out += "Forbidden"; break;
    case FieldErrorType::kDuplicate: out += "Duplicate value: " + value; break;
  }
  if (!detail.empty()) out += ": " + detail;
  return out;
}

FieldError Required(std::string field, std::string detail) {
  return {FieldErrorType::kRequired, std::move(field), "", std::move(detail)};
}
FieldError Invalid(std::string field, std::string value, std::string detail) {
  return {FieldErrorType::kInvalid, std::move(field), std::move(value), std::move(detail)};
}
FieldError NotSupported(std::string field, std::string value, const std::vector<std::string>& supported) {
  std::string detail = "supported values: ";
  for (size_t i = 0; i < supported.size(); ++i) {
    if (i > 0) detail += ", ";
    detail += QuoteValue(supported[i]);
  }
  return {FieldErrorType::kNotSupported, std::move(field), std::move(value), std::move(detail)};
}
FieldError Forbidden(std::string field, std::string detail) {
  return {FieldErrorType::kForbidden, std::move(field), "", std::move(detail)};
}
FieldError Duplicate(std::string field, std::string value) {
  return {FieldErrorType::kDuplicate, std::move(field), std::move(value), ""};
}

std::string AggregateMessage(const FieldErrors& errors) {
  if (errors.size() == 1) return errors[0].ToString();
  std::string out = "[";
  for (size_t i = 0; i < errors.size(); ++i) {
    if (i > 0) out += ", ";
    out += errors[i].ToString();
  }
  out += "]";
  return out;
}

}  // namespace tfjob::api
