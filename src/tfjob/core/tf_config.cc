#include "tfjob/core/tf_config.h"

#include <nlohmann/json.hpp>

#include "api/defaults.h"
#include "tfjob/core/naming.h"

namespace tfjob::core {
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
  return api::TotalReplicas(job.spec) != 1;
}

std::string ServiceEndpoint(const api::TfJob& job, api::ReplicaType type, int32_t index, int32_t port,
                            const std::string& cluster_domain) {
  std::string host = ReplicaName(job.metadata.name, type, index) + "." + job.metadata.ns + ".svc";
  if (!cluster_domain.empty()) host += "." + cluster_domain;
  return host + ":" + std::to_string(port);
}

std::optional<std::string> GenTfConfig(const api::TfJob& job, api::ReplicaType type, int32_t index,
                                       const TfConfigOptions& options) {
  return TfConfigGenerator(job, options).For(type, index);
}

TfConfigGenerator::TfConfigGenerator(const api::TfJob& job, const TfConfigOptions& options)
    : job_(job), options_(options), distributed_(IsDistributed(job)) {
  if (!distributed_) return;
  if (job.spec.enable_dynamic_worker) {
    auto it = job.spec.replica_specs.find("PS");
    if (it != job.spec.replica_specs.end() && it->second) {
      ordered_json ps = ordered_json::array();
      for (int32_t i = 0; i < api::ReplicasOrDefault(*it->second); ++i)
        ps.push_back(Endpoint(job, api::ReplicaType::kPS, i, *it->second, options));
      ps_list_ = ps.dump();
    } else {
      ps_list_ = "null";
    }
    return;
  }
  // std::map iteration sorts the lower-case keys: chief < evaluator < master < ps < worker.
  std::map<std::string, ordered_json> cluster;
  for (const auto& [t, spec] : api::ReplicaSpecsByType(job.spec)) {
    if (t == api::ReplicaType::kEvaluator && !options.evaluator_in_cluster) continue;
    ordered_json hosts = ordered_json::array();
    for (int32_t i = 0; i < api::ReplicasOrDefault(*spec); ++i) hosts.push_back(Endpoint(job, t, i, *spec, options));
    cluster[std::string(api::ReplicaTypeLabel(t))] = std::move(hosts);
  }
  ordered_json cluster_json = ordered_json::object();
  for (auto& [k, v] : cluster) cluster_json[k] = std::move(v);
  cluster_ = cluster_json.dump();
}

std::optional<std::string> TfConfigGenerator::For(api::ReplicaType type, int32_t index) const {
  if (!distributed_) return std::nullopt;
  const std::string task = ordered_json{{"type", api::ReplicaTypeLabel(type)}, {"index", index}}.dump();
  if (!job_.spec.enable_dynamic_worker)
    return R"({"cluster":)" + cluster_ + R"(,"task":)" + task + R"(,"environment":"cloud"})";
  std::string cluster;
  auto own = job_.spec.replica_specs.find(std::string(api::ReplicaTypeName(type)));
  bool has_own = own != job_.spec.replica_specs.end() && own->second;
  if (type == api::ReplicaType::kPS) {
    std::string self = has_own ? Endpoint(job_, type, index, *own->second, options_) : "";
    cluster = R"({"worker":{},"ps":)" + ordered_json::array({self}).dump() + "}";
  } else if (type == api::ReplicaType::kWorker) {
    ordered_json worker = ordered_json::object();
    if (has_own) worker[std::to_string(index)] = Endpoint(job_, type, index, *own->second, options_);
    cluster = R"({"worker":)" + worker.dump() + R"(,"ps":)" + ps_list_ + "}";
  } else {
    cluster = R"({"worker":{},"ps":[]})";
  }
  return R"({"cluster":)" + cluster + R"(,"task":)" + task + "}";
}

}  // namespace tfjob::core
