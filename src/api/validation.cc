#include "api/validation.h"

#include "api/defaults.h"
#include "api/quantity.h"

namespace tfjob::api {
namespace {

using nlohmann::json;

const std::vector<std::string> kReplicaTypeNames = {"Chief", "Evaluator", "Master", "PS", "Worker"};
const std::vector<std::string> kRestartPolicies = {"Always", "ExitCode", "Never", "OnFailure"};
const std::vector<std::string> kCleanPodPolicies = {"All", "None", "Running"};
const std::vector<std::string> kSuccessPolicies = {"", "AllWorkers"};
const std::vector<std::string> kManagedBy = {std::string(kManagedByUs), std::string(kManagedByMultiKueue)};

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

void NonNegative(const std::string& field, std::optional<int64_t> v, FieldErrors* errors) {
  if (v && *v < 0) errors->push_back(Invalid(field, std::to_string(*v), "must be greater than or equal to 0"));
}

void ValidateRunPolicy(const RunPolicy& p, FieldErrors* errors) {
  const std::string base = "spec.runPolicy";
  if (p.managed_by && !Contains(kManagedBy, *p.managed_by))
    errors->push_back(NotSupported(base + ".managedBy", QuoteValue(*p.managed_by), kManagedBy));
  if (p.clean_pod_policy && !Contains(kCleanPodPolicies, *p.clean_pod_policy))
    errors->push_back(NotSupported(base + ".cleanPodPolicy", QuoteValue(*p.clean_pod_policy), kCleanPodPolicies));
  NonNegative(base + ".ttlSecondsAfterFinished", p.ttl_seconds_after_finished, errors);
  NonNegative(base + ".activeDeadlineSeconds", p.active_deadline_seconds, errors);
  NonNegative(base + ".backoffLimit", p.backoff_limit, errors);
  if (p.scheduling_policy) {
    const SchedulingPolicy& s = *p.scheduling_policy;
    NonNegative(base + ".schedulingPolicy.minAvailable", s.min_available, errors);
    NonNegative(base + ".schedulingPolicy.scheduleTimeoutSeconds", s.schedule_timeout_seconds, errors);
    for (const auto& [name, text] : s.min_resources) {
      auto q = Quantity::Parse(text);
      if (!q || q->milli() < 0)
        errors->push_back(Invalid(base + ".schedulingPolicy.minResources[" + name + "]", QuoteValue(text),
                                  "must be a non-negative quantity"));
    }
  }
}

void ValidateContainers(const std::string& path, const ReplicaSpec& spec, FieldErrors* errors) {
  const std::string containers_path = path + ".template.spec.containers";
  const json& tmpl = spec.pod_template;
  const json* containers = nullptr;
  if (tmpl.is_object() && tmpl.contains("spec") && tmpl["spec"].is_object() && tmpl["spec"].contains("containers"))
    containers = &tmpl["spec"]["containers"];
  if (containers != nullptr && !containers->is_null() && !containers->is_array()) {
    errors->push_back(Invalid(containers_path, containers->dump(), "must be a list"));
    return;
  }
  if (containers == nullptr || containers->is_null() || containers->empty())
    errors->push_back(Required(containers_path, "must be specified"));  // V5
  bool has_tensorflow = false;
  if (containers != nullptr && containers->is_array()) {
    for (size_t i = 0; i < containers->size(); ++i) {
      const json& c = (*containers)[i];
      std::string cpath = containers_path + "[" + std::to_string(i) + "]";
      if (!c.is_object()) {
        errors->push_back(Invalid(cpath, c.dump(), "must be an object"));
        continue;
      }
      auto image = c.find("image");
      if (image == c.end() || !image->is_string() || image->get<std::string>().empty())
        errors->push_back(Required(cpath + ".image", "must be required"));  // V6
      auto name = c.find("name");
      bool is_tf = name != c.end() && name->is_string() && *name == kDefaultContainerName;
      has_tensorflow = has_tensorflow || is_tf;
      auto ports = c.find("ports");
      if (ports != c.end() && ports->is_array()) {
        for (size_t k = 0; k < ports->size(); ++k) {
          const json& p = (*ports)[k];
          if (!p.is_object()) continue;
          auto cp = p.find("containerPort");
          std::string ppath = cpath + ".ports[" + std::to_string(k) + "].containerPort";
          if (cp == p.end()) continue;
          if (!cp->is_number_integer())
            errors->push_back(Invalid(ppath, cp->dump(), "must be an integer"));
          else if (cp->get<int64_t>() < 1 || cp->get<int64_t>() > 65535)
            errors->push_back(Invalid(ppath, cp->dump(), "must be between 1 and 65535, inclusive"));
        }
      }
    }
  }
  if (!has_tensorflow)
    errors->push_back(Required(containers_path, "must have at least one container with name tensorflow"));  // V7
}

}  // namespace

std::vector<std::string> Dns1035LabelErrors(const std::string& value) {
  std::vector<std::string> errs;
  if (value.size() > 63) errs.push_back("must be no more than 63 characters");
  auto lower = [](char c) { return c >= 'a' && c <= 'z'; };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  bool ok = !value.empty() && lower(value.front()) && (lower(value.back()) || digit(value.back()));
  for (char c : value) ok = ok && (lower(c) || digit(c) || c == '-');
  if (!ok)
    errs.push_back(
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
        "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
        "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')");
  return errs;
}

FieldErrors ValidateTfJob(const TfJob& job) {
  FieldErrors errors;
  if (job.api_version != kApiVersion)
    errors.push_back(NotSupported("apiVersion", QuoteValue(job.api_version), {std::string(kApiVersion)}));
  if (job.kind != kKind) errors.push_back(NotSupported("kind", QuoteValue(job.kind), {std::string(kKind)}));

  // V1
  const std::string& name = job.metadata.name;
  if (name.empty()) {
    errors.push_back(Required("metadata.name", "name or generateName is required"));
  } else if (auto errs = Dns1035LabelErrors(name); !errs.empty()) {
    std::string joined;
    for (size_t i = 0; i < errs.size(); ++i) joined += (i > 0 ? "," : "") + errs[i];
    errors.push_back(Invalid("metadata.name", QuoteValue(name), "should match: " + joined));
  } else {
    // Pod and Service names are <job>-<type>-<index>: a Service name is a DNS-1035 label too.
    for (const auto& [key, spec] : job.spec.replica_specs) {
      auto type = ParseReplicaTypeFold(key);
      if (!type || !spec) continue;
      int32_t n = ReplicasOrDefault(*spec);
      std::string longest = name + "-" + std::string(ReplicaTypeLabel(*type)) + "-" + std::to_string(n > 0 ? n - 1 : 0);
      if (longest.size() > 63) {
        errors.push_back(Invalid("metadata.name", QuoteValue(name),
                                 "too long: the pod and service name \"" + longest + "\" would exceed 63 characters"));
        break;
      }
    }
  }

  ValidateRunPolicy(job.spec.run_policy, &errors);  // V3 and ranges
  if (job.spec.success_policy && !Contains(kSuccessPolicies, *job.spec.success_policy))
    errors.push_back(NotSupported("spec.successPolicy", QuoteValue(*job.spec.success_policy), kSuccessPolicies));

  if (!job.spec.has_replica_specs) {  // V4
    errors.push_back(Required("spec.tfReplicaSpecs", "must be required"));
    return errors;
  }
  std::map<ReplicaType, std::string> seen;
  int chief_or_master = 0;
  for (const auto& [key, spec] : job.spec.replica_specs) {
    const std::string path = "spec.tfReplicaSpecs[" + key + "]";
    auto type = ParseReplicaTypeFold(key);
    if (!type) {  // D11
      errors.push_back(NotSupported(path, QuoteValue(key), kReplicaTypeNames));
    } else {
      if (auto [it, inserted] = seen.emplace(*type, key); !inserted)
        errors.push_back(Duplicate(path, QuoteValue(std::string(ReplicaTypeName(*type)))));
      if (IsChiefOrMaster(*type)) ++chief_or_master;
    }
    if (!spec) {
      errors.push_back(Required(path + ".template.spec.containers", "must be specified"));  // V5 only
      continue;
    }
    if (spec->replicas) {
      if (*spec->replicas < 0)
        errors.push_back(
            Invalid(path + ".replicas", std::to_string(*spec->replicas), "must be greater than or equal to 0"));
      else if (*spec->replicas > kMaxReplicasPerType)
        errors.push_back(Invalid(path + ".replicas", std::to_string(*spec->replicas),
                                 "must be less than or equal to " + std::to_string(kMaxReplicasPerType)));
    }
    if (!spec->restart_policy.empty() && !Contains(kRestartPolicies, spec->restart_policy))
      errors.push_back(NotSupported(path + ".restartPolicy", QuoteValue(spec->restart_policy), kRestartPolicies));
    ValidateContainers(path, *spec, &errors);
  }
  if (chief_or_master > 1)  // V8
    errors.push_back(Forbidden("spec.tfReplicaSpecs", "must not have more than 1 Chief or Master role"));
  return errors;
}

FieldErrors ValidateTfJobUpdate(const TfJob& old_job, const TfJob& new_job) {
  FieldErrors errors = ValidateTfJob(new_job);
  if (old_job.spec.run_policy.managed_by != new_job.spec.run_policy.managed_by) {  // V2
    std::string value = new_job.spec.run_policy.managed_by ? QuoteValue(*new_job.spec.run_policy.managed_by) : "null";
    errors.insert(errors.begin(), Invalid("spec.runPolicy.managedBy", value, "field is immutable"));
  }
  auto queue = [](const TfJob& j) {
    const auto& sp = j.spec.run_policy.scheduling_policy;
    return sp ? sp->queue : std::string();
  };
  if (queue(old_job) != queue(new_job))
    errors.push_back(Invalid("spec.runPolicy.schedulingPolicy.queue", QuoteValue(queue(new_job)),
                             "spec.runPolicy.schedulingPolicy.queue is immutable"));
  return errors;
}

}  // namespace tfjob::api
