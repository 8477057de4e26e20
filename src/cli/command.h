#pragma once
// One command of `tfjob`'s one CLI11 tree (docs/architecture.md section 5): every subcommand,
// offline (validate, render, run, operator, crd, version) or cluster (submit, get, describe,
// logs, suspend, resume, delete; docs/cli.md), is a Command made by its Define* in its own
// cmd_*.cc. The Define adds the subcommand to the root, binds its flags to the command's fields
// and returns it; CommandTree (command_tree.h) parses once and runs the one command parsed.

#include <functional>
#include <map>
#include <memory>
#include <ostream>
#include <stop_token>
#include <string>

#include "common/status.h"

namespace CLI {
class App;
}

namespace tfjob::cli {

// What a command writes to and reads from the process (cli/main.cc fills it; tests use streams).
struct CliIo {
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  bool out_is_terminal = false;  // colours and the live table
  int terminal_rows = 0;         // 0: unknown
  std::map<std::string, std::string> env;
  std::string program = "tfjob";  // "kubectl tfjob" as a plugin
  // Runs `body` with stop requests for the first and second Ctrl-C/SIGTERM (cli/signals.h).
  // Unset (tests): `body` gets tokens that never stop.
  std::function<int(const std::function<int(std::stop_token, std::stop_token)>&)> with_signal_stops;
};

// Runs `body` through io.with_signal_stops, or with never-stopping tokens when there is none.
int WithStops(const CliIo& io, const std::function<int(std::stop_token, std::stop_token)>& body);

class Command {
 public:
  explicit Command(CLI::App* app) : app_(app) {}
  virtual ~Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  // The subcommand this command's flags are bound to.
  CLI::App& app() const { return *app_; }
  // The rules between flags, checked after the parse (kInvalidArgument names the flags; exit 2).
  virtual Status Check() { return OkStatus(); }
  virtual int Run(const CliIo& io) = 0;
  // A cluster command names itself in its usage errors ("tfjob get: ...") and in its help
  // ("Usage: tfjob get ..."); the offline ones keep the root's ("tfjob: ...").
  virtual bool cluster() const { return false; }

 private:
  CLI::App* app_;
};

// The subcommands, one Define each, in the order of `tfjob --help`.
std::unique_ptr<Command> DefineValidate(CLI::App& root);   // cmd_validate.cc
std::unique_ptr<Command> DefineRender(CLI::App& root);     // cmd_render.cc
std::unique_ptr<Command> DefineOperator(CLI::App& root);   // cmd_operator.cc
std::unique_ptr<Command> DefineRun(CLI::App& root);        // cmd_run.cc
std::unique_ptr<Command> DefineSubmit(CLI::App& root);     // cmd_submit.cc
std::unique_ptr<Command> DefineGet(CLI::App& root);        // cmd_get.cc
std::unique_ptr<Command> DefineDescribe(CLI::App& root);   // cmd_describe.cc
std::unique_ptr<Command> DefineLogs(CLI::App& root);       // cmd_logs.cc
std::unique_ptr<Command> DefineSuspend(CLI::App& root);    // cmd_suspend.cc
std::unique_ptr<Command> DefineResume(CLI::App& root);     // cmd_suspend.cc
std::unique_ptr<Command> DefineDelete(CLI::App& root);     // cmd_delete.cc
std::unique_ptr<Command> DefineDashboard(CLI::App& root);  // cmd_dashboard.cc
std::unique_ptr<Command> DefineCrd(CLI::App& root);        // cmd_info.cc
std::unique_ptr<Command> DefineVersion(CLI::App& root);    // cmd_info.cc

}  // namespace tfjob::cli
