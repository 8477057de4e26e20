#include "kube/watch_decoder.h"

#include <gtest/gtest.h>

namespace tfjob::kube {
namespace {

// A recorded stream: events as the API server sends them, including a bookmark and a 410.
const std::string kStream =
    R"J({"type":"ADDED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"10"}}})J"
    "\n"
    R"J({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"11"},"status":{"phase":"Running","message":"line\nbreak é"}}})J"
    "\n"
    R"J({"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"15"}}})J"
    "\n"
    R"J({"type":"DELETED","object":{"kind":"Pod","metadata":{"name":"a","resourceVersion":"16"}}})J"
    "\n"
    R"J({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 9 (16)","reason":"Expired","code":410}})J"
    "\n";

std::string Summary(const std::vector<WatchEvent>& events) {
  std::string out;
  for (const auto& e : events) {
    out += std::to_string(static_cast<int>(e.type)) + ":" +
           e.object.value("metadata", nlohmann::json::object()).value("resourceVersion", "-") + " ";
  }
  return out;
}

TEST(WatchDecoder, SameEventsForEverySplitIntoTwoOrThreeChunks) {
  WatchDecoder whole;
  const std::string expected = Summary(whole.Feed(kStream));
  ASSERT_EQ(expected, "0:10 1:11 3:15 2:16 4:- ");
  for (size_t i = 0; i <= kStream.size(); ++i) {
    WatchDecoder d;
    auto events = d.Feed(std::string_view(kStream).substr(0, i));
    auto rest = d.Feed(std::string_view(kStream).substr(i));
    events.insert(events.end(), rest.begin(), rest.end());
    ASSERT_EQ(Summary(events), expected) << "split at " << i;
    EXPECT_EQ(d.pending(), 0u);
  }
  for (size_t i = 0; i < kStream.size(); i += 7)
    for (size_t j = i; j <= kStream.size(); j += 11) {
      WatchDecoder d;
      std::vector<WatchEvent> events;
      for (auto part : {std::string_view(kStream).substr(0, i), std::string_view(kStream).substr(i, j - i),
                        std::string_view(kStream).substr(j)}) {
        auto e = d.Feed(part);
        events.insert(events.end(), e.begin(), e.end());
      }
      ASSERT_EQ(Summary(events), expected) << "splits at " << i << ", " << j;
    }
}

TEST(WatchDecoder, ByteByByte) {
  WatchDecoder d;
  std::vector<WatchEvent> events;
  for (char c : kStream) {
    auto e = d.Feed(std::string_view(&c, 1));
    events.insert(events.end(), e.begin(), e.end());
  }
  EXPECT_EQ(Summary(events), "0:10 1:11 3:15 2:16 4:- ");
}

TEST(WatchDecoder, PartialLineWaitsAndGarbageIsReportedNotThrown) {
  WatchDecoder d;
  EXPECT_TRUE(d.Feed(R"({"type":"ADDED","obj)").empty());
  EXPECT_GT(d.pending(), 0u);
  std::vector<Status> errors;
  auto events = d.Feed("ect\":{}}\nnot json\n{\"type\":\"WHAT\",\"object\":{}}\n\n", &errors);
  EXPECT_EQ(events.size(), 1u);
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].code(), StatusCode::kDataLoss);
}

// Issue 17: a line without a newline (100 MB from a hostile server) used to be buffered whole;
// the decoder now stops at its cap, reports it and marks the stream broken.
TEST(WatchDecoder, Issue17AnEndlessLineIsCappedAndBreaksTheStream) {
  WatchDecoder d(1024);
  std::vector<Status> errors;
  std::string chunk(100, ' ');
  for (int i = 0; i < 1000 && !d.broken(); ++i) EXPECT_TRUE(d.Feed(chunk, &errors).empty());
  EXPECT_TRUE(d.broken());
  EXPECT_LE(d.pending(), 1024u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code(), StatusCode::kDataLoss);
  EXPECT_EQ(errors[0].message(), "watch event longer than the limit of 1024 bytes");
  EXPECT_TRUE(d.Feed("\n{\"type\":\"ADDED\",\"object\":{}}\n").empty());  // nothing more from a broken stream
}

TEST(WatchDecoder, Issue17ACompleteLineOverTheCapIsSkipped) {
  WatchDecoder d(64);
  std::vector<Status> errors;
  std::string line = R"({"type":"ADDED","object":{"a":")" + std::string(100, 'x') + "\"}}\n";
  auto events = d.Feed(line + R"({"type":"ADDED","object":{}})"
                              "\n",
                       &errors);
  EXPECT_EQ(events.size(), 1u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_FALSE(d.broken());
}

// The pods' prune (D35): parsing the cut text gives the event that parsing the whole line and
// then removing the members gives.
const WatchPrune kPodPrune{.field = "spec", .keep = {"nodeName"}};

