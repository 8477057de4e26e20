#include "tfjob/core/composite_gang.h"

#include <gtest/gtest.h>

#include "testing/fixtures.h"
#include "tfjob/core/pod_group.h"
#include "tfjob/core/reconcile.h"

namespace tfjob::core {
namespace {

using nlohmann::json;

// A job of the given replica mix; `min_available` < 0: unset. Evaluator pods never count.
api::TfJob MixJob(int chief, int master, int ps, int workers, int evaluators, int min_available = -1,
                  bool suspend = false) {
  std::string yaml = "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: mix, namespace: ns, uid: u}\nspec:\n";
  if (min_available >= 0 || suspend) {
    yaml += "  runPolicy:\n";
    if (suspend) yaml += "    suspend: true\n";
    if (min_available >= 0) yaml += "    schedulingPolicy: {minAvailable: " + std::to_string(min_available) + "}\n";
  }
  yaml += "  tfReplicaSpecs:\n";
  auto add = [&yaml](const char* type, int n) {
    if (n <= 0) return;
    yaml += std::string("    ") + type + ":\n      replicas: " + std::to_string(n) +
            "\n      template: {spec: {containers: [{name: tensorflow, image: x}]}}\n";
  };
  add("Chief", chief);
  add("Master", master);
  add("PS", ps);
  add("Worker", workers);
  add("Evaluator", evaluators);
  return testing::DefaultedJobFromYaml(yaml);
}

// Whether a Workload, decoded as the operator's informer decodes it, is D33's composite one.
bool IsCompositeWorkload(const json& workload) {
  return testing::DecodedSchedulingWorkload(workload).composite;
}

RenderOptions Composite(bool served = true, NativeGangApi api = NativeGangApi::kV1beta1) {
  RenderOptions o;
  o.gang_scheduler_name = "kubernetes";
  o.native_gang_api = api;
  o.composite_pod_groups = served;
  return o;
}

// Which jobs get the hierarchy, and the two minCounts (D33).
TEST(CompositeGang, ShapeAndMinCountsPerReplicaMix) {
  struct Case {
    std::string name;
    api::TfJob job;
    bool composite;
    int32_t leaders, workers;  // minCounts (when composite)
  };
  const std::vector<Case> cases = {
      {"PS + workers, minAvailable unset: every pod", MixJob(0, 0, 2, 4, 0), true, 2, 4},
      {"chief + PS + workers", MixJob(1, 0, 2, 4, 0), true, 3, 4},
      {"master + workers", MixJob(0, 1, 0, 3, 0), true, 1, 3},
      {"evaluator outside: not counted", MixJob(1, 0, 1, 2, 1), true, 2, 2},
      {"minAvailable splits: leaders first", MixJob(0, 0, 2, 4, 0, 5), true, 2, 3},
      {"minAvailable below the leaders: one worker", MixJob(1, 0, 2, 4, 0, 2), true, 3, 1},
      {"minAvailable above every pod: all workers", MixJob(0, 0, 1, 2, 1, 4), true, 1, 2},
      {"minAvailable 0: no gang, flat basic", MixJob(0, 0, 1, 2, 0, 0), false, 0, 0},
      {"workers only: flat", MixJob(0, 0, 0, 3, 0), false, 0, 0},
      {"PS only: flat", MixJob(0, 0, 2, 0, 0), false, 0, 0},
      {"chief + evaluator, no worker: flat", MixJob(1, 0, 0, 0, 1), false, 0, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(UsesCompositeGang(c.job, Composite()), c.composite);
    if (!c.composite) continue;
    EXPECT_EQ(LeaderMinCount(c.job), c.leaders);
    EXPECT_EQ(WorkerMinCount(c.job), c.workers);
    EXPECT_EQ(CompositeMinCount(c.job, CompositeMember::kLeaders), c.leaders);
    EXPECT_EQ(CompositeMinCount(c.job, CompositeMember::kWorkers), c.workers);
  }
}

TEST(CompositeGang, OnlyWithV1beta1KubernetesAndServed) {
  const api::TfJob job = MixJob(0, 0, 1, 2, 0);
  EXPECT_TRUE(UsesCompositeGang(job, Composite()));
  EXPECT_FALSE(UsesCompositeGang(job, Composite(false)));
  EXPECT_FALSE(UsesCompositeGang(job, Composite(true, NativeGangApi::kV1alpha2)));
  RenderOptions volcano = Composite();
  volcano.gang_scheduler_name = "volcano";
  EXPECT_FALSE(UsesCompositeGang(job, volcano));
}

// A job's existing Workload keeps its shape; without one, what the server serves.
TEST(CompositeGang, CompositeForJob) {
  struct Case {
    bool served;
    std::optional<bool> existing;
    bool want;
  };
  const std::vector<Case> cases = {
      {true, std::nullopt, true}, {false, std::nullopt, false}, {true, false, false},
      {false, true, true},        {true, true, true},           {false, false, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::to_string(c.served) + " " + (c.existing ? std::to_string(*c.existing) : "none"));
    EXPECT_EQ(CompositeForJob(c.served, c.existing), c.want);
  }
  EXPECT_TRUE(IsCompositeWorkload(RenderCompositeWorkload(MixJob(0, 0, 1, 1, 0))));
  EXPECT_FALSE(IsCompositeWorkload(*RenderWorkload(MixJob(0, 0, 1, 1, 0), Composite(false))));
  EXPECT_FALSE(IsCompositeWorkload(json::parse(R"({"spec":{"compositePodGroupTemplates":[]}})")));
  EXPECT_FALSE(IsCompositeWorkload(json::parse(R"({"spec":null})")));
}

TEST(CompositeGang, NamesAndMembers) {
  EXPECT_EQ(CompositeMemberPodGroupName("mix", CompositeMember::kLeaders), "mix.leaders");
  EXPECT_EQ(CompositeMemberPodGroupName("mix", CompositeMember::kWorkers), "mix.workers");
  EXPECT_EQ(CompositeMemberOf(api::ReplicaType::kChief), CompositeMember::kLeaders);
  EXPECT_EQ(CompositeMemberOf(api::ReplicaType::kMaster), CompositeMember::kLeaders);
  EXPECT_EQ(CompositeMemberOf(api::ReplicaType::kPS), CompositeMember::kLeaders);
  EXPECT_EQ(CompositeMemberOf(api::ReplicaType::kWorker), CompositeMember::kWorkers);
  EXPECT_EQ(CompositeMemberOf(api::ReplicaType::kEvaluator), std::nullopt);
  EXPECT_EQ(JobNameOfGangObject("mix"), "mix");
  EXPECT_EQ(JobNameOfGangObject("mix.workers"), "mix");
  EXPECT_EQ(JobNameOfGangObject("a-b.leaders"), "a-b");
}

// The whole objects, as the API server gets them (field names of k8s.io/api v0.37.2).
TEST(CompositeGang, RendersTheHierarchy) {
  const api::TfJob job = MixJob(1, 0, 2, 4, 1, 5);
  const json owner = json::parse(R"([{"apiVersion":"kubeflow.org/v1","kind":"TFJob","name":"mix","uid":"u",
    "controller":true,"blockOwnerDeletion":true}])");
  EXPECT_EQ(RenderCompositeWorkload(job), json::parse(R"({"apiVersion":"scheduling.k8s.io/v1beta1","kind":"Workload",
    "metadata":{"name":"mix","namespace":"ns","ownerReferences":)" +
                                                      owner.dump() + R"(},
    "spec":{"controllerRef":{"apiGroup":"kubeflow.org","kind":"TFJob","name":"mix"},
      "compositePodGroupTemplates":[{"name":"tfjob","schedulingPolicy":{"gang":{"minGroupCount":2}},
        "disruptionMode":{"all":{}},
        "podGroupTemplates":[
          {"name":"leaders","schedulingPolicy":{"gang":{"minCount":3}},"disruptionMode":{"all":{}}},
          {"name":"workers","schedulingPolicy":{"gang":{"minCount":2}},"disruptionMode":{"all":{}}}]}]}})"));
  EXPECT_EQ(RenderCompositePodGroup(job),
            json::parse(R"({"apiVersion":"scheduling.k8s.io/v1alpha3","kind":"CompositePodGroup",
    "metadata":{"name":"mix","namespace":"ns","ownerReferences":)" +
                        owner.dump() + R"(},
    "spec":{"workloadRef":{"workloadName":"mix","templateName":"tfjob"},
      "schedulingPolicy":{"gang":{"minGroupCount":2}},"disruptionMode":{"all":{}}}})"));
  EXPECT_EQ(RenderCompositeMemberPodGroup(job, CompositeMember::kWorkers),
            json::parse(R"({"apiVersion":"scheduling.k8s.io/v1beta1","kind":"PodGroup",
    "metadata":{"name":"mix.workers","namespace":"ns","ownerReferences":)" +
                        owner.dump() + R"(},
    "spec":{"parentCompositePodGroupName":"mix","workloadRef":{"workloadName":"mix","templateName":"workers"},
      "schedulingPolicy":{"gang":{"minCount":2}},"disruptionMode":{"all":{}}}})"));
  EXPECT_EQ(RenderCompositeMemberPodGroup(job, CompositeMember::kLeaders)["spec"]["schedulingPolicy"],
            json::parse(R"({"gang":{"minCount":3}})"));
}

// tfjob render (RenderJob) and every pod: Workload, CompositePodGroup, PodGroups, then the pods,
// each in its member's group; the Evaluator in none, even one its template names.
TEST(CompositeGang, RenderJobOrderAndPodGroups) {
  api::TfJob job = MixJob(1, 0, 1, 2, 1);
  job.spec.replica_specs["Evaluator"]->pod_template["spec"]["schedulingGroup"] = {{"podGroupName", "mine"}};
  auto rendered = RenderJob(job, Composite());
  ASSERT_TRUE(rendered.ok()) << rendered.status().message();
  std::vector<std::string> heads;
  for (size_t i = 0; i < 4; ++i)
    heads.push_back(rendered->objects[i]["kind"].get<std::string>() + " " +
                    rendered->objects[i]["metadata"]["name"].get<std::string>());
  EXPECT_EQ(heads, (std::vector<std::string>{"Workload mix", "CompositePodGroup mix", "PodGroup mix.leaders",
                                             "PodGroup mix.workers"}));
  std::map<std::string, json> groups;
  for (const auto& o : rendered->objects)
    if (o["kind"] == "Pod") groups[o["metadata"]["name"]] = o["spec"].value("schedulingGroup", json());
  EXPECT_EQ(groups, (std::map<std::string, json>{{"mix-chief-0", {{"podGroupName", "mix.leaders"}}},
                                                 {"mix-ps-0", {{"podGroupName", "mix.leaders"}}},
                                                 {"mix-worker-0", {{"podGroupName", "mix.workers"}}},
                                                 {"mix-worker-1", {{"podGroupName", "mix.workers"}}},
                                                 {"mix-evaluator-0", nullptr}}));
  // Not served: today's flat gang, every pod in <job>.
  auto flat = RenderJob(job, Composite(false));
  ASSERT_TRUE(flat.ok());
  EXPECT_EQ(flat->objects[1]["kind"], "PodGroup");
  EXPECT_EQ(flat->objects[1]["metadata"]["name"], "mix");
  for (const auto& o : flat->objects)
    if (o["kind"] == "Pod") {
      EXPECT_EQ(o["spec"]["schedulingGroup"], json::parse(R"({"podGroupName":"mix"})"));
    }
}

// The reconcile: what a pass creates, updates and deletes of the hierarchy.
TEST(CompositeGang, ReconcilePlansTheHierarchy) {
  struct Case {
    std::string name;
    api::TfJob job;
    bool workload, composite;
    std::vector<std::string> members;  // existing member PodGroups
    json member_spec;                  // their observed spec
    bool create_workload, create_composite;
    std::vector<std::string> create_members, update_members, delete_members;
    bool delete_workload, delete_composite;
    size_t pods;
  };
  const json same = json::parse(R"({"schedulingPolicy":{"gang":{"minCount":2}}})");
  const json other = json::parse(R"({"schedulingPolicy":{"gang":{"minCount":9}}})");
  const api::TfJob running = MixJob(0, 0, 2, 2, 0);  // leaders 2, workers 2
  const api::TfJob suspended = MixJob(0, 0, 2, 2, 0, -1, true);
  const std::vector<std::string> both = {"mix.leaders", "mix.workers"};
  const std::vector<Case> cases = {
      {"new job: everything, then the pods",
       running,
       false,
       false,
       {},
       same,
       true,
       true,
       both,
       {},
       {},
       false,
       false,
       4},
      {"all there, same minCounts", running, true, true, both, same, false, false, {}, {}, {}, false, false, 4},
      {"composite lost", running, true, false, both, same, false, true, {}, {}, {}, false, false, 4},
      {"one member lost",
       running,
       true,
       true,
       {"mix.leaders"},
       same,
       false,
       false,
       {"mix.workers"},
       {},
       {},
       false,
       false,
       4},
      {"minCounts changed: both updated",
       running,
       true,
       true,
       both,
       other,
       false,
       false,
       {},
       both,
       {},
       false,
       false,
       4},
      {"suspended: members, composite, workload deleted",
       suspended,
       true,
       true,
       both,
       same,
       false,
       false,
       {},
       {},
       both,
       true,
       true,
       0},
      {"suspended, all gone", suspended, false, false, {}, same, false, false, {}, {}, {}, false, false, 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    ReconcileOptions options;
    options.render = Composite();
    ObservedState o{c.job, {}, {}, std::nullopt, api::Time{}};
    o.workload_exists = c.workload;
    o.composite_pod_group_exists = c.composite;
    for (const auto& m : c.members)
      o.member_pod_groups[m] = PodGroupState{"", "", c.member_spec, api::GangMinCountOf(c.member_spec)};  // as decoded
    Plan plan = Reconcile(o, options);
    EXPECT_EQ(plan.create_workload.has_value(), c.create_workload);
    if (plan.create_workload) {
      EXPECT_TRUE(IsCompositeWorkload(*plan.create_workload));
    }
    EXPECT_EQ(plan.composite.create_composite.has_value(), c.create_composite);
    auto names = [](const std::vector<json>& objects) {
      std::vector<std::string> out;
      for (const auto& obj : objects) out.push_back(obj["metadata"]["name"]);
      return out;
    };
    EXPECT_EQ(names(plan.composite.create_members), c.create_members);
    EXPECT_EQ(names(plan.composite.update_members), c.update_members);
    EXPECT_EQ(plan.composite.delete_members, c.delete_members);
    EXPECT_EQ(plan.delete_workload, c.delete_workload);
    EXPECT_EQ(plan.composite.delete_composite, c.delete_composite);
    EXPECT_FALSE(plan.create_pod_group);  // no flat PodGroup in the hierarchy
    EXPECT_FALSE(plan.update_pod_group);
    EXPECT_FALSE(plan.delete_pod_group);
    EXPECT_EQ(plan.create_pods.size(), c.pods);
  }
}

// A finished job creates nothing of the hierarchy and deletes what is left, with one
// JobTerminated event while a member PodGroup exists.
TEST(CompositeGang, FinishedJobDeletesTheHierarchy) {
  api::TfJob job = MixJob(0, 0, 1, 1, 0);
  job.status.conditions.push_back({.type = "Succeeded", .status = "True"});
  ReconcileOptions options;
  options.render = Composite();
  ObservedState o{job, {}, {}, std::nullopt, api::Time{}};
  o.workload_exists = true;
  o.composite_pod_group_exists = true;
  o.member_pod_groups["mix.leaders"] = PodGroupState{};
  Plan plan = Reconcile(o, options);
  EXPECT_FALSE(plan.composite.create_composite);
  EXPECT_TRUE(plan.composite.create_members.empty());
  EXPECT_EQ(plan.composite.delete_members, std::vector<std::string>{"mix.leaders"});
  EXPECT_TRUE(plan.composite.delete_composite);
  EXPECT_TRUE(plan.delete_workload);
  int terminated = 0;
  for (const auto& e : plan.events) terminated += e.reason == "JobTerminated";
  EXPECT_EQ(terminated, 1);
}

}  // namespace
}  // namespace tfjob::core
