#include "cli/cli_args.h"

#include <cmath>

#include <CLI/CLI.hpp>

namespace tfjob::cli {

const std::vector<CommandInfo>& ClusterCommands() {
  static const std::vector<CommandInfo> kCommands = {
      {"submit", "Create the TFJobs of a file in the cluster; --wait: the live replica table until the job ends"},
      {"get", "List TFJobs of the cluster (state, age, replicas ready/total, restarts)"},
      {"describe", "A TFJob's conditions, replicas, timeline, events and why it is not running"},
      {"logs", "The merged, prefixed logs of a TFJob's replicas"},
      {"suspend", "Suspend a TFJob (spec.runPolicy.suspend: its pods are deleted)"},
      {"resume", "Resume a suspended TFJob"},
      {"delete", "Delete a TFJob (and, through its owner references, its pods and services)"},
  };
  return kCommands;
}

bool IsClusterCommand(std::string_view name) {
  for (const auto& c : ClusterCommands())
    if (name == c.name) return true;
  return false;
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

StatusOr<CliArgs> ParseCliArgs(const std::vector<std::string>& args, const std::string& program) {
  CliArgs a;
  if (args.empty() || !IsClusterCommand(args[0])) return InvalidArgumentError("not a cluster command");
  a.command = args[0];
  std::string description;
  for (const auto& c : ClusterCommands())
    if (a.command == c.name) description = c.description;
  CLI::App app{description, program + " " + a.command};
  std::string request_timeout, timeout, since;
  app.add_option("--kubeconfig", a.conn.kubeconfig,
                 "Kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then in-cluster)");
  app.add_option("--context", a.conn.context, "Kubeconfig context (default: the current one)");
  app.add_option("-n,--namespace", a.conn.ns, "Namespace (default: the context's, else \"default\")");
  app.add_option("--request-timeout", request_timeout, "Bound on each API request, its retries included (default 30s)");
  const std::string& cmd = a.command;
  auto add_max_log_requests = [&](const std::string& over) {
    app.add_option("--max-log-requests", a.max_log_requests,
                   "With --follow: the most log streams open at once (default 5, as kubectl); " + over)
        ->check(CLI::Range(1, 1000));
  };
  if (cmd == "get") {
    app.add_option("NAME", a.name, "A TFJob (default: all of the namespace)");
    app.add_flag("-A,--all-namespaces", a.conn.all_namespaces, "TFJobs of every namespace");
    app.add_option("-o,--output", a.output, "yaml, json or wide")->check(CLI::IsMember({"yaml", "json", "wide"}));
    app.add_flag("-w,--watch", a.watch, "After the table, print a row whenever a TFJob changes (Ctrl-C ends)");
  } else if (cmd == "describe" || cmd == "suspend" || cmd == "resume") {
    app.add_option("NAME", a.name, "The TFJob")->required();
  } else if (cmd == "delete") {
    app.add_option("NAME", a.name, "The TFJob")->required();
    app.add_flag("--wait", a.wait, "Wait until the TFJob is gone");
    app.add_option("--timeout", timeout, "With --wait: give up after this long (exit 124; default 5m)");
  } else if (cmd == "submit") {
    app.add_option("FILE", a.file, "TFJob manifest (YAML or JSON; - for standard input)")->required();
    app.add_flag("--wait", a.wait,
                 "Wait for the job to end, showing its replicas; exit 0 Succeeded, 1 Failed, 124 timeout");
    app.add_flag("--follow", a.follow, "With --wait: stream every replica's logs, prefixed");
    app.add_option("--timeout", timeout, "With --wait: stop waiting after this long (exit 124; the job keeps running)");
    app.add_flag("--delete-on-interrupt", a.delete_on_interrupt,
                 "With --wait: Ctrl-C deletes the job (default: Ctrl-C stops watching only)");
    add_max_log_requests("more containers wait for a slot");
  } else if (cmd == "logs") {
    app.add_option("NAME", a.name, "The TFJob")->required();
    auto* replica = app.add_option("--replica", a.replica, "One replica: worker-0 (or the pod's name)");
    app.add_option("--type", a.type, "The replicas of one type: Worker, PS, Chief, ...")->excludes(replica);
    app.add_flag("-f,--follow", a.follow, "Follow the logs, and the new pods after restarts (Ctrl-C ends)");
    app.add_flag("-p,--previous", a.previous, "The logs of the previous (restarted) container");
    app.add_option("--since", since, "Only lines newer than this (5s, 2m, 3h)");
    add_max_log_requests("a job with more containers to follow at once is refused (exit 2)");
  }
  std::vector<std::string> rest(args.rbegin(), args.rend() - 1);
  try {
    app.parse(rest);
  } catch (const CLI::CallForHelp&) {
    a.help = true;
    a.help_text = app.help();
    return a;
  } catch (const CLI::ParseError& e) {
    return InvalidArgumentError(e.what());
  }
  if (a.conn.all_namespaces && !a.conn.ns.empty())
    return InvalidArgumentError("-A/--all-namespaces and -n/--namespace exclude each other");
  if (a.conn.all_namespaces && !a.name.empty())
    return InvalidArgumentError("a NAME cannot be given with -A/--all-namespaces");
  if (a.follow && cmd == "submit" && !a.wait) a.wait = true;  // --follow implies --wait
  if (a.delete_on_interrupt && !a.wait) return InvalidArgumentError("--delete-on-interrupt needs --wait");
  if (a.watch && (a.output == "yaml" || a.output == "json"))
    return InvalidArgumentError("--watch prints table rows; it does not combine with -o yaml|json");
  if (a.previous && a.follow) return InvalidArgumentError("--previous and --follow exclude each other");
  if (!request_timeout.empty()) {
    TFJOB_ASSIGN_OR_RETURN(a.conn.request_timeout, ParseDuration(request_timeout));
    if (a.conn.request_timeout.count() == 0) a.conn.request_timeout = std::chrono::milliseconds(30000);
  }
  if (!timeout.empty()) {
    if (!a.wait) return InvalidArgumentError("--timeout needs --wait");
    TFJOB_ASSIGN_OR_RETURN(a.timeout, ParseDuration(timeout));
  }
  if (!since.empty()) {
    TFJOB_ASSIGN_OR_RETURN(auto s, ParseDuration(since));
    a.since = std::chrono::duration_cast<std::chrono::seconds>(s);
    if (a.since->count() == 0) a.since = std::chrono::seconds(1);
  }
  return a;
}

}  // namespace tfjob::cli
