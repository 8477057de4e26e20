// The Workload API version of --gang-scheduler-name kubernetes (docs/semantics.md D31): the pure
// choice from a discovery document, the tracker against the FakeApiServer, and the controller
// carried through an upgrade from v1alpha2 to v1beta1 under it.
#include "operator/native_gang_api.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "operator/resources.h"
#include "operator/tfjob_controller.h"
#include "testing/fake_api_server.h"
#include "testing/fake_clock.h"

namespace tfjob::operator_ {
namespace {

using core::NativeGangApi;
using nlohmann::json;

json ApiGroup(const std::vector<std::string>& versions) {
  json list = json::array();
  for (const auto& v : versions) list.push_back({{"groupVersion", "scheduling.k8s.io/" + v}, {"version", v}});
  return {{"kind", "APIGroup"}, {"name", "scheduling.k8s.io"}, {"versions", list}};
}

TEST(ChooseNativeGangApi, PrefersV1beta1ThenV1alpha2) {
  struct Case {
    std::string name;
    json group;
    std::optional<NativeGangApi> want;  // nullopt: NotFound
  };
  const std::vector<Case> cases = {
      {"v1.36 with the gates", ApiGroup({"v1", "v1alpha2"}), NativeGangApi::kV1alpha2},
      {"v1.37 with the gate", ApiGroup({"v1", "v1beta1"}), NativeGangApi::kV1beta1},
      {"v1.37 with the alpha too", ApiGroup({"v1", "v1beta1", "v1alpha3"}), NativeGangApi::kV1beta1},
      {"both (order does not matter)", ApiGroup({"v1alpha2", "v1beta1", "v1"}), NativeGangApi::kV1beta1},
      {"priority classes only: the gate is off", ApiGroup({"v1"}), std::nullopt},
      {"v1alpha3 alone is not enough", ApiGroup({"v1", "v1alpha3"}), std::nullopt},
      {"no document (a 404)", json::object(), std::nullopt},
      {"versions not a list", json{{"versions", "v1beta1"}}, std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ChooseNativeGangApi(c.group);
    if (c.want) {
      ASSERT_TRUE(got.ok()) << got.status().message();
      EXPECT_EQ(*got, *c.want);
    } else {
      ASSERT_FALSE(got.ok());
      EXPECT_TRUE(IsNotFound(got.status()));
      EXPECT_THAT(got.status().message(), ::testing::HasSubstr("--runtime-config=scheduling.k8s.io/v1beta1=true"));
    }
  }
  EXPECT_THAT(ChooseNativeGangApi(ApiGroup({"v1", "v1alpha3"})).status().message(),
              ::testing::HasSubstr("serves only v1, v1alpha3"));
}

TEST(NativeGangApi, ResourcesAndTheirVersions) {
  EXPECT_EQ(NativeWorkloads(NativeGangApi::kV1beta1),
            (kube::GroupVersionResource{"scheduling.k8s.io", "v1beta1", "workloads"}));
  EXPECT_EQ(NativePodGroups(NativeGangApi::kV1alpha2),
            (kube::GroupVersionResource{"scheduling.k8s.io", "v1alpha2", "podgroups"}));
  EXPECT_EQ(NativeGangApiOf(NativePodGroups(NativeGangApi::kV1beta1)), NativeGangApi::kV1beta1);
  EXPECT_EQ(NativeGangApiOf({"scheduling.k8s.io", "v1alpha3", "podgroups"}), std::nullopt);
  EXPECT_EQ(NativeGangApiOf(kVolcanoPodGroups), std::nullopt);
  EXPECT_EQ(PodGroupResource(&core::KubernetesGang(), NativeGangApi::kV1beta1),
            NativePodGroups(NativeGangApi::kV1beta1));
  EXPECT_TRUE(VersionNotServed(NotFoundError("x")));
  EXPECT_TRUE(VersionNotServed(Status(StatusCode::kNotAcceptable, "x")));
  EXPECT_FALSE(VersionNotServed(UnavailableError("x")));
  EXPECT_FALSE(VersionNotServed(OkStatus()));
}

struct Server {
  FakeClock clock;
  ::tfjob::testing::FakeApiServer server{clock};
  kube::RestClient client{server, clock, ::tfjob::testing::UnthrottledClientOptions()};
};

// A 404 or 406 of the version in use discovers again; other failures, or a failure of a version
// no longer in use, do not; discoveries prompted by failures are kMinInterval apart.
TEST(NativeGangApiTracker, DiscoversAgainWhenItsVersionIsNotServed) {
  Server s;
  s.server.ServeVersions("scheduling.k8s.io", {"v1", "v1alpha2"});
  NativeGangApiTracker tracker(s.client, NativeGangApi::kV1beta1, Logger());
  auto found = tracker.Discover();
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(tracker.current(), NativeGangApi::kV1alpha2);

  s.server.ServeVersions("scheduling.k8s.io", {"v1", "v1beta1", "v1alpha3"});  // the upgrade
  const auto alpha = NativePodGroups(NativeGangApi::kV1alpha2);
  tracker.CallFailed(alpha, UnavailableError("connection refused"));
  tracker.CallFailed(alpha, OkStatus());
  EXPECT_EQ(tracker.discoveries(), 1) << "only a 404 or 406 says the version is gone";
  tracker.CallFailed(alpha, Status(StatusCode::kNotAcceptable, "406"));
  EXPECT_EQ(tracker.discoveries(), 2);
  EXPECT_EQ(tracker.current(), NativeGangApi::kV1beta1);
  tracker.CallFailed(alpha, NotFoundError("late answer of the old version"));
  EXPECT_EQ(tracker.discoveries(), 2) << "a failure of a version no longer in use changes nothing";

  // v1beta1 gone too (the gate turned off): the version in use stays, and the next prompt waits.
  s.server.ServeVersions("scheduling.k8s.io", {"v1"});
  const auto beta = NativePodGroups(NativeGangApi::kV1beta1);
  tracker.CallFailed(beta, NotFoundError("404"));
  EXPECT_EQ(tracker.discoveries(), 2) << "within kMinInterval of the last prompted discovery";
  s.clock.Advance(NativeGangApiTracker::kMinInterval);
  tracker.CallFailed(beta, NotFoundError("404"));
  EXPECT_EQ(tracker.discoveries(), 3);
  EXPECT_EQ(tracker.current(), NativeGangApi::kV1beta1);
  auto none = tracker.Discover();
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), ::testing::HasSubstr("serves only v1"));

