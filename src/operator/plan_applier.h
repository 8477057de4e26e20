#pragma once
// PlanApplier: the write side of the TFJob controller. It carries out one core::Plan against the
// API, in the order docs/semantics.md fixes: the D29 counters annotation first (if that write fails
// nothing else happens), deletes with a uid precondition (a recreated namesake is never deleted),
// the Workload and PodGroup (D27); then the creates are queued, every service first, then the pods,
// each once its own service exists, under a slow-start window (one first, two more for each
// success, no new one after a failure, D17) on the shared WritePool in the job's lane, while the
// plan's events, the status as a merge patch on /status (D14), the job counters and the TTL delete
// of the job are written. Start returns once those are done: the reconcile worker is free for the
// next job while the creates run, and the job is not reconciled again until they are observed
// (expectations, D1); `done` reports the pass's outcome. Expectations are set once per pass to its
// creates and deletes (after the D29 write) and lowered for the calls whose watch event will never
// come (failed, AlreadyExists, never sent). Writes go through the narrow ObjectWriter interface, so
// the applier runs against a RestClient in production and against anything in tests. Thread-safe:
// reconcile workers call Start concurrently.

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "api/tfjob.h"
#include "common/logging.h"
#include "common/status.h"
#include "controller/event_recorder.h"
#include "controller/expectations.h"
#include "controller/metrics.h"
#include "controller/write_pool.h"
#include "kube/resource_path.h"
#include "kube/rest_client.h"
#include "tfjob/core/gang_scheduler.h"
#include "tfjob/core/reconcile.h"
#include "tfjob/core/render.h"

namespace tfjob::operator_ {

// The writes a plan needs. Errors are the API's (kube/api_error.h). Thread-safe.
class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  virtual StatusOr<nlohmann::json> Create(const kube::GroupVersionResource& gvr, const std::string& ns,
                                          const nlohmann::json& object) = 0;
  // Create, when the caller needs only the outcome (a pod or service): the default calls Create.
  virtual Status CreateChild(const kube::GroupVersionResource& gvr, const std::string& ns,
                             const nlohmann::json& object) {
    return Create(gvr, ns, object).status();
  }
  // `precondition_uid` empty: no precondition.
  virtual Status Delete(const kube::GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                        const std::string& precondition_uid) = 0;
  // A JSON merge patch (RFC 7386) of the object, or of `subresource` ("status").
  virtual StatusOr<nlohmann::json> MergePatch(const kube::GroupVersionResource& gvr, const std::string& ns,
                                              const std::string& name, const nlohmann::json& patch,
                                              const std::string& subresource) = 0;
};

// The production ObjectWriter.
class RestObjectWriter final : public ObjectWriter {
 public:
  explicit RestObjectWriter(kube::RestClient& client) : client_(client) {}
  StatusOr<nlohmann::json> Create(const kube::GroupVersionResource& gvr, const std::string& ns,
                                  const nlohmann::json& object) override;
  // The response (the whole object, 20 KB for a pod of a 500-worker job) is not decoded.
  Status CreateChild(const kube::GroupVersionResource& gvr, const std::string& ns,
                     const nlohmann::json& object) override;
  Status Delete(const kube::GroupVersionResource& gvr, const std::string& ns, const std::string& name,
                const std::string& precondition_uid) override;
  StatusOr<nlohmann::json> MergePatch(const kube::GroupVersionResource& gvr, const std::string& ns,
                                      const std::string& name, const nlohmann::json& patch,
                                      const std::string& subresource) override;

 private:
  kube::RestClient& client_;
};

// What the controller keeps about the applier's writes (each may be empty).
struct PlanApplierHooks {
  // A write of the job returned `object` (the controller's mutation cache, D28).
  std::function<void(const std::string& key, const nlohmann::json& object)> wrote_job;
  // The applier is about to delete this pod of `key` (so its deletion is not a disruption, D21)...
  std::function<void(const std::string& key, const std::string& uid)> deleting_pod;
  // ...and no delete event of it will come (it was gone, or the name is a namesake's).
  std::function<void(const std::string& uid)> pod_delete_done;
  // --gang-scheduler-name kubernetes (docs/semantics.md D31): the Workload API version in use,
  // for deletes (a create goes to the version its object names; unset: v1alpha2)...
  std::function<tfjob::core::NativeGangApi()> native_gang_api;
  // ...and a Workload or PodGroup call that failed, of any gang scheduler (the trackers'
  // CallFailed, D34).
  std::function<void(const kube::GroupVersionResource&, const Status&)> native_gang_failed;
  // Why the API of `gvr` is not served, when its last discovery found no version to speak ("":
  // served, or not known), for the events of a failed create (D34).
  std::function<std::string(const kube::GroupVersionResource&)> gang_api_unserved;
};

// The PodGroup resource of a gang scheduler (REQUIRES: not null for a write): its CRD's, or for
// kube-scheduler's own, that of `native` (docs/semantics.md D31).
kube::GroupVersionResource PodGroupResource(const core::GangSchedulerPolicy* gang,
                                            core::NativeGangApi native = core::NativeGangApi::kV1alpha2);

