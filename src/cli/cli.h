#pragma once
// The cluster commands (docs/cli.md): `tfjob submit|get|describe|logs|suspend|resume|delete`
// against an API server found as kubectl finds it (--kubeconfig, $KUBECONFIG, ~/.kube/config,
// in-cluster; --context; -n/--namespace, the context's namespace; -A). Also served as the
// kubectl plugin `kubectl-tfjob`. Exit codes: 0 ok (submit --wait: Succeeded), 1 the job
// failed or the server refused, 2 usage, configuration or connection, 124 --timeout, 130 Ctrl-C.

#include <functional>
#include <map>
#include <ostream>
#include <stop_token>
#include <string>
#include <vector>

namespace tfjob::cli {

inline constexpr int kExitTimeout = 124;
inline constexpr int kExitInterrupted = 130;

struct CliIo {
  std::ostream* out = nullptr;
  std::ostream* err = nullptr;
  bool out_is_terminal = false;  // colours and the live table
  int terminal_rows = 0;         // 0: unknown
  std::map<std::string, std::string> env;
  std::string program = "tfjob";  // "kubectl tfjob" as a plugin
  // Runs `body` with stop requests for the first and second Ctrl-C/SIGTERM (cmd's signal waiter).
  std::function<int(const std::function<int(std::stop_token, std::stop_token)>&)> with_signal_stops;
};

// args[0] is the command (IsClusterCommand). REQUIRES: a kube::CurlGlobal is alive.
int RunCli(const std::vector<std::string>& args, const CliIo& io);

}  // namespace tfjob::cli
