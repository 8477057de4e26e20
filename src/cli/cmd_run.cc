// `tfjob run FILE` (docs/local.md): every replica of one TFJob as local processes (local::LocalRunner),
// with the live frame of the replicas on a terminal (local/replica_view.h).
#include <algorithm>
#include <csignal>
#include <optional>

#include <CLI/CLI.hpp>

#include "api/exit_codes.h"
#include "cli/cli_args.h"
#include "cli/command.h"
#include "cli/dashboard_local.h"
#include "cli/job_file.h"
#include "common/clock.h"
#include "local/local_runner.h"

namespace tfjob::cli {
namespace {

// The environment every container starts from: tfjob's whole environment, or with `clean_env`
// only the variables local::KeptByCleanEnv keeps.
std::vector<std::pair<std::string, std::string>> BaseEnvironment(const std::map<std::string, std::string>& env,
                                                                 bool clean_env) {
  std::vector<std::pair<std::string, std::string>> base_env;
  for (const auto& [name, value] : env)
    if (!clean_env || local::KeptByCleanEnv(name)) base_env.emplace_back(name, value);
  return base_env;
}

// The GPUs this machine offers (docs/local.md, "GPUs"): --gpus, else the caller's
// CUDA_VISIBLE_DEVICES when it is set, else what `nvidia-smi -L` lists, else none.
StatusOr<local::GpuDevices> FindGpus(const std::optional<std::string>& flag,
                                     const std::map<std::string, std::string>& env) {
  if (flag) {
    TFJOB_ASSIGN_OR_RETURN(auto ids, local::ParseGpuFlag(*flag));
    return local::GpuDevices{std::move(ids), "--gpus " + *flag};
  }
  if (auto cuda = env.find("CUDA_VISIBLE_DEVICES"); cuda != env.end())
    return local::GpuDevices{local::ParseVisibleDevices(cuda->second), "CUDA_VISIBLE_DEVICES=" + cuda->second};
  auto path = env.find("PATH");
  return local::ProbeNvidiaSmi(path == env.end() ? "/usr/bin:/bin" : path->second);
}

// The table and the one-line outcome printed when `tfjob run` ends with `rc`.
void PrintRunSummary(const std::string& file, const std::string& job_name, const local::LocalRunner& runner, int rc,
                     std::ostream& out, std::ostream& err) {
  out << "\n" << runner.FormatTable();
  const auto& conds = runner.status().conditions;
  std::string outcome = rc == api::kExitInterrupted ? "interrupted"
                        : conds.empty()             ? ""
                                                    : conds.back().type + ": " + conds.back().message;
  if (rc == local::kRunExitCannotStart) {
    outcome = "cannot run here:";
    for (const auto& f : runner.start_failures()) outcome += " " + f + ";";
    outcome.pop_back();
    err << file << ": " << runner.start_failures().front() << "\n";
  }
  out << "TFJob " << job_name << " " << outcome << "\n";
  for (const auto& why : runner.failure_reasons()) out << "  why: " << why << "\n";
}

constexpr const char* kRunExitCodes =
    "Exit codes:\n"
    "  0    the job Succeeded\n"
    "  1    the job Failed, or the file holds an invalid TFJob\n"
    "  2    cannot run here: a usage error, an unreadable file, not exactly one TFJob, a command not found,\n"
    "       a field a local run cannot honour, too few GPUs or file descriptors, a replica that could not start\n"
    "  130  interrupted (Ctrl-C or SIGTERM): every replica stopped\n"
    "The run rules (ports, restarts and their back-off, GPUs, the summary): docs/local.md";

class RunCommand : public Command {
 public:
  explicit RunCommand(CLI::App& root)
      : Command(root.add_subcommand("run",
                                    "Run a TFJob on this machine: each replica a local process with its TF_CONFIG")) {
    CLI::App& run = app();
    run.add_option("FILE", file_, "TFJob manifest (YAML or JSON; - for standard input) with one TFJob")->required();
    run.add_option("--logs-dir", options_.logs_dir, "Also write one log file per replica into this folder");
    run.add_flag("--quiet", options_.quiet, "Show state transitions only, not the replicas' output");
    run.add_flag("--clean-env", clean_env_,
                 "Start each container from PATH, HOME, USER, LANG, LC_*, TERM, TZ, TMPDIR, SHELL, LOGNAME only "
                 "(default: tfjob's whole environment), then its own env");
    run.add_option("--grace-period", grace_seconds_, "Seconds between SIGTERM and SIGKILL when stopping replicas")
        ->check(CLI::Range(0.0, 3600.0))
        ->capture_default_str();
    run.add_option("--restart-backoff", backoff_,
                   "The first wait of a replica's crash-loop back-off (10s, as the kubelet; 0 for none): the first "
                   "restart is at once, each later one waits, doubling up to --restart-backoff-max")
        ->capture_default_str();
    run.add_option("--restart-backoff-max", backoff_max_, "The longest crash-loop back-off (5m, as the kubelet)")
        ->capture_default_str();
    gpus_option_ = run.add_option(
        "--gpus", gpus_,
        "The GPU ids to hand out (e.g. 0,1,2,3 or GPU-UUIDs; none for none). Default: CUDA_VISIBLE_DEVICES "
        "when set, else the GPUs nvidia-smi -L lists");
    run.add_flag("--dashboard", dashboard_,
                 "Serve the job's page (the same as tfjob dashboard's) on 127.0.0.1 while it runs; docs/dashboard.md");
    run.add_option("--dashboard-address", dashboard_address_,
                   "HOST:PORT of --dashboard (127.0.0.1 only; port 0: a free one)")
        ->capture_default_str();
    run.footer(kRunExitCodes);
  }

