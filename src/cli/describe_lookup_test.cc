// What `tfjob describe` reads beside the job (cli/describe_lookup.h) against the FakeApiServer:
// the PodGroup of each gang scheduler, kube-scheduler's own in the version served and with D33's
// hierarchy, and Kueue's Workload in the version served; then how describe shows a native group.
#include "cli/describe_lookup.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/tfjob_resources.h"
#include "operator/native_gang_api.h"
#include "testing/fake_api_server.h"
#include "testing/fake_clock.h"
#include "tfjob/core/pod_group.h"

namespace tfjob::cli {
namespace {

using core::NativeGangApi;
using nlohmann::json;
using ::testing::HasSubstr;

struct Server {
  FakeClock clock;
  ::tfjob::testing::FakeApiServer server{clock};
  kube::RestClient client{server, clock, ::tfjob::testing::UnthrottledClientOptions()};
};

JobView Job() {
  JobView job;
  job.name = "dist";
  job.ns = "default";
  job.uid = "job-uid";
  return job;
}

json Object(const std::string& name, json status = json::object()) {
  return {{"metadata", {{"name", name}, {"namespace", "default"}}}, {"status", std::move(status)}};
}

// Creates `object`, then writes its status (a create ignores the status, as the API server's).
bool Put(Server& s, const kube::GroupVersionResource& gvr, const json& object) {
  json created = object;
  created.erase("status");
  if (!s.server.Create(gvr, "default", created).ok()) return false;
  const std::string name = object["metadata"]["name"];
  return s.server.MergePatch(gvr, "default", name, {{"status", object["status"]}}, "status").ok();
}

json Scheduled(const std::string& status, const std::string& reason, const std::string& message) {
  return {
      {"conditions", {{{"type", "PodGroupScheduled"}, {"status", status}, {"reason", reason}, {"message", message}}}}};
}

TEST(FindPodGroup, NoneWhenNoSchedulerServesOne) {
  Server s;
  s.server.ServeVersions("scheduling.k8s.io", {"v1"});  // PriorityClasses only
  EXPECT_FALSE(FindPodGroup(s.client, Job()).has_value());
}

TEST(FindPodGroup, VolcanosAsBefore) {
  Server s;
  ASSERT_TRUE(Put(s, kube::kVolcanoPodGroups, Object("dist", {{"phase", "Pending"}})));
  auto pg = FindPodGroup(s.client, Job());
  ASSERT_TRUE(pg.has_value());
  EXPECT_EQ(pg->kind, "podgroups.scheduling.volcano.sh");
  EXPECT_EQ(pg->phase, "Pending");
  EXPECT_FALSE(pg->native);
}

// kube-scheduler's own PodGroup in whichever version the server serves (D31).
TEST(FindPodGroup, KubeSchedulersOwnInTheVersionServed) {
  for (NativeGangApi served : {NativeGangApi::kV1alpha2, NativeGangApi::kV1beta1}) {
    const std::string version(core::NativeGangApiVersion(served));
    Server s;
    s.server.ServeVersions("scheduling.k8s.io", {"v1", version});
    ASSERT_TRUE(Put(s, operator_::NativePodGroups(served),
                    Object("dist", Scheduled("False", "Unschedulable", "0/1 nodes are available"))));
    auto pg = FindPodGroup(s.client, Job());
    ASSERT_TRUE(pg.has_value()) << version;
    EXPECT_EQ(pg->kind, "podgroups.scheduling.k8s.io") << version;
    EXPECT_TRUE(pg->native);
    EXPECT_EQ(pg->name, "dist");
    ASSERT_EQ(pg->conditions.size(), 1u);
    EXPECT_EQ(pg->conditions[0].reason, "Unschedulable");
    EXPECT_TRUE(pg->members.empty());
  }
}

// D33: the CompositePodGroup named like the job, with its two member PodGroups.
TEST(FindPodGroup, TheCompositePodGroupWithItsMembers) {
  Server s;
  s.server.ServeVersions("scheduling.k8s.io", {"v1", "v1beta1", "v1alpha3"});
  s.server.ServeResources("scheduling.k8s.io", "v1alpha3", {"compositepodgroups"});
  ASSERT_TRUE(Put(s, operator_::NativeCompositePodGroups(), Object("dist")));
  const auto pod_groups = operator_::NativePodGroups(NativeGangApi::kV1beta1);
  ASSERT_TRUE(Put(s, pod_groups, Object("dist.leaders", Scheduled("True", "Scheduled", ""))));
  ASSERT_TRUE(Put(s, pod_groups, Object("dist.workers", Scheduled("False", "Unschedulable", "no room"))));
  auto pg = FindPodGroup(s.client, Job());
  ASSERT_TRUE(pg.has_value());
  EXPECT_EQ(pg->kind, "compositepodgroups.scheduling.k8s.io");
  EXPECT_TRUE(pg->native);
  ASSERT_EQ(pg->members.size(), 2u);
  EXPECT_EQ(pg->members[0].name, "dist.leaders");
  EXPECT_EQ(pg->members[1].name, "dist.workers");

  DescribeInput in;
  in.why.job = Job();
  in.why.pod_group = pg;
  in.now = api::Time{};
  const std::string text = FormatDescribe(in);
  EXPECT_THAT(text, HasSubstr("PodGroup dist (compositepodgroups.scheduling.k8s.io):\n  (no conditions)\n"
                              "  member dist.leaders:\n    PodGroupScheduled=True"));
  EXPECT_THAT(text, HasSubstr("its PodGroup dist.workers (podgroups.scheduling.k8s.io) is not scheduled: "
                              "Unschedulable: no room; kube-scheduler has not placed the whole gang"));
}

TEST(FindWorkload, TheJobsWorkloadInTheVersionServed) {
  Server s;
  s.server.ServeVersions("kueue.x-k8s.io", {"v1beta1"});
  json other = Object("other");
  other["metadata"]["ownerReferences"] = {{{"kind", "TFJob"}, {"name", "x"}, {"uid", "other-uid"}}};
  json mine = Object("tfjob-dist-1234", {{"conditions", {{{"type", "QuotaReserved"}, {"status", "False"}}}}});
  mine["metadata"]["ownerReferences"] = {{{"kind", "TFJob"}, {"name", "dist"}, {"uid", "job-uid"}}};
  ASSERT_TRUE(Put(s, kube::kKueueWorkloadsV1beta1, other));
  ASSERT_TRUE(Put(s, kube::kKueueWorkloadsV1beta1, mine));
  auto w = FindWorkload(s.client, Job());
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->name, "tfjob-dist-1234");
  ASSERT_EQ(w->conditions.size(), 1u);
  EXPECT_EQ(w->conditions[0].type, "QuotaReserved");

  s.server.ServeVersions("kueue.x-k8s.io", {"v1alpha1"});  // no version describe reads
  EXPECT_FALSE(FindWorkload(s.client, Job()).has_value());
}

}  // namespace
}  // namespace tfjob::cli
