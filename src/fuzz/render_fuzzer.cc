// libFuzzer target: file bytes -> TFJobs -> defaults + validation -> rendered List (JSON and
// YAML). Any crash, sanitizer report or uncaught exception is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/manifest.h"
#include "cmd/commands.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto checked = tfjob::cmd::CheckJobs(text);
  if (!checked.ok()) return 0;
  std::vector<tfjob::cmd::CheckedJob> valid;
  for (auto& c : *checked)
    if (c.errors.empty()) valid.push_back(std::move(c));
  tfjob::cmd::RenderRequest request;
  request.options.gang_scheduler_name = size % 2 == 0 ? "volcano" : "";
  std::vector<tfjob::tfjob::core::RenderEvent> events;
  auto list = tfjob::cmd::RenderList(std::move(valid), request, &events);
  if (list.ok()) {
    (void)list->dump();
    (void)tfjob::api::ToYaml(*list);
  }
  return 0;
}
