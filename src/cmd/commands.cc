#include "cmd/commands.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include <CLI/CLI.hpp>

#include "api/crd.h"
#include "api/defaults.h"
#include "api/manifest.h"
#include "api/tfjob_file.h"
#include "api/validation.h"
#include "cli/cli.h"
#include "cli/cli_args.h"
#include "common/file_reader.h"
#include "common/logging.h"
#include "kube/curl_transport.h"
#include "local/local_runner.h"
#include "operator/operator.h"

namespace tfjob::cmd {
namespace {

// "FILE: " or "FILE: TFJob NAME: " when the file holds several jobs.
std::string Prefix(const std::string& file, const std::vector<CheckedJob>& jobs, const CheckedJob& job) {
  if (jobs.size() <= 1) return file + ": ";
  return file + ": TFJob " +
         (job.job.metadata.name.empty() ? "(unnamed)" : api::EscapeNonPrintable(job.job.metadata.name)) + ": ";
}

// Reads and checks one file; prints warnings ("FILE: warning: ...") and errors. `strict`:
// warnings are printed and counted as errors. Returns the exit code for this file.
int LoadChecked(const std::string& file, std::ostream& err, std::vector<CheckedJob>* jobs, bool strict = false) {
  auto text = ReadInput(file);
  if (!text.ok()) {
    err << file << ": " << text.status().message() << "\n";
    return kExitUsage;
  }
  auto checked = CheckFile(*text);
  if (!checked.ok()) {
    err << file << ": " << checked.status().message() << "\n";
    return kExitFailed;
  }
  const char* warning = strict ? "" : "warning: ";
  int rc = kExitOk;
  for (const auto& w : checked->warnings) err << file << ": " << warning << w << "\n";
  if (strict && !checked->warnings.empty()) rc = kExitFailed;
  *jobs = std::move(checked->jobs);
  for (auto& j : *jobs) {
    for (const auto& w : j.warnings) err << Prefix(file, *jobs, j) << warning << w << "\n";
    for (const auto& e : j.errors) err << Prefix(file, *jobs, j) << e << "\n";
    if (!j.errors.empty() || (strict && !j.warnings.empty())) rc = kExitFailed;
  }
  return rc;
}

int RunValidate(const std::vector<std::string>& files, bool strict, std::ostream& out, std::ostream& err) {
  int rc = kExitOk;
  for (const auto& file : files) {
    std::vector<CheckedJob> jobs;
    int file_rc = LoadChecked(file, err, &jobs, strict);
    if (file_rc == kExitOk)
      for (const auto& j : jobs) out << file << ": TFJob " << j.job.metadata.name << " is valid\n";
    rc = std::max(rc, file_rc);
  }
  return rc;
}

int RunRender(const std::string& file, const std::string& format, const RenderRequest& request, std::ostream& out,
              std::ostream& err) {
  std::vector<CheckedJob> jobs;
  if (int rc = LoadChecked(file, err, &jobs); rc != kExitOk) return rc;
  std::vector<core::RenderEvent> events;
  auto list = RenderList(std::move(jobs), request, &events);
  if (!list.ok()) {
    err << file << ": " << list.status().message() << "\n";
    return kExitFailed;
  }
  for (const auto& e : events)
    err << file << ": " << api::EnumName(e.type) << " " << e.reason << ": " << e.message << "\n";
  if (format == "json")
    out << list->dump(2) << "\n";
  else
    out << api::ToYaml(*list);
  return kExitOk;
}

std::map<std::string, std::string> Environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

// Runs `body` with SIGTERM/SIGINT turned into stop requests: the first asks for a graceful stop,
// a second one for an immediate kill (`tfjob run`; the operator reads only the first). The
// signals are blocked in every thread and one thread waits for them (no async-signal-unsafe
// handler). `log_signals`: each one is logged (the operator's log).
int WithSignalStops(const std::function<int(std::stop_token, std::stop_token)>& body, bool log_signals) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGUSR2);  // our own "stop waiting" at exit
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::stop_source stop, kill_now;
  std::jthread waiter([&signals, &stop, &kill_now, log_signals](std::stop_token) {
    int sig = 0;
    while (sigwait(&signals, &sig) == 0) {
      if (sig == SIGUSR2) return;
      if (log_signals)
        Logger().Info("signal received; shutting down", {{"signal", sig == SIGTERM ? "SIGTERM" : "SIGINT"}});
      if (stop.stop_requested())
        kill_now.request_stop();
      else
        stop.request_stop();
    }
  });
  int rc = body(stop.get_token(), kill_now.get_token());
  pthread_kill(waiter.native_handle(), SIGUSR2);
  return rc;
}

