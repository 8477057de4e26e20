// `tfjob validate FILE... [--strict] [--local]` (docs/cli.md): every TFJob of each file checked
// as the API server checks it (the CRD's structural schema, then the operator's admission), and
// with --local as `tfjob run` checks it (the same CheckFile); errors as "FILE: path: message".
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
      : Command(root.add_subcommand("validate",
                                    "Check TFJob files as the API server and the operator do (the CRD's schema, "
                                    "then admission); errors as FILE: path: message")) {
    app().add_option("FILE", files_, "TFJob manifests (YAML or JSON; - for standard input)")->required();
    app().add_flag("--strict", options_.strict,
                   "Warnings (unknown fields, skipped documents, odd values upstream runs) are errors");
    app().add_flag("--local", options_.local,
                   "Also what `tfjob run` needs of the file (a command per container, plain env values): "
                   "the same check `run` makes before it starts");
  }

  int Run(const CliIo& io) override {
    int rc = api::kExitOk;
    for (const auto& file : files_) {
      std::vector<CheckedJob> jobs;
      int file_rc = LoadChecked(file, *io.err, &jobs, options_);
      if (file_rc == api::kExitOk)
        for (const auto& j : jobs) *io.out << file << ": TFJob " << j.job.metadata.name << " is valid\n";
      rc = std::max(rc, file_rc);
    }
    return rc;
  }

 private:
  std::vector<std::string> files_;
  CheckOptions options_;
};

}  // namespace

std::unique_ptr<Command> DefineValidate(CLI::App& root) {
  return std::make_unique<ValidateCommand>(root);
}

}  // namespace tfjob::cli
