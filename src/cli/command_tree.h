#pragma once
// `tfjob`'s one CLI11 tree: the root app and every Command (command.h), parsed once. A
// subcommand's callback selects its command (no dispatch on names); Main (main.h) runs it.

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"

namespace tfjob::cli {

struct ParseResult {
  enum class Kind { kRun, kHelp, kUsageError };
  Kind kind = Kind::kRun;
  // kRun: the command to run. kHelp, kUsageError: the command the text is about, or nullptr
  // for the root.
  Command* command = nullptr;
  std::string text;  // kHelp: the help text; kUsageError: the message (CLI11's or Check's)
};

// `unknown command "rnu"; did you mean "run"?`: the nearest of `commands` within two edits
// (a swap of neighbours is one), else the first that begins with `typed`, else no suggestion.
std::string UnknownCommandMessage(std::string_view typed, const std::vector<std::string>& commands);

class CommandTree {
 public:
  // `program`: "tfjob" or "kubectl tfjob" (the help's usage lines).
  explicit CommandTree(const std::string& program);
  ~CommandTree();
  CommandTree(const CommandTree&) = delete;
  CommandTree& operator=(const CommandTree&) = delete;

  // `args` without the program name. Runs the selected command's Check. `--version` runs the
  // version command; a first word that names no command is a usage error
  // (UnknownCommandMessage), with or without --help after it.
  ParseResult Parse(const std::vector<std::string>& args);
  // Writes a usage error as the user reads it: "tfjob: MESSAGE" and the root's --help, or for a
  // cluster command "tfjob get: MESSAGE" and its own --help.
  void PrintUsageError(const ParseResult& result, std::ostream& err) const;

 private:
  bool PreParse(const std::vector<std::string>& args, ParseResult* r) const;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tfjob::cli
