// The versioned APIs of Volcano, scheduler-plugins and Kueue (docs/semantics.md D34): the start-up
// check against a CRD, and a controller whose PodGroup API disappears under it and comes back.
#include "operator/versioned_apis.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>

#include "api/json_fields.h"
#include "operator/resources.h"
#include "operator/tfjob_controller.h"
#include "testing/fake_api_server.h"
#include "testing/fake_clock.h"
#include "tfjob/core/kueue_workload.h"

namespace tfjob::operator_ {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using ::tfjob::testing::WaitUntil;

struct Server {
  FakeClock clock;
  ::tfjob::testing::FakeApiServer server{clock};
  kube::RestClient client{server, clock, ::tfjob::testing::UnthrottledClientOptions()};

  void InstallCrd(const std::string& name, const std::vector<std::pair<std::string, bool>>& versions) {
    json list = json::array();
    for (const auto& [v, served] : versions) list.push_back({{"name", v}, {"served", served}, {"storage", false}});
    json crd = {{"apiVersion", "apiextensions.k8s.io/v1"},
                {"kind", "CustomResourceDefinition"},
                {"metadata", {{"name", name}}},
                {"spec", {{"versions", list}}}};
    ASSERT_TRUE(server.Create(kube::kCrds, "", crd).ok());
  }
};

TEST(VersionedApis, TheVersionsSpoken) {
  EXPECT_EQ(PodGroupVersionedApi(core::VolcanoGang()).group, "scheduling.volcano.sh");
  EXPECT_EQ(PodGroupVersionedApi(core::VolcanoGang()).versions.front().version, kVolcanoPodGroups.version);
  EXPECT_EQ(PodGroupVersionedApi(core::SchedulerPluginsGang()).group, "scheduling.x-k8s.io");
  EXPECT_EQ(PodGroupVersionedApi(core::SchedulerPluginsGang()).versions.front().version, "v1alpha1");
  ASSERT_EQ(KueueVersionedApi().versions.size(), 1u) << "v1beta1's Workload has other fields (docs/kueue.md)";
  EXPECT_EQ(KueueVersionedApi().versions.front().version, "v1beta2");
}

// Issue 27 item 1: the PodGroup CRD must exist and serve the version spoken; each failure is one
// error naming what is missing.
TEST(CheckServedByCrd, TheCrdMustServeTheVersionSpoken) {
  struct Case {
    std::string name;
    std::optional<std::vector<std::pair<std::string, bool>>> crd;  // nullopt: not installed
    std::string want;                                              // the version, or a part of the error
    bool ok = true;
  };
  const std::vector<Case> cases = {
      {"served", {{{"v1beta1", true}}}, "v1beta1"},
      {"served among others", {{{"v1alpha1", true}, {"v1beta1", true}}}, "v1beta1"},
      {"missing", std::nullopt,
       "gang scheduling by volcano needs the PodGroup CRD; crd might be missing, please install crd", false},
      {"another version only",
       {{{"v1alpha1", true}}},
       "gang scheduling by volcano needs scheduling.volcano.sh/v1beta1; the API server serves only v1alpha1",
       false},
      {"the version there but not served",
       {{{"v1beta1", false}, {"v1alpha1", true}}},
       "the API server serves only v1alpha1",
       false},
      {"no version served", {{{"v1beta1", false}}}, "the API server serves no version of scheduling.volcano.sh", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Server s;
    if (c.crd) s.InstallCrd("podgroups.scheduling.volcano.sh", *c.crd);
    auto got = CheckServedByCrd(s.client, PodGroupVersionedApi(core::VolcanoGang()), "podgroups", "the PodGroup CRD");
    if (c.ok) {
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(*got, c.want);
    } else {
      ASSERT_FALSE(got.ok());
      EXPECT_TRUE(IsNotFound(got.status()));
      EXPECT_THAT(got.status().message(), HasSubstr(c.want));
    }
  }
}

TEST(CheckServedByCrd, OtherErrorsAreTheRequests) {
  Server s;
  s.server.AddFault({.verb = "get", .resource = "customresourcedefinitions", .code = 403});
  auto got = CheckServedByCrd(s.client, KueueVersionedApi(), "workloads", "Kueue's Workload CRD");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kForbidden);
  EXPECT_THAT(got.status().message(), HasSubstr("workloads.kueue.x-k8s.io"));
}

struct PluginsCluster : Server {
  controller::Registry registry;
  controller::EventRecorder events{client, clock, Logger(), &registry, {.spam_burst = 1000000}};
  OperatorOptions options;
  std::unique_ptr<TfJobController> controller;
  controller::InformerFactory informers{client, Logger()};  // after the controller: stopped before it goes

