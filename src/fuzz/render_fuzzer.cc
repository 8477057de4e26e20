// libFuzzer target: file bytes -> TFJobs -> defaults + validation -> rendered List (JSON and
// YAML). Any crash, sanitizer report or uncaught exception is a bug, and so is YAML output that
// does not read back as the JSON output (README, "Input rules and limits").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/manifest.h"
#include "cli/job_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto checked = tfjob::cli::CheckJobs(text);
  if (!checked.ok()) return 0;
  std::vector<tfjob::cli::CheckedJob> valid;
  for (auto& c : *checked)
    if (c.errors.empty()) valid.push_back(std::move(c));
  tfjob::cli::RenderRequest request;
  request.options.gang_scheduler_name = size % 2 == 0 ? "volcano" : "";
  std::vector<tfjob::core::RenderEvent> events;
  auto list = tfjob::cli::RenderList(std::move(valid), request, &events);
  if (list.ok()) {
    nlohmann::json as_json = nlohmann::json::parse(list->dump());
    std::string yaml = tfjob::api::ToYaml(*list);
    if (yaml.size() <= (size_t{1} << 20)) {  // well inside the reader's limits
      auto back = tfjob::api::ParseManifest(yaml);
      if (!back.ok() || back->size() != 1 || (*back)[0].object != as_json) std::abort();
    }
  }
  return 0;
}
