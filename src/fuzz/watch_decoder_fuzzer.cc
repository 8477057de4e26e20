// libFuzzer target: the watch-stream decoder. Besides not crashing, the events must not depend
// on how the stream is split into chunks (the bug class of strtok-style framing): the input is
// decoded whole and split at a point chosen by its first byte, and the two must agree. The pods'
// prune (PruneEventText) is checked against the parser: when the whole input parses, the cut text
// must parse to the same value with the members removed. The same bytes are also fed to the
// protobuf watch decoder (the operator's pod watch, kube/protobuf.h), whose events must not depend
// on the split either, and whose pods must decode.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/pod_json.h"
#include "api/pod_proto.h"
#include "kube/protobuf.h"
#include "kube/watch_decoder.h"

namespace {

void CheckPrune(std::string_view text) {
  const tfjob::kube::WatchPrune prune{.field = "spec", .keep = {"nodeName"}};
  auto cut = tfjob::kube::PruneEventText(text, prune);
  if (!cut) return;
  nlohmann::json whole = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (whole.is_discarded()) return;  // the cut text is not checked: it may parse where this did not
  nlohmann::json pruned = nlohmann::json::parse(*cut, nullptr, false);
  if (pruned.is_discarded()) std::abort();
  // What parsing then removing gives: the last "object" (the parser keeps the last copy of a
  // key), its "spec" reduced to the kept members.
  if (whole.is_object()) {
    auto o = whole.find("object");
    if (o != whole.end() && o->is_object()) {
      auto f = o->find("spec");
      if (f != o->end() && f->is_object()) {
        nlohmann::json kept = nlohmann::json::object();
        if (f->contains("nodeName")) kept["nodeName"] = (*f)["nodeName"];
        *f = kept;
      }
    }
  }
  if (pruned != whole) std::abort();
}

// The events of `stream` fed whole, after checking that fed in two pieces at `cut` they are
// the same.
template <typename Decoder>
std::vector<tfjob::kube::WatchEvent> SameForASplit(const Decoder& fresh, std::string_view stream, size_t cut) {
  Decoder whole = fresh;
  auto a = whole.Feed(stream);
  Decoder split = fresh;
  auto b = split.Feed(stream.substr(0, cut));
  auto rest = split.Feed(stream.substr(cut));
  b.insert(b.end(), rest.begin(), rest.end());
  if (a.size() != b.size()) std::abort();
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].type != b[i].type || a[i].object != b[i].object) std::abort();
  return a;
}

void CheckProtobuf(std::string_view stream, size_t cut) {
  auto events = SameForASplit(tfjob::kube::ProtobufWatchDecoder(tfjob::api::PodProtoToJson), stream, cut);
  for (const auto& e : events) {
    if (e.type == tfjob::kube::WatchEventType::kError)
      (void)tfjob::kube::WatchErrorStatus(e.object);
    else if (!tfjob::api::DecodePod(e.object).ok())
      std::abort();  // what PodProtoToJson makes decodes
  }
  (void)tfjob::kube::ProtobufListToJson(stream, tfjob::api::PodProtoToJson);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  CheckPrune(text);
  size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  for (const auto& e : SameForASplit(tfjob::kube::WatchDecoder(), text, cut))
    if (e.type == tfjob::kube::WatchEventType::kError) (void)tfjob::kube::WatchErrorStatus(e.object);
  CheckProtobuf(text, cut);
  return 0;
}