// The job as the object of its events.
controller::ObjectReference JobReference(const api::TfJob& job);

// The status as a merge patch: zero counters become null so they disappear (upstream's
// omitempty `{}`), instead of keeping their previous value.
nlohmann::json StatusPatch(const api::JobStatus& status);

// The outcome of a pass whose creates ran on the pool: OK, or the first error of the pass.
using CreatesDone = std::function<void(Status)>;

struct StartOutcome {
  Status status;          // the first error of what Start did itself
  bool creating = false;  // creates were queued: `done` will run once, with the pass's first error
};

class PlanApplier {
 public:
  PlanApplier(ObjectWriter& writer, controller::WritePool& pool, controller::Expectations& expectations,
              controller::EventRecorder& events, controller::Registry& registry, const core::GangSchedulerPolicy* gang,
              PlanApplierHooks hooks);

  // Carries out `plan` for `job`, all but its creates before it returns. Each pod and service to
  // create is rendered as it is sent, by one core::PodRenderer over `job` and `render` (the
  // RenderOptions the pass planned with). If the plan creates
  // anything, the creates are queued and `done` runs once when the last has finished, with the
  // first error of the whole pass (what Start did itself included): on a pool thread, or on the
  // calling worker's thread before Start returns when the pool was stopped (Submit then runs
  // the task on its caller). `done` must not take a lock Start's caller holds. Otherwise `done`
  // never runs and the outcome is the status.
  // The plan's creates are moved out of it.
  StartOutcome Start(const api::TfJob& job, tfjob::core::Plan&& plan, const tfjob::core::RenderOptions& render,
                     const Logger& log, CreatesDone done);
  // Start, waiting for the creates: the first error of the pass (for tests).
  Status Apply(const api::TfJob& job, const tfjob::core::Plan& plan, const Logger& log,
               const tfjob::core::RenderOptions& render = {});

 private:
  struct CreateRun;  // one pass's creates, under a slow-start window
  struct CreateSend {
    size_t item;  // of CreateRun::items
    bool pod;     // its pod, or else its service
  };
  void Send(const std::shared_ptr<CreateRun>& run, const std::vector<CreateSend>& sends);
  std::shared_ptr<CreateRun> NewCreateRun(const api::TfJob& job, tfjob::core::Plan&& plan,
                                          const tfjob::core::RenderOptions& render, const Logger& log,
                                          CreatesDone done);
  void SendOne(const std::shared_ptr<CreateRun>& run, CreateSend c);
  // One child of a replica: rendered, created, recorded (RecordCreate). Its outcome.
  Status CreateOne(const CreateRun& run, bool pod, const tfjob::core::ChildCreation& child);
  void RecordCreate(const CreateRun& run, bool pod, const tfjob::core::ChildCreation& child, const Status& s);
  void FinishCreates(const std::shared_ptr<CreateRun>& run);
  void EndPart(const std::shared_ptr<CreateRun>& run);
  Status DeleteChildren(const api::TfJob& job, const tfjob::core::Plan& plan);
  Status ApplyGang(const api::TfJob& job, const tfjob::core::Plan& plan);
  Status DeleteGang(const api::TfJob& job, const tfjob::core::Plan& plan, const kube::GroupVersionResource& pg_gvr,
                    tfjob::core::NativeGangApi native);
  Status CreateCompositeGang(const api::TfJob& job, const tfjob::core::CompositeGangPlan& plan);
  Status DeleteCompositeGang(const api::TfJob& job, const tfjob::core::CompositeGangPlan& plan,
                             tfjob::core::NativeGangApi native);
  Status DeleteNamed(const api::TfJob& job, const kube::GroupVersionResource& gvr, const std::string& kind,
                     const std::string& name);
  void NativeCallDone(const kube::GroupVersionResource& gvr, const Status& s);
  // The message of a FailedCreate<Kind> event: the error, and why its API is not served if known.
  std::string CreateFailure(const kube::GroupVersionResource& gvr, const Status& s) const;
  // What comes before the children's writes: the D29 annotation, and the status that ends the
  // job (Plan::ends_job). A value when the pass stops there (its outcome).
  std::optional<Status> WriteFirst(const api::TfJob& job, const tfjob::core::Plan& plan);
  // What comes after: the status (unless written first), the job counters, the TTL delete.
  Status WriteLast(const api::TfJob& job, const tfjob::core::Plan& plan);
  Status WriteStatus(const api::TfJob& job, const tfjob::core::Plan& plan);  // its events, then the status
  Status WriteCountersAndTtl(const api::TfJob& job, const tfjob::core::Plan& plan);

  ObjectWriter& writer_;
  controller::WritePool& pool_;
  controller::Expectations& expectations_;
  controller::EventRecorder& events_;
  const core::GangSchedulerPolicy* const gang_;  // null: no gang scheduling
  const PlanApplierHooks hooks_;
  controller::Family<controller::Counter>* jobs_deleted_;
  controller::Family<controller::Counter>* jobs_successful_;
  controller::Family<controller::Counter>* jobs_failed_;
  controller::Family<controller::Counter>* jobs_restarted_;
  controller::Family<controller::Counter>* children_;
};

}  // namespace tfjob::operator_
