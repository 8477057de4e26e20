#pragma once
// WatchDecoder: turns the byte stream of a watch (newline-delimited JSON events,
// {"type":"ADDED","object":{...}}) into events, for any split of the stream into chunks.
// Malformed lines become kDataLoss events rather than exceptions.

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tfjob::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;  // the object; for kError the metav1.Status
};

class WatchDecoder {
 public:
  // Appends a chunk; returns the events completed by it (possibly none). A line that is not a
  // watch event yields a kDataLoss status in `errors` and is skipped.
  std::vector<WatchEvent> Feed(std::string_view chunk, std::vector<Status>* errors = nullptr);
  // Bytes buffered waiting for the end of their line.
  size_t pending() const { return buffer_.size(); }

 private:
  std::string buffer_;
};

// For an ERROR event: the Status it carries (410 Expired -> kGone).
Status WatchErrorStatus(const nlohmann::json& status_object);

}  // namespace tfjob::kube
