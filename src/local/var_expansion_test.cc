#include "local/var_expansion.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::local {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

struct Case {
  const char* input;
  const char* expected;
};

TEST(ExpandVars, FollowsTheKubeletRules) {
  const std::vector<std::pair<std::string, std::string>> env = {
      {"A", "alpha"}, {"B", "beta"}, {"EMPTY", ""}, {"TF_CONFIG", "{\"task\":{}}"}};
  const Case cases[] = {
      {"", ""},
      {"plain text", "plain text"},
      {"$(A)", "alpha"},
      {"x$(A)y$(B)z", "xalphaybetaz"},
      {"$(A)$(A)", "alphaalpha"},
      {"$(EMPTY)|", "|"},
      {"$(TF_CONFIG)", "{\"task\":{}}"},
      {"$(UNKNOWN)", "$(UNKNOWN)"},  // unknown: left as is
      {"a $(UNKNOWN) b", "a $(UNKNOWN) b"},
      {"$$(A)", "$(A)"},  // escaped
      {"$$$(A)", "$alpha"},
      {"$$$$(A)", "$$(A)"},
      {"$$", "$"},
      {"a$$b", "a$b"},
      {"$A", "$A"},  // not a reference
      {"$", "$"},    // trailing '$'
      {"a$", "a$"},
      {"$(A", "$(A"},  // no closing ')'
      {"$(", "$("},
      {"$()", "$()"},
      {"$(A$(B))", "$(A$(B))"},  // the name runs to the first ')'
      {"$(A)$(", "alpha$("},
      {"${A}", "${A}"},  // shell syntax is not Kubernetes syntax
  };
  for (const Case& c : cases) EXPECT_EQ(ExpandVars(c.input, LookupIn(env)), c.expected) << "input: " << c.input;
}

TEST(ExpandEnv, SeesOnlyTheVariablesDefinedBefore) {
  auto out = ExpandEnv({{"A", "1"}, {"B", "$(A)-$(C)"}, {"C", "3"}, {"D", "$(C)$(B)"}, {"E", "$$(A)"}});
  EXPECT_THAT(
      out, ElementsAre(Pair("A", "1"), Pair("B", "1-$(C)"), Pair("C", "3"), Pair("D", "31-$(C)"), Pair("E", "$(A)")));
}

TEST(ExpandEnv, ARedefinedNameKeepsItsFirstPlaceAndItsLastValue) {
  auto out = ExpandEnv({{"A", "1"}, {"B", "x"}, {"A", "$(A)2"}});
  EXPECT_THAT(out, ElementsAre(Pair("A", "12"), Pair("B", "x")));
}

}  // namespace
}  // namespace tfjob::local