nlohmann::json Removed(nlohmann::json event, const WatchPrune& p) {
  auto o = event.find("object");
  if (o != event.end() && o->is_object()) {
    auto f = o->find(p.field);
    if (f != o->end() && f->is_object()) {
      nlohmann::json kept = nlohmann::json::object();
      for (const auto& k : p.keep)
        if (f->contains(k)) kept[k] = (*f)[k];
      *f = kept;
    }
  }
  return event;
}

TEST(PruneEventText, APodKeepsItsNodeNameAndLosesTheRestOfItsSpec) {
  // TF_CONFIG as the API server writes it: quotes escaped, and a value ending in a backslash.
  const std::string line =
      R"J({"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"w-0","labels":{"a":"{\"x\":[1]}"}},)J"
      R"J("spec":{"containers":[{"name":"tensorflow","env":[{"name":"TF_CONFIG","value":"{\"cluster\":{\"worker\":[\"w-0.ns.svc:2222\"]},\"task\":{\"type\":\"worker\",\"index\":0}}"},)J"
      R"J({"name":"ODD","value":"ends in a backslash \\"}]}],"nodeName" : "kwok-node-3","restartPolicy":"Never"},)J"
      R"J("status":{"phase":"Running","containerStatuses":[{"name":"tensorflow","restartCount":0}]}}})J";
  auto cut = PruneEventText(line, kPodPrune);
  ASSERT_TRUE(cut.has_value());
  EXPECT_LT(cut->size(), line.size() / 2);
  EXPECT_EQ(nlohmann::json::parse(*cut), Removed(nlohmann::json::parse(line), kPodPrune));
  EXPECT_EQ(nlohmann::json::parse(*cut)["object"]["spec"], (nlohmann::json{{"nodeName", "kwok-node-3"}}));

  WatchDecoder d(kMaxWatchEventBytes, kPodPrune);
  auto events = d.Feed(line + "\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].object["spec"], (nlohmann::json{{"nodeName", "kwok-node-3"}}));
  EXPECT_EQ(events[0].object["status"]["phase"], "Running");
}

TEST(PruneEventText, WhatItDoesNotFollowIsLeftAsItIs) {
  for (const std::string& line : {
           std::string(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})"),     // no spec
           std::string(R"({"type":"ADDED","object":{"spec":null}})"),                 // not an object
           std::string(R"({"type":"ADDED","object":"spec"})"),                        // no object
           std::string(R"({"type":"ADDED","obj\u0065ct":{"spec":{"a":1}}})"),         // an escaped key
           std::string(R"({"type":"ADDED","object":{"spec":{"a":[1}}})"),             // brackets cross
           std::string(R"({"type":"ADDED","object":{"spec":{"a":"unterminated}}})"),  // a string never ends
           std::string(R"({"type":"ADDED","object":{"spec":{"a":1})"),                // cut short
           std::string(""),
           std::string("[]"),
           std::string("{"),
           std::string("{}"),
       }) {
    EXPECT_FALSE(PruneEventText(line, kPodPrune).has_value()) << line;
    EXPECT_FALSE(PruneEventText(line, WatchPrune{}).has_value()) << line;
  }
  // A line the scanner follows but the parser refuses stays refused: the junk is outside the cut.
  WatchDecoder d(kMaxWatchEventBytes, kPodPrune);
  std::vector<Status> errors;
  auto events = d.Feed("{\"type\":ADDED,\"object\":{\"spec\":{\"x\":1}}}\n", &errors);
  EXPECT_TRUE(events.empty());
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].code(), StatusCode::kDataLoss);
}

TEST(PruneEventText, EveryCopyOfTheFieldIsCutAndEveryKeptMemberStays) {
  // Duplicate keys: the parser keeps the last, so each copy is cut alike.
  const std::string line =
      R"({"object":{"spec":{"nodeName":"a","x":[{"y":"]"}]},"spec":{"z":{},"nodeName":"b","nodeName":"c"}},"type":"ADDED"})";
  auto cut = PruneEventText(line, kPodPrune);
  ASSERT_TRUE(cut.has_value());
  EXPECT_EQ(*cut, R"({"object":{"spec":{"nodeName":"a"},"spec":{"nodeName":"b","nodeName":"c"}},"type":"ADDED"})");
  EXPECT_EQ(nlohmann::json::parse(*cut), Removed(nlohmann::json::parse(line), kPodPrune));
  EXPECT_EQ(PruneEventText(R"({"object":{"spec":{}}})", kPodPrune),
            std::optional<std::string>(R"({"object":{"spec":{}}})"));
  EXPECT_EQ(PruneEventText(" {\n\"object\" :\t{ \"spec\" : { \"q\" : true } } } ", kPodPrune),
            std::optional<std::string>(" {\n\"object\" :\t{ \"spec\" : {} } } "));
}

TEST(WatchErrorStatus, GoneForExpired) {
  WatchDecoder d;
  auto events = d.Feed(kStream);
  EXPECT_EQ(WatchErrorStatus(events.back().object).code(), StatusCode::kGone);
}

}  // namespace
}  // namespace tfjob::kube
