// `tfjob dashboard` (docs/dashboard.md): a web page of every TFJob of a namespace (or of all,
// -A) and of each job, served from tfjob on 127.0.0.1, fed by the cluster's watches with the
// user's own credentials; read-only unless --allow-actions.

#include <CLI/CLI.hpp>

#include "api/exit_codes.h"
#include "cli/dashboard_cluster.h"
#include "cli/dashboard_server.h"
#include "cli/session.h"

namespace tfjob::cli {
namespace {

using api::kExitInterrupted;
using api::kExitUsage;

class DashboardCommand : public ClusterCommand {
 public:
  explicit DashboardCommand(CLI::App& root)
      : ClusterCommand(root, "dashboard",
                       "Serve a web page of the TFJobs, live from the cluster (read-only by default)") {
    CLI::App& app = this->app();
    app.add_flag("-A,--all-namespaces", args_.conn.all_namespaces, "TFJobs of every namespace");
    app.add_option("--address", address_,
                   "HOST:PORT to serve on (default 127.0.0.1:8090; another host than 127.0.0.1 gets a random "
                   "access token in the URL)")
        ->capture_default_str();
    app.add_flag("--allow-actions", allow_actions_, "Offer suspend, resume and delete in the page (each confirmed)");
    AddMaxLogRequests("more wait for a slot");
  }

  Status Check() override {
    TFJOB_RETURN_IF_ERROR(ClusterCommand::Check());
    auto loopback = dashboard::LoopbackAddress(address_);
    if (!loopback.ok()) return loopback.status();
    return OkStatus();
  }

 protected:
  int RunCluster(const CliArgs& a, const CliIo& io) override {
    auto session = ConnectOrSay(a.conn, io);
    if (!session) return kExitUsage;
    Session& s = *session;
    dashboard::Model model(s.clock);
    dashboard::ClusterSource source(s, model, s.ns, a.max_log_requests);
    dashboard::ServerOptions options;
    options.address = address_;
    options.allow_actions = allow_actions_;
    options.title = s.config.context + (s.ns.empty() ? " · all namespaces" : " · namespace " + s.ns);
    dashboard::Server server(model, options, &source, &source);
    // Every thread (the server's, the watches') starts inside the signal waiter's reach: SIGTERM
    // and SIGINT are blocked in them and stop the command cleanly, even during discovery.
    int rc = WithStops(io, [&](std::stop_token stop, std::stop_token) {
      if (Status st = server.Start(); !st.ok()) {
        *io.err << "tfjob dashboard: " << st.message() << "\n";
        return kExitUsage;
      }
      *io.out << "tfjob dashboard: serving " << server.Url() << " ("
              << (allow_actions_ ? "suspend, resume and delete allowed" : "read-only") << "; Ctrl-C stops it)"
              << std::endl;
      source.Start();
      while (!stop.stop_requested()) s.clock.SleepFor(std::chrono::hours(1), stop);
      return kExitInterrupted;
    });
    server.Stop();
    source.Stop();
    *io.out << "tfjob dashboard: stopped" << std::endl;
    return rc == kExitInterrupted ? api::kExitOk : rc;
  }

 private:
  std::string address_ = "127.0.0.1:8090";
  bool allow_actions_ = false;
};

}  // namespace

std::unique_ptr<Command> DefineDashboard(CLI::App& root) {
  return std::make_unique<DashboardCommand>(root);
}

}  // namespace tfjob::cli
