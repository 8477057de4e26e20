#include "operator/plan_applier.h"

#include <algorithm>

#include "api/object_key.h"
#include "api/tfjob_json.h"
#include "operator/resources.h"

namespace tfjob::operator_ {

using nlohmann::json;
namespace core = ::tfjob::tfjob::core;

StatusOr<json> RestObjectWriter::Create(const kube::GroupVersionResource& gvr, const std::string& ns,
                                        const json& object) {
  return client_.Create(gvr, ns, object);
}

Status RestObjectWriter::Delete(const kube::GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                                const std::string& precondition_uid) {
  return client_.Delete(gvr, ns, name, {.precondition_uid = precondition_uid});
}

StatusOr<json> RestObjectWriter::MergePatch(const kube::GroupVersionResource& gvr, const std::string& ns,
                                            const std::string& name, const json& patch,
                                            const std::string& subresource) {
  return client_.Patch(gvr, ns, name, kube::PatchType::kMerge, patch, subresource);
}

const kube::GroupVersionResource& PodGroupResource(core::GangScheduler gang) {
  if (gang == core::GangScheduler::kKubernetes) return kNativePodGroups;
  return gang == core::GangScheduler::kVolcano ? kVolcanoPodGroups : kPluginsPodGroups;
}

controller::ObjectReference JobReference(const api::TfJob& job) {
  return {std::string(api::kApiVersion), std::string(api::kKind), job.metadata.ns, job.metadata.name, job.metadata.uid};
}

json StatusPatch(const api::JobStatus& status) {
  json st = api::EncodeStatus(status);
  for (auto& [type, rs] : st["replicaStatuses"].items())
    for (const char* f : {"active", "succeeded", "failed", "restarts", "disruptions"})
      if (!rs.contains(f)) rs[f] = nullptr;
  return json{{"status", st}};
}

PlanApplier::PlanApplier(ObjectWriter& writer, controller::WritePool& pool, controller::Expectations& expectations,
                         controller::EventRecorder& events, controller::Registry& registry, core::GangScheduler gang,
                         PlanApplierHooks hooks)
    : writer_(writer),
      pool_(pool),
      expectations_(expectations),
      events_(events),
      gang_(gang),
      hooks_(std::move(hooks)) {
  const std::vector<std::string> labels = {"job_namespace", "framework"};
  jobs_deleted_ = &registry.AddCounter("training_operator_jobs_deleted_total", "Counts number of jobs deleted", labels);
  jobs_successful_ =
      &registry.AddCounter("training_operator_jobs_successful_total", "Counts number of jobs successful", labels);
  jobs_failed_ = &registry.AddCounter("training_operator_jobs_failed_total", "Counts number of jobs failed", labels);
  jobs_restarted_ =
      &registry.AddCounter("training_operator_jobs_restarted_total", "Counts number of jobs restarted", labels);
  children_ =
      &registry.AddCounter("tfjob_children_total", "Pods and services created and deleted, by kind, action and result",
                           {"kind", "action", "result"});
}

Status PlanApplier::CreateChildren(const api::TfJob& job, const core::Plan& plan, const Logger& log) {
  struct Item {
    bool pod;
    std::string name;
    const json* object;
  };
  std::vector<Item> items;
  for (const auto& s : plan.create_services) items.push_back({false, s.name, &s.object});
  for (const auto& p : plan.create_pods) items.push_back({true, p.name, &p.object});
  const std::string key = api::JobKey(job);
  expectations_.Raise(key, static_cast<int>(items.size()), 0);
  // Slow start (1, 2, 4, ...): a systematic failure (quota, admission) costs one request, not N.
  // Each batch runs on the shared write pool, at most --write-concurrency writes at once (D17).
  size_t next = 0;
  Status first_error = OkStatus();
  for (size_t batch = 1; next < items.size() && first_error.ok(); batch *= 2) {
    size_t end = std::min(items.size(), next + batch);
    std::vector<Status> results(end - next);
    std::vector<std::function<void()>> writes;
    for (size_t i = next; i < end; ++i) {
      writes.push_back([this, &job, &item = items[i], &result = results[i - next]] {
        result = writer_.Create(item.pod ? kube::kPods : kube::kServices, job.metadata.ns, *item.object).status();
      });
    }
    pool_.RunAll(std::move(writes));
    for (size_t i = next; i < end; ++i) {
      const Status& s = results[i - next];
      const Item& item = items[i];
      const char* kind = item.pod ? "pod" : "service";
      if (s.ok()) {
        children_->With({kind, "create", "ok"}).Inc();
        events_.Record(JobReference(job), "Normal", item.pod ? "SuccessfulCreatePod" : "SuccessfulCreateService",
                       std::string(item.pod ? "Created pod: " : "Created service: ") + item.name);
        continue;
      }
      expectations_.CreationObserved(key);  // no watch event will come for this one
      if (IsAlreadyExists(s)) continue;     // deterministic name: it is ours already
      children_->With({kind, "create", "error"}).Inc();
      events_.Record(JobReference(job), "Warning", item.pod ? "FailedCreatePod" : "FailedCreateService",
                     "Error creating: " + s.message());
      log.Warning("create failed", {{"name", item.name}, {"error", s.message()}});
      if (first_error.ok()) first_error = s;
    }
    next = end;
  }
  for (size_t i = next; i < items.size(); ++i) expectations_.CreationObserved(key);  // never sent
  return first_error;
}

// Restarts, scale-down, cleanup: every delete carries the uid the plan saw.
Status PlanApplier::DeleteChildren(const api::TfJob& job, const core::Plan& plan) {
  const std::string key = api::JobKey(job);
  Status result = OkStatus();
  expectations_.Raise(key, 0, static_cast<int>(plan.delete_pods.size() + plan.delete_services.size()));
  auto remove = [&](const kube::GroupVersionResource& gvr, const core::ChildDeletion& d, bool pod) {
    if (pod && hooks_.deleting_pod) hooks_.deleting_pod(key, d.uid);  // before: its events may come first
    Status s = writer_.Delete(gvr, job.metadata.ns, d.name, d.uid);
    const char* kind = pod ? "pod" : "service";
    // No delete event of ours will come.
    if (pod && (IsNotFound(s) || IsConflict(s)) && hooks_.pod_delete_done) hooks_.pod_delete_done(d.uid);
    if (s.ok()) {
      children_->With({kind, "delete", "ok"}).Inc();
      events_.Record(JobReference(job), "Normal", pod ? "SuccessfulDeletePod" : "SuccessfulDeleteService",
                     std::string(pod ? "Deleted pod: " : "Deleted service: ") + d.name);
      return;
    }
    expectations_.DeletionObserved(key);
    if (IsNotFound(s) || IsConflict(s)) return;  // already gone, or a namesake that is not ours
    children_->With({kind, "delete", "error"}).Inc();
    events_.Record(JobReference(job), "Warning", pod ? "FailedDeletePod" : "FailedDeleteService",
                   "Error deleting: " + s.message());
    if (result.ok()) result = s;
  };
  for (const auto& d : plan.delete_pods) remove(kube::kPods, d, true);
  for (const auto& d : plan.delete_services) remove(kube::kServices, d, false);
  return result;
}

// The Workload (D27) before the PodGroup, the PodGroup's update, and their deletion.
Status PlanApplier::ApplyGang(const api::TfJob& job, const core::Plan& plan) {
  const std::string& ns = job.metadata.ns;
  Status result = OkStatus();
  auto keep_first = [&result](const Status& s) {
    if (result.ok() && !s.ok()) result = s;
  };
  const auto& pg_gvr = PodGroupResource(gang_);
  bool workload_ready = true;  // the API server refuses a PodGroup whose Workload does not exist
  if (plan.create_workload) {
    auto r = writer_.Create(kNativeWorkloads, ns, *plan.create_workload);
    if (r.ok()) {
      events_.Record(JobReference(job), "Normal", "SuccessfulCreateWorkload", "Created Workload: " + job.metadata.name);
    } else if (!IsAlreadyExists(r.status())) {
      workload_ready = false;
      events_.Record(JobReference(job), "Warning", "FailedCreateWorkload", "Error creating: " + r.status().message());
      keep_first(r.status());
    }
  }
  if (plan.create_pod_group && workload_ready) {
    auto r = writer_.Create(pg_gvr, ns, *plan.create_pod_group);
    if (!r.ok() && !IsAlreadyExists(r.status())) keep_first(r.status());
  }
  if (plan.update_pod_group) {
    auto r = writer_.MergePatch(pg_gvr, ns, job.metadata.name, json{{"spec", (*plan.update_pod_group)["spec"]}}, "");
    keep_first(r.status());
  }
  // The job's PodGroup or Workload (named as the job): gone already counts as deleted.
  auto delete_named_as_job = [&](const kube::GroupVersionResource& gvr, const std::string& kind) {
    Status s = writer_.Delete(gvr, ns, job.metadata.name, "");
    if (s.ok() || IsNotFound(s)) {
      events_.Record(JobReference(job), "Normal", "SuccessfulDelete" + kind,
                     "Deleted " + kind + ": " + job.metadata.name);
    } else {
      events_.Record(JobReference(job), "Warning", "FailedDelete" + kind, "Error deleting: " + s.message());
      keep_first(s);
    }
  };
  if (plan.delete_pod_group) delete_named_as_job(pg_gvr, "PodGroup");
  if (plan.delete_workload) delete_named_as_job(kNativeWorkloads, "Workload");
  return result;
}

// The plan's events, the status (merge patch on /status, D14), the job counters, the TTL delete.
Status PlanApplier::WriteStatusAndCounters(const api::TfJob& job, const core::Plan& plan) {
  const std::string key = api::JobKey(job);
  const std::string& ns = job.metadata.ns;
  Status result = OkStatus();
  for (const auto& e : plan.events) events_.Record(JobReference(job), std::string(api::EnumName(e.type)), e.reason, e.message);
  if (plan.status) {
    auto r = writer_.MergePatch(kTfJobs, ns, job.metadata.name, StatusPatch(*plan.status), "status");
    if (r.ok()) {
      if (hooks_.wrote_job) hooks_.wrote_job(key, *r);
    } else if (!IsNotFound(r.status())) {
      result = r.status().WithContext("writing status");
    }
  }
  const std::vector<std::string> labels = {ns, "tensorflow"};
  if (plan.counters.successful) jobs_successful_->With(labels).Inc(plan.counters.successful);
  if (plan.counters.failed) jobs_failed_->With(labels).Inc(plan.counters.failed);
  if (plan.counters.restarted) jobs_restarted_->With(labels).Inc(plan.counters.restarted);
  if (plan.delete_job) {
    Status s = writer_.Delete(kTfJobs, ns, job.metadata.name, job.metadata.uid);
    if (s.ok()) {
      jobs_deleted_->With(labels).Inc();
      events_.Record(JobReference(job), "Normal", "SuccessfulDeleteJob", "Deleted job: " + job.metadata.name);
    } else if (!IsNotFound(s)) {
      events_.Record(JobReference(job), "Warning", "FailedDeleteJob", "Error deleting: " + s.message());
      if (result.ok()) result = s;
    }
  }
  return result;
}

Status PlanApplier::Apply(const api::TfJob& job, const core::Plan& plan, const Logger& log) {
  const std::string key = api::JobKey(job);
  // D29: the counts first, where the CRD keeps them: if this write fails, nothing else of the
  // plan happens (a restart's pod is not deleted before its count is kept), and the pass is retried.
  if (plan.counters_annotation) {
    json patch = {
        {"metadata", {{"annotations", {{std::string(core::kCountersAnnotation), *plan.counters_annotation}}}}}};
    auto r = writer_.MergePatch(kTfJobs, job.metadata.ns, job.metadata.name, patch, "");
    if (!r.ok()) return IsNotFound(r.status()) ? OkStatus() : r.status().WithContext("writing the counters annotation");
    if (hooks_.wrote_job) hooks_.wrote_job(key, *r);
  }
  Status result = OkStatus();
  auto keep_first = [&result](const Status& s) {
    if (result.ok() && !s.ok()) result = s;
  };
  keep_first(DeleteChildren(job, plan));
  keep_first(ApplyGang(job, plan));
  keep_first(CreateChildren(job, plan, log));
  keep_first(WriteStatusAndCounters(job, plan));
  if (!plan.create_pods.empty() || !plan.delete_pods.empty() || plan.status)
    log.Info("reconciled", {{"created_pods", std::to_string(plan.create_pods.size())},
                            {"deleted_pods", std::to_string(plan.delete_pods.size())},
                            {"status_written", plan.status ? "true" : "false"}});
  return result;
}

}  // namespace tfjob::operator_
