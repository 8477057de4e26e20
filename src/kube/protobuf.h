#pragma once
// The API's protobuf form (Accept: application/vnd.kubernetes.protobuf), for the resources whose
// volume makes JSON costly: the operator lists and watches its pods this way (docs/operator.md,
// "API requests"). A response is the magic "k8s\0" and a runtime.Unknown envelope (its kind and
// the object's bytes); a watch is a stream of frames, each a 4-byte big-endian length and a
// metav1.WatchEvent whose object is such an envelope. The objects are turned into the JSON
// their decoders read (ObjectToJson, e.g. api::PodProtoToJson), so every consumer downstream is
// the same for both forms. The Accept headers name JSON second: a server (or a test's fake)
// that does not speak protobuf answers JSON, told apart by its first bytes.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"
#include "kube/watch_decoder.h"

namespace tfjob::kube {

inline constexpr std::string_view kProtobufMagic{"k8s\0", 4};
inline constexpr const char* kProtobufAccept = "application/vnd.kubernetes.protobuf, application/json";
inline constexpr const char* kProtobufWatchAccept =
    "application/vnd.kubernetes.protobuf;stream=watch, application/json";

// One object's protobuf bytes (the envelope's raw message) as JSON.
using ObjectToJson = std::function<StatusOr<nlohmann::json>(std::string_view)>;

// A resource read in protobuf: `name` tells informers apart (a shared informer is one per
// view), `to_json` turns each object.
struct ProtobufView {
  std::string name;
  ObjectToJson to_json;
  bool empty() const { return !to_json; }
};

inline bool IsProtobufBody(std::string_view body) {
  return body.starts_with(kProtobufMagic);
}

// The runtime.Unknown after the magic: the kind its TypeMeta names and the raw message.
struct ProtobufEnvelope {
  std::string kind;
  std::string_view raw;
};
StatusOr<ProtobufEnvelope> OpenEnvelope(std::string_view body);

// A metav1.Status message as the JSON Status (kind, status, message, reason, code).
nlohmann::json StatusMessageToJson(std::string_view raw);

// A list response (a PodList: ListMeta, then the items) as the JSON of a list:
// metadata.resourceVersion and metadata.continue, and items each turned by `to_json`.
StatusOr<nlohmann::json> ProtobufListToJson(std::string_view body, const ObjectToJson& to_json);

// The events of a protobuf watch stream, for any split of it into chunks; WatchDecoder's
// contract: an event that cannot be decoded yields a kDataLoss status in `errors`; a frame
// longer than max_event_bytes breaks the stream (broken(): the caller ends the watch).
class ProtobufWatchDecoder {
 public:
  explicit ProtobufWatchDecoder(ObjectToJson to_json, size_t max_event_bytes = kMaxWatchEventBytes)
      : to_json_(std::move(to_json)), max_event_bytes_(max_event_bytes) {}

  std::vector<WatchEvent> Feed(std::string_view chunk, std::vector<Status>* errors = nullptr);
  size_t pending() const { return buffer_.size(); }
  bool broken() const { return broken_; }

 private:
  StatusOr<WatchEvent> DecodeFrame(std::string_view frame) const;

  const ObjectToJson to_json_;
  const size_t max_event_bytes_;
  std::string buffer_;  // the start of a frame not yet complete
  bool broken_ = false;
};

}  // namespace tfjob::kube