int RunOperatorCommand(const operator_::OperatorOptions& options) {
  kube::CurlGlobal curl;  // before any other thread
  return WithSignalStops(
      [&](std::stop_token stop, std::stop_token) { return operator_::RunOperator(options, Environment(), stop); },
      true);
}

// The environment every container starts from: tfjob's whole environment, or with `clean_env`
// only the variables local::KeptByCleanEnv keeps.
std::vector<std::pair<std::string, std::string>> BaseEnvironment(bool clean_env) {
  std::vector<std::pair<std::string, std::string>> base_env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string::npos) continue;
    std::string name = kv.substr(0, eq);
    if (!clean_env || local::KeptByCleanEnv(name)) base_env.emplace_back(name, kv.substr(eq + 1));
  }
  return base_env;
}

// Colour only on a terminal; the live table also needs its height (not with --quiet).
void DetectTerminal(local::RunOptions& options) {
  options.color = options.color && isatty(STDOUT_FILENO);
  if (options.color && !options.quiet) {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) options.terminal_rows = ws.ws_row;
  }
}

// The table and the one-line outcome printed when `tfjob run` ends with `rc`.
void PrintRunSummary(const std::string& file, const std::string& job_name, const local::LocalRunner& runner, int rc,
                     std::ostream& out, std::ostream& err) {
  out << "\n" << runner.FormatTable();
  const auto& conds = runner.status().conditions;
  std::string outcome = rc == 130       ? "interrupted"
                        : conds.empty() ? ""
                                        : conds.back().type + ": " + conds.back().message;
  if (rc == local::kRunExitCannotStart) {
    outcome = "cannot run here:";
    for (const auto& f : runner.start_failures()) outcome += " " + f + ";";
    outcome.pop_back();
    err << file << ": " << runner.start_failures().front() << "\n";
  }
  out << "TFJob " << job_name << " " << outcome << "\n";
}

int RunLocalCommand(const std::string& file, local::RunOptions options, bool clean_env, std::ostream& out,
                    std::ostream& err) {
  std::vector<CheckedJob> jobs;
  if (int rc = LoadChecked(file, err, &jobs); rc != kExitOk) return rc;
  if (jobs.size() != 1) {
    err << file << ": tfjob run takes a file with exactly one TFJob (found " << jobs.size() << ")\n";
    return kExitUsage;
  }
  // A replica that has gone must not kill tfjob through a write to its pipe (EPIPE instead);
  // the supervisors give their containers the default disposition back.
  std::signal(SIGPIPE, SIG_IGN);
  for (auto& kv : BaseEnvironment(clean_env)) options.base_env.push_back(std::move(kv));
  RealClock clock;
  DetectTerminal(options);
  local::LocalRunner runner(jobs[0].job, options, clock, out);
  if (Status s = runner.Prepare(); !s.ok()) {
    err << file << ": " << s.message() << "\n";
    return kExitUsage;
  }
  int rc = WithSignalStops([&](std::stop_token stop, std::stop_token kill_now) { return runner.Run(stop, kill_now); },
                           false);
  PrintRunSummary(file, jobs[0].job.metadata.name, runner, rc, out, err);
  return rc;
}

int RunClusterCommand(int argc, const char* const* argv, const std::string& program, std::ostream& out,
                      std::ostream& err) {
  kube::CurlGlobal curl;  // before any other thread
  // A log stream or the server gone must not kill tfjob through a write to a closed pipe.
  std::signal(SIGPIPE, SIG_IGN);
  cli::CliIo io;
  io.out = &out;
  io.err = &err;
  io.program = program;
  io.env = Environment();
  io.out_is_terminal = &out == &std::cout && isatty(STDOUT_FILENO);
  if (io.out_is_terminal) {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0) io.terminal_rows = ws.ws_row;
  }
  io.with_signal_stops = [](const std::function<int(std::stop_token, std::stop_token)>& body) {
    return WithSignalStops(body, false);
  };
  std::vector<std::string> args(argv + 1, argv + argc);
  return cli::RunCli(args, io);
}

}  // namespace

