// `tfjob render FILE [-o yaml|json]` (README.md): the Pods, Services and PodGroup (or the native
// gang's Workload, PodGroups and CompositePodGroup) the operator would create for each job of the
// file, as a v1 List.
#include <CLI/CLI.hpp>

#include "api/event_type.h"
#include "api/exit_codes.h"
#include "api/manifest.h"
#include "cli/command.h"
#include "cli/job_file.h"
#include "tfjob/core/gang_scheduler.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::cli {
namespace {

// The versions of kube-scheduler's Workload API the core renders, by name.
constexpr core::NativeGangApi kNativeGangApis[] = {core::NativeGangApi::kV1alpha2, core::NativeGangApi::kV1beta1};
std::vector<std::string> NativeGangApiNames() {
  std::vector<std::string> names;
  for (core::NativeGangApi api : kNativeGangApis) names.emplace_back(core::NativeGangApiVersion(api));
  return names;
}

class RenderCommand : public Command {
 public:
  explicit RenderCommand(CLI::App& root)
      : Command(root.add_subcommand("render", "Print the Pods, Services and PodGroup the operator would create")) {
    CLI::App& render = app();
    core::RenderOptions& options = request_.options;
    render.add_option("FILE", file_, "TFJob manifest (YAML or JSON; - for standard input)")->required();
    render.add_option("-o,--output", format_, "Output format")->check(CLI::IsMember({"yaml", "json"}));
    render.add_option("--namespace", request_.ns, "Namespace (default: the job's, else \"default\")");
    render.add_option("--cluster-domain", options.tf_config.cluster_domain,
                      "Cluster domain appended to TF_CONFIG hosts (<pod>.<ns>.svc.<domain>)");
    render.add_option("--gang-scheduler-name", options.gang_scheduler_name,
                      "volcano, kubernetes (kube-scheduler's Workload API), or another name for scheduler-plugins; "
                      "empty: no gang scheduling");
    // No cluster to discover from (docs/semantics.md D31): the user names the version.
    render
        .add_option("--native-gang-api", native_gang_api_,
                    "With --gang-scheduler-name kubernetes: the scheduling.k8s.io version to render, v1alpha2 "
                    "(Kubernetes v1.36) or v1beta1 (v1.37)")
        ->check(CLI::IsMember(NativeGangApiNames()))
        ->capture_default_str();
    // D33: the hierarchical gang where a v1.37 cluster serves CompositePodGroups (alpha gates).
    render.add_flag("--composite-pod-groups", options.composite_pod_groups,
                    "With --native-gang-api v1beta1: render the hierarchical gang (a CompositePodGroup over the "
                    "Chief/Master/PS and the Workers) for jobs that have both, as on a cluster that serves "
                    "CompositePodGroups");
    render
        .add_option("--tf-config-evaluator-in-cluster", options.tf_config.evaluator_in_cluster,
                    "List evaluators in TF_CONFIG's cluster")
        ->default_val(true);
  }

  int Run(const CliIo& io) override {
    std::ostream& err = *io.err;
    for (core::NativeGangApi api : kNativeGangApis)
      if (core::NativeGangApiVersion(api) == native_gang_api_) request_.options.native_gang_api = api;
    const core::GangSchedulerPolicy* gang = core::GangSchedulerFor(request_.options.gang_scheduler_name);
    if (request_.options.composite_pod_groups &&
        (!gang || !gang->native() || request_.options.native_gang_api != core::NativeGangApi::kV1beta1)) {
      err << "--composite-pod-groups needs --gang-scheduler-name kubernetes and --native-gang-api v1beta1 "
             "(CompositePodGroups are a Kubernetes v1.37 API)\n";
      return api::kExitUsage;
    }
    std::vector<CheckedJob> jobs;
    if (int rc = LoadChecked(file_, err, &jobs); rc != api::kExitOk) return rc;
    std::vector<core::RenderEvent> events;
    auto list = RenderList(std::move(jobs), request_, &events);
    if (!list.ok()) {
      err << file_ << ": " << list.status().message() << "\n";
      return api::kExitFailed;
    }
    for (const auto& e : events)
      err << file_ << ": " << api::EnumName(e.type) << " " << e.reason << ": " << e.message << "\n";
    if (format_ == "json")
      *io.out << list->dump(2) << "\n";
    else
      *io.out << api::ToYaml(*list);
    return api::kExitOk;
  }

 private:
  std::string file_, format_ = "yaml";
  std::string native_gang_api_ = std::string(core::NativeGangApiVersion(core::NativeGangApi::kV1alpha2));
  RenderRequest request_;
};

}  // namespace

std::unique_ptr<Command> DefineRender(CLI::App& root) {
  return std::make_unique<RenderCommand>(root);
}

}  // namespace tfjob::cli
