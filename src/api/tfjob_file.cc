#include "api/tfjob_file.h"

#include "api/manifest.h"
#include "api/tfjob_json.h"

namespace tfjob::api {

StatusOr<std::vector<LoadedTfJob>> LoadTfJobs(std::string_view text) {
  TFJOB_ASSIGN_OR_RETURN(std::vector<ManifestDocument> docs, ParseManifest(text));
  if (docs.empty()) return InvalidArgumentError("no TFJob found: the file has no documents");
  // A v1 List (what `tfjob render` and `kubectl get -o yaml` print) holds objects in items.
  std::vector<ManifestDocument> objects;
  for (auto& d : docs) {
    if (d.object.is_object() && d.object.value("kind", nlohmann::json()) == "List" && d.object.contains("items") &&
        d.object["items"].is_array()) {
      for (auto& item : d.object["items"]) objects.push_back({item, d.line});
    } else {
      objects.push_back(std::move(d));
    }
  }
  std::vector<LoadedTfJob> jobs;
  std::vector<std::string> other_kinds;
  for (const auto& d : objects) {
    if (!d.object.is_object())
      return InvalidArgumentError("line " + std::to_string(d.line) + ": the document is not an object (found " +
                                  std::string(d.object.type_name()) + ")");
    auto kind = d.object.find("kind");
    if (kind == d.object.end() || !kind->is_string()) {
      other_kinds.push_back("(no kind)");
      continue;
    }
    if (*kind != kKind) {
      other_kinds.push_back(kind->get<std::string>());
      continue;
    }
    LoadedTfJob loaded;
    loaded.line = d.line;
    loaded.job = DecodeTfJob(d.object, &loaded.decode_errors);
    jobs.push_back(std::move(loaded));
  }
  if (jobs.empty()) {
    std::string found;
    for (size_t i = 0; i < other_kinds.size(); ++i) found += (i > 0 ? ", " : "") + other_kinds[i];
    return InvalidArgumentError("no TFJob found (kind: TFJob, apiVersion: kubeflow.org/v1); the file has: " + found);
  }
  return jobs;
}

}  // namespace tfjob::api
