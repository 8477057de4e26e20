// `tfjob validate FILE... [--strict]` (README.md): every TFJob of each file decoded, validated
// and defaulted as the operator's admission does; errors as "FILE: path: message".
#include <algorithm>

#include <CLI/CLI.hpp>

#include "api/exit_codes.h"
#include "cli/command.h"
#include "cli/job_file.h"

namespace tfjob::cli {
namespace {

class ValidateCommand : public Command {
 public:
  explicit ValidateCommand(CLI::App& root)
      : Command(root.add_subcommand("validate", "Check TFJob files: defaults + validation, errors as path: message")) {
    app().add_option("FILE", files_, "TFJob manifests (YAML or JSON; - for standard input)")->required();
    app().add_flag("--strict", strict_,
                   "Warnings (unknown fields, skipped documents, odd values upstream runs) are errors");
  }

  int Run(const CliIo& io) override {
    int rc = api::kExitOk;
    for (const auto& file : files_) {
      std::vector<CheckedJob> jobs;
      int file_rc = LoadChecked(file, *io.err, &jobs, strict_);
      if (file_rc == api::kExitOk)
        for (const auto& j : jobs) *io.out << file << ": TFJob " << j.job.metadata.name << " is valid\n";
      rc = std::max(rc, file_rc);
    }
    return rc;
  }

 private:
  std::vector<std::string> files_;
  bool strict_ = false;
};

}  // namespace

std::unique_ptr<Command> DefineValidate(CLI::App& root) {
  return std::make_unique<ValidateCommand>(root);
}

}  // namespace tfjob::cli
