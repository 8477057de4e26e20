#pragma once
// The `tfjob` command line: subcommands validate, render, crd, version. Main() takes the
// output streams so tests run it in-process. Exit codes (design.md section 1): 0 ok, 1 the
// job or spec failed, 2 usage or environment error.

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/tfjob.h"
#include "common/status.h"
#include "tfjob/core/render.h"

namespace tfjob::cmd {

namespace core = ::tfjob::tfjob::core;

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitUsage = 2;

int Main(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// A TFJob read from a file, checked: `errors` holds every decode and validation error
// rendered as "path: message"; `job` is defaulted when errors is empty. `warnings`: its
// unknown fields ("path: unknown field \"name\""), errors only under `validate --strict`.
struct CheckedJob {
  api::TfJob job;
  std::vector<std::string> errors;
  std::vector<std::string> warnings;
};
struct CheckedFile {
  std::vector<CheckedJob> jobs;
  std::vector<std::string> warnings;  // documents skipped (other kinds)
};
// kInvalidArgument when the text is not a manifest holding a TFJob (api::LoadTfJobFile).
StatusOr<CheckedFile> CheckFile(std::string_view text);
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

}  // namespace tfjob::cmd
