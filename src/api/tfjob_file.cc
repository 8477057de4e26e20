#include "api/tfjob_file.h"

#include "api/json_fields.h"

#include <set>

#include "api/known_fields.h"
#include "api/manifest.h"
#include "api/structural_schema.h"
#include "api/tfjob_json.h"

namespace tfjob::api {
namespace {

constexpr size_t kMaxSkippedMessages = 100;
constexpr size_t kMaxKindsNamed = 10;

struct Object {
  const nlohmann::json* object;
  std::string where;  // "document 2 (line 5)", "document 1, item 3 (line 1)"
  int line;
};

bool EqualsFold(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Whether `field` is, or is inside, a field one of `errors` names.
bool Covered(const std::string& field, const FieldErrors& errors) {
  for (const auto& e : errors) {
    if (!field.starts_with(e.field)) continue;
    if (field.size() == e.field.size() || field[e.field.size()] == '.' || field[e.field.size()] == '[') return true;
  }
  return false;
}

}  // namespace

StatusOr<LoadedFile> LoadTfJobFile(std::string_view text) {
  TFJOB_ASSIGN_OR_RETURN(std::vector<ManifestDocument> docs, ParseManifest(text));
  if (docs.empty()) return InvalidArgumentError("no TFJob found: the file has no documents");
  // A v1 List (what `tfjob render` and `kubectl get -o yaml` print) holds objects in items.
  std::vector<Object> objects;
  for (size_t d = 0; d < docs.size(); ++d) {
    const nlohmann::json& o = docs[d].object;
    std::string doc = "document " + std::to_string(d + 1);
    std::string line = " (line " + std::to_string(docs[d].line) + ")";
    if (o.is_object() && o.value("kind", nlohmann::json()) == "List" && o.contains("items") && o["items"].is_array()) {
      for (size_t i = 0; i < o["items"].size(); ++i)
        objects.push_back({&o["items"][i], doc + ", item " + std::to_string(i + 1) + line, docs[d].line});
    } else {
      objects.push_back({&o, doc + line, docs[d].line});
    }
  }
  LoadedFile file;
  std::vector<std::string> other_kinds;
  std::set<std::string> kinds_seen;
  size_t skipped = 0;
  for (const auto& [object, where, line] : objects) {
    const nlohmann::json& o = *object;
    if (!o.is_object())
      return InvalidArgumentError("line " + std::to_string(line) + ": the document is not an object (found " +
                                  std::string(o.type_name()) + ")");
    auto kind = o.find("kind");
    if (kind == o.end() || !kind->is_string() || kind->get_ref<const std::string&>().empty())
      return InvalidArgumentError(where + ": no kind (every document needs apiVersion and kind)");
    const std::string& k = kind->get_ref<const std::string&>();
    if (k != kKind) {
      const std::string group_version = StringField(o, "apiVersion");
      if (EqualsFold(k, kKind))
        return InvalidArgumentError(where + ": kind " + QuoteValue(k) + " is not TFJob (kinds are case-sensitive)");
      if (group_version.starts_with("kubeflow.org/"))
        return InvalidArgumentError(where + ": kind " + QuoteValue(k) + " of apiVersion " + QuoteValue(group_version) +
                                    " is not TFJob (tfjob reads only TFJobs)");
      if (kinds_seen.insert(k).second && other_kinds.size() < kMaxKindsNamed)
        other_kinds.push_back(EscapeNonPrintable(k));
      if (++skipped <= kMaxSkippedMessages)
        file.warnings.push_back(where + ": skipped: kind " + QuoteValue(k) + " is not TFJob");
      continue;
    }
    LoadedTfJob loaded;
    loaded.line = line;
    FieldErrors decode_errors;
    loaded.job = DecodeTfJob(o, &decode_errors);
    SchemaFindings schema = CheckTfJobSchema(o);
    loaded.warnings = UnknownFieldWarnings(o, schema);
    for (auto& e : decode_errors)
      if (!Covered(e.field, schema.errors)) loaded.decode_errors.push_back(std::move(e));
    loaded.schema_errors = std::move(schema.errors);
    loaded.schema_errors_left_out = schema.errors_left_out;
    file.jobs.push_back(std::move(loaded));
  }
  if (file.jobs.empty()) {
    std::string found;
    for (size_t i = 0; i < other_kinds.size(); ++i) found += (i > 0 ? ", " : "") + other_kinds[i];
    if (kinds_seen.size() > other_kinds.size())
      found += " and " + std::to_string(kinds_seen.size() - other_kinds.size()) + " more kinds";
    return InvalidArgumentError("no TFJob found (kind: TFJob, apiVersion: kubeflow.org/v1); the file has: " + found);
  }
  if (skipped > kMaxSkippedMessages)
    file.warnings.push_back(std::to_string(skipped - kMaxSkippedMessages) + " more documents skipped");
  return file;
}

StatusOr<std::vector<LoadedTfJob>> LoadTfJobs(std::string_view text) {
  TFJOB_ASSIGN_OR_RETURN(LoadedFile file, LoadTfJobFile(text));
  return std::move(file.jobs);
}

}  // namespace tfjob::api
