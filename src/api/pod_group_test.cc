#include "api/pod_group.h"

#include <gtest/gtest.h>

namespace tfjob::api {
namespace {

using nlohmann::json;

TEST(DecodePodGroup, Volcano) {
  const json object = json::parse(R"({"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
      "metadata": {"name": "mnist", "namespace": "ns", "deletionTimestamp": "2026-12-03T09:00:00Z"},
      "spec": {"minMember": 3, "queue": "q1", "minResources": {"cpu": "3"}}, "status": {"phase": "Inqueue"}})");
  StatusOr<PodGroup> pg = DecodePodGroup(object);
  ASSERT_TRUE(pg.ok()) << pg.status().message();
  EXPECT_EQ(pg->metadata.name, "mnist");
  EXPECT_TRUE(pg->metadata.deletion_timestamp);
  EXPECT_EQ(pg->phase, "Inqueue");
  EXPECT_EQ(pg->queue, "q1");
  EXPECT_EQ(pg->spec, object["spec"]);
  EXPECT_EQ(pg->gang_min_count, std::nullopt);
}

TEST(DecodePodGroup, NativeGangAndBasicPolicies) {
  StatusOr<PodGroup> gang = DecodePodGroup(
      json::parse(R"({"metadata": {"name": "mnist"}, "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}})"));
  ASSERT_TRUE(gang.ok()) << gang.status().message();
  EXPECT_EQ(gang->gang_min_count, 4);
  EXPECT_EQ(gang->phase, "");
  StatusOr<PodGroup> basic =
      DecodePodGroup(json::parse(R"({"metadata": {"name": "mnist"}, "spec": {"schedulingPolicy": {"basic": {}}}})"));
  ASSERT_TRUE(basic.ok()) << basic.status().message();
  EXPECT_EQ(basic->gang_min_count, std::nullopt);
  EXPECT_EQ(GangMinCountOf(json::parse(R"({"schedulingPolicy": {"gang": {"minCount": 3}}})")), 3);
  EXPECT_EQ(GangMinCountOf(json::object()), std::nullopt);
}

TEST(DecodePodGroup, MalformedNamesTheField) {
  struct Case {
    const char* object;
    const char* want;
  } cases[] = {
      {R"({"metadata": {"name": "a", "namespace": "ns"}, "spec": {"schedulingPolicy": {"gang": {"minCount": "3"}}}})",
       "undecodable PodGroup ns/a: spec.schedulingPolicy.gang.minCount: Invalid value: \"3\": must be an integer"},
      {R"({"metadata": {"name": "a"}, "spec": {"queue": 1}})",
       "undecodable PodGroup /a: spec.queue: Invalid value: 1: must be a string"},
      {R"({"metadata": {"name": "a"}, "status": {"phase": ["Running"]}})",
       "undecodable PodGroup /a: status.phase: Invalid value: [\"Running\"]: must be a string"},
      {R"({"metadata": {"name": "a"}, "spec": []})",
       "undecodable PodGroup /a: spec: Invalid value: []: must be an object"},
      {R"("x")", "undecodable PodGroup: not a JSON object"},
  };
  for (const Case& c : cases) {
    StatusOr<PodGroup> pg = DecodePodGroup(json::parse(c.object));
    ASSERT_FALSE(pg.ok()) << c.object;
    EXPECT_EQ(pg.status().code(), StatusCode::kDataLoss) << c.object;
    EXPECT_EQ(pg.status().message(), c.want) << c.object;
  }
}

TEST(DecodeSchedulingWorkload, CompositeWhenItHasCompositeTemplates) {
  struct Case {
    const char* object;
    bool composite;
  } cases[] = {
      {R"({"metadata": {"name": "a"}, "spec": {"compositePodGroupTemplates": [{"name": "tfjob"}]}})", true},
      {R"({"metadata": {"name": "a"}, "spec": {"compositePodGroupTemplates": []}})", false},
      {R"({"metadata": {"name": "a"}, "spec": {"podGroupTemplates": [{"name": "tfjob"}]}})", false},
      {R"({"spec": null})", false},
  };
  for (const Case& c : cases) {
    StatusOr<SchedulingWorkload> w = DecodeSchedulingWorkload(json::parse(c.object));
    ASSERT_TRUE(w.ok()) << w.status().message();
    EXPECT_EQ(w->composite, c.composite) << c.object;
  }
  StatusOr<SchedulingWorkload> bad = DecodeSchedulingWorkload(
      json::parse(R"({"metadata": {"name": "a"}, "spec": {"compositePodGroupTemplates": 1}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_EQ(bad.status().message(),
            "undecodable Workload /a: spec.compositePodGroupTemplates: Invalid value: 1: must be a list");
}

}  // namespace
}  // namespace tfjob::api
