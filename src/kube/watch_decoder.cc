#include "kube/watch_decoder.h"

#include "api/json_fields.h"

#include "kube/api_error.h"

namespace tfjob::kube {

namespace {

StatusOr<WatchEvent> DecodeLine(std::string_view line) {
  try {
    auto j = nlohmann::json::parse(line);
    std::string type = api::StringField(j, "type");
    WatchEvent e;
    if (type == "ADDED")
      e.type = WatchEventType::kAdded;
    else if (type == "MODIFIED")
      e.type = WatchEventType::kModified;
    else if (type == "DELETED")
      e.type = WatchEventType::kDeleted;
    else if (type == "BOOKMARK")
      e.type = WatchEventType::kBookmark;
    else if (type == "ERROR")
      e.type = WatchEventType::kError;
    else
      return DataLossError("undecodable watch event: unknown event type \"" + type.substr(0, 64) + "\"");
    if (!j.contains("object") || !j["object"].is_object())
      return DataLossError("undecodable watch event: event without an object");
    e.object = std::move(j["object"]);
    return e;
  } catch (const std::exception& ex) {
    return DataLossError(std::string("undecodable watch event: ") + ex.what());
  }
}

}  // namespace

std::vector<WatchEvent> WatchDecoder::Feed(std::string_view chunk, std::vector<Status>* errors) {
  std::vector<WatchEvent> events;
  auto too_long = [&] {
    if (errors != nullptr)
      errors->push_back(
          DataLossError("watch event longer than the limit of " + std::to_string(max_event_bytes_) + " bytes"));
  };
  auto line_done = [&](std::string_view line) {
    if (line.size() > max_event_bytes_) return too_long();
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) return;
    StatusOr<WatchEvent> e = DecodeLine(line);
    if (e.ok())
      events.push_back(std::move(e).value());
    else if (errors != nullptr)
      errors->push_back(e.status());
  };
  if (broken_) return events;
  // Only the new bytes are searched: the buffer never holds a newline, so a long line costs
  // linear time however finely it is split.
  size_t start = 0;
  for (;;) {
    size_t nl = chunk.find('\n', start);
    if (nl == std::string_view::npos) break;
    std::string_view piece = chunk.substr(start, nl - start);
    start = nl + 1;
    if (buffer_.empty()) {
      line_done(piece);
    } else {
      if (buffer_.size() + piece.size() > max_event_bytes_) {
        buffer_.clear();
        too_long();
        continue;
      }
      buffer_.append(piece);
      std::string line = std::move(buffer_);
      buffer_.clear();
      line_done(line);
    }
  }
  std::string_view rest = chunk.substr(start);
  if (buffer_.size() + rest.size() > max_event_bytes_) {
    std::string().swap(buffer_);
    broken_ = true;
    too_long();
    return events;
  }
  buffer_.append(rest);
  return events;
}

Status WatchErrorStatus(const nlohmann::json& s) {
  long code = s.is_object() && s.contains("code") && s["code"].is_number_integer() ? s["code"].get<long>() : 500;
  return StatusFromHttp(code, s.dump());
}

}  // namespace tfjob::kube
