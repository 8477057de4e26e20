#include "cli/cli_args.h"

#include <cmath>
#include <csignal>

#include <CLI/CLI.hpp>

#include "cli/command_tree.h"
#include "common/logging.h"
#include "kube/curl_transport.h"

namespace tfjob::cli {

std::chrono::milliseconds SecondsFlag(double seconds) {
  return std::chrono::round<std::chrono::milliseconds>(std::chrono::duration<double>(seconds));
}

StatusOr<std::chrono::milliseconds> ParseDuration(std::string_view text) {
  auto bad = [&] {
    return InvalidArgumentError("invalid duration \"" + std::string(text) +
                                "\" (examples: 30s, 5m, 1h30m, 250ms; a plain number is seconds)");
  };
  if (text.empty() || text.size() > 64) return bad();
  double total_ms = 0;
  size_t i = 0;
  bool plain = text.find_first_not_of("0123456789.") == std::string_view::npos;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == start) return bad();
    std::string number(text.substr(start, i - start));
    if (number.find('.') != number.rfind('.') || number == ".") return bad();
    double v = std::stod(number);
    if (plain) {
      total_ms += v * 1000;
      break;
    }
    size_t u = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(u, i - u);
    double scale = unit == "ms" ? 1 : unit == "s" ? 1000 : unit == "m" ? 60000 : unit == "h" ? 3600000 : -1;
    if (scale < 0) return bad();
    total_ms += v * scale;
  }
  if (!std::isfinite(total_ms) || total_ms > 100.0 * 365 * 24 * 3600 * 1000) return bad();
  return std::chrono::milliseconds(static_cast<long long>(std::llround(total_ms)));
}

void AddKubeconfigFlags(CLI::App& app, std::string& kubeconfig, std::string& context) {
  app.add_option("--kubeconfig", kubeconfig,
                 "Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)");
  app.add_option("--context", context, "Kubeconfig context (default: the current one)");
}

ClusterCommand::ClusterCommand(CLI::App& root, const std::string& name, const std::string& description)
    : Command(root.add_subcommand(name, description)) {
  CLI::App& app = this->app();
  app.set_help_all_flag();  // --help-all is the root's
  AddKubeconfigFlags(app, args_.conn.kubeconfig, args_.conn.context);
  app.add_option("-n,--namespace", args_.conn.ns, "Namespace (default: the context's, else \"default\")");
  app.add_option("--request-timeout", request_timeout_,
                 "Bound on each API request, its retries included (default 30s)");
  args_.command = name;
}

void ClusterCommand::AddMaxLogRequests(const std::string& over) {
  app()
      .add_option("--max-log-requests", args_.max_log_requests,
                  "With --follow: the most log streams open at once (default 5, as kubectl); " + over)
      ->check(CLI::Range(1, 1000));
}

namespace {

// The flags that exclude each other, or need another (each error names them).
Status CheckFlagCombinations(const CliArgs& a) {
  if (a.conn.all_namespaces && !a.conn.ns.empty())
    return InvalidArgumentError("-A/--all-namespaces and -n/--namespace exclude each other");
  if (a.conn.all_namespaces && !a.name.empty())
    return InvalidArgumentError("a NAME cannot be given with -A/--all-namespaces");
  if (a.delete_on_interrupt && !a.wait) return InvalidArgumentError("--delete-on-interrupt needs --wait");
  if (a.watch && (a.output == "yaml" || a.output == "json"))
    return InvalidArgumentError("--watch prints table rows; it does not combine with -o yaml|json");
  if (a.previous && a.follow) return InvalidArgumentError("--previous and --follow exclude each other");
  return OkStatus();
}

}  // namespace

Status ClusterCommand::Check() {
  CliArgs& a = args_;
  TFJOB_RETURN_IF_ERROR(CheckFlagCombinations(a));
  if (!request_timeout_.empty()) {
    TFJOB_ASSIGN_OR_RETURN(a.conn.request_timeout, ParseDuration(request_timeout_));
    if (a.conn.request_timeout.count() == 0) a.conn.request_timeout = std::chrono::milliseconds(30000);
  }
  if (!timeout_.empty()) {
    if (!a.wait) return InvalidArgumentError("--timeout needs --wait");
    TFJOB_ASSIGN_OR_RETURN(a.timeout, ParseDuration(timeout_));
  }
  if (!since_.empty()) {
    TFJOB_ASSIGN_OR_RETURN(auto s, ParseDuration(since_));
    a.since = std::chrono::duration_cast<std::chrono::seconds>(s);
    if (a.since->count() == 0) a.since = std::chrono::seconds(1);
  }
  return OkStatus();
}

int ClusterCommand::Run(const CliIo& io) {
  kube::CurlGlobal curl;  // before any other thread
  // A log stream or the server gone must not kill tfjob through a write to a closed pipe.
  std::signal(SIGPIPE, SIG_IGN);
  // The REST client's own failure log would draw over the table; the commands report errors.
  // TFJOB_CLI_LOG=debug|info|warning shows them (on stderr).
  LogLevel level = LogLevel::kError;
  if (auto it = io.env.find("TFJOB_CLI_LOG"); it != io.env.end()) ParseLogLevel(it->second, &level);
  SetLogOptions(level, LogFormat::kText);
  return RunCluster(args_, io);
}

StatusOr<CliArgs> ParseCliArgs(const std::vector<std::string>& args, const std::string& program) {
  CommandTree tree(program);
  ParseResult r = tree.Parse(args);
  const auto* command = dynamic_cast<const ClusterCommand*>(r.command);
  if (command == nullptr) return InvalidArgumentError("not a cluster command");
  if (r.kind == ParseResult::Kind::kUsageError) return InvalidArgumentError(r.text);
  CliArgs a = command->args();
  if (r.kind == ParseResult::Kind::kHelp) {
    a.help = true;
    a.help_text = r.text;
  }
  return a;
}

}  // namespace tfjob::cli