StatusOr<std::string> ReadInput(const std::string& path) {
  int fd = STDIN_FILENO;
  if (path != "-") {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NotFoundError(std::string("cannot read: ") + std::strerror(errno));
  }
  BoundedRead read = ReadFdBounded(fd, api::kMaxManifestBytes);
  if (fd != STDIN_FILENO) ::close(fd);
  switch (read.problem) {
    case ReadProblem::kNone: return std::move(read.bytes);
    case ReadProblem::kDirectory: return InvalidArgumentError("cannot read: is a directory");
    case ReadProblem::kTooLarge: return InvalidArgumentError(api::InputTooLargeMessage());
    case ReadProblem::kReadError: break;
  }
  return UnavailableError(std::string("cannot read: ") + std::strerror(read.error));
}

StatusOr<std::vector<CheckedJob>> CheckJobs(std::string_view text) {
  TFJOB_ASSIGN_OR_RETURN(CheckedFile file, CheckFile(text));
  return std::move(file.jobs);
}

StatusOr<CheckedFile> CheckFile(std::string_view text) {
  TFJOB_ASSIGN_OR_RETURN(api::LoadedFile loaded_file, api::LoadTfJobFile(text));
  CheckedFile file;
  file.warnings = std::move(loaded_file.warnings);
  std::vector<CheckedJob>& out = file.jobs;
  for (auto& l : loaded_file.jobs) {
    CheckedJob c;
    c.warnings = std::move(l.warnings);
    for (auto& w : api::SpecWarnings(l.job)) c.warnings.push_back(std::move(w));  // D22
    api::FieldErrors errors = l.decode_errors;
    api::FieldErrors more = api::ValidateTfJob(l.job);
    errors.insert(errors.end(), more.begin(), more.end());
    for (const auto& e : errors) c.errors.push_back(e.ToString());
    c.job = std::move(l.job);
    if (c.errors.empty()) api::SetDefaults(c.job);
    out.push_back(std::move(c));
  }
  return file;
}

StatusOr<nlohmann::json> RenderList(std::vector<CheckedJob> jobs, const RenderRequest& request,
                                    std::vector<core::RenderEvent>* events) {
  nlohmann::json items = nlohmann::json::array();
  for (auto& c : jobs) {
    TFJOB_CHECK(c.errors.empty());  // callers render only valid jobs
    api::TfJob& job = c.job;
    if (!request.ns.empty()) job.metadata.ns = request.ns;
    if (job.metadata.ns.empty()) job.metadata.ns = "default";
    TFJOB_ASSIGN_OR_RETURN(core::RenderedJob rendered, core::RenderJob(job, request.options));
    for (auto& o : rendered.objects) items.push_back(std::move(o));
    for (auto& e : rendered.events) events->push_back(std::move(e));
  }
  return nlohmann::json{{"apiVersion", "v1"}, {"kind", "List"}, {"items", std::move(items)}};
}

