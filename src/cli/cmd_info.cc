// `tfjob crd` and `tfjob version`: what the binary carries.
#include <CLI/CLI.hpp>

#include "api/crd.h"
#include "api/exit_codes.h"
#include "cli/command.h"

namespace tfjob::cli {
namespace {

class CrdCommand : public Command {
 public:
  explicit CrdCommand(CLI::App& root)
      : Command(root.add_subcommand("crd", "Print the TFJob CustomResourceDefinition")) {}
  int Run(const CliIo& io) override {
    *io.out << api::CrdYaml();
    return api::kExitOk;
  }
};

class VersionCommand : public Command {
 public:
  explicit VersionCommand(CLI::App& root) : Command(root.add_subcommand("version", "Print the version")) {}
  int Run(const CliIo& io) override {
    *io.out << "tfjob " << TFJOB_VERSION << " (" << TFJOB_GIT_SHA << ")\n";
    return api::kExitOk;
  }
};

}  // namespace

std::unique_ptr<Command> DefineCrd(CLI::App& root) {
  return std::make_unique<CrdCommand>(root);
}

std::unique_ptr<Command> DefineVersion(CLI::App& root) {
  return std::make_unique<VersionCommand>(root);
}

}  // namespace tfjob::cli
