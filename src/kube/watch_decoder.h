#pragma once
// WatchDecoder: turns the byte stream of a watch (newline-delimited JSON events,
// {"type":"ADDED","object":{...}}) into events, for any split of the stream into chunks.
// Malformed lines become kDataLoss events rather than exceptions.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/status.h"

namespace tfjob::kube {

enum class WatchEventType { kAdded, kModified, kDeleted, kBookmark, kError };

struct WatchEvent {
  WatchEventType type = WatchEventType::kAdded;
  nlohmann::json object;  // the object; for kError the metav1.Status
};

// Members of an event's object that are cut from its text before the text is parsed: of the
// object's member `field` (e.g. "spec") only the members named in `keep` are kept. For an
// informer whose decoder reads little of a big field: a pod of a 500-worker TFJob is about 20 KB,
// nearly all of it the TF_CONFIG in its spec, and the operator reads only spec.nodeName of it
// (docs/semantics.md D35). An empty `field` cuts nothing.
struct WatchPrune {
  std::string field;
  std::vector<std::string> keep;
  bool empty() const { return field.empty(); }
};

// The text of a watch event line with `prune` applied, or nullopt when nothing was cut (no such
// member, not an object, or a line this scanner does not follow: the caller parses the line as
// it is, which reports any error). Parsing the result gives the event that parsing `line` and
// then removing the members gives; the removed text is not checked. Linear in the line's length.
std::optional<std::string> PruneEventText(std::string_view line, const WatchPrune& prune);

// The largest event line accepted (docs/operator.md, section 2). The API server refuses objects
// over 1.5 MiB (etcd's limit), so a longer line is a broken or hostile stream.
inline constexpr size_t kMaxWatchEventBytes = 16 * 1024 * 1024;

class WatchDecoder {
 public:
  explicit WatchDecoder(size_t max_event_bytes = kMaxWatchEventBytes, WatchPrune prune = {})
      : max_event_bytes_(max_event_bytes), prune_(std::move(prune)) {}

  // Appends a chunk; returns the events completed by it (possibly none). A line that is not a
  // watch event, or is longer than max_event_bytes, yields a kDataLoss status in `errors` and
  // is skipped. Work is linear in the bytes fed, however they are split.
  std::vector<WatchEvent> Feed(std::string_view chunk, std::vector<Status>* errors = nullptr);
  // Bytes buffered waiting for the end of their line (never more than max_event_bytes).
  size_t pending() const { return buffer_.size(); }
  // True once an unfinished line grew past max_event_bytes: its bytes were dropped, the stream
  // can no longer be followed, and the caller must end it (and watch again).
  bool broken() const { return broken_; }

 private:
  const size_t max_event_bytes_;
  const WatchPrune prune_;
  std::string buffer_;  // an unfinished line: holds no '\n'
  bool broken_ = false;
};

// For an ERROR event: the Status it carries (410 Expired -> kGone).
Status WatchErrorStatus(const nlohmann::json& status_object);

}  // namespace tfjob::kube
