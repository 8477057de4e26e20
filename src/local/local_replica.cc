#include "local/local_replica.h"

#include <set>

#include "api/json_fields.h"
#include "local/gpu_devices.h"
#include "local/local_rules.h"
#include "local/var_expansion.h"
#include "tfjob/core/naming.h"

namespace tfjob::local {
namespace {

using nlohmann::json;

std::string Path(api::ReplicaType type, const char* list, size_t container) {
  return "spec.tfReplicaSpecs[" + std::string(api::ReplicaTypeName(type)) + "].template.spec." + list + "[" +
         std::to_string(container) + "]";
}

StatusOr<LocalContainer> ContainerFor(const json& c, const std::string& path) {
  LocalContainer out;
  out.name = api::StringField(c, "name");
  out.working_dir = api::StringField(c, "workingDir");
  // The rules of a local run (local/local_rules.h), the same `validate --local` applies.
  if (api::FieldErrors errors = ContainerRunErrors(c, path); !errors.empty())
    return InvalidArgumentError(errors.front().ToString());
  TFJOB_ASSIGN_OR_RETURN(out.gpus, ContainerGpus(c, path));
  out.unapplied_resources = UnappliedResourceFields(c);
  std::vector<std::string> argv;
  for (const char* field : {"command", "args"})
    if (auto it = c.find(field); it != c.end() && it->is_array())
      for (const json& s : *it) argv.push_back(s.get<std::string>());
  std::vector<std::pair<std::string, std::string>> env;
  if (auto e = c.find("env"); e != c.end() && e->is_array())
    for (const json& var : *e) env.emplace_back(api::StringField(var, "name"), api::StringField(var, "value"));
  // As the kubelet: env values see the variables defined before them; command and args see all.
  out.env = ExpandEnv(env);
  VarLookup lookup = LookupIn(out.env);
  for (auto& arg : argv) out.argv.push_back(ExpandVars(arg, lookup));
  return out;
}

}  // namespace

std::vector<std::pair<api::ReplicaType, int32_t>> AllReplicas(const api::TfJob& job) {
  std::vector<std::pair<api::ReplicaType, int32_t>> out;
  for (const auto& [type, spec] : api::ReplicaSpecsByType(job.spec))
    for (int32_t i = 0; i < api::ReplicasOrDefault(*spec); ++i) out.emplace_back(type, i);
  return out;
}

core::RenderOptions LocalRenderOptions(const PortMap& ports) {
  core::RenderOptions options;
  options.tf_config.endpoint = [&ports](api::ReplicaType t, int32_t i, int32_t) {
    auto it = ports.find({t, i});
    return "127.0.0.1:" + std::to_string(it == ports.end() ? 0 : it->second);
  };
  return options;
}

StatusOr<LocalReplica> LocalReplicaFor(const api::TfJob& job, api::ReplicaType type, int32_t index,
                                       const PortMap& ports) {
  return LocalReplicaFor(core::PodRenderer(job, LocalRenderOptions(ports)), type, index);
}

StatusOr<LocalReplica> LocalReplicaFor(const core::PodRenderer& renderer, api::ReplicaType type, int32_t index) {
  json pod = renderer.Render(type, index);
  const json& spec = pod["spec"];
  LocalReplica r;
  r.name = core::ReplicaName(renderer.job().metadata.name, type, index);
  r.type = type;
  r.index = index;
  if (auto init = spec.find("initContainers"); init != spec.end() && init->is_array()) {
    for (size_t i = 0; i < init->size(); ++i) {
      TFJOB_ASSIGN_OR_RETURN(LocalContainer c, ContainerFor((*init)[i], Path(type, "initContainers", i)));
      r.init_containers.push_back(std::move(c));
    }
  }
  const json& containers = spec["containers"];
  for (size_t i = 0; i < containers.size(); ++i)
    if (api::StringField(containers[i], "name") == api::kDefaultContainerName) {
      r.main = i;
      break;
    }
  r.image = api::StringField(containers[r.main], "image");
  if (auto res = spec.find("resources"); res != spec.end() && res->is_object())
    for (const auto* list : {"limits", "requests"})
      if (auto l = res->find(list); l != res->end() && l->is_object())
        for (auto it = l->begin(); it != l->end(); ++it)
          r.unapplied_pod_resources.push_back("pod " + std::string(list) + "." + it.key());
  for (size_t i = 0; i < containers.size(); ++i) {
    TFJOB_ASSIGN_OR_RETURN(LocalContainer c, ContainerFor(containers[i], Path(type, "containers", i)));
    r.containers.push_back(std::move(c));
  }
  return r;
}

std::vector<std::string> ProcessEnvironment(const std::vector<std::pair<std::string, std::string>>& base,
                                            const std::vector<std::pair<std::string, std::string>>& container) {
  std::set<std::string_view> overridden;
  for (const auto& [k, v] : container) overridden.insert(k);
  std::vector<std::string> out;
  for (const auto& [k, v] : base)
    if (!overridden.contains(k)) out.push_back(k + "=" + v);
  for (const auto& [k, v] : container) out.push_back(k + "=" + v);
  return out;
}

bool KeptByCleanEnv(std::string_view name) {
  static const std::set<std::string_view> kKept = {"PATH", "HOME",     "USER", "LOGNAME", "SHELL",
                                                   "LANG", "LANGUAGE", "TERM", "TZ",      "TMPDIR"};
  return kKept.contains(name) || name.starts_with("LC_");
}

}  // namespace tfjob::local
