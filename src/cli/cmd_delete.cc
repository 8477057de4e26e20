// `tfjob delete NAME [--wait [--timeout D]]` (docs/cli.md).

#include <CLI/CLI.hpp>

#include "api/exit_codes.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "cli/job_view.h"
#include "cli/session.h"
#include "kube/tfjob_resources.h"

namespace tfjob::cli {
namespace {

using Ms = std::chrono::milliseconds;
using api::kExitInterrupted;
using api::kExitOk;
using api::kExitTimeout;
using api::kExitUsage;
using kube::kTfJobs;

int Delete(const CliArgs& a, const CliIo& io) {
  auto session = ConnectOrSay(a.conn, io);
  if (!session) return kExitUsage;
  Session& s = *session;
  Status d = s.client->Delete(kTfJobs, s.ns, a.name, {"Background"});
  if (!d.ok()) return JobGetFailed(s, a.name, d, *io.err);
  if (!a.wait) {
    *io.out << JobRef(s.ns, a.name) << " deleted\n";
    return kExitOk;
  }
  Ms timeout = a.timeout.value_or(Ms(300000));
  return WithStops(io, [&](std::stop_token stop, std::stop_token) {
    auto until = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      auto j = s.client->Get(kTfJobs, s.ns, a.name);
      if (!j.ok() && IsNotFound(j.status())) {
        *io.out << JobRef(s.ns, a.name) << " deleted\n";
        return kExitOk;
      }
      if (!j.ok() && !IsRetryable(j.status())) return Fail(s, j.status(), *io.err);
      if (std::chrono::steady_clock::now() >= until) {
        *io.err << "tfjob: timed out after " << FormatMs(timeout) << " waiting for " << JobRef(s.ns, a.name)
                << " to be gone (finalizers?)\n";
        return kExitTimeout;
      }
      if (!s.clock.SleepFor(Ms(250), stop)) return kExitInterrupted;
    }
  });
}

class DeleteCommand : public ClusterCommand {
 public:
  explicit DeleteCommand(CLI::App& root)
      : ClusterCommand(root, "delete", "Delete a TFJob (and, through its owner references, its pods and services)") {
    CLI::App& app = this->app();
    app.add_option("NAME", args_.name, "The TFJob")->required();
    app.add_flag("--wait", args_.wait, "Wait until the TFJob is gone");
    app.add_option("--timeout", timeout_, "With --wait: give up after this long (exit 124; default 5m)");
  }

 protected:
  int RunCluster(const CliArgs& a, const CliIo& io) override { return Delete(a, io); }
};

}  // namespace

std::unique_ptr<Command> DefineDelete(CLI::App& root) {
  return std::make_unique<DeleteCommand>(root);
}

}  // namespace tfjob::cli
