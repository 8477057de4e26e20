#include "operator/mutation_cache.h"

#include <gtest/gtest.h>

#include <optional>

#include "api/tfjob_json.h"
#include "testing/fake_api_server.h"

namespace tfjob::operator_ {
namespace {

// The job object at `rv` with `uid`.
nlohmann::json JobAt(const std::string& rv, const std::string& uid) {
  nlohmann::json j = testing::WorkerJobObject("j", 1);
  j["metadata"]["resourceVersion"] = rv;
  j["metadata"]["uid"] = uid;
  return j;
}

std::shared_ptr<const api::TfJob> Cached(const std::string& rv, const std::string& uid) {
  auto job = api::DecodeTfJobStrict(JobAt(rv, uid));
  EXPECT_TRUE(job.ok());
  return std::make_shared<const api::TfJob>(*job);
}

// D28 as a table: which of the informer's job and our last write a pass runs on.
TEST(JobMutationCache, NewestOfTheCacheAndOurLastWrite) {
  struct Case {
    const char* name;
    std::optional<std::string> wrote_rv;  // nullopt: nothing written
    std::string wrote_uid;
    std::string cached_rv;
    std::string want_rv;
    bool kept;  // the entry survives the call
  };
  const std::vector<Case> cases = {
      {"nothing written", std::nullopt, "u1", "5", "5", false}, {"our write is newer", "7", "u1", "5", "7", true},
      {"the informer caught up", "7", "u1", "7", "7", false},   {"the informer is past it", "7", "u1", "9", "9", false},
      {"the job was replaced", "7", "u2", "5", "5", false},     {"not a number", "x7", "u1", "5", "5", false},
  };
  for (const auto& c : cases) {
    JobMutationCache cache;
    if (c.wrote_rv) cache.Wrote("default/j", JobAt(*c.wrote_rv, c.wrote_uid));
    EXPECT_EQ(cache.Newest("default/j", Cached(c.cached_rv, "u1"))->metadata.resource_version, c.want_rv) << c.name;
    // A second look with an older cached version shows whether the entry was kept.
    EXPECT_EQ(cache.Newest("default/j", Cached("1", "u1"))->metadata.resource_version, c.kept ? *c.wrote_rv : "1")
        << c.name;
  }
}

TEST(JobMutationCache, ForgetAndAnUndecodableWriteDropTheEntry) {
  JobMutationCache cache;
  cache.Wrote("default/j", JobAt("7", "u1"));
  cache.Forget("default/j");
  EXPECT_EQ(cache.Newest("default/j", Cached("5", "u1"))->metadata.resource_version, "5");
  cache.Wrote("default/j", JobAt("7", "u1"));
  cache.Wrote("default/j", nlohmann::json{{"kind", "TFJob"}, {"spec", 3}});
  EXPECT_EQ(cache.Newest("default/j", Cached("5", "u1"))->metadata.resource_version, "5");
}

}  // namespace
}  // namespace tfjob::operator_
