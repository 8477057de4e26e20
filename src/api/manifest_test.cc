#include "api/manifest.h"

#include <gmock/gmock.h>
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

// Issue 17 item 1: aliases of a big string expand to gigabytes with few nodes; the expansion
// is bounded by bytes, and refused before the copy is made.
TEST(ParseManifest, AliasesOfABigStringAreBoundedByBytes) {
  std::string text = "s: &s \"" + std::string(100'000, 'x') + "\"\nl: [";
  for (int i = 0; i < 1000; ++i) text += i ? ", *s" : "*s";  // 100 MB expanded, 1,001 nodes
  text += "]\n";
  auto docs = ParseManifest(text);
  ASSERT_FALSE(docs.ok());
  EXPECT_EQ(docs.status().message(), "document too large (more than 32 MiB after expanding aliases)");
  // The same aliases of a short string are fine.
  auto small = ParseManifest("s: &s abc\nl: [*s, *s, *s]\n");
  ASSERT_TRUE(small.ok()) << small.status().ToString();
  EXPECT_EQ((*small)[0].object["l"], json::parse(R"(["abc", "abc", "abc"])"));
}

// Found by render_fuzzer: `.inf` in a template rendered as null in JSON and "null" in YAML, so
// the two outputs disagreed. JSON has no infinity, so the reader refuses it, naming the line.
TEST(ParseManifest, InfinityIsRefusedWithItsLine) {
  struct Case {
    const char* text;
    const char* message;
  };
  for (const Case& c : {Case{"a: 1\nb: +.inf\n", "line 2, column 4: \"+.inf\" is not a finite number"},
                        Case{"a: [-.Inf]\n", "line 1, column 5: \"-.Inf\" is not a finite number"},
                        Case{"a: 1e400\n", "line 1, column 4: \"1e400\" is not a finite number"}}) {
    auto docs = ParseManifest(c.text);
    ASSERT_FALSE(docs.ok()) << c.text;
    EXPECT_THAT(docs.status().message(), ::testing::StartsWith(c.message)) << c.text;
  }
  auto quoted = ParseManifest("a: '.inf'\nb: 1e300\nc: .nan\n");  // a string, a finite float, a string
  ASSERT_TRUE(quoted.ok()) << quoted.status().ToString();
  EXPECT_EQ((*quoted)[0].object["a"], ".inf");
  EXPECT_EQ((*quoted)[0].object["c"], ".nan");
}

TEST(ParseManifest, InputOverTheLimitIsRefused) {
  std::string text(kMaxManifestBytes + 1, ' ');
  EXPECT_EQ(ParseManifest(text).status().message(), "input is larger than the limit of 8 MiB");
  EXPECT_EQ(InputTooLargeMessage(), "input is larger than the limit of 8 MiB");
}

TEST(ParseManifest, Utf8IsCheckedStrictly) {  // what json's dump would throw on later
  EXPECT_EQ(ParseManifest("a: \xed\xa0\x80\n").status().message(), "not valid UTF-8 (byte offset 3)");
  EXPECT_EQ(ParseManifest("a: \xc0\xaf\n").status().message(), "not valid UTF-8 (byte offset 3)");
  EXPECT_EQ(ParseManifest("a: \xf4\x90\x80\x80\n").status().message(), "not valid UTF-8 (byte offset 3)");
  EXPECT_TRUE(ParseManifest("a: \xf0\x9f\x98\x80\n").ok());
}

TEST(ParseManifest, KeysAndAliasesInMessagesAreQuoted) {
  EXPECT_EQ(ParseManifest("\"a\\e[2J\": 1\n\"a\\e[2J\": 2\n").status().message(),
            "line 2, column 1: duplicate key \"a\\x1b[2J\"");
  // libyaml takes only alphanumerics, '-' and '_' in alias names; the name is quoted all the same.
  EXPECT_EQ(ParseManifest("a: *b\n").status().message(), "line 1, column 4: unknown alias \"b\"");
}

// Issue 17 item 5: strings YAML 1.1 readers (PyYAML, kubectl's go-yaml) would not read back as
// written are double-quoted with escapes.
TEST(ToYaml, EscapesLineSeparatorsNelAndDel) {
  json v = json::parse(R"({"ls":"a\u2028b","ps":"a\u2029b","nel":"a\u0085b","del":"a\u007fb","c1":"a\u0090b",
                           "bom":"\ufeffx","nbsp":"a\u00a0b","ctl":"a\u0001b","tab":"a\tb","ok":"caf\u00e9",
                           "a\u2028key":"v","list":["x\u2028", "\u007f"]})");
  std::string yaml = ToYaml(v);
  for (const char* raw : {"\u2028", "\u2029", "\u0085", "\x7f", "\u0090", "\ufeff", "\x01"})
    EXPECT_EQ(yaml.find(raw), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("ok: caf\u00e9\n"), std::string::npos) << yaml;  // ordinary text stays plain
  auto back = ParseManifest(yaml);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << yaml;
  EXPECT_EQ((*back)[0].object, v) << yaml;
}

