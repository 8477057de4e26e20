#pragma once
// The arguments of the cluster commands (docs/cli.md): `tfjob get|describe|submit|logs|suspend|
// resume|delete`, parsed into values so that parsing is tested without a cluster.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace tfjob::cli {

struct ConnectionArgs {
  std::string kubeconfig;  // --kubeconfig (one file)
  std::string context;     // --context
  std::string ns;          // -n/--namespace ("" = the context's, else "default")
  bool all_namespaces = false;
  std::chrono::milliseconds request_timeout{30000};  // --request-timeout
};

struct CliArgs {
  std::string command;  // "get", "describe", "submit", "logs", "suspend", "resume", "delete"
  ConnectionArgs conn;
  std::string name;                                  // the TFJob (get: optional)
  std::string file;                                  // submit
  std::string output;                                // get -o: "", "yaml", "json", "wide"
  bool watch = false;                                // get --watch
  bool wait = false;                                 // submit --wait, delete --wait
  bool follow = false;                               // submit --follow, logs -f
  std::optional<std::chrono::milliseconds> timeout;  // submit/delete --timeout
  bool delete_on_interrupt = false;
  std::string replica;                        // logs --replica worker-0
  std::string type;                           // logs --type Worker
  bool previous = false;                      // logs --previous
  std::optional<std::chrono::seconds> since;  // logs --since
  int max_log_requests = 5;                   // logs -f, submit --follow: log streams open at once
  bool help = false;
  std::string help_text;
};

// The cluster commands and their one-line descriptions, for `tfjob --help`.
struct CommandInfo {
  const char* name;
  const char* description;
};
const std::vector<CommandInfo>& ClusterCommands();
bool IsClusterCommand(std::string_view name);

// Go's durations as kubectl takes them ("90s", "5m", "1h30m", "1.5h", "250ms"), or plain seconds
// ("30"). kInvalidArgument for anything else, a negative value, or more than 100 years.
StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text);

// args[0] is the command. `program`: "tfjob" or "kubectl tfjob" (for the help text).
// kInvalidArgument with CLI11's message on a usage error; `help` set for --help.
StatusOr<CliArgs> ParseCliArgs(const std::vector<std::string>& args, const std::string& program = "tfjob");

}  // namespace tfjob::cli
