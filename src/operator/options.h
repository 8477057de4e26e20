#pragma once
// Flags of `tfjob operator` (docs/semantics.md 3.17 and section 6): upstream names where they exist.

#include <chrono>
#include <optional>
#include <string>

#include "common/logging.h"
#include "tfjob/core/kueue_workload.h"
#include "tfjob/core/render.h"

namespace tfjob::operator_ {

struct OperatorOptions {
  std::string kubeconfig;      // --kubeconfig (default: $KUBECONFIG, ~/.kube/config, in-cluster)
  std::string context;         // --context
  std::string ns;              // --namespace: watch one namespace; "" = all
  int workers = 16;            // --workers (each writes its job's status itself)
  int write_concurrency = 32;  // --write-concurrency: API writes in flight at once (D17)
  double kube_api_qps = 500;   // --kube-api-qps (D17: 429s pause the client)
  int kube_api_burst = 1000;   // --kube-api-burst
  // --event-qps / --event-burst: the Events' own client, lower so that a burst's events wait
  // (queued, docs/operator.md section 5) instead of taking the API server from the creates.
  double event_qps = 50;
  int event_burst = 100;
  // --kube-api-timeout (per request; seconds on the command line, kept to the millisecond).
  std::chrono::milliseconds kube_api_timeout = std::chrono::seconds(30);
  // --status-count-interval (seconds on the command line): a status that differs from the last
  // one written for the job only in replica `active` counts waits until this long after that
  // write (docs/semantics.md D30). Zero: written at once.
  std::chrono::milliseconds status_count_interval = std::chrono::seconds(1);
  // --pod-update-batch-period (seconds on the command line): a change of a pod already observed
  // (bound, started, ended) enqueues its job this long later, so the changes of a big job's pods
  // within that time cost one pass, not one each (docs/semantics.md D35). A pod's creation or
  // deletion enqueues at once. Zero: every change at once.
  std::chrono::milliseconds pod_update_batch_period = std::chrono::milliseconds(200);
  std::string metrics_bind_address = ":8080";       // --metrics-bind-address ("0" disables)
  std::string health_probe_bind_address = ":8081";  // --health-probe-bind-address
  std::optional<bool> leader_elect;                 // --leader-elect (default: true in-cluster)
  std::string leader_election_id = "tfjob-operator";
  std::string leader_election_namespace;  // default: the operator's namespace, else "default"
  std::string gang_scheduler_name;        // --gang-scheduler-name
  std::string cluster_domain;             // --cluster-domain (or CUSTOM_CLUSTER_DOMAIN)
  bool tf_config_evaluator_in_cluster = true;
  // Validating admission webhook (docs/semantics.md 1.8): off unless a port is given. TLS from
  // <cert dir>/tls.crt and tls.key (controller-runtime's default directory).
  int webhook_port = 0;                                                    // --webhook-port (0: off)
  std::string webhook_host;                                                // --webhook-host ("": all interfaces)
  std::string webhook_cert_dir = "/tmp/k8s-webhook-server/serving-certs";  // --webhook-cert-dir
  // --kueue-mode (docs/kueue.md, docs/operator.md): who owns a queued job's Kueue Workload.
  // "integration" (the default): Kueue's own kubeflow.org/tfjob integration; the operator only
  // honours runPolicy.suspend. "operator": the operator creates and follows the Workload itself,
  // for a Kueue whose TFJob integration is off (v0.19 on, by default).
  std::string kueue_mode = "integration";
  // What Kueue's configuration decides (ShortWorkloadNames, waitForPodsReady, labelKeysToCopy, ...).
  // PodsReady is kept unless --kueue-wait-for-pods-ready=false: with Kueue's waitForPodsReady on, a
  // Workload that never gets it is evicted at the timeout, while writing it for a Kueue that does
  // not wait costs only a status write or two per job (docs/kueue.md).
  core::KueueOptions kueue{.wait_for_pods_ready = true};
  // Not a flag: set by the start-up check of the TFJob CRD when its status schema prunes
  // replicaStatuses.<type>.restarts (docs/semantics.md D29).
  bool counters_in_annotation = false;
  // Not a flag: with --gang-scheduler-name kubernetes, the Workload API version the start-up
  // discovery found (docs/semantics.md D31); the controller discovers again on a 404 or 406.
  core::NativeGangApi native_gang_api = core::NativeGangApi::kV1alpha2;
  // Not a flag: the same discovery found CompositePodGroups served (D33): the controller watches
  // them and gives new jobs with Chief/Master/PS and Worker pods the hierarchical gang.
  bool native_composite_pod_groups = false;
};

}  // namespace tfjob::operator_