namespace {

// The flags of each subcommand, bound by its Define* below and read after the parse.
struct ValidateArgs {
  std::vector<std::string> files;
  bool strict = false;
};

struct RenderArgs {
  std::string file, format = "yaml";
  RenderRequest request;
  bool evaluator_in_cluster = true;
};

struct OperatorArgs {
  operator_::OperatorOptions op;
  std::string log_format = "text", log_level = "info";
  std::string leader_elect;
};

struct RunArgs {
  std::string file;
  local::RunOptions options;
  double grace_seconds = 5;
  bool clean_env = false;
};

CLI::App* DefineValidate(CLI::App& app, ValidateArgs& a) {
  auto* validate = app.add_subcommand("validate", "Check TFJob files: defaults + validation, errors as path: message");
  validate->add_option("FILE", a.files, "TFJob manifests (YAML or JSON; - for standard input)")->required();
  validate->add_flag("--strict", a.strict,
                     "Warnings (unknown fields, skipped documents, odd values upstream runs) are errors");
  return validate;
}

CLI::App* DefineRender(CLI::App& app, RenderArgs& a) {
  auto* render = app.add_subcommand("render", "Print the Pods, Services and PodGroup the operator would create");
  render->add_option("FILE", a.file, "TFJob manifest (YAML or JSON; - for standard input)")->required();
  render->add_option("-o,--output", a.format, "Output format")->check(CLI::IsMember({"yaml", "json"}));
  render->add_option("--namespace", a.request.ns, "Namespace (default: the job's, else \"default\")");
  render->add_option("--cluster-domain", a.request.options.tf_config.cluster_domain,
                     "Cluster domain appended to TF_CONFIG hosts (<pod>.<ns>.svc.<domain>)");
  render->add_option("--gang-scheduler-name", a.request.options.gang_scheduler_name,
                     "volcano, kubernetes (kube-scheduler's Workload API), or another name for scheduler-plugins; "
                     "empty: no gang scheduling");
  render
      ->add_option("--tf-config-evaluator-in-cluster", a.evaluator_in_cluster, "List evaluators in TF_CONFIG's cluster")
      ->default_val(true);
  return render;
}

// The operator's connection, client and leader-election flags (its servers': DefineOperatorServers).
void DefineOperatorClient(CLI::App* oper, OperatorArgs& a) {
  operator_::OperatorOptions& op = a.op;
  oper->add_option("--kubeconfig", op.kubeconfig,
                   "Kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)");
  oper->add_option("--context", op.context, "Kubeconfig context (default: the current one)");
  oper->add_option("--namespace", op.ns, "Watch only this namespace (default: $KUBEFLOW_NAMESPACE, else all)")
      ->envname("KUBEFLOW_NAMESPACE");
  oper->add_option("--workers", op.workers, "Concurrent reconciles")->check(CLI::Range(1, 256))->capture_default_str();
  oper->add_option("--write-concurrency", op.write_concurrency,
                   "API writes (creates of pods and services) in flight at once, shared by every worker")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  oper->add_option("--kube-api-qps", op.kube_api_qps, "Client-side API requests per second")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  oper->add_option("--kube-api-burst", op.kube_api_burst, "Client-side API burst")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  oper->add_option("--event-qps", op.event_qps, "Event writes per second (their own client)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  oper->add_option("--event-burst", op.event_burst, "Event writes burst")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  oper->add_option("--status-count-interval", op.status_count_interval_seconds,
                   "Seconds a status change of replica active counts alone waits after the job's last status write "
                   "(0: written at once)")
      ->check(CLI::Range(0.0, 60.0))
      ->capture_default_str();
  oper->add_option("--kube-api-timeout", op.kube_api_timeout_seconds,
                   "Seconds an API request may take (a list page: twice that; a watch: to its first byte)")
      ->check(CLI::Range(0.1, 3600.0))
      ->capture_default_str();
  oper->add_option("--metrics-bind-address", op.metrics_bind_address,
                   "host:port of /metrics (port 0: any free port; \"0\": off)")
      ->capture_default_str();
  oper->add_option("--health-probe-bind-address", op.health_probe_bind_address, "host:port of /healthz and /readyz")
      ->capture_default_str();
  oper->add_option("--leader-elect", a.leader_elect, "true|false (default: true when running in a cluster)")
      ->check(CLI::IsMember({"true", "false"}));
  oper->add_option("--leader-election-id", op.leader_election_id, "Name of the Lease")->capture_default_str();
  oper->add_option("--leader-election-namespace", op.leader_election_namespace,
                   "Namespace of the Lease (default: the operator's)");
}

// The operator's gang, TF_CONFIG, webhook and log flags, after DefineOperatorClient's.
void DefineOperatorServers(CLI::App* oper, OperatorArgs& a) {
  operator_::OperatorOptions& op = a.op;
  oper->add_option("--gang-scheduler-name", op.gang_scheduler_name,
                   "volcano, kubernetes (kube-scheduler's Workload API), or a scheduler-plugins scheduler name");
  oper->add_option("--cluster-domain", op.cluster_domain, "Cluster domain for TF_CONFIG hosts")
      ->envname("CUSTOM_CLUSTER_DOMAIN");
  oper->add_option("--tf-config-evaluator-in-cluster", op.tf_config_evaluator_in_cluster,
                   "List evaluators in TF_CONFIG")
      ->capture_default_str();
  oper->add_option("--webhook-port,--webhook-server-port", op.webhook_port,
                   "Port of the validating admission webhook (HTTPS); 0: no webhook")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  oper->add_option("--webhook-host", op.webhook_host, "Address the webhook listens on (default: all)");
  oper->add_option("--webhook-cert-dir", op.webhook_cert_dir, "Folder holding the webhook's tls.crt and tls.key")
      ->capture_default_str();
  oper->add_option("--log-format", a.log_format, "text or json")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  oper->add_option("--log-level", a.log_level, "debug, info, warning or error")
      ->check(CLI::IsMember({"debug", "info", "warning", "warn", "error"}))
      ->capture_default_str();
}

CLI::App* DefineOperator(CLI::App& app, OperatorArgs& a) {
  auto* oper = app.add_subcommand("operator", "Run the TFJob controller against a Kubernetes cluster");
  DefineOperatorClient(oper, a);
  DefineOperatorServers(oper, a);
  return oper;
}

CLI::App* DefineRun(CLI::App& app, RunArgs& a) {
  auto* run = app.add_subcommand("run", "Run a TFJob on this machine: each replica a local process with its TF_CONFIG");
  run->add_option("FILE", a.file, "TFJob manifest (YAML or JSON; - for standard input) with one TFJob")->required();
  run->add_option("--logs-dir", a.options.logs_dir, "Also write one log file per replica into this folder");
  run->add_flag("--quiet", a.options.quiet, "Show state transitions only, not the replicas' output");
  run->add_flag("--clean-env", a.clean_env,
                "Start each container from PATH, HOME, USER, LANG, LC_*, TERM, TZ, TMPDIR, SHELL, LOGNAME only "
                "(default: tfjob's whole environment), then its own env");
  run->add_option("--grace-period", a.grace_seconds, "Seconds between SIGTERM and SIGKILL when stopping replicas")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  return run;
}

// Parses the arguments into `app`'s bindings; the exit code when that is the end (help printed,
// or a usage error), nullopt when a subcommand is to run.
std::optional<int> Parse(CLI::App& app, int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  std::vector<std::string> args;
  for (int i = argc - 1; i > 0; --i) args.emplace_back(argv[i]);
  try {
    app.parse(args);
  } catch (const CLI::CallForHelp&) {
    out << (app.get_subcommands().empty() ? app.help() : app.get_subcommands().front()->help());
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app.help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    err << "tfjob: " << e.what() << "\nRun 'tfjob --help' for usage.\n";
    return kExitUsage;
  }
  return std::nullopt;
}

int StartOperator(const OperatorArgs& a) {
  LogLevel level = LogLevel::kInfo;
  ParseLogLevel(a.log_level, &level);
  SetLogOptions(level, a.log_format == "json" ? LogFormat::kJson : LogFormat::kText);
  operator_::OperatorOptions op = a.op;
  if (!a.leader_elect.empty()) op.leader_elect = a.leader_elect == "true";
  return RunOperatorCommand(op);
}

int StartRun(RunArgs& a, std::ostream& out, std::ostream& err) {
  a.options.grace_period = std::chrono::milliseconds(static_cast<long long>(a.grace_seconds * 1000));
  a.options.color = true;
  return RunLocalCommand(a.file, a.options, a.clean_env, out, err);
}

}  // namespace

