// Which version of an API group to speak (docs/semantics.md D34): the pure choice from a
// discovery document or a CRD, the tracker against the FakeApiServer, and an informer and a
// write that follow it when the version in use stops being served.
#include "controller/api_versions.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/informer.h"
#include "testing/fake_api_server.h"
#include "testing/fake_clock.h"

namespace tfjob::controller {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::tfjob::testing::WaitUntil;

json ApiGroup(const std::string& group, const std::vector<std::string>& versions) {
  json list = json::array();
  for (const auto& v : versions) list.push_back({{"groupVersion", group + "/" + v}, {"version", v}});
  return {{"kind", "APIGroup"}, {"name", group}, {"versions", list}};
}

const VersionedApi kWidgets{"example.io", {{"v2", "turn on v2"}, {"v1", ""}}, "widgets"};
const VersionedApi kOneVersion{"scheduling.volcano.sh", {{"v1beta1", ""}}, "gang scheduling by volcano"};

TEST(ServedVersions, FromTheApiGroupDocument) {
  EXPECT_THAT(ServedVersions(ApiGroup("example.io", {"v2", "v1"})), ElementsAre("v2", "v1"));
  EXPECT_THAT(ServedVersions(json::object()), ElementsAre());
  EXPECT_THAT(ServedVersions(json{{"versions", "v1"}}), ElementsAre());
  EXPECT_THAT(ServedVersions(json{{"versions", {1, json{{"version", 2}}, json{{"version", "v3"}}}}}),
              ElementsAre("v3"));
  EXPECT_THAT(ServedVersions(json::array()), ElementsAre());
}

TEST(ServedVersions, FromTheCrd) {
  const json crd = json::parse(R"({"spec": {"versions": [
      {"name": "v1alpha1", "served": false, "storage": false},
      {"name": "v1beta1", "served": true, "storage": true},
      {"name": "v1beta2"},
      {"name": "v1", "served": "true"}]}})");
  EXPECT_THAT(ServedVersionsOfCrd(crd), ElementsAre("v1beta1"));
  EXPECT_THAT(ServedVersionsOfCrd(json::object()), ElementsAre());
  EXPECT_THAT(ServedVersionsOfCrd(json{{"spec", {{"versions", json::object()}}}}), ElementsAre());
}

