#include "local/local_replica.h"

#include "api/json_fields.h"
#include "tfjob/core/naming.h"

namespace tfjob::local {
namespace {

using nlohmann::json;
namespace core = ::tfjob::tfjob::core;

std::string Path(api::ReplicaType type, size_t container) {
  return "spec.tfReplicaSpecs[" + std::string(api::ReplicaTypeName(type)) + "].template.spec.containers[" +
         std::to_string(container) + "]";
}

}  // namespace

std::vector<std::pair<api::ReplicaType, int32_t>> AllReplicas(const api::TfJob& job) {
  std::vector<std::pair<api::ReplicaType, int32_t>> out;
  for (const auto& [key, spec] : job.spec.replica_specs) {
    auto type = api::ParseReplicaType(key);
    if (!type || !spec) continue;
    for (int32_t i = 0; i < api::ReplicasOrDefault(*spec); ++i) out.emplace_back(*type, i);
  }
  return out;
}

StatusOr<LocalReplica> LocalReplicaFor(const api::TfJob& job, api::ReplicaType type, int32_t index,
                                       const PortMap& ports) {
  core::RenderOptions options;
  options.tf_config.endpoint = [&ports](api::ReplicaType t, int32_t i, int32_t) {
    auto it = ports.find({t, i});
    return "127.0.0.1:" + std::to_string(it == ports.end() ? 0 : it->second);
  };
  json pod = core::RenderPod(job, type, index, options).object;
  const json& containers = pod["spec"]["containers"];
  size_t chosen = 0;
  for (size_t i = 0; i < containers.size(); ++i)
    if (api::StringField(containers[i], "name") == api::kDefaultContainerName) {
      chosen = i;
      break;
    }
  const json& c = containers[chosen];
  LocalReplica r;
  r.name = core::ReplicaName(job.metadata.name, type, index);
  r.type = type;
  r.index = index;
  r.image = api::StringField(c, "image");
  r.working_dir = api::StringField(c, "workingDir");
  const std::string path = Path(type, chosen);
  auto strings = [&](const char* field, std::vector<std::string>* out) -> Status {
    auto it = c.find(field);
    if (it == c.end() || it->is_null()) return OkStatus();
    if (!it->is_array()) return InvalidArgumentError(path + "." + field + ": must be a list of strings");
    for (const json& s : *it) {
      if (!s.is_string()) return InvalidArgumentError(path + "." + field + ": must be a list of strings");
      out->push_back(s.get<std::string>());
    }
    return OkStatus();
  };
  TFJOB_RETURN_IF_ERROR(strings("command", &r.argv));
  if (r.argv.empty())
    return InvalidArgumentError(path +
                                ".command: Required value: a local run executes the container's command "
                                "(the image's entrypoint is not available here)");
  TFJOB_RETURN_IF_ERROR(strings("args", &r.argv));
  if (auto env = c.find("env"); env != c.end() && env->is_array()) {
    for (size_t i = 0; i < env->size(); ++i) {
      const json& e = (*env)[i];
      std::string epath = path + ".env[" + std::to_string(i) + "]";
      if (e.contains("valueFrom"))
        return InvalidArgumentError(epath + ".valueFrom: Unsupported value: a local run takes plain `value`s only");
      r.env.emplace_back(api::StringField(e, "name"), api::StringField(e, "value"));
    }
  }
  return r;
}

}  // namespace tfjob::local