int Main(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  // As the kubectl plugin (a `kubectl-tfjob` link to tfjob), the same commands.
  std::string program = "tfjob";
  if (argc > 0 && std::filesystem::path(argv[0]).filename() == "kubectl-tfjob") program = "kubectl tfjob";
  // The cluster commands (src/cli, docs/cli.md) parse their own arguments.
  if (argc > 1 && cli::IsClusterCommand(argv[1])) return RunClusterCommand(argc, argv, program, out, err);
  CLI::App app{"tfjob: a Kubernetes operator for distributed TensorFlow training (TFJob kubeflow.org/v1)", program};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Help for every command");

  // One Define* per subcommand, in the order of --help.
  ValidateArgs validate_args;
  RenderArgs render_args;
  OperatorArgs operator_args;
  RunArgs run_args;
  auto* validate = DefineValidate(app, validate_args);
  auto* render = DefineRender(app, render_args);
  auto* oper = DefineOperator(app, operator_args);
  auto* run = DefineRun(app, run_args);
  // Listed for --help only: dispatched above.
  for (const auto& c : cli::ClusterCommands()) app.add_subcommand(c.name, c.description)->allow_extras();
  auto* crd = app.add_subcommand("crd", "Print the TFJob CustomResourceDefinition");
  auto* version = app.add_subcommand("version", "Print the version");

  if (std::optional<int> rc = Parse(app, argc, argv, out, err)) return *rc;
  render_args.request.options.tf_config.evaluator_in_cluster = render_args.evaluator_in_cluster;
  if (validate->parsed()) return RunValidate(validate_args.files, validate_args.strict, out, err);
  if (render->parsed()) return RunRender(render_args.file, render_args.format, render_args.request, out, err);
  if (oper->parsed()) return StartOperator(operator_args);
  if (run->parsed()) return StartRun(run_args, out, err);
  if (crd->parsed()) {
    out << api::CrdYaml();
    return kExitOk;
  }
  if (version->parsed()) {
    out << "tfjob " << TFJOB_VERSION << " (" << TFJOB_GIT_SHA << ")\n";
    return kExitOk;
  }
  return kExitUsage;
}

}  // namespace tfjob::cmd
