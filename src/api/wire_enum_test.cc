// WireEnum and the enum spellings (api/wire_enum.h), and the one replica-spec walk
// (ReplicaSpecsByType in api/tfjob.h).
#include "api/wire_enum.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/event_type.h"
#include "api/object_key.h"
#include "api/tfjob.h"

namespace tfjob::api {
namespace {

using ::testing::ElementsAre;

TEST(WireEnum, KnownUnknownAndEmptyText) {
  struct Case {
    const char* text;
    std::optional<RestartPolicy> value;
  };
  const Case cases[] = {{"Always", RestartPolicy::kAlways},
                        {"ExitCode", RestartPolicy::kExitCode},
                        {"never", std::nullopt},  // exact spelling only, as upstream's validation
                        {"", std::nullopt}};
  for (const auto& c : cases) {
    WireEnum<RestartPolicy> w = c.text;
    EXPECT_EQ(w.value(), c.value) << c.text;
    EXPECT_EQ(w.text(), c.text) << c.text;
    EXPECT_EQ(w.empty(), std::string(c.text).empty()) << c.text;
  }
  WireEnum<CleanPodPolicy> from_value = CleanPodPolicy::kRunning;
  EXPECT_EQ(from_value.text(), "Running");
  EXPECT_TRUE(from_value == CleanPodPolicy::kRunning);
  EXPECT_TRUE(from_value == "Running");
  EXPECT_FALSE(WireEnum<CleanPodPolicy>("none") == CleanPodPolicy::kNone);
  EXPECT_EQ(nlohmann::json(WireEnum<SuccessPolicy>("Majority")), "Majority");  // codecs keep the text
}

TEST(WireEnum, SpellingsInMessageOrder) {
  EXPECT_THAT(EnumNames<RestartPolicy>(), ElementsAre("Always", "ExitCode", "Never", "OnFailure"));
  EXPECT_THAT(EnumNames<CleanPodPolicy>(), ElementsAre("All", "None", "Running"));
  EXPECT_THAT(EnumNames<SuccessPolicy>(), ElementsAre("", "AllWorkers"));
  EXPECT_EQ(EnumName(EventType::kWarning), "Warning");
  EXPECT_EQ(ParseEnum<EventType>("Normal"), EventType::kNormal);
  EXPECT_EQ(ParseEnum<SuccessPolicy>(""), SuccessPolicy::kDefault);
}

TEST(ReplicaSpecsByType, ReadsKeysAsDefaultingDoes) {
  auto spec_of = [](int32_t replicas) {
    ReplicaSpec s;
    s.replicas = replicas;
    return std::optional<ReplicaSpec>(s);
  };
  struct Case {
    const char* id;
    std::map<std::string, std::optional<ReplicaSpec>> specs;
    std::vector<std::pair<ReplicaType, int32_t>> want;
    int64_t total;
  };
  const Case cases[] = {
      {"canonical keys, fixed order",
       {{"Worker", spec_of(2)}, {"PS", spec_of(1)}},
       {{ReplicaType::kPS, 1}, {ReplicaType::kWorker, 2}},
       3},
      {"other case counts", {{"worker", spec_of(3)}}, {{ReplicaType::kWorker, 3}}, 3},
      {"two spellings: the one defaulting keeps",
       {{"Worker", spec_of(2)}, {"worker", spec_of(5)}},
       {{ReplicaType::kWorker, 5}},
       5},
      {"unknown keys and null specs are left out", {{"Foo", spec_of(4)}, {"PS", std::nullopt}}, {}, 0},
  };
  for (const auto& c : cases) {
    TfJobSpec spec;
    spec.replica_specs = c.specs;
    std::vector<std::pair<ReplicaType, int32_t>> got;
    for (const auto& [type, s] : ReplicaSpecsByType(spec)) got.emplace_back(type, ReplicasOrDefault(*s));
    EXPECT_EQ(got, c.want) << c.id;
    EXPECT_EQ(TotalReplicas(spec), c.total) << c.id;
  }
}

TEST(ObjectKey, NamespaceSlashName) {
  TfJob job;
  job.metadata.ns = "team";
  job.metadata.name = "mnist";
  EXPECT_EQ(JobKey(job), "team/mnist");
  EXPECT_EQ((ObjectKey{"", "x"}.String()), "/x");
}

}  // namespace
}  // namespace tfjob::api
