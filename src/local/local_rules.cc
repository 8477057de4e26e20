#include "local/local_rules.h"

namespace tfjob::local {
namespace {

using nlohmann::json;

// "PATH: Unsupported value: a local run takes plain `value`s only" (the words `run` has printed
// since it refused them).
api::FieldError PlainValuesOnly(std::string path) {
  return {api::FieldErrorType::kNotSupported, std::move(path), "a local run takes plain `value`s only", ""};
}

bool ListOfStrings(const json& v) {
  if (!v.is_array()) return false;
  for (const json& s : v)
    if (!s.is_string()) return false;
  return true;
}

// `command` and `args`: lists of strings, and a command to run.
void CommandErrors(const json& container, const std::string& path, api::FieldErrors* errors) {
  for (const char* field : {"command", "args"}) {
    auto it = container.find(field);
    if (it != container.end() && !it->is_null() && !ListOfStrings(*it))
      errors->push_back(api::Invalid(path + "." + field, it->is_string() ? api::QuoteValue(*it) : it->dump(),
                                     "must be a list of strings"));
  }
  auto command = container.find("command");
  if (command == container.end() || command->is_null() || (command->is_array() && command->empty()))
    errors->push_back(api::Required(path + ".command",
                                    "a local run executes the container's command (the image's entrypoint is not "
                                    "available here)"));
}

// `env` and `envFrom`: plain values only.
void EnvErrors(const json& container, const std::string& path, api::FieldErrors* errors) {
  if (auto e = container.find("env"); e != container.end() && e->is_array()) {
    for (size_t i = 0; i < e->size(); ++i)
      if ((*e)[i].is_object() && (*e)[i].contains("valueFrom"))
        errors->push_back(PlainValuesOnly(path + ".env[" + std::to_string(i) + "].valueFrom"));
  }
  if (auto from = container.find("envFrom"); from != container.end() && !from->is_null() && !from->empty())
    errors->push_back(PlainValuesOnly(path + ".envFrom"));
}

}  // namespace

api::FieldErrors ContainerRunErrors(const json& container, const std::string& path) {
  api::FieldErrors errors;
  if (!container.is_object()) return errors;  // the schema refuses it
  CommandErrors(container, path, &errors);
  EnvErrors(container, path, &errors);
  return errors;
}

api::FieldErrors LocalRunErrors(const api::TfJob& job) {
  api::FieldErrors errors;
  for (const auto& [type, spec] : api::ReplicaSpecsByType(job.spec)) {
    if (api::ReplicasOrDefault(*spec) <= 0) continue;
    const json& tmpl = spec->pod_template;
    if (!tmpl.is_object() || !tmpl.contains("spec") || !tmpl["spec"].is_object()) continue;
    const json& pod = tmpl["spec"];
    const std::string base = "spec.tfReplicaSpecs[" + std::string(api::ReplicaTypeName(type)) + "].template.spec.";
    for (const char* list : {"initContainers", "containers"}) {
      auto it = pod.find(list);
      if (it == pod.end() || !it->is_array()) continue;
      for (size_t i = 0; i < it->size(); ++i) {
        api::FieldErrors more = ContainerRunErrors((*it)[i], base + list + "[" + std::to_string(i) + "]");
        errors.insert(errors.end(), more.begin(), more.end());
      }
    }
  }
  return errors;
}

}  // namespace tfjob::local
