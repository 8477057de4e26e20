#include "cli/job_file.h"

#include <fcntl.h>
#include <unistd.h>
#include <cstring>

#include "api/defaults.h"
#include "api/exit_codes.h"
#include "api/manifest.h"
#include "api/structural_schema.h"
#include "api/tfjob_file.h"
#include "api/validation.h"
#include "common/file_reader.h"
#include "local/local_rules.h"

namespace tfjob::cli {
namespace {

using api::kExitFailed;
using api::kExitOk;
using api::kExitUsage;

// "FILE: " or "FILE: TFJob NAME: " when the file holds several jobs.
std::string Prefix(const std::string& file, const std::vector<CheckedJob>& jobs, const CheckedJob& job) {
  if (jobs.size() <= 1) return file + ": ";
  return file + ": TFJob " +
         (job.job.metadata.name.empty() ? "(unnamed)" : api::EscapeNonPrintable(job.job.metadata.name)) + ": ";
}

// A job's warnings, errors and local errors, each line after `prefix`.
void PrintFindings(const std::string& prefix, const char* warning, const CheckedJob& j, std::ostream& err) {
  for (const auto& w : j.warnings) err << prefix << warning << w << "\n";
  for (const auto& e : j.errors) err << prefix << e << "\n";
  for (const auto& e : j.local_errors) err << prefix << e << "\n";
}

}  // namespace

int LoadChecked(const std::string& file, std::ostream& err, std::vector<CheckedJob>* jobs,
                const CheckOptions& options) {
  auto text = ReadInput(file);
  if (!text.ok()) {
    err << file << ": " << text.status().message() << "\n";
    return kExitUsage;
  }
  auto checked = CheckFile(*text, options);
  if (!checked.ok()) {
    err << file << ": " << checked.status().message() << "\n";
    return kExitFailed;
  }
  const char* warning = options.strict ? "" : "warning: ";
  for (const auto& w : checked->warnings) err << file << ": " << warning << w << "\n";
  *jobs = std::move(checked->jobs);
  bool failed = options.strict && !checked->warnings.empty();
  bool local_failed = false;
  for (const auto& j : *jobs) {
    PrintFindings(Prefix(file, *jobs, j), warning, j, err);
    failed = failed || !j.errors.empty() || (options.strict && !j.warnings.empty());
    local_failed = local_failed || !j.local_errors.empty();
  }
  if (failed) return kExitFailed;
  if (options.local && jobs->size() != 1) {  // what `tfjob run` takes
    err << file << ": tfjob run takes a file with exactly one TFJob (found " << jobs->size() << ")\n";
    local_failed = true;
  }
  return local_failed ? options.local_exit_code : kExitOk;
}

StatusOr<std::string> ReadInput(const std::string& path) {
  int fd = STDIN_FILENO;
  if (path != "-") {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NotFoundError(std::string("cannot read: ") + std::strerror(errno));
  }
  BoundedRead read = ReadFdBounded(fd, api::kMaxManifestBytes);
  if (fd != STDIN_FILENO) ::close(fd);
  switch (read.problem) {
    case ReadProblem::kNone: return std::move(read.bytes);
    case ReadProblem::kDirectory: return InvalidArgumentError("cannot read: is a directory");
    case ReadProblem::kTooLarge: return InvalidArgumentError(api::InputTooLargeMessage());
    case ReadProblem::kReadError: break;
  }
  return UnavailableError(std::string("cannot read: ") + std::strerror(read.error));
}

StatusOr<std::vector<CheckedJob>> CheckJobs(std::string_view text) {
  TFJOB_ASSIGN_OR_RETURN(CheckedFile file, CheckFile(text));
  return std::move(file.jobs);
}

StatusOr<CheckedFile> CheckFile(std::string_view text, const CheckOptions& options) {
  TFJOB_ASSIGN_OR_RETURN(api::LoadedFile loaded_file, api::LoadTfJobFile(text));
  CheckedFile file;
  file.warnings = std::move(loaded_file.warnings);
  std::vector<CheckedJob>& out = file.jobs;
  for (auto& l : loaded_file.jobs) {
    CheckedJob c;
    c.warnings = std::move(l.warnings);
    for (auto& w : api::SpecWarnings(l.job)) c.warnings.push_back(std::move(w));  // D22
    // As the API server: the schema first; the webhook's checks only on what the schema passed.
    api::FieldErrors errors = l.schema_errors;
    errors.insert(errors.end(), l.decode_errors.begin(), l.decode_errors.end());
    if (l.schema_errors.empty()) {
      api::FieldErrors more = api::ValidateTfJob(l.job);
      errors.insert(errors.end(), more.begin(), more.end());
    }
    for (const auto& e : errors) c.errors.push_back(e.ToString());
    if (l.schema_errors_left_out > 0)
      c.errors.push_back(std::to_string(l.schema_errors_left_out) + " more errors not shown");
    if (options.local) {
      api::FieldErrors local_errors = local::LocalRunErrors(l.job);
      for (size_t i = 0; i < local_errors.size() && i < api::kMaxSchemaErrors; ++i)
        c.local_errors.push_back(local_errors[i].ToString());
      if (local_errors.size() > api::kMaxSchemaErrors)
        c.local_errors.push_back(std::to_string(local_errors.size() - api::kMaxSchemaErrors) +
                                 " more errors not shown");
    }
    c.job = std::move(l.job);
    if (c.errors.empty()) api::SetDefaults(c.job);
    out.push_back(std::move(c));
  }
  return file;
}

StatusOr<nlohmann::json> RenderList(std::vector<CheckedJob> jobs, const RenderRequest& request,
                                    std::vector<core::RenderEvent>* events) {
  nlohmann::json items = nlohmann::json::array();
  for (auto& c : jobs) {
    TFJOB_CHECK(c.errors.empty());  // callers render only valid jobs
    api::TfJob& job = c.job;
    if (!request.ns.empty()) job.metadata.ns = request.ns;
    if (job.metadata.ns.empty()) job.metadata.ns = "default";
    TFJOB_ASSIGN_OR_RETURN(core::RenderedJob rendered, core::RenderJob(job, request.options));
    for (auto& o : rendered.objects) items.push_back(std::move(o));
    for (auto& e : rendered.events) events->push_back(std::move(e));
  }
  return nlohmann::json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
}

}  // namespace tfjob::cli