// Found by render_fuzzer: yaml-cpp's writer turned the noncharacters U+FFFE, U+FFFF (and
// U+1FFFF, in any double-quoted string) into U+FFFD, so `render -o yaml` disagreed with -o json.
TEST(ToYaml, NoncharactersRoundTrip) {
  json v = {{"ffff", "a\uffffb"},
            {"fffe", "\ufffe"},
            {"plane1", "x\U0001ffff"},
            {"quoted", "x: \U0001ffff"},
            {"escaped", "\x01\U0001ffff\u00e9"},
            {"\uffffkey", "v"}};
  std::string yaml = ToYaml(v);
  EXPECT_NE(yaml.find(R"(ffff: "a\uffffb")"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find(R"("\x01)"
                      "\U0001ffff\u00e9\"\n"),
            std::string::npos)
      << yaml;  // only the control escaped
  auto back = ParseManifest(yaml);
  ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << yaml;
  EXPECT_EQ((*back)[0].object, v) << yaml;
}

// kubectl reads YAML through a YAML 1.1 reader: strings it would take for booleans, numbers or
// dates are quoted, though YAML 1.2 reads them plain as strings.
TEST(ToYaml, QuotesWhatYaml11ReadersWouldNotTakeAsStrings) {
  for (const char* s :
       {"yes", "No",   "on",   "OFF",  "y",    "1_000", "0b101", "1:30",  "2024-01-02", "-1.5e3_0", ".nan",
        "<<",  "true", "null", "~",    "12",   "0x1f",  "",      " lead", "trail ",     "a: b",     "a #b",
        "- x", "-",    "---",  "...x", "end:", "#c",    "&a",    "*a",    "!t",         "|",        ">",
        "'q",  "\"q",  "%p",   "@a",   "`b",   "{",     "[",     ",",     "?",          "? x"}) {
    std::string yaml = ToYaml(json{{"k", s}});
    EXPECT_EQ(yaml.substr(0, 4), "k: \"") << "[" << s << "] " << yaml;
    auto back = ParseManifest(yaml);
    ASSERT_TRUE(back.ok()) << back.status().ToString() << "\n" << yaml;
    EXPECT_EQ((*back)[0].object["k"], s) << yaml;
  }
  for (const char* s : {"yesterday", "v1.2.3", "tf:2.20", "-x", ":x", "?x", "a,b", "a#b", "a:b", "caf\u00e9", "x y",
                        "kubeflow/tf-dist-mnist-test:latest", "/var/tf_dist_mnist/dist_mnist.py"})
    EXPECT_EQ(ToYaml(json{{"k", s}}), std::string("k: ") + s + "\n") << s;
}

// Hostile input: long strings of the number-like shapes are quoted, not matched character by
// character (a 400 KB "1_1_..." overflowed the stack in std::regex).
TEST(ToYaml, LongNumberLikeStringsAreQuotedWithoutOverflow) {
  std::string digits_underscores;
  for (int i = 0; i < 200'000; ++i) digits_underscores += "1_";
  json v = {{"a", digits_underscores},
            {"b", "0x" + digits_underscores},
            {"c", "2024-01-01T" + std::string(300'000, 'x')},
            {"d", "." + digits_underscores},
            {"short", "1.2.3"}};
  std::string yaml = ToYaml(v);
  EXPECT_EQ(yaml.substr(0, 5), "a: \"1") << yaml.substr(0, 20);
  EXPECT_NE(yaml.find("short: 1.2.3\n"), std::string::npos);
  auto back = ParseManifest(yaml);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)[0].object, v);
}

TEST(ToYaml, BlockLayout) {
  json v = json::parse(R"({"items":[{"a":1,"b":[[1,2],{"c":null}],"e":{}},[],{}],"m":{"p":{"o":true}},"s":[]})");
  EXPECT_EQ(ToYaml(v),
            "items:\n"
            "  - a: 1\n"
            "    b:\n"
            "      - - 1\n"
            "        - 2\n"
            "      - c: ~\n"
            "    e: {}\n"
            "  - []\n"
            "  - {}\n"
            "m:\n"
            "  p:\n"
            "    o: true\n"
            "s: []\n");
  EXPECT_EQ(ToYaml(json::array()), "[]\n");
  EXPECT_EQ(ToYaml(json("x")), "x\n");
}

// YAML caps an implicit key at 1,024 characters: a longer one is written as an explicit key.
TEST(ToYaml, LongKeysAreExplicit) {
  const std::string key(2000, 'k');
  json v = {{key, {{"x", 1}}}, {"short", "s"}, {std::string(1500, 'q'), "v"}};
  std::string yaml = ToYaml(v);
  EXPECT_NE(yaml.find("? " + key + "\n:\n  x: 1\n"), std::string::npos) << yaml.substr(0, 200);
  auto back = ParseManifest(yaml);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ((*back)[0].object, v);
}

// Text shown on a terminal: bidirectional and zero-width controls are escaped, not printed.
TEST(ToYaml, EscapesBidiAndZeroWidthControls) {
  json v = {{"k", "abc\u202edef\u200b\u2066"}};
  EXPECT_EQ(ToYaml(v), "k: \"abc\\u202edef\\u200b\\u2066\"\n");
  auto back = ParseManifest(ToYaml(v));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ((*back)[0].object, v);
}

}  // namespace
}  // namespace tfjob::api
