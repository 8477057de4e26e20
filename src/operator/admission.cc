#include "operator/admission.h"

#include "api/json_fields.h"
#include "api/known_fields.h"
#include "api/labels.h"
#include "api/tfjob_json.h"
#include "api/validation.h"
#include "common/base64.h"

namespace tfjob::operator_ {
namespace {

using nlohmann::json;

json Answer(const json& review, const std::string& uid, const api::FieldErrors& errors,
            const std::vector<std::string>& warnings = {}) {
  json response = {{"uid", uid}, {"allowed", errors.empty()}};
  if (!errors.empty())
    response["status"] = {{"code", 403}, {"reason", "Forbidden"}, {"message", api::AggregateMessage(errors)}};
  if (!warnings.empty()) response["warnings"] = warnings;            // kubectl prints them as "Warning: ..."
  std::string api_version = api::StringField(review, "apiVersion");  // "" unless a string
  return {{"apiVersion", api_version.empty() ? "admission.k8s.io/v1" : api_version},
          {"kind", "AdmissionReview"},
          {"response", std::move(response)}};
}

// The request of an AdmissionReview, after the checks both webhooks make.
StatusOr<const json*> Request(const json& review) {
  if (!review.is_object() || api::StringField(review, "kind") != "AdmissionReview")
    return InvalidArgumentError("body is not an AdmissionReview");
  auto request = review.find("request");
  if (request == review.end() || !request->is_object()) return InvalidArgumentError("AdmissionReview has no request");
  auto uid = request->find("uid");
  if (uid == request->end() || !uid->is_string() || uid->get<std::string>().empty())
    return InvalidArgumentError("AdmissionReview request has no uid");
  return &*request;
}

// The JSONPatch that suspends a queued job on create; null when none is needed.
json SuspendPatch(const json& object) {
  const json& labels = api::ObjectField(api::ObjectField(object, "metadata"), "labels");
  if (api::StringField(labels, std::string(api::kLabelKueueQueueName)).empty()) return nullptr;
  auto spec = object.find("spec");
  if (spec == object.end() || !spec->is_object()) return nullptr;  // the validating webhook denies it
  auto run_policy = spec->find("runPolicy");
  if (run_policy == spec->end() || !run_policy->is_object())
    return json::array({{{"op", "add"}, {"path", "/spec/runPolicy"}, {"value", {{"suspend", true}}}}});
  auto suspend = run_policy->find("suspend");
  if (suspend != run_policy->end() && suspend->is_boolean() && suspend->get<bool>()) return nullptr;
  // "add" replaces a member that is there (RFC 6902 4.1).
  return json::array({{{"op", "add"}, {"path", "/spec/runPolicy/suspend"}, {"value", true}}});
}

std::pair<int, std::string> Serve(StatusOr<json> (*decide)(const json&), const std::string& body) {
  json review = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (review.is_discarded()) return {400, json{{"error", "request body is not JSON"}}.dump()};
  auto answer = decide(review);
  if (!answer.ok()) return {400, json{{"error", answer.status().message()}}.dump()};
  return {200, answer->dump(-1, ' ', false, json::error_handler_t::replace)};
}

}  // namespace

StatusOr<json> DefaultTfJob(const json& review) {
  TFJOB_ASSIGN_OR_RETURN(const json* request, Request(review));
  const std::string uid = api::StringField(*request, "uid");
  json answer = Answer(review, uid, {});
  auto object = request->find("object");
  if (api::StringField(*request, "operation") != "CREATE" || object == request->end() || !object->is_object())
    return answer;
  json patch = SuspendPatch(*object);
  if (patch.is_null()) return answer;
  answer["response"]["patchType"] = "JSONPatch";
  answer["response"]["patch"] = Base64Encode(patch.dump());
  return answer;
}

std::pair<int, std::string> ServeTfJobDefaulting(const std::string& body) {
  return Serve(DefaultTfJob, body);
}

StatusOr<json> ReviewTfJob(const json& review) {
  TFJOB_ASSIGN_OR_RETURN(const json* request, Request(review));
  const std::string uid = api::StringField(*request, "uid");

  // A field of the wrong JSON type reads as absent (json's value() would throw).
  const std::string operation = api::StringField(*request, "operation");
  if (operation != "CREATE" && operation != "UPDATE") return Answer(review, uid, {});  // DELETE is not validated
  auto object = request->find("object");
  if (object == request->end() || !object->is_object())
    return Answer(review, uid, {api::Required("object", "the request carries no object")});

  api::FieldErrors errors;
  api::TfJob job = api::DecodeTfJob(*object, &errors);
  api::FieldErrors checks;
  if (auto old = request->find("oldObject"); operation == "UPDATE" && old != request->end() && old->is_object()) {
    api::FieldErrors ignored;  // the stored object was admitted before; what decodes is enough to compare
    checks = api::ValidateTfJobUpdate(api::DecodeTfJob(*old, &ignored), job);
  } else {
    checks = api::ValidateTfJob(job);
  }
  errors.insert(errors.end(), checks.begin(), checks.end());
  std::vector<std::string> warnings = api::UnknownFieldWarnings(*object);
  for (auto& w : api::SpecWarnings(job)) warnings.push_back(std::move(w));  // D22
  return Answer(review, uid, errors, warnings);
}

std::pair<int, std::string> ServeTfJobReview(const std::string& body) {
  return Serve(ReviewTfJob, body);
}

}  // namespace tfjob::operator_
