#pragma once
// The arguments of the cluster commands (docs/cli.md): `tfjob get|describe|submit|logs|suspend|
// resume|delete`, parsed into values so that parsing is tested without a cluster. The flags every
// cluster command shares (--kubeconfig, --context, -n, --request-timeout) and the rules between
// flags are defined once, in ClusterCommand.

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"
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

// Go's durations as kubectl takes them ("90s", "5m", "1h30m", "1.5h", "250ms"), or plain seconds
// ("30"). kInvalidArgument for anything else, a negative value, or more than 100 years.
StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text);
// A flag given in seconds (a decimal number, checked by its range), to the nearest millisecond.
std::chrono::milliseconds SecondsFlag(double seconds);

// args[0] is the command. `program`: "tfjob" or "kubectl tfjob" (for the help text). Parses with
// the one tree (command_tree.h). kInvalidArgument with CLI11's or Check's message on a usage
// error, or when args[0] is not a cluster command; `help` set for --help.
StatusOr<CliArgs> ParseCliArgs(const std::vector<std::string>& args, const std::string& program = "tfjob");

// --kubeconfig and --context, as every command that talks to a cluster takes them (the cluster
// commands and `tfjob operator`; one resolution order, kube::ResolveClientConfig).
void AddKubeconfigFlags(CLI::App& app, std::string& kubeconfig, std::string& context);

// A cluster command: its subcommand with the connection flags, the rules between flags (Check),
// and around RunCluster what every cluster command needs (libcurl, SIGPIPE ignored, the log level
// of TFJOB_CLI_LOG).
class ClusterCommand : public Command {
 public:
  ClusterCommand(CLI::App& root, const std::string& name, const std::string& description);
  const CliArgs& args() const { return args_; }
  Status Check() override;
  int Run(const CliIo& io) final;
  bool cluster() const override { return true; }

 protected:
  // REQUIRES: a kube::CurlGlobal is alive.
  virtual int RunCluster(const CliArgs& a, const CliIo& io) = 0;
  // --max-log-requests (logs -f, submit --follow); `over`: what happens past it.
  void AddMaxLogRequests(const std::string& over);
  CliArgs args_;
  std::string timeout_;  // --timeout (submit, delete), parsed by Check
  std::string since_;    // --since (logs), parsed by Check

 private:
  std::string request_timeout_;
};

}  // namespace tfjob::cli
