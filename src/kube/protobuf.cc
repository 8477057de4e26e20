#include "kube/protobuf.h"

#include "api/proto_wire.h"

namespace tfjob::kube {
namespace {

using api::ProtoReader;
using nlohmann::json;
using Field = ProtoReader::Field;

constexpr size_t kFrameHeader = 4;

// The fields of a message whose numbers `numbers` names, as their bytes (the last of each);
// false when the message is malformed.
bool BytesFields(std::string_view message, std::initializer_list<uint32_t> numbers,
                 std::vector<std::string_view>* out) {
  out->assign(numbers.size(), {});
  ProtoReader r(message);
  Field f;
  while (r.Next(&f)) {
    size_t i = 0;
    for (uint32_t n : numbers) {
      if (f.number == n && f.type == ProtoReader::WireType::kBytes) (*out)[i] = f.bytes;
      ++i;
    }
  }
  return r.ok();
}

std::optional<WatchEventType> EventType(std::string_view type) {
  if (type == "ADDED") return WatchEventType::kAdded;
  if (type == "MODIFIED") return WatchEventType::kModified;
  if (type == "DELETED") return WatchEventType::kDeleted;
  if (type == "BOOKMARK") return WatchEventType::kBookmark;
  if (type == "ERROR") return WatchEventType::kError;
  return std::nullopt;
}

}  // namespace

StatusOr<ProtobufEnvelope> OpenEnvelope(std::string_view body) {
  if (!IsProtobufBody(body)) return DataLossError("not a protobuf object: no \"k8s\\0\" prefix");
  // runtime.Unknown: typeMeta = 1 (apiVersion = 1, kind = 2), raw = 2.
  std::vector<std::string_view> f;
  if (!BytesFields(body.substr(kProtobufMagic.size()), {1, 2}, &f))
    return DataLossError("undecodable protobuf envelope");
  std::vector<std::string_view> type_meta;
  if (!BytesFields(f[0], {2}, &type_meta)) return DataLossError("undecodable protobuf envelope: its type");
  return ProtobufEnvelope{std::string(type_meta[0]), f[1]};
}

json StatusMessageToJson(std::string_view raw) {
  // metav1.Status: status = 2, message = 3, reason = 4, code = 6.
  json out = {{"kind", "Status"}, {"apiVersion", "v1"}};
  ProtoReader r(raw);
  Field f;
  while (r.Next(&f)) {
    if (f.number == 2) out["status"] = f.String();
    if (f.number == 3) out["message"] = f.String();
    if (f.number == 4) out["reason"] = f.String();
    if (f.number == 6 && f.type == ProtoReader::WireType::kVarint) out["code"] = static_cast<int32_t>(f.Int());
  }
  if (!r.ok()) out["message"] = "undecodable Status (protobuf)";
  return out;
}

StatusOr<json> ProtobufListToJson(std::string_view body, const ObjectToJson& to_json) {
  TFJOB_ASSIGN_OR_RETURN(ProtobufEnvelope envelope, OpenEnvelope(body));
  // A list: metadata = 1 (ListMeta: resourceVersion = 2, continue = 3), items = 2.
  json page = {{"metadata", json::object()}, {"items", json::array()}};
  ProtoReader r(envelope.raw);
  Field f;
  while (r.Next(&f)) {
    if (f.type != ProtoReader::WireType::kBytes) continue;
    if (f.number == 1) {
      std::vector<std::string_view> meta;
      if (!BytesFields(f.bytes, {2, 3}, &meta)) return DataLossError("undecodable " + envelope.kind + ": its metadata");
      page["metadata"]["resourceVersion"] = std::string(meta[0]);
      if (!meta[1].empty()) page["metadata"]["continue"] = std::string(meta[1]);
    } else if (f.number == 2) {
      StatusOr<json> item = to_json(f.bytes);
      if (!item.ok()) return item.status().WithContext("undecodable " + envelope.kind + " item");
      page["items"].push_back(std::move(item).value());
    }
  }
  if (!r.ok()) return DataLossError("undecodable " + envelope.kind + " (protobuf)");
  return page;
}

StatusOr<WatchEvent> ProtobufWatchDecoder::DecodeFrame(std::string_view frame) const {
  // metav1.WatchEvent: type = 1, object = 2 (runtime.RawExtension: raw = 1).
  std::vector<std::string_view> f;
  if (!BytesFields(frame, {1, 2}, &f)) return DataLossError("undecodable watch event (protobuf)");
  std::vector<std::string_view> raw;
  if (!BytesFields(f[1], {1}, &raw)) return DataLossError("undecodable watch event (protobuf): its object");
  std::optional<WatchEventType> type = EventType(f[0]);
  if (!type)
    return DataLossError("undecodable watch event: unknown event type \"" + std::string(f[0].substr(0, 64)) + "\"");
  TFJOB_ASSIGN_OR_RETURN(ProtobufEnvelope envelope, OpenEnvelope(raw[0]));
  WatchEvent e;
  e.type = *type;
  if (e.type == WatchEventType::kError) {
    e.object = StatusMessageToJson(envelope.raw);
    return e;
  }
  StatusOr<json> object = to_json_(envelope.raw);
  if (!object.ok()) return DataLossError("undecodable watch event: " + object.status().message());
  e.object = std::move(object).value();
  return e;
}

std::vector<WatchEvent> ProtobufWatchDecoder::Feed(std::string_view chunk, std::vector<Status>* errors) {
  std::vector<WatchEvent> events;
  if (broken_) return events;
  // Frames are decoded from the chunk itself when no partial frame is buffered; only the start
  // of an unfinished frame is kept, so every byte is copied at most once.
  const bool buffered = !buffer_.empty();
  if (buffered) buffer_.append(chunk);
  std::string_view data = buffered ? std::string_view(buffer_) : chunk;
  size_t at = 0;
  while (data.size() - at >= kFrameHeader) {
    size_t length = 0;
    for (size_t i = 0; i < kFrameHeader; ++i) length = length << 8 | static_cast<uint8_t>(data[at + i]);
    if (length > max_event_bytes_) {
      std::string().swap(buffer_);
      broken_ = true;
      if (errors != nullptr)
        errors->push_back(
            DataLossError("watch event longer than the limit of " + std::to_string(max_event_bytes_) + " bytes"));
      return events;
    }
    if (data.size() - at - kFrameHeader < length) break;
    StatusOr<WatchEvent> e = DecodeFrame(data.substr(at + kFrameHeader, length));
    if (e.ok())
      events.push_back(std::move(e).value());
    else if (errors != nullptr)
      errors->push_back(e.status());
    at += kFrameHeader + length;
  }
  if (buffered)
    buffer_.erase(0, at);
  else
    buffer_.assign(chunk.substr(at));
  return events;
}

}  // namespace tfjob::kube
