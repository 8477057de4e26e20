#include "operator/crd_check.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/crd.h"
#include "api/manifest.h"

namespace tfjob::operator_ {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

json OurCrd() {
  auto docs = api::ParseManifest(std::string(api::CrdYaml()));
  EXPECT_TRUE(docs.ok());
  return (*docs)[0].object;
}

json& ReplicaStatusSchema(json& crd) {
  return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]["properties"]
            ["replicaStatuses"]["additionalProperties"];
}

// D29: our CRD keeps both fields; upstream's (no restarts, no disruptions) prunes them; a schema
// that preserves unknown fields at any level keeps them.
TEST(CheckCrdStatusSchema, OursUpstreamsAndPreserved) {
  json ours = OurCrd();
  EXPECT_THAT(CheckCrdStatusSchema(ours).pruned, IsEmpty());
  json upstream = ours;
  ReplicaStatusSchema(upstream)["properties"].erase("restarts");
  ReplicaStatusSchema(upstream)["properties"].erase("disruptions");
  EXPECT_THAT(CheckCrdStatusSchema(upstream).pruned, ElementsAre("restarts", "disruptions"));
  json half = ours;
  ReplicaStatusSchema(half)["properties"].erase("disruptions");
  EXPECT_THAT(CheckCrdStatusSchema(half).pruned, ElementsAre("disruptions"));
  json preserved = upstream;
  ReplicaStatusSchema(preserved)["x-kubernetes-preserve-unknown-fields"] = true;
  EXPECT_TRUE(CheckCrdStatusSchema(preserved).ok());
  json status_preserved = upstream;
  status_preserved["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] =
      json{{"type", "object"}, {"x-kubernetes-preserve-unknown-fields", true}};
  EXPECT_TRUE(CheckCrdStatusSchema(status_preserved).ok());
  json no_status = ours;
  no_status["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"].erase("status");
  EXPECT_FALSE(CheckCrdStatusSchema(no_status).ok());
  EXPECT_THAT(CheckCrdStatusSchema(json::object()).pruned, ElementsAre("restarts", "disruptions"));
  EXPECT_FALSE(CheckCrdStatusSchema(json("not a crd")).ok());
}

}  // namespace
}  // namespace tfjob::operator_
