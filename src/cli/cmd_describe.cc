// `tfjob describe NAME` (docs/cli.md): conditions, replicas, timeline, events and why the job
// is not running.
#include <optional>

#include <CLI/CLI.hpp>

#include "api/exit_codes.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "cli/describe_lookup.h"
#include "cli/job_view.h"
#include "cli/session.h"
#include "kube/tfjob_resources.h"

namespace tfjob::cli {
namespace {

using api::kExitOk;
using api::kExitUsage;
using kube::kTfJobs;
using nlohmann::json;

int Describe(const CliArgs& a, const CliIo& io) {
  auto session = ConnectOrSay(a.conn, io);
  if (!session) return kExitUsage;
  Session& s = *session;
  auto j = s.client->Get(kTfJobs, s.ns, a.name);
  if (!j.ok()) return JobGetFailed(s, a.name, j.status(), *io.err);
  DescribeInput in;
  in.now = s.clock.Now();
  in.why.job = DecodeJobView(*j);
  kube::ListOptions pod_options;
  pod_options.label_selector = JobPodSelector(a.name);
  auto pods = s.client->ListAll(kube::kPods, s.ns, pod_options, nullptr);
  if (!pods.ok()) return Fail(s, pods.status(), *io.err);
  in.why.pods = JobPods(*pods, in.why.job.uid);
  if (!in.why.job.queue.empty()) in.why.workload = FindWorkload(*s.client, in.why.job);
  in.why.pod_group = FindPodGroup(*s.client, in.why.job);
  std::vector<std::string> objects = {a.name};
  for (const auto& p : in.why.pods)
    if (objects.size() < 100) objects.push_back(p.name);
  for (const auto& o : objects) {
    kube::ListOptions e;
    e.field_selector = "involvedObject.name=" + o;
    e.limit = 200;
    auto events = s.client->List(kube::kEvents, s.ns, e);
    if (!events.ok()) continue;
    if (auto it = events->find("items"); it != events->end() && it->is_array())
      for (const auto& ev : *it) in.events.push_back(DecodeEventView(ev));
  }
  *io.out << FormatDescribe(in);
  return kExitOk;
}

class DescribeCommand : public ClusterCommand {
 public:
  explicit DescribeCommand(CLI::App& root)
      : ClusterCommand(root, "describe", "A TFJob's conditions, replicas, timeline, events and why it is not running") {
    app().add_option("NAME", args_.name, "The TFJob")->required();
  }

 protected:
  int RunCluster(const CliArgs& a, const CliIo& io) override { return Describe(a, io); }
};

}  // namespace

std::unique_ptr<Command> DefineDescribe(CLI::App& root) {
  return std::make_unique<DescribeCommand>(root);
}

}  // namespace tfjob::cli
