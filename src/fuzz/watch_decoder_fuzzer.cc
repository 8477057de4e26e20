// libFuzzer target: the watch-stream decoder. Besides not crashing, the events must not depend
// on how the stream is split into chunks (the bug class of strtok-style framing): the input is
// decoded whole and split at a point chosen by its first byte, and the two must agree.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "kube/watch_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  tfjob::kube::WatchDecoder whole;
  auto a = whole.Feed(text);
  size_t cut = size == 0 ? 0 : data[0] % (size + 1);
  tfjob::kube::WatchDecoder split;
  auto b = split.Feed(text.substr(0, cut));
  auto rest = split.Feed(text.substr(cut));
  b.insert(b.end(), rest.begin(), rest.end());
  if (a.size() != b.size()) std::abort();
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].type != b[i].type || a[i].object != b[i].object) std::abort();
  for (const auto& e : a)
    if (e.type == tfjob::kube::WatchEventType::kError) (void)tfjob::kube::WatchErrorStatus(e.object);
  return 0;
}
