// `tfjob run FILE` (README.md): every replica of one TFJob as local processes (local::LocalRunner),
// with the live frame of the replicas on a terminal (local/replica_view.h).
#include <csignal>

#include <CLI/CLI.hpp>

#include "api/exit_codes.h"
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
}

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
    run.add_flag("--dashboard", dashboard_,
                 "Serve the job's page (the same as tfjob dashboard's) on 127.0.0.1 while it runs; docs/dashboard.md");
    run.add_option("--dashboard-address", dashboard_address_,
                   "HOST:PORT of --dashboard (127.0.0.1 only; port 0: a free one)")
        ->capture_default_str();
  }

  int Run(const CliIo& io) override {
    std::ostream& err = *io.err;
    std::vector<CheckedJob> jobs;
    if (int rc = LoadChecked(file_, err, &jobs); rc != api::kExitOk) return rc;
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
  bool dashboard_ = false;
  std::string dashboard_address_ = "127.0.0.1:0";
};

}  // namespace

std::unique_ptr<Command> DefineRun(CLI::App& root) {
  return std::make_unique<RunCommand>(root);
}

}  // namespace tfjob::cli
