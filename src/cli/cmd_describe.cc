// `tfjob describe NAME` (docs/cli.md): conditions, replicas, timeline, events and why the job
// is not running.
#include <optional>

#include <CLI/CLI.hpp>

#include "api/exit_codes.h"
#include "api/json_fields.h"
#include "api/manifest.h"
#include "cli/job_view.h"
#include "cli/session.h"
#include "controller/api_versions.h"
#include "kube/tfjob_resources.h"

namespace tfjob::cli {
namespace {

using api::kExitOk;
using api::kExitUsage;
using kube::kTfJobs;
using nlohmann::json;

// What describe reads of a Kueue Workload (its name, owner references and conditions) is the same
// in v1beta2 and v1beta1: the newest the server serves (docs/semantics.md D34).
const controller::VersionedApi& KueueReadApi() {
  static const controller::VersionedApi api{
      kube::kKueueWorkloadsV1beta2.group,
      {{kube::kKueueWorkloadsV1beta2.version, ""}, {kube::kKueueWorkloadsV1beta1.version, ""}},
      "reading Kueue's Workloads"};
  return api;
}

std::optional<WorkloadView> FindWorkload(Session& s, const JobView& job) {
  auto group = s.client->GetApiGroup(KueueReadApi().group);
  if (!group.ok()) return std::nullopt;  // no Kueue (404), or discovery refused: nothing to show
  auto version = controller::ChooseVersion(KueueReadApi(), controller::ServedVersions(*group));
  if (!version.ok()) return std::nullopt;
  auto list =
      s.client->ListAll({KueueReadApi().group, *version, kube::kKueueWorkloadsV1beta2.resource}, job.ns, {}, nullptr);
  if (!list.ok()) return std::nullopt;
  for (const auto& w : *list) {
    const json& meta = api::ObjectField(w, "metadata");
    if (auto refs = meta.find("ownerReferences"); refs != meta.end() && refs->is_array())
      for (const auto& r : *refs)
        if (api::StringField(r, "uid") == job.uid) return DecodeWorkloadView(w);
  }
  return std::nullopt;
}

std::optional<PodGroupView> FindPodGroup(Session& s, const JobView& job) {
  for (const auto* gvr : {&kube::kVolcanoPodGroups, &kube::kPluginsPodGroups}) {
    auto pg = s.client->Get(*gvr, job.ns, job.name);
    if (pg.ok()) return DecodePodGroupView(gvr->resource + "." + gvr->group, *pg);
  }
  return std::nullopt;
}

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
  if (!in.why.job.queue.empty()) in.why.workload = FindWorkload(s, in.why.job);
  in.why.pod_group = FindPodGroup(s, in.why.job);
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
