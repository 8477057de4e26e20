#include "tfjob/core/kueue_multikueue.h"

#include <gtest/gtest.h>

#include "testing/fixtures.h"
#include "tfjob/core/kueue_sync.h"
#include "tfjob/core/reconcile.h"
#include "tfjob/core/reconcile_phases.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

const api::Time kNow = *api::ParseTime("2026-12-03T10:00:00Z");
constexpr char kUid[] = "6e1b7c0a-0000-4000-8000-000000000001";
constexpr char kMk[] = "kueue.x-k8s.io/multikueue";

// A queued job; `extra_labels` and `spec_extra` (spec lines) as the case needs.
api::TfJob Job(const std::string& managed_by, const std::string& extra_labels = "",
               const std::string& spec_extra = "") {
  std::string run_policy =
      "  runPolicy: {suspend: true" + (managed_by.empty() ? "" : ", managedBy: " + managed_by) + "}\n";
  return testing::JobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: mnist, namespace: ns, resourceVersion: '7', uid: " +
      std::string(kUid) + ", labels: {kueue.x-k8s.io/queue-name: user-queue" + extra_labels + "}}\nspec:\n" +
      spec_extra + run_policy +
      "  tfReplicaSpecs:\n"
      "    Worker:\n      replicas: 2\n      template: {spec: {containers: [{name: tensorflow, image: tf}]}}\n");
}

// What MultiKueue creates on a worker: the copy (spec.managedBy removed, its two labels) ...
api::TfJob Copy(const std::string& origin = "mk-1") {
  return Job(kMk,
             ", kueue.x-k8s.io/prebuilt-workload-name: tfjob-mnist-0a1b2, kueue.x-k8s.io/multikueue-origin: " + origin);
}
// ... and, before it, the Workload (the manager's spec, its labels plus the origin, no owner).
// The Workload as the operator's informer decodes it.
std::optional<api::KueueWorkload> Typed(const std::optional<json>& workload) {
  if (!workload) return std::nullopt;
  return testing::DecodedKueueWorkload(*workload);
}

json RemoteWorkload(const api::TfJob& job, const std::string& origin = "mk-1") {
  json w = *RenderKueueWorkload(job, {}, KueueOptions{});
  w["metadata"]["name"] = "tfjob-mnist-0a1b2";
  w["metadata"].erase("ownerReferences");
  w["metadata"]["labels"]["kueue.x-k8s.io/multikueue-origin"] = origin;
  w["metadata"]["resourceVersion"] = "11";
  return w;
}

TEST(MultiKueueRoleOf, Table) {
  const api::TfJob copy = Copy();
  json owned_by_copy = RemoteWorkload(copy);
  owned_by_copy["metadata"]["ownerReferences"] = json::array(
      {{{"apiVersion", "kubeflow.org/v1"}, {"kind", "TFJob"}, {"name", "mnist"}, {"uid", kUid}, {"controller", true}}});
  json owned_by_other = owned_by_copy;
  owned_by_other["metadata"]["ownerReferences"][0]["uid"] = "another";
  json other_origin = RemoteWorkload(copy, "mk-2");
  json other_name = RemoteWorkload(copy);
  other_name["metadata"]["name"] = "tfjob-other-00000";
  struct Case {
    const char* id;
    api::TfJob job;
    std::optional<json> prebuilt;
    MultiKueueRole want;
  };
  const Case cases[] = {
      {"not managed by anyone else", Job(""), std::nullopt, MultiKueueRole::kNone},
      {"managed by the training operator", Job("kubeflow.org/training-operator"), std::nullopt, MultiKueueRole::kNone},
      {"for MultiKueue, no origin label: the manager's job", Job(kMk), std::nullopt, MultiKueueRole::kManager},
      {"the manager's job with spec.managedBy", Job(kMk, "", "  managedBy: kueue.x-k8s.io/multikueue\n"), std::nullopt,
       MultiKueueRole::kManager},
      {"the copy and MultiKueue's Workload", copy, RemoteWorkload(copy), MultiKueueRole::kCopy},
      {"the copy, Workload adopted by it", copy, owned_by_copy, MultiKueueRole::kCopy},
      {"the copy, its Workload not seen yet", copy, std::nullopt, MultiKueueRole::kUnproven},
      {"the Workload controlled by another job", copy, owned_by_other, MultiKueueRole::kUnproven},
      {"the Workload of another origin", copy, other_origin, MultiKueueRole::kUnproven},
      {"another Workload than the label names", copy, other_name, MultiKueueRole::kUnproven},
      {"an empty origin", Copy(""), RemoteWorkload(Copy(""), ""), MultiKueueRole::kUnproven},
      {"spec.managedBy still set: not Kueue's adapter's copy",
       Job(kMk, ", kueue.x-k8s.io/prebuilt-workload-name: tfjob-mnist-0a1b2, kueue.x-k8s.io/multikueue-origin: mk-1",
           "  managedBy: kueue.x-k8s.io/multikueue\n"),
       RemoteWorkload(copy), MultiKueueRole::kUnproven},
      {"origin label without the prebuilt label", Job(kMk, ", kueue.x-k8s.io/multikueue-origin: mk-1"),
       RemoteWorkload(copy), MultiKueueRole::kUnproven},
  };
  for (const Case& c : cases)
    EXPECT_EQ(MultiKueueRoleName(MultiKueueRoleOf(c.job, Typed(c.prebuilt))), MultiKueueRoleName(c.want)) << c.id;
}