TEST(ChooseVersion, ThePreferredVersionServedElseOneErrorNamingBoth) {
  struct Case {
    std::string name;
    VersionedApi api;
    std::vector<std::string> served;
    std::string want;  // the version, or a part of the error
    bool ok = true;
  };
  const std::vector<Case> cases = {
      {"the preferred", kWidgets, {"v1", "v2"}, "v2"},
      {"the older when the preferred is not served", kWidgets, {"v1", "v3"}, "v1"},
      {"neither of two",
       kWidgets,
       {"v3", "v0"},
       "widgets needs example.io/v2 (turn on v2) or example.io/v1; the API server serves only v0, v3",
       false},
      {"nothing of two", kWidgets, {}, "the API server serves neither", false},
      {"the one version", kOneVersion, {"v1beta1"}, "v1beta1"},
      {"another version of the group",
       kOneVersion,
       {"v1alpha1"},
       "gang scheduling by volcano needs scheduling.volcano.sh/v1beta1; the API server serves only v1alpha1",
       false},
      {"no version of the group", kOneVersion, {}, "the API server serves no version of scheduling.volcano.sh", false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    auto got = ChooseVersion(c.api, c.served);
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

TEST(VersionNotServed, NotFoundAndNotAcceptableOnly) {
  EXPECT_TRUE(VersionNotServed(NotFoundError("x")));
  EXPECT_TRUE(VersionNotServed(Status(StatusCode::kNotAcceptable, "x")));
  EXPECT_FALSE(VersionNotServed(UnavailableError("x")));
  EXPECT_FALSE(VersionNotServed(ConflictError("x")));
  EXPECT_FALSE(VersionNotServed(OkStatus()));
}

struct Server {
  FakeClock clock;
  ::tfjob::testing::FakeApiServer server{clock};
  kube::RestClient client{server, clock, ::tfjob::testing::UnthrottledClientOptions()};
};

// A 404 or 406 of the version in use discovers again; other failures, other groups, or a failure
// of a version no longer in use do not; discoveries prompted by failures are kMinInterval apart.
TEST(RediscoveryThrottle, OnePromptPerMinInterval) {
  const Clock::SteadyTime t0{std::chrono::seconds(100)};
  const auto ms = [](int n) { return std::chrono::milliseconds(n); };
  struct Case {
    std::chrono::milliseconds at;
    bool allowed;
  };
  const Case cases[] = {{ms(0), true},     {ms(0), false},    {ms(999), false},
                        {ms(1000), true},  {ms(1500), false}, {ms(2000), true}};
  RediscoveryThrottle throttle;
  for (const Case& c : cases) EXPECT_EQ(throttle.Allow(t0 + c.at), c.allowed) << "at " << c.at.count() << " ms";
}

TEST(ApiVersionTracker, DiscoversAgainWhenItsVersionIsNotServed) {
  Server s;
  s.server.ServeVersions("example.io", {"v1"});
  ApiVersionTracker tracker(s.client, kWidgets, "v2", Logger());
  EXPECT_EQ(tracker.Resource("widgets"), (kube::GroupVersionResource{"example.io", "v2", "widgets"}));
  auto found = tracker.Discover();
  ASSERT_TRUE(found.ok()) << found.status().message();
  EXPECT_EQ(tracker.current(), "v1");
  EXPECT_FALSE(tracker.last_error());

  s.server.ServeVersions("example.io", {"v2", "v1"});  // the upgrade
  const kube::GroupVersionResource v1{"example.io", "v1", "widgets"};
  tracker.CallFailed(v1, UnavailableError("connection refused"));
  tracker.CallFailed({"other.io", "v1", "widgets"}, NotFoundError("404"));
  EXPECT_EQ(tracker.discoveries(), 1) << "only a 404 or 406 of this group says the version is gone";
  tracker.CallFailed(v1, Status(StatusCode::kNotAcceptable, "406"));
  EXPECT_EQ(tracker.discoveries(), 2);
  EXPECT_EQ(tracker.current(), "v2");
  tracker.CallFailed(v1, NotFoundError("late answer of the old version"));
  EXPECT_EQ(tracker.discoveries(), 2) << "a failure of a version no longer in use changes nothing";

  // Nothing served any more (the CRD deleted): the version in use stays, the error is kept, and
  // the next prompt waits kMinInterval.
  s.server.ServeVersions("example.io", {});
  const kube::GroupVersionResource v2{"example.io", "v2", "widgets"};
  tracker.CallFailed(v2, NotFoundError("404"));
  EXPECT_EQ(tracker.discoveries(), 2) << "within kMinInterval of the last prompted discovery";
  s.clock.Advance(ApiVersionTracker::kMinInterval);
  tracker.CallFailed(v2, NotFoundError("404"));
  EXPECT_EQ(tracker.discoveries(), 3);
  EXPECT_EQ(tracker.current(), "v2");
  ASSERT_TRUE(tracker.last_error());
  EXPECT_THAT(tracker.last_error()->message(), HasSubstr("the API server serves neither"));

  s.server.ServeVersions("example.io", {"v1"});
  ASSERT_TRUE(tracker.Discover().ok());
  EXPECT_EQ(tracker.current(), "v1");
  EXPECT_FALSE(tracker.last_error()) << "a successful discovery clears the error";
}

TEST(ApiVersionTracker, TellsWhatEachSuccessfulDiscoverySaw) {
  Server s;
  s.server.ServeVersions("example.io", {"v1", "v3"});
  ApiVersionTracker tracker(s.client, kWidgets, "v2", Logger());
  std::vector<std::string> seen;
  tracker.set_on_discovered([&](const json& group, const std::string& version) {
    seen.push_back(version + ":" + std::to_string(ServedVersions(group).size()));
  });
  ASSERT_TRUE(tracker.Discover().ok());
  s.server.ServeVersions("example.io", {"v3"});
  EXPECT_FALSE(tracker.Discover().ok());
  EXPECT_THAT(seen, ElementsAre("v1:2")) << "a discovery that found nothing to speak is not told";
}

TEST(ApiVersionTracker, OtherDiscoveryErrorsKeepTheVersion) {
  Server s;
  s.server.ServeVersions("example.io", {"v1"});
  ApiVersionTracker tracker(s.client, kWidgets, "v2", Logger());
  s.server.AddFault(
      {.verb = "",
       .when = [](const ::tfjob::testing::FakeRequest& r) { return r.group == "example.io" && r.version.empty(); },
       .code = 503});
  auto found = tracker.Discover();
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kUnavailable) << found.status().message();
  EXPECT_FALSE(tracker.last_error()) << "not a finding that nothing is served";
  EXPECT_EQ(tracker.current(), "v2");
}

// Issue 27 item 2: the version in use is served, then answers 404 (turned off), then another
// version is served. The informer lists and watches the new version without a restart, and a
// write that asks the tracker goes to it.
TEST(ApiVersionTracker, AnInformerAndAWriteFollowTheVersionServed) {
  Server s;
  s.server.ServeVersions("example.io", {"v2"});
  ApiVersionTracker tracker(s.client, kWidgets, "v2", Logger());
  const json widget = {
      {"apiVersion", "example.io/v2"}, {"kind", "Widget"}, {"metadata", {{"name", "a"}, {"namespace", "ns"}}}};
  ASSERT_TRUE(s.server.Create(tracker.Resource("widgets"), "ns", widget).ok());
  Informer<json> informer(
      s.client, TrackedListWatch(tracker, "widgets", "ns"), [](const json& j) -> StatusOr<json> { return j; },
      NamespacedKey, Logger());
  informer.Start();
  ASSERT_TRUE(WaitUntil([&] { return informer.HasSynced(); }));
  EXPECT_TRUE(informer.store().Get("ns/a"));

  s.server.ServeVersions("example.io", {});  // turned off: the watch is resumed and answers 404
  s.server.CloseWatches();
  ASSERT_TRUE(WaitUntil([&] { return tracker.discoveries() > 0 && tracker.last_error().has_value(); }));
  EXPECT_EQ(tracker.current(), "v2");
  auto failed = s.client.Create(tracker.Resource("widgets"), "ns", widget);
  EXPECT_TRUE(IsNotFound(failed.status()));

  s.server.ServeVersions("example.io", {"v1"});  // another version served
  ASSERT_TRUE(WaitUntil([&] { return tracker.current() == "v1"; })) << "the failing watch discovers again";
  auto requests = [&](const std::string& verb) {
    int n = 0;
    for (const auto& r : s.server.requests())
      if (r.verb == verb && r.resource == "widgets" && r.version == "v1" && r.code < 300) ++n;
    return n;
  };
  ASSERT_TRUE(WaitUntil([&] { return requests("list") > 0 && requests("watch") > 0; }))
      << "the informer did not move to v1";
  json b = widget;
  b["apiVersion"] = "example.io/v1";
  b["metadata"]["name"] = "b";
  auto written = s.client.Create(tracker.Resource("widgets"), "ns", b);
  ASSERT_TRUE(written.ok()) << written.status().message();
  EXPECT_EQ(requests("create"), 1);
  EXPECT_TRUE(WaitUntil([&] { return informer.store().Get("ns/b") != nullptr; })) << "the new version's watch";
  informer.Stop();
}

}  // namespace
}  // namespace tfjob::controller