  s.server.ServeVersions("scheduling.k8s.io", {});  // a server without the group: its discovery is 404
  none = tracker.Discover();
  ASSERT_FALSE(none.ok());
  EXPECT_THAT(none.status().message(), ::testing::HasSubstr("serves neither"));
}

using testing::WaitUntil;

struct NativeCluster : Server {
  controller::Registry registry;
  controller::EventRecorder events{client, clock, Logger(), &registry, {.spam_burst = 1000000}};
  OperatorOptions options;
  std::unique_ptr<TfJobController> controller;
  controller::InformerFactory informers{client, Logger()};  // after the controller: stopped before it goes

  NativeCluster() {
    server.ServeVersions("scheduling.k8s.io", {"v1", "v1alpha2"});
    options.workers = 2;
    options.write_concurrency = 4;
    options.status_count_interval = {};
    options.pod_update_batch_period = {};  // D35: likewise, a batched pass would wait forever
    options.gang_scheduler_name = "kubernetes";
    options.native_gang_api = NativeGangApi::kV1alpha2;  // what the start-up discovery found
    controller = std::make_unique<TfJobController>(client, clock, registry, events, informers, options, Logger());
    informers.Start();
    controller->Start();
    EXPECT_TRUE(WaitUntil([&] { return controller->HasSynced(); }));
  }
  ~NativeCluster() {
    controller->Stop();
    events.Stop();
  }
  std::optional<json> Workload(NativeGangApi api) { return server.Get(NativeWorkloads(api), "default", "gang"); }
  std::optional<json> PodGroup(NativeGangApi api) { return server.Get(NativePodGroups(api), "default", "gang"); }
  int Requests(const std::string& verb, const std::string& resource, const std::string& version) {
    int n = 0;
    for (const auto& r : server.requests())
      if (r.verb == verb && r.resource == resource && r.version == version && r.code < 300) ++n;
    return n;
  }
};

// Issue 27 item 1: the cluster is upgraded from v1.36 (v1alpha2) to v1.37 (v1beta1) under a
// running operator. The informers' watches end (the API server restarted) and answer 404 when
// resumed: the operator discovers v1beta1 and lists and watches it. The job's Workload and
// PodGroup did not survive the upgrade (v1.37 cannot read v1alpha2's objects): the operator
// builds the gang again in v1beta1, without a restart.
TEST(NativeGangApiTracker, TheControllerFollowsAnUpgradeUnderIt) {
  NativeCluster k;
  k.controller->StartWorkers();
  ASSERT_TRUE(k.server.Create(kTfJobs, "default", ::tfjob::testing::WorkerJobObject("gang", 2)).ok());
  ASSERT_TRUE(WaitUntil([&] { return k.PodGroup(NativeGangApi::kV1alpha2).has_value(); }));
  EXPECT_EQ((*k.Workload(NativeGangApi::kV1alpha2))["apiVersion"], "scheduling.k8s.io/v1alpha2");
  EXPECT_TRUE((*k.PodGroup(NativeGangApi::kV1alpha2))["spec"].contains("podGroupTemplateRef"));
  ASSERT_TRUE(WaitUntil([&] { return k.server.List(kube::kPods, "default").size() == 2; }));

  k.server.ServeVersions("scheduling.k8s.io", {"v1", "v1beta1"});
  k.server.CloseWatches();
  ASSERT_TRUE(WaitUntil([&] {
    return k.Requests("watch", "podgroups", "v1beta1") > 0 && k.Requests("watch", "workloads", "v1beta1") > 0;
  })) << "the informers did not move to v1beta1";
  EXPECT_GT(k.Requests("list", "podgroups", "v1beta1"), 0);
  ASSERT_TRUE(k.server.Delete(NativePodGroups(NativeGangApi::kV1beta1), "default", "gang").ok());
  ASSERT_TRUE(k.server.Delete(NativeWorkloads(NativeGangApi::kV1beta1), "default", "gang").ok());

  // (Two passes may do it: the PodGroup's deletion can be seen before the Workload's.)
  ASSERT_TRUE(WaitUntil([&] {
    auto pg = k.PodGroup(NativeGangApi::kV1beta1);
    auto wl = k.Workload(NativeGangApi::kV1beta1);
    return pg && (*pg)["apiVersion"] == "scheduling.k8s.io/v1beta1" && wl;
  })) << "the gang was not built again in v1beta1";
  auto w = k.Workload(NativeGangApi::kV1beta1);
  ASSERT_TRUE(w);
  EXPECT_EQ((*w)["apiVersion"], "scheduling.k8s.io/v1beta1");
  auto pg = k.PodGroup(NativeGangApi::kV1beta1);
  EXPECT_EQ((*pg)["spec"]["workloadRef"], json::parse(R"({"workloadName":"gang","templateName":"tfjob"})"));
  EXPECT_EQ((*pg)["spec"]["disruptionMode"], json::parse(R"({"all":{}})"));
  EXPECT_EQ(k.Requests("create", "podgroups", "v1beta1"), 1);
  EXPECT_EQ(k.server.List(kube::kPods, "default").size(), 2u) << "the pods are left alone";
}

}  // namespace
}  // namespace tfjob::operator_
