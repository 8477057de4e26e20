#include "cli/main.h"

#include <sys/ioctl.h>
#include <unistd.h>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "api/exit_codes.h"
#include "cli/command_tree.h"
#include "cli/signals.h"

namespace tfjob::cli {

int Main(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  // As the kubectl plugin (a `kubectl-tfjob` link to tfjob), the same commands.
  std::string program = "tfjob";
  if (argc > 0 && std::filesystem::path(argv[0]).filename() == "kubectl-tfjob") program = "kubectl tfjob";
  CommandTree tree(program);
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  ParseResult parsed = tree.Parse(args);
  switch (parsed.kind) {
    case ParseResult::Kind::kHelp: out << parsed.text; return api::kExitOk;
    case ParseResult::Kind::kUsageError: tree.PrintUsageError(parsed, err); return api::kExitUsage;
    case ParseResult::Kind::kRun: break;
  }
  CliIo io;
  io.out = &out;
  io.err = &err;
  io.program = program;
  io.env = Environment();
  // Colours and the live table only on a terminal, and only for the process's own stdout.
  io.out_is_terminal = &out == &std::cout && isatty(STDOUT_FILENO);
  if (io.out_is_terminal) {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) io.terminal_rows = ws.ws_row;
  }
  io.with_signal_stops = [](const std::function<int(std::stop_token, std::stop_token)>& body) {
    return WithSignalStops(body, false);
  };
  return parsed.command->Run(io);
}

}  // namespace tfjob::cli
