#include "api/validation.h"

#include <algorithm>
#include <set>

#include "api/defaults.h"
#include "api/quantity.h"

namespace tfjob::api {
namespace {

using nlohmann::json;

const std::vector<std::string> kReplicaTypeNames = {"Chief", "Evaluator", "Master", "PS", "Worker"};
const std::vector<std::string> kManagedBy = {std::string(kManagedByUs), std::string(kManagedByMultiKueue)};

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  for (const auto& x : v)
    if (x == s) return true;
  return false;
}

void NonNegative(const std::string& field, std::optional<int64_t> v, FieldErrors* errors) {
  if (v && *v < 0) errors->push_back(Invalid(field, std::to_string(*v), "must be greater than or equal to 0"));
}

// Refused here: what upstream refuses too (V3), and what cannot run (docs/semantics.md D25): a
// negative backoffLimit fails the job upstream before any pod starts, a negative
// activeDeadlineSeconds right after its pods are created. Negative ttlSecondsAfterFinished,
// minAvailable, scheduleTimeoutSeconds and minResources run upstream: SpecWarnings reports them.
void ValidateRunPolicy(const RunPolicy& p, FieldErrors* errors) {
  const std::string base = "spec.runPolicy";
  if (p.managed_by && !Contains(kManagedBy, *p.managed_by))
    errors->push_back(NotSupported(base + ".managedBy", QuoteValue(*p.managed_by), kManagedBy));
  NonNegative(base + ".activeDeadlineSeconds", p.active_deadline_seconds, errors);
  NonNegative(base + ".backoffLimit", p.backoff_limit, errors);
  if (p.scheduling_policy) {
    for (const auto& [name, text] : p.scheduling_policy->min_resources) {
      if (!Quantity::Parse(text))  // upstream's CRD schema refuses it too (the quantity pattern)
        errors->push_back(Invalid(base + ".schedulingPolicy.minResources[" + name + "]", QuoteValue(text),
                                  "must be a quantity (for example 4, 500m, 16Gi)"));
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

// The keys of tfReplicaSpecs by the replica type they name ignoring case, in key order.
std::map<ReplicaType, std::vector<std::string>> KeysByType(const TfJobSpec& spec) {
  std::map<ReplicaType, std::vector<std::string>> out;
  for (const auto& [key, value] : spec.replica_specs)
    if (auto type = ParseReplicaTypeFold(key)) out[*type].push_back(key);
  return out;
}

// Exactly two keys for `type`, one of them the canonical name: upstream's defaulting (1.7)
// moves the other one's spec over the canonical key, deterministically.
bool IsCanonicalPair(ReplicaType type, const std::vector<std::string>& keys) {
  if (keys.size() != 2) return false;
  const std::string canonical(ReplicaTypeName(type));
  return keys[0] == canonical || keys[1] == canonical;
}

std::string Path(const std::string& path) {
  return EscapeNonPrintable(path);
}

}  // namespace

std::vector<std::string> SpecWarnings(const TfJob& job) {
  std::vector<std::string> out;
  const RunPolicy& p = job.spec.run_policy;
  const std::string base = "spec.runPolicy";
  auto supported = [](const std::vector<std::string>& values) {
    std::string list;
    for (size_t i = 0; i < values.size(); ++i) list += (i > 0 ? ", " : "") + QuoteValue(values[i]);
    return list;
  };
  if (p.clean_pod_policy && !p.clean_pod_policy->value())
    out.push_back(base + ".cleanPodPolicy: unsupported value " + QuoteValue(p.clean_pod_policy->text()) +
                  " (supported: " + supported(EnumNames<CleanPodPolicy>()) +
                  "): treated as \"All\", as upstream does: every pod and its service are deleted when the job "
                  "finishes");
  if (job.spec.success_policy && !job.spec.success_policy->value())
    out.push_back("spec.successPolicy: unsupported value " + QuoteValue(job.spec.success_policy->text()) +
                  " (supported: " + supported(EnumNames<SuccessPolicy>()) +
                  "): treated as \"\", the default, as upstream does: the job succeeds when worker 0 (or the chief) "
                  "does");
  if (p.ttl_seconds_after_finished && *p.ttl_seconds_after_finished < 0)
    out.push_back(base + ".ttlSecondsAfterFinished: negative value " + std::to_string(*p.ttl_seconds_after_finished) +
                  ": the job is deleted as soon as it finishes, as with 0 (upstream does the same)");
  if (p.active_deadline_seconds && *p.active_deadline_seconds == 0)
    out.push_back(base + ".activeDeadlineSeconds: 0: the job fails with the deadline message as soon as it starts");
  if (p.scheduling_policy) {
    const SchedulingPolicy& s = *p.scheduling_policy;
    const std::string gang = ": passed to the PodGroup as it is, as upstream does (ignored without gang scheduling)";
    if (s.min_available && *s.min_available < 0)
      out.push_back(base + ".schedulingPolicy.minAvailable: negative value " + std::to_string(*s.min_available) + gang +
                    "; a minMember below 1 holds no pod back");
    if (s.schedule_timeout_seconds && *s.schedule_timeout_seconds < 0)
      out.push_back(base + ".schedulingPolicy.scheduleTimeoutSeconds: negative value " +
                    std::to_string(*s.schedule_timeout_seconds) + gang);
    for (const auto& [name, text] : s.min_resources) {
      auto q = Quantity::Parse(text);
      if (q && q->milli() < 0)
        out.push_back(Path(base + ".schedulingPolicy.minResources[" + name + "]") + ": negative quantity " +
                      QuoteValue(text) + gang);
    }
  }
  // Case variants of a replica type (docs/semantics.md 1.7, D22).
  const auto keys_of = KeysByType(job.spec);
  for (const auto& [type, keys] : keys_of) {
    if (!IsCanonicalPair(type, keys)) continue;
    const std::string canonical(ReplicaTypeName(type));
    const std::string& other = keys[0] == canonical ? keys[1] : keys[0];
    out.push_back(Path("spec.tfReplicaSpecs[" + other + "]") + ": " + QuoteValue(other) + " and " +
                  QuoteValue(canonical) + " are the same replica type: " + QuoteValue(other) + " is used and " +
                  QuoteValue(canonical) + " is ignored, as upstream does");
  }
  // A lower-case chief or master beside the other one: upstream's V8 counts only exact keys, and
  // the renamed key makes a job with both roles.
  auto chief = keys_of.find(ReplicaType::kChief), master = keys_of.find(ReplicaType::kMaster);
  if (chief != keys_of.end() && master != keys_of.end()) {
    auto exact = [](const std::vector<std::string>& keys, std::string_view name) {
      return std::find(keys.begin(), keys.end(), name) != keys.end();
    };
    const bool chief_exact = exact(chief->second, "Chief"), master_exact = exact(master->second, "Master");
    if (!(chief_exact && master_exact)) {
      const std::string& key = !chief_exact ? chief->second.front() : master->second.front();
      out.push_back(Path("spec.tfReplicaSpecs[" + key + "]") + ": " + QuoteValue(key) + " is read as " +
                    QuoteValue(std::string(!chief_exact ? "Chief" : "Master")) +
                    ", so the job has both a Chief and a Master, as upstream runs it: both roles run, TF_CONFIG lists "
                    "both, and the first of them to succeed or fail decides the job");
    }
  }
  return out;
}

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
  // D32: spec.managedBy only repeats runPolicy.managedBy (for Kueue's generic MultiKueue adapter).
  if (job.spec.managed_by && job.spec.managed_by != job.spec.run_policy.managed_by)
    errors.push_back(Invalid(
        "spec.managedBy", QuoteValue(*job.spec.managed_by),
        "must equal spec.runPolicy.managedBy (" +
            (job.spec.run_policy.managed_by ? QuoteValue(*job.spec.run_policy.managed_by) : std::string("unset")) +
            ")"));

  if (!job.spec.has_replica_specs) {  // V4
    errors.push_back(Required("spec.tfReplicaSpecs", "must be required"));
    return errors;
  }
  const std::map<ReplicaType, std::vector<std::string>> keys_of = KeysByType(job.spec);
  std::set<ReplicaType> seen;
  int chief_or_master = 0;
  for (const auto& [key, spec] : job.spec.replica_specs) {
    const std::string path = "spec.tfReplicaSpecs[" + key + "]";
    auto type = ParseReplicaTypeFold(key);
    if (!type) {  // D11
      errors.push_back(NotSupported(path, QuoteValue(key), kReplicaTypeNames));
    } else {
      // Two spellings of one type run upstream only as the pair "Worker" + "worker" (D22); any
      // other repeat leaves a second key whose pods collide with the first's (D25).
      if (auto [it, inserted] = seen.insert(*type); !inserted && !IsCanonicalPair(*type, keys_of.at(*type)))
        errors.push_back(Duplicate(path, QuoteValue(std::string(ReplicaTypeName(*type)))));
      if (ParseReplicaType(key) && IsChiefOrMaster(*type)) ++chief_or_master;  // V8 counts exact keys only
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
    if (!spec->restart_policy.empty() && !spec->restart_policy.value())
      errors.push_back(
          NotSupported(path + ".restartPolicy", QuoteValue(spec->restart_policy.text()), EnumNames<RestartPolicy>()));
    ValidateContainers(path, *spec, &errors);
  }
  if (chief_or_master > 1)  // V8
    errors.push_back(Forbidden("spec.tfReplicaSpecs", "must not have more than 1 Chief or Master role"));
  return errors;
}

FieldErrors ValidateTfJobUpdate(const TfJob& old_job, const TfJob& new_job) {
  FieldErrors errors = ValidateTfJob(new_job);
  // D32: spec.managedBy may be set once, to runPolicy.managedBy's value (ValidateTfJob checks
  // the value); never changed or removed after.
  if (old_job.spec.managed_by && old_job.spec.managed_by != new_job.spec.managed_by) {
    std::string value = new_job.spec.managed_by ? QuoteValue(*new_job.spec.managed_by) : "null";
    errors.insert(errors.begin(), Invalid("spec.managedBy", value, "field is immutable once set"));
  }
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