KueuePlan PlanFor(const api::TfJob& job, const std::optional<json>& prebuilt = std::nullopt,
                  const std::vector<json>& workloads = {}) {
  std::vector<api::KueueWorkload> typed;
  for (const json& w : workloads) typed.push_back(testing::DecodedKueueWorkload(w));
  KueueObserved o{.job = &job, .workloads = std::move(typed), .prebuilt = Typed(prebuilt), .now = kNow};
  return PlanKueueWorkload(o, KueueOptions{});
}

// The manager's job gets spec.managedBy before its Workload exists (Kueue's adapter reads it when
// the Workload reserves quota); then the Workload is created as for any queued job.
TEST(PlanKueueWorkload, ManagerJobGetsSpecManagedByFirst) {
  const api::TfJob job = Job(kMk);
  KueuePlan plan = PlanFor(job);
  EXPECT_EQ(KueueStepName(plan.step), "MarkForMultiKueue");
  ASSERT_TRUE(plan.job_update.has_value());
  EXPECT_FALSE(plan.create_workload.has_value());
  EXPECT_EQ(KueueJobMergePatch(job, *plan.job_update), json::parse(R"({"metadata":{"resourceVersion":"7"},
                            "spec":{"managedBy":"kueue.x-k8s.io/multikueue","runPolicy":{"suspend":true}}})"));

  const api::TfJob marked = Job(kMk, "", "  managedBy: kueue.x-k8s.io/multikueue\n");
  plan = PlanFor(marked);
  EXPECT_EQ(KueueStepName(plan.step), "CreateWorkload");
  EXPECT_TRUE(plan.create_workload.has_value());
  EXPECT_FALSE(plan.job_update.has_value());

  // A job not for MultiKueue, and MultiKueue's copy on a worker, never get it.
  EXPECT_EQ(KueueStepName(PlanFor(Job("")).step), "CreateWorkload");
  const api::TfJob copy = Copy();
  EXPECT_EQ(KueueStepName(PlanFor(copy, RemoteWorkload(copy)).step), "AdoptPrebuilt");
}

// On the worker the copy adopts MultiKueue's Workload and starts once it is admitted.
TEST(PlanKueueWorkload, CopyAdoptsAndStarts) {
  const api::TfJob copy = Copy();
  json wl = RemoteWorkload(copy);
  KueuePlan plan = PlanFor(copy, wl);
  ASSERT_EQ(KueueStepName(plan.step), "AdoptPrebuilt");
  ASSERT_TRUE(plan.update_workload.has_value());
  json adopted = *plan.update_workload;
  EXPECT_EQ(MultiKueueRoleName(MultiKueueRoleOf(copy, testing::DecodedKueueWorkload(adopted))), "Copy");
  adopted["status"]["conditions"] =
      json::array({{{"type", "QuotaReserved"}, {"status", "True"}, {"reason", "QuotaReserved"}, {"message", ""}},
                   {{"type", "Admitted"}, {"status", "True"}, {"reason", "Admitted"}, {"message", ""}}});
  adopted["status"]["admission"] = {
      {"clusterQueue", "mk-cq"},
      {"podSetAssignments", {{{"name", "worker"}, {"flavors", json::object()}, {"count", 2}}}}};
  plan = PlanFor(copy, adopted, {adopted});
  EXPECT_EQ(KueueStepName(plan.step), "Start");
  ASSERT_TRUE(plan.job_update.has_value());
  EXPECT_FALSE(plan.job_update->suspend);
  EXPECT_FALSE(plan.job_update->spec_managed_by.has_value());
}

// The core runs MultiKueue's proven copy (D32) and still skips the manager's job.
TEST(Reconcile, RunsAProvenMultiKueueCopyOnly) {
  api::TfJob copy = Copy();
  copy.spec.run_policy.suspend = false;
  ObservedState observed{.job = copy, .now = kNow};
  EXPECT_TRUE(Reconcile(observed, {}).skip);
  observed.multikueue_copy = true;
  Plan plan = Reconcile(observed, {});
  EXPECT_FALSE(plan.skip);
  EXPECT_EQ(plan.create_pods.size(), 2u);
  // The flag covers MultiKueue only, and never a job being deleted.
  api::TfJob other = copy;
  other.spec.run_policy.managed_by = "example.com/another-controller";
  EXPECT_TRUE(ShouldSkip(other, true));
  api::TfJob deleting = copy;
  deleting.metadata.deletion_timestamp = kNow;
  EXPECT_TRUE(ShouldSkip(deleting, true));
  EXPECT_TRUE(ShouldSkip(Job(kMk), false));
  EXPECT_FALSE(ShouldSkip(Job(kMk), true));
}

}  // namespace
}  // namespace tfjob::core
