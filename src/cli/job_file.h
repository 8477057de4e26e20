#pragma once
// The job files of `tfjob validate`, `render` and `run` (README.md, "Input rules and limits"):
// read with a bound, every TFJob decoded, warned about, validated and defaulted, and rendered
// into the objects the operator would create.

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/exit_codes.h"
#include "api/tfjob.h"
#include "common/status.h"
#include "tfjob/core/render.h"

namespace tfjob::cli {

// A TFJob read from a file, checked: `errors` holds every decode and validation error
// rendered as "path: message"; `job` is defaulted when errors is empty. `warnings`: its
// unknown fields ("path: unknown field \"name\""), errors only under `validate --strict`.
struct CheckedJob {
  api::TfJob job;
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
  // With CheckOptions::local: what `tfjob run` cannot run (local/local_rules.h).
  std::vector<std::string> local_errors;
};
struct CheckedFile {
  std::vector<CheckedJob> jobs;
  std::vector<std::string> warnings;  // documents skipped (other kinds)
};
struct CheckOptions {
  // Warnings (unknown fields, skipped documents, D22) are printed as errors and fail the file.
  bool strict = false;
  // Also what `tfjob run` takes: a file with exactly one TFJob, and the rules of a local run
  // (local::LocalRunErrors). `tfjob run` and `validate --local`.
  bool local = false;
  // LoadChecked's exit code for a file whose only errors are those rules: validate's kExitFailed,
  // run's local::kRunExitCannotStart.
  int local_exit_code = api::kExitFailed;
};

// Errors of each job, in order: the CRD's structural schema (what the API server refuses,
// api/structural_schema.h), the decoder's shape errors it does not cover, then, when the schema
// passed, api::ValidateTfJob (the webhook's checks); with options.local, the local rules.
// kInvalidArgument when the text is not a manifest holding a TFJob (api::LoadTfJobFile).
StatusOr<CheckedFile> CheckFile(std::string_view text, const CheckOptions& options = {});
// The jobs of CheckFile.
StatusOr<std::vector<CheckedJob>> CheckJobs(std::string_view text);

// The file reader of validate, render and run: at most api::kMaxManifestBytes (8 MiB), read in
// chunks so that /dev/zero or a pipe stops at the limit, and a regular file over it is refused
// before it is read. "-" is the standard input. Errors are environment errors (exit 2):
// "cannot read: No such file or directory", "input is larger than the limit of 8 MiB".
StatusOr<std::string> ReadInput(const std::string& path);

struct RenderRequest {
  std::string ns;  // overrides metadata.namespace; "default" when both are empty
  core::RenderOptions options;
};
// The v1 List of every object the operator would create for each (valid) job.
// REQUIRES: every job in `jobs` has no errors.
StatusOr<nlohmann::json> RenderList(std::vector<CheckedJob> jobs, const RenderRequest& request,
                                    std::vector<core::RenderEvent>* events);

// Reads and checks one file for a command: prints its warnings ("FILE: warning: ...") and errors
// ("FILE: path: message", "FILE: TFJob NAME: ..." when it holds several jobs) to `err`.
// options.strict: warnings are printed without "warning: " and count as errors. Returns the exit
// code for this file (api::kExitOk, kExitFailed, options.local_exit_code when only the local
// rules failed, or kExitUsage when it cannot be read).
int LoadChecked(const std::string& file, std::ostream& err, std::vector<CheckedJob>* jobs,
                const CheckOptions& options = {});

}  // namespace tfjob::cli
