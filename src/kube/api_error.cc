#include "kube/api_error.h"

#include "api/json_fields.h"
#include "kube/protobuf.h"

#include <nlohmann/json.hpp>

namespace tfjob::kube {

Status StatusFromHttp(long code, std::string_view body, std::optional<int> retry_after) {
  if (code >= 200 && code < 300) return OkStatus();
  std::string reason, message;
  if (IsProtobufBody(body)) {  // asked for protobuf (kube/protobuf.h): the Status comes that way
    StatusOr<ProtobufEnvelope> envelope = OpenEnvelope(body);
    if (envelope.ok() && envelope->kind == "Status") {
      nlohmann::json j = StatusMessageToJson(envelope->raw);
      reason = api::StringField(j, "reason");
      message = api::StringField(j, "message");
    } else {
      message = "undecodable protobuf answer";
    }
    if (message.empty()) message = "HTTP " + std::to_string(code);
  } else {
    try {
      auto j = nlohmann::json::parse(body);
      if (api::StringField(j, "kind") == "Status") {
        reason = api::StringField(j, "reason");
        message = api::StringField(j, "message");
      }
    } catch (const nlohmann::json::exception&) {
      // Not a metav1.Status (a proxy or a crash page): keep the text below.
    }
  }
  if (message.empty()) message = std::string(body.substr(0, 512));
  if (message.empty()) message = "HTTP " + std::to_string(code);
  StatusCode sc;
  switch (code) {
    case 400: sc = StatusCode::kInvalidArgument; break;
    case 401: sc = StatusCode::kUnauthorized; break;
    case 403: sc = StatusCode::kForbidden; break;
    case 404: sc = StatusCode::kNotFound; break;
    case 406: sc = StatusCode::kNotAcceptable; break;
    case 409: sc = reason == "AlreadyExists" ? StatusCode::kAlreadyExists : StatusCode::kConflict; break;
    case 410: sc = StatusCode::kGone; break;
    case 422: sc = StatusCode::kInvalid; break;
    case 429: sc = StatusCode::kTooManyRequests; break;
    case 504: sc = StatusCode::kDeadlineExceeded; break;
    default: sc = code >= 500 ? StatusCode::kUnavailable : StatusCode::kInternal; break;
  }
  if (reason == "Expired" || reason == "Gone") sc = StatusCode::kGone;  // "too old resource version"
  Status s(sc, message);
  if (retry_after) s.set_retry_after(std::chrono::seconds(*retry_after));
  return s;
}

std::string FailureCause(const Status& status, long http_code) {
  if (http_code > 0) return "HTTP " + std::to_string(http_code);
  // CurlTransport writes "<METHOD> <url>: <cause>: <detail>".
  for (const char* cause :
       {"timeout", "connection refused", "cannot resolve host", "TLS error", "connection lost", "bad server reply"})
    if (status.message().find(std::string(": ") + cause + ":") != std::string::npos) return cause;
  if (status.message().find("larger than the limit") != std::string::npos) return "response too large";
  if (status.code() == StatusCode::kDeadlineExceeded) return "timeout";
  if (status.code() == StatusCode::kCancelled) return "aborted";
  if (status.code() == StatusCode::kDataLoss) return "undecodable response";
  return "network error";
}

}  // namespace tfjob::kube