  int Run(const CliIo& io) override {
    std::ostream& err = *io.err;
    std::vector<CheckedJob> jobs;
    // The file as `validate --local` checks it (cli/job_file.h, local/local_rules.h).
    CheckOptions check{.local = true, .local_exit_code = local::kRunExitCannotStart};
    if (int rc = LoadChecked(file_, err, &jobs, check); rc != api::kExitOk) return rc;
    if (jobs.size() != 1) {
      err << file_ << ": tfjob run takes a file with exactly one TFJob (found " << jobs.size() << ")\n";
      return api::kExitUsage;
    }
    // The dashboard's process first, while tfjob has one thread and holds no port (dashboard_local.h).
    std::unique_ptr<dashboard::LocalFeed> feed;
    RealClock clock;
    if (dashboard_) {
      auto d = dashboard::StartLocalDashboard(dashboard_address_, jobs[0].job.metadata.name);
      if (!d.ok()) {
        err << "tfjob run --dashboard: " << d.status().message() << "\n";
        return api::kExitUsage;
      }
      feed = std::make_unique<dashboard::LocalFeed>(d->fd, clock);
      *io.out << "tfjob: dashboard at " << d->url << "job?ns=" << dashboard::kLocalNamespace
              << "&name=" << jobs[0].job.metadata.name << std::endl;
    }
    local::RunOptions options = options_;
    options.observer = feed.get();
    options.grace_period = std::chrono::milliseconds(static_cast<long long>(grace_seconds_ * 1000));
    StatusOr<std::chrono::milliseconds> backoff = ParseDuration(backoff_);
    StatusOr<std::chrono::milliseconds> backoff_max = ParseDuration(backoff_max_);
    if (!backoff.ok() || !backoff_max.ok()) {
      err << "tfjob run: "
          << (backoff.ok() ? "--restart-backoff-max: " + backoff_max.status().message()
                           : "--restart-backoff: " + backoff.status().message())
          << "\n";
      return api::kExitUsage;
    }
    options.restart_backoff = {*backoff, std::max(*backoff, *backoff_max)};
    StatusOr<local::GpuDevices> gpus =
        FindGpus(gpus_option_->count() > 0 ? std::optional<std::string>(gpus_) : std::nullopt, io.env);
    if (!gpus.ok()) {
      err << "tfjob run: " << gpus.status().message() << "\n";
      return api::kExitUsage;
    }
    options.gpus = std::move(*gpus);
    // Colour only on a terminal; the live table also needs its height (not with --quiet).
    options.color = io.out_is_terminal;
    if (options.color && !options.quiet) options.terminal_rows = io.terminal_rows;
    // A replica that has gone must not kill tfjob through a write to its pipe (EPIPE instead);
    // the supervisors give their containers the default disposition back.
    std::signal(SIGPIPE, SIG_IGN);
    for (auto& kv : BaseEnvironment(io.env, clean_env_)) options.base_env.push_back(std::move(kv));
    local::LocalRunner runner(jobs[0].job, options, clock, *io.out);
    if (Status s = runner.Prepare(); !s.ok()) {
      err << file_ << ": " << s.message() << "\n";
      return api::kExitUsage;
    }
    int rc = WithStops(io, [&](std::stop_token stop, std::stop_token kill_now) { return runner.Run(stop, kill_now); });
    PrintRunSummary(file_, jobs[0].job.metadata.name, runner, rc, *io.out, err);
    return rc;
  }

 private:
  std::string file_;
  local::RunOptions options_;
  double grace_seconds_ = 5;
  bool clean_env_ = false;
  std::string backoff_ = "10s";
  std::string backoff_max_ = "5m";
  std::string gpus_;
  CLI::Option* gpus_option_ = nullptr;
  bool dashboard_ = false;
  std::string dashboard_address_ = "127.0.0.1:0";
};

}  // namespace

std::unique_ptr<Command> DefineRun(CLI::App& root) {
  return std::make_unique<RunCommand>(root);
}

}  // namespace tfjob::cli
