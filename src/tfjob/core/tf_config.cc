#include "tfjob/core/tf_config.h"

#include <nlohmann/json.hpp>

#include "api/defaults.h"
#include "tfjob/core/naming.h"

namespace tfjob::tfjob::core {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::string Endpoint(const api::TfJob& job, api::ReplicaType type, int32_t index, const api::ReplicaSpec& spec,
                     const TfConfigOptions& options) {
  int32_t port = api::TfJobPort(spec);
  if (options.endpoint) return options.endpoint(type, index, port);
  return ServiceEndpoint(job, type, index, port, options.cluster_domain);
}

}  // namespace

bool IsDistributed(const api::TfJob& job) {
  int64_t total = 0;
  for (const auto& [key, spec] : job.spec.replica_specs) {
    if (!api::ParseReplicaType(key) || !spec) continue;
    total += api::ReplicasOrDefault(*spec);
  }
  return total != 1;
}

std::string ServiceEndpoint(const api::TfJob& job, api::ReplicaType type, int32_t index, int32_t port,
                            const std::string& cluster_domain) {
  std::string host = ReplicaName(job.metadata.name, type, index) + "." + job.metadata.ns + ".svc";
  if (!cluster_domain.empty()) host += "." + cluster_domain;
  return host + ":" + std::to_string(port);
}

std::optional<std::string> GenTfConfig(const api::TfJob& job, api::ReplicaType type, int32_t index,
                                       const TfConfigOptions& options) {
  if (!IsDistributed(job)) return std::nullopt;
  const std::string rt(api::ReplicaTypeLabel(type));
  ordered_json task = {{"type", rt}, {"index", index}};

  if (job.spec.enable_dynamic_worker) {
    ordered_json cluster;
    const api::ReplicaSpec* ps_spec = nullptr;
    if (auto it = job.spec.replica_specs.find("PS"); it != job.spec.replica_specs.end() && it->second)
      ps_spec = &*it->second;
    const api::ReplicaSpec* own = nullptr;
    if (auto it = job.spec.replica_specs.find(std::string(api::ReplicaTypeName(type)));
        it != job.spec.replica_specs.end() && it->second)
      own = &*it->second;
    if (type == api::ReplicaType::kPS) {
      cluster["worker"] = ordered_json::object();
      cluster["ps"] = ordered_json::array({own ? Endpoint(job, type, index, *own, options) : ""});
    } else if (type == api::ReplicaType::kWorker) {
      ordered_json worker = ordered_json::object();
      if (own) worker[std::to_string(index)] = Endpoint(job, type, index, *own, options);
      cluster["worker"] = std::move(worker);
      if (ps_spec) {
        ordered_json ps = ordered_json::array();
        for (int32_t i = 0; i < api::ReplicasOrDefault(*ps_spec); ++i)
          ps.push_back(Endpoint(job, api::ReplicaType::kPS, i, *ps_spec, options));
        cluster["ps"] = std::move(ps);
      } else {
        cluster["ps"] = nullptr;
      }
    } else {
      cluster["worker"] = ordered_json::object();
      cluster["ps"] = ordered_json::array();
    }
    ordered_json out = {{"cluster", std::move(cluster)}, {"task", std::move(task)}};
    return out.dump();
  }

  // std::map iteration sorts the lower-case keys: chief < evaluator < master < ps < worker.
  std::map<std::string, ordered_json> cluster;
  for (const auto& [key, spec] : job.spec.replica_specs) {
    auto t = api::ParseReplicaType(key);
    if (!t || !spec) continue;
    if (*t == api::ReplicaType::kEvaluator && !options.evaluator_in_cluster) continue;
    ordered_json hosts = ordered_json::array();
    for (int32_t i = 0; i < api::ReplicasOrDefault(*spec); ++i) hosts.push_back(Endpoint(job, *t, i, *spec, options));
    cluster[std::string(api::ReplicaTypeLabel(*t))] = std::move(hosts);
  }
  ordered_json cluster_json = ordered_json::object();
  for (auto& [k, v] : cluster) cluster_json[k] = std::move(v);
  ordered_json out = {{"cluster", std::move(cluster_json)}, {"task", std::move(task)}, {"environment", "cloud"}};
  return out.dump();
}

}  // namespace tfjob::tfjob::core
