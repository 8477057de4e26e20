// libFuzzer target: decoding objects from the API (JSON -> trimmed Pod and Service records,
// the full TFJob model) never crashes, whatever the field types; nor does a Pod in protobuf, and
// what it becomes decodes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "api/manifest.h"
#include "api/pod_json.h"
#include "api/pod_proto.h"
#include "api/tfjob_json.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  if (auto pod = tfjob::api::PodProtoToJson(text); pod.ok() && !tfjob::api::DecodePod(*pod).ok()) std::abort();
  auto j = tfjob::api::ParseJsonStrict(text);
  if (!j.ok()) return 0;
  (void)tfjob::api::DecodePod(*j);
  (void)tfjob::api::DecodeService(*j);
  (void)tfjob::api::DecodeTfJobStrict(*j);
  return 0;
}
