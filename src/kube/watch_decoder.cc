#include "kube/watch_decoder.h"

#include "api/json_fields.h"

#include "kube/api_error.h"

namespace tfjob::kube {

std::vector<WatchEvent> WatchDecoder::Feed(std::string_view chunk, std::vector<Status>* errors) {
  std::vector<WatchEvent> events;
  buffer_.append(chunk);
  size_t start = 0;
  for (;;) {
    size_t nl = buffer_.find('\n', start);
    if (nl == std::string::npos) break;
    std::string_view line(buffer_.data() + start, nl - start);
    start = nl + 1;
    if (line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
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
        throw std::invalid_argument("unknown event type \"" + type + "\"");
      if (!j.contains("object") || !j["object"].is_object()) throw std::invalid_argument("event without an object");
      e.object = std::move(j["object"]);
      events.push_back(std::move(e));
    } catch (const std::exception& ex) {
      if (errors != nullptr) errors->push_back(DataLossError(std::string("undecodable watch event: ") + ex.what()));
    }
  }
  buffer_.erase(0, start);
  return events;
}

Status WatchErrorStatus(const nlohmann::json& s) {
  long code = s.is_object() && s.contains("code") && s["code"].is_number_integer() ? s["code"].get<long>() : 500;
  return StatusFromHttp(code, s.dump());
}

}  // namespace tfjob::kube
