#pragma once
// TF_CONFIG: the JSON every TensorFlow process reads to find its peers (docs/semantics.md 2.6).
// Standard form {"cluster":{...},"task":{...},"environment":"cloud"} with cluster keys sorted,
// or the sparse form for enableDynamicWorker. Byte-exact with upstream's output.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "api/tfjob.h"

namespace tfjob::core {

// Address of replica `index` of `type` that listens on `port`.
using EndpointFn = std::function<std::string(api::ReplicaType type, int32_t index, int32_t port)>;

struct TfConfigOptions {
  std::string cluster_domain;        // appended as ".<domain>" after ".svc" when non-empty
  bool evaluator_in_cluster = true;  // D16: --tf-config-evaluator-in-cluster
  // When set, replaces the service DNS endpoints (the local runtime uses 127.0.0.1 ports).
  EndpointFn endpoint;
};

// Sum of replicas over known types != 1 (docs/semantics.md 2.6). REQUIRES: defaulted job.
bool IsDistributed(const api::TfJob& job);

// "<job>-<rt>-<i>.<ns>.svc[.<domain>]:<port>"
std::string ServiceEndpoint(const api::TfJob& job, api::ReplicaType type, int32_t index, int32_t port,
                            const std::string& cluster_domain);

// TF_CONFIG for replica `index` of `type`, or nullopt when the job is not distributed.
// REQUIRES: defaulted job.
std::optional<std::string> GenTfConfig(const api::TfJob& job, api::ReplicaType type, int32_t index,
                                       const TfConfigOptions& options);

// The same for every replica of one job: the cluster part is built once, so rendering N pods
// costs O(N * size of TF_CONFIG) instead of rebuilding N endpoint lists per pod.
// REQUIRES: defaulted job; `job` outlives the generator.
class TfConfigGenerator {
 public:
  TfConfigGenerator(const api::TfJob& job, const TfConfigOptions& options);
  std::optional<std::string> For(api::ReplicaType type, int32_t index) const;

 private:
  const api::TfJob& job_;
  const TfConfigOptions& options_;
  bool distributed_;
  std::string cluster_;  // standard form: the whole "cluster" object
  std::string ps_list_;  // sparse form: the "ps" value of workers (a list or null)
};

}  // namespace tfjob::core