  PluginsCluster() {
    server.ServeVersions("scheduling.x-k8s.io", {"v1alpha1"});
    options.workers = 2;
    options.write_concurrency = 4;
    options.status_count_interval = {};
    options.pod_update_batch_period = {};  // D35: likewise, a batched pass would wait forever
    options.gang_scheduler_name = "scheduler-plugins-scheduler";
    controller = std::make_unique<TfJobController>(client, clock, registry, events, informers, options, Logger());
    informers.Start();
    controller->Start();
    EXPECT_TRUE(WaitUntil([&] { return controller->HasSynced(); }));
    controller->StartWorkers();
  }
  ~PluginsCluster() {
    controller->Stop();
    events.Stop();
  }
  bool HasPodGroup(const std::string& job) { return server.Get(kPluginsPodGroups, "default", job).has_value(); }
  // The messages of the job's events of `reason`.
  std::vector<std::string> Events(const std::string& job, const std::string& reason) {
    std::vector<std::string> out;
    for (const json& e : server.List(kube::kEvents, "default"))
      if (api::StringField(e, "reason") == reason &&
          api::StringField(api::ObjectField(e, "involvedObject"), "name") == job)
        out.push_back(api::StringField(e, "message"));
    return out;
  }
};

// Issue 27 item 2: the PodGroup CRD is deleted under a running operator (its group is no longer
// served, the PodGroups go with it), then installed again. A job created meanwhile shows it
// (FailedCreatePodGroup), the informer's failures discover again, and once the group is back the
// informer's watch resumes (its DELETED event of the first job's PodGroup makes that job create
// it again) and the second job's PodGroup is created, without a restart.
TEST(VersionedApis, APodGroupApiThatDisappearsAndComesBack) {
  PluginsCluster k;
  ASSERT_TRUE(k.server.Create(kTfJobs, "default", ::tfjob::testing::WorkerJobObject("before", 1)).ok());
  ASSERT_TRUE(WaitUntil([&] { return k.HasPodGroup("before"); }));

  k.server.ServeVersions("scheduling.x-k8s.io", {});  // the CRD deleted
  ASSERT_TRUE(k.server.Delete(kPluginsPodGroups, "default", "before").ok());
  k.server.CloseWatches();
  ASSERT_TRUE(k.server.Create(kTfJobs, "default", ::tfjob::testing::WorkerJobObject("during", 1)).ok());
  // The first event may come before the discovery that the informer's failure started has ended;
  // the pass's retries (on the fake clock) say why once it has.
  ASSERT_TRUE(WaitUntil([&] {
    k.clock.Advance(std::chrono::milliseconds(100));
    return !k.Events("during", "FailedCreatePodGroup").empty();
  })) << "the job does not show that its PodGroup cannot be created";
  ASSERT_TRUE(WaitUntil([&] {
    k.clock.Advance(std::chrono::milliseconds(100));
    return ::testing::Value(k.Events("during", "FailedCreatePodGroup"),
                            ::testing::Contains(HasSubstr("(gang scheduling by scheduler-plugins needs "
                                                          "scheduling.x-k8s.io/v1alpha1; the API server serves no "
                                                          "version of scheduling.x-k8s.io)")));
  })) << ::testing::PrintToString(k.Events("during", "FailedCreatePodGroup"));
  EXPECT_FALSE(k.HasPodGroup("during"));

  k.server.ServeVersions("scheduling.x-k8s.io", {"v1alpha1"});  // installed again
  // The failed pass backs off on the fake clock, which nothing else moves once the group is back.
  ASSERT_TRUE(WaitUntil([&] {
    k.clock.Advance(std::chrono::milliseconds(100));
    return k.HasPodGroup("during") && k.HasPodGroup("before");
  })) << "the PodGroups were not created again";
  auto pg = k.server.Get(kPluginsPodGroups, "default", "during");
  ASSERT_TRUE(pg);
  EXPECT_EQ((*pg)["apiVersion"], "scheduling.x-k8s.io/v1alpha1");
}

// Issue 27 item 2, Kueue: --kueue-mode operator speaks kueue.x-k8s.io/v1beta2 only. When the
// server stops serving it (Kueue downgraded or removed), a queued job shows that its Workload
// cannot be created (FailedCreateWorkload); once it is served again the Workload is created,
// in v1beta2, without a restart.
TEST(VersionedApis, KueuesApiThatDisappearsAndComesBack) {
  Server s;
  s.server.ServeVersions("kueue.x-k8s.io", {"v1beta2", "v1beta1"});
  controller::Registry registry;
  controller::EventRecorder events{s.client, s.clock, Logger(), &registry, {.spam_burst = 1000000}};
  OperatorOptions options;
  options.workers = 2;
  options.status_count_interval = {};
  options.pod_update_batch_period = {};  // D35: likewise, a batched pass would wait forever
  options.kueue_mode = "operator";
  options.kueue.topology_aware_scheduling = false;
  controller::InformerFactory informers{s.client, Logger()};
  auto controller =
      std::make_unique<TfJobController>(s.client, s.clock, registry, events, informers, options, Logger());
  informers.Start();
  controller->Start();
  ASSERT_TRUE(WaitUntil([&] { return controller->HasSynced(); }));
  controller->StartWorkers();
  auto create_job = [&](const std::string& name) {
    json job = ::tfjob::testing::WorkerJobObject(name, 1);
    job["metadata"]["labels"] = {{"kueue.x-k8s.io/queue-name", "user-queue"}};
    auto created = s.server.Create(kTfJobs, "default", job);
    EXPECT_TRUE(created.ok());
    return core::KueueWorkloadName("TFJob", "kubeflow.org", name, (*created)["metadata"]["uid"].get<std::string>());
  };
  auto events_of = [&](const std::string& job, const std::string& reason) {
    std::vector<std::string> out;
    for (const json& e : s.server.List(kube::kEvents, "default"))
      if (api::StringField(e, "reason") == reason &&
          api::StringField(api::ObjectField(e, "involvedObject"), "name") == job)
        out.push_back(api::StringField(e, "message"));
    return out;
  };
  const std::string first = create_job("first");
  ASSERT_TRUE(WaitUntil([&] { return s.server.Get(kKueueWorkloads, "default", first).has_value(); }));

  s.server.ServeVersions("kueue.x-k8s.io", {"v1beta1"});  // v1beta2 no longer served
  s.server.CloseWatches();
  const std::string second = create_job("second");
  ASSERT_TRUE(WaitUntil([&] {
    s.clock.Advance(std::chrono::milliseconds(100));  // as above: a later retry says why
    return ::testing::Value(
        events_of("second", "FailedCreateWorkload"),
        ::testing::Contains(HasSubstr("(--kueue-mode operator needs kueue.x-k8s.io/v1beta2 (Kueue v0.15 or later; its "
                                      "v1beta1 Workload has other fields); the API server serves only v1beta1)")));
  })) << "the job does not show why its Workload cannot be created: "
      << ::testing::PrintToString(events_of("second", "FailedCreateWorkload"));

  s.server.ServeVersions("kueue.x-k8s.io", {"v1beta2", "v1beta1"});
  ASSERT_TRUE(WaitUntil([&] {
    s.clock.Advance(std::chrono::milliseconds(100));  // the failed pass backs off on the fake clock
    return s.server.Get(kKueueWorkloads, "default", second).has_value();
  })) << "the Workload was not created once v1beta2 was served again";
  EXPECT_EQ((*s.server.Get(kKueueWorkloads, "default", second))["apiVersion"], "kueue.x-k8s.io/v1beta2");
  controller->Stop();
  informers.Stop();
  events.Stop();
}

}  // namespace
}  // namespace tfjob::operator_
