// `tfjob suspend NAME`, `tfjob resume NAME` (docs/cli.md): spec.runPolicy.suspend.

#include <CLI/CLI.hpp>

#include "api/exit_codes.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "cli/job_view.h"
#include "cli/session.h"
#include "kube/tfjob_resources.h"

namespace tfjob::cli {
namespace {

using api::kExitFailed;
using api::kExitOk;
using api::kExitUsage;
using kube::kTfJobs;
using nlohmann::json;

int SetSuspend(const CliArgs& a, const CliIo& io, bool suspend) {
  auto session = ConnectOrSay(a.conn, io);
  if (!session) return kExitUsage;
  Session& s = *session;
  auto j = s.client->Get(kTfJobs, s.ns, a.name);
  if (!j.ok()) return JobGetFailed(s, a.name, j.status(), *io.err);
  JobView job = DecodeJobView(*j);
  if (JobFinished(job)) {
    *io.err << "tfjob: " << JobRef(s.ns, a.name) << " has finished (" << JobState(job) << "); nothing to "
            << (suspend ? "suspend" : "resume") << "\n";
    return kExitFailed;
  }
  if (job.suspend == suspend) {
    *io.out << JobRef(s.ns, a.name) << " is already " << (suspend ? "suspended" : "not suspended") << "\n";
    return kExitOk;
  }
  if (!suspend && !job.queue.empty())
    *io.err << "warning: " << JobRef(s.ns, a.name) << " is queued in Kueue (queue \"" << Esc(job.queue)
            << "\"): Kueue decides when it runs and may suspend it again\n";
  json patch = {{"spec", {{"runPolicy", {{"suspend", suspend}}}}}};
  auto r = s.client->Patch(kTfJobs, s.ns, a.name, kube::PatchType::kMerge, patch);
  if (!r.ok()) return Fail(s, r.status(), *io.err);
  *io.out << JobRef(s.ns, a.name) << (suspend ? " suspended" : " resumed") << "\n";
  return kExitOk;
}

class SuspendCommand : public ClusterCommand {
 public:
  SuspendCommand(CLI::App& root, bool suspend)
      : ClusterCommand(
            root, suspend ? "suspend" : "resume",
            suspend ? "Suspend a TFJob (spec.runPolicy.suspend: its pods are deleted)" : "Resume a suspended TFJob"),
        suspend_(suspend) {
    app().add_option("NAME", args_.name, "The TFJob")->required();
  }

 protected:
  int RunCluster(const CliArgs& a, const CliIo& io) override { return SetSuspend(a, io, suspend_); }

 private:
  const bool suspend_;
};

}  // namespace

std::unique_ptr<Command> DefineSuspend(CLI::App& root) {
  return std::make_unique<SuspendCommand>(root, true);
}

std::unique_ptr<Command> DefineResume(CLI::App& root) {
  return std::make_unique<SuspendCommand>(root, false);
}

}  // namespace tfjob::cli
