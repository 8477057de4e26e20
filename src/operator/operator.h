#pragma once
// RunOperator: the operator process (controller-runtime's Manager): resolves the cluster
// configuration, serves metrics and probes, starts the informers, waits for their caches,
// takes the leader lease (when enabled), then runs the workers until `stop`. Start-up order and
// shutdown (reverse) are documented in the .cc. Returns the process exit code.

#include <map>
#include <stop_token>
#include <string>

#include "operator/options.h"

namespace tfjob::operator_ {

// 0 after a clean stop; 1 when the leader lease was lost (a standby takes over); 2 for
// configuration errors (no cluster, a missing PodGroup CRD, an address in use, no webhook
// certificate). A dead worker thread is reported by /healthz (the kubelet restarts the pod).
int RunOperator(const OperatorOptions& options, const std::map<std::string, std::string>& env, std::stop_token stop);

}  // namespace tfjob::operator_
