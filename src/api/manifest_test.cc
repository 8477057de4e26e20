#include "api/manifest.h"

#include <gtest/gtest.h>

namespace tfjob::api {
namespace {

using nlohmann::json;

TEST(ParseManifest, ResolvesYamlScalarsLikeKubectl) {
  auto docs = ParseManifest(
      "a: 1\nb: '1'\nc: true\nd: \"true\"\ne: null\nf: ~\ng: 1.5\nh: text\ni: 0x1F\nj: 99999999999999999999\n");
  ASSERT_TRUE(docs.ok()) << docs.status().ToString();
  const json& o = (*docs)[0].object;
  EXPECT_EQ(o["a"], 1);
  EXPECT_EQ(o["b"], "1");
  EXPECT_EQ(o["c"], true);
  EXPECT_EQ(o["d"], "true");
  EXPECT_TRUE(o["e"].is_null());
  EXPECT_TRUE(o["f"].is_null());
  EXPECT_EQ(o["g"], 1.5);
  EXPECT_EQ(o["h"], "text");
  EXPECT_EQ(o["i"], 31);
  EXPECT_TRUE(o["j"].is_number_unsigned() || o["j"].is_number_float());
}

TEST(ParseManifest, SplitsDocumentsAndSkipsEmptyOnes) {
  auto docs = ParseManifest("---\na: 1\n---\n---\nb: 2\n");
  ASSERT_TRUE(docs.ok());
  ASSERT_EQ(docs->size(), 2u);
  EXPECT_EQ((*docs)[1].object["b"], 2);
  EXPECT_EQ((*docs)[1].line, 4);  // the line of its "---"
}

TEST(ParseManifest, RefusesDuplicateKeysWithTheirLine) {
  auto docs = ParseManifest("spec:\n  replicas: 1\n  replicas: 2\n");
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(), "line 3, column 3: duplicate key \"replicas\"");
  auto j = ParseManifest(R"({"a": {"b": 1, "b": 2}})");
  ASSERT_FALSE(j.ok());
  EXPECT_EQ(j.status().message(), "duplicate key \"b\"");
}

TEST(ParseManifest, RefusesBinaryAndBrokenText) {
  EXPECT_EQ(ParseManifest(std::string("a: 1\0b", 6)).status().message(), "not a text file (NUL byte at offset 4)");
  EXPECT_EQ(ParseManifest("a: \xff\xfe").status().message(), "not valid UTF-8 (byte offset 3)");
  auto bad = ParseManifest("a: [1, 2\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(bad.status().message().starts_with("invalid YAML: line ")) << bad.status().message();
  auto bad_json = ParseManifest("{\"a\": }");
  ASSERT_FALSE(bad_json.ok());
  EXPECT_TRUE(bad_json.status().message().starts_with("invalid JSON: ")) << bad_json.status().message();
}

TEST(ParseManifest, AliasBombIsRefusedNotExpanded) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'k'; ++c, ++prev) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
  }
  auto docs = ParseManifest(bomb);
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(), "document too large (more than 2,000,000 nodes after expanding aliases)");
}

TEST(ToYaml, RoundTripsTypesThroughParseManifest) {
  json v = json::parse(R"({"labels":{"a":"1","b":"true","c":"null","d":"x: y","e":""},
                           "n":3,"f":2.5,"t":true,"z":null,"list":[],"obj":{},"multi":"l1\nl2",
                           "TF_CONFIG":"{\"cluster\":{}}"})");
  auto back = ParseManifest(ToYaml(v));
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << ToYaml(v);
  EXPECT_EQ((*back)[0].object, v) << ToYaml(v);
}

}  // namespace
}  // namespace tfjob::api
