// `tfjob operator` (docs/operator.md): the TFJob controller against a cluster (operator::RunOperator).
#include <CLI/CLI.hpp>

#include "cli/cli_args.h"
#include "cli/command.h"
#include "cli/signals.h"
#include "common/logging.h"
#include "kube/curl_transport.h"
#include "operator/operator.h"

namespace tfjob::cli {
namespace {

struct OperatorArgs {
  operator_::OperatorOptions op;
  std::string log_format = "text", log_level = "info";
  std::string leader_elect;
  // The duration flags, in seconds as users give them; into `op` by OperatorOptionsOf.
  double kube_api_timeout_seconds = 30;
  double status_count_interval_seconds = 1;
  double pod_update_batch_period_seconds = 0.2;
};

// The operator's connection, client and leader-election flags (its servers': DefineOperatorServers).
void DefineOperatorClient(CLI::App* oper, OperatorArgs& a) {
  operator_::OperatorOptions& op = a.op;
  AddKubeconfigFlags(*oper, op.kubeconfig, op.context);
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
  oper->add_option("--status-count-interval", a.status_count_interval_seconds,
                   "Seconds a status change of replica active counts alone waits after the job's last status write "
                   "(0: written at once)")
      ->check(CLI::Range(0.0, 60.0))
      ->capture_default_str();
  oper->add_option("--pod-update-batch-period", a.pod_update_batch_period_seconds,
                   "Seconds a change of an existing pod waits before its job's pass, so that the changes of many "
                   "pods in that time cost one pass (0: a pass for each)")
      ->check(CLI::Range(0.0, 10.0))
      ->capture_default_str();
  oper->add_option("--kube-api-timeout", a.kube_api_timeout_seconds,
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
  oper->add_option("--kueue-mode", op.kueue_mode,
                   "Who owns a queued job's Kueue Workload: integration (Kueue's TFJob integration) or operator")
      ->check(CLI::IsMember({"integration", "operator"}))
      ->capture_default_str();
  oper->add_option("--kueue-wait-for-pods-ready", op.kueue.wait_for_pods_ready,
                   "With --kueue-mode operator: keep the Workload's PodsReady condition (Kueue's waitForPodsReady "
                   "evicts a job without it); false only when Kueue's waitForPodsReady is off")
      ->capture_default_str();
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

class OperatorCommand : public Command {
 public:
  explicit OperatorCommand(CLI::App& root)
      : Command(root.add_subcommand("operator", "Run the TFJob controller against a Kubernetes cluster")) {
    DefineOperatorClient(&app(), args_);
    DefineOperatorServers(&app(), args_);
  }

  int Run(const CliIo& io) override {
    LogLevel level = LogLevel::kInfo;
    ParseLogLevel(args_.log_level, &level);
    SetLogOptions(level, args_.log_format == "json" ? LogFormat::kJson : LogFormat::kText);
    operator_::OperatorOptions op = args_.op;
    if (!args_.leader_elect.empty()) op.leader_elect = args_.leader_elect == "true";
    op.kube_api_timeout = SecondsFlag(args_.kube_api_timeout_seconds);
    op.status_count_interval = SecondsFlag(args_.status_count_interval_seconds);
    op.pod_update_batch_period = SecondsFlag(args_.pod_update_batch_period_seconds);
    kube::CurlGlobal curl;  // before any other thread
    return WithSignalStops(
        [&](std::stop_token stop, std::stop_token) { return operator_::RunOperator(op, io.env, stop); }, true);
  }

 private:
  OperatorArgs args_;
};

}  // namespace

std::unique_ptr<Command> DefineOperator(CLI::App& root) {
  return std::make_unique<OperatorCommand>(root);
}

}  // namespace tfjob::cli
