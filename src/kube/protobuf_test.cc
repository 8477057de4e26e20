#include "kube/protobuf.h"

#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "api/pod_json.h"
#include "api/pod_proto.h"
#include "kube/api_error.h"
#include "testing/proto_writer.h"

namespace tfjob::kube {
namespace {

// Recorded from a v1.36.3 API server (scripts/test-cluster, 2026-12-05): one watch of a pod from
// its create to its deletion, as `Accept: application/vnd.kubernetes.protobuf;stream=watch` and
// as JSON from the same resourceVersion, so the same six events (the pod has two owner
// references, a 3,000-byte env value, and a status written through /status with a terminated
// and a waiting container, an init container, a DisruptionTarget and a False condition); and
// the answer to a GET of a pod that does not exist, in protobuf.
std::string ReadWire(const std::string& name) {
  std::ifstream in(std::string(TFJOB_SOURCE_DIR) + "/tests/wire/" + name, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Frame(std::string_view message) {
  std::string out(4, '\0');
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(message.size() >> (8 * (3 - i)));
  return out + std::string(message);
}
constexpr auto* Varint = &tfjob::testing::ProtoVarint;
constexpr auto* Bytes = &tfjob::testing::ProtoBytes;
std::string Envelope(std::string_view kind, std::string_view raw) {
  return std::string(kProtobufMagic) + Bytes(1, Bytes(1, "v1") + Bytes(2, kind)) + Bytes(2, raw);
}
std::string Event(std::string_view type, std::string_view kind, std::string_view raw) {
  return Frame(Bytes(1, type) + Bytes(2, Bytes(1, Envelope(kind, raw))));
}

TEST(ProtobufWatchDecoder, TheServersPodsDecodeAsTheirJson) {
  const std::string stream = ReadWire("pod_watch.protobuf");
  ASSERT_GT(stream.size(), 10000u);
  std::vector<api::Pod> from_json;
  std::vector<WatchEventType> json_types;
  std::istringstream lines(ReadWire("pod_watch.json"));
  for (std::string line; std::getline(lines, line);) {
    auto e = WatchDecoder().Feed(line + "\n");
    ASSERT_EQ(e.size(), 1u);
    json_types.push_back(e[0].type);
    from_json.push_back(api::DecodePod(e[0].object).value());
  }
  ASSERT_EQ(from_json.size(), 6u);

  std::vector<Status> errors;
  auto events = ProtobufWatchDecoder(api::PodProtoToJson).Feed(stream, &errors);
  EXPECT_TRUE(errors.empty());
  ASSERT_EQ(events.size(), from_json.size());
  for (size_t i = 0; i < events.size(); ++i) {
    EXPECT_EQ(events[i].type, json_types[i]) << i;
    auto pod = api::DecodePod(events[i].object);
    ASSERT_TRUE(pod.ok()) << pod.status().message();
    EXPECT_EQ(*pod, from_json[i]) << "event " << i << ": " << events[i].object.dump();
  }
  // What the events hold, so that the comparison above compares something.
  const api::Pod& last = from_json.back();
  EXPECT_EQ(last.meta.name, "p2");
  EXPECT_EQ(last.meta.replica_index, 7);
  EXPECT_FALSE(last.meta.controller_uid.empty());
  EXPECT_TRUE(last.meta.deletion_timestamp.has_value());
  EXPECT_EQ(last.node_name, "kwok-node-1");
  EXPECT_EQ(last.phase, api::PodPhase::kFailed);
  ASSERT_EQ(last.container_statuses.size(), 2u);
  EXPECT_EQ(last.container_statuses[0].exit_code, 137);
  EXPECT_EQ(last.container_statuses[1].waiting_reason, "CrashLoopBackOff");
  EXPECT_EQ(last.disruption_reason, "TerminationByKubelet");
  ASSERT_EQ(last.conditions.size(), 1u);
  EXPECT_TRUE(last.conditions[0].last_transition_time.has_value());
  // Only what DecodePod reads is kept: not the 3,000-byte env value.
  EXPECT_LT(events.back().object.dump().size(), 1500u);
}

TEST(ProtobufWatchDecoder, SameEventsForAnySplit) {
  const std::string stream = ReadWire("pod_watch.protobuf");
  auto summary = [](const std::vector<WatchEvent>& events) {
    std::string out;
    for (const auto& e : events) out += e.object["metadata"].value("resourceVersion", "-") + " ";
    return out;
  };
  const std::string expected = summary(ProtobufWatchDecoder(api::PodProtoToJson).Feed(stream));
  ASSERT_EQ(expected, "285 286 287 288 289 290 ");
  for (size_t i = 0; i <= stream.size(); i += 37) {
    ProtobufWatchDecoder d(api::PodProtoToJson);
    auto events = d.Feed(std::string_view(stream).substr(0, i));
    auto rest = d.Feed(std::string_view(stream).substr(i));
    events.insert(events.end(), rest.begin(), rest.end());
    ASSERT_EQ(summary(events), expected) << "split at " << i;
    EXPECT_EQ(d.pending(), 0u);
  }
  ProtobufWatchDecoder bytewise(api::PodProtoToJson);
  std::vector<WatchEvent> events;
  for (char c : stream) {
    auto e = bytewise.Feed(std::string_view(&c, 1));
    events.insert(events.end(), e.begin(), e.end());
  }
  EXPECT_EQ(summary(events), expected);
}

TEST(ProtobufWatchDecoder, BookmarksErrorsAndBadFrames) {
  std::string pod_rv = Bytes(1, Bytes(6, "15"));  // a Pod with metadata.resourceVersion alone
  std::string expired =
      Bytes(2, "Failure") + Bytes(3, "too old resource version") + Bytes(4, "Expired") + Varint(6 << 3) + Varint(410);
  std::string stream = Event("BOOKMARK", "Pod", pod_rv) + Event("SOMETHING", "Pod", pod_rv) +
                       Frame(
                           "\x0a\x05"
                           "AD") +
                       Event("ADDED", "Pod", "\x0a\x10") + Event("ERROR", "Status", expired);
  std::vector<Status> errors;
  auto events = ProtobufWatchDecoder(api::PodProtoToJson).Feed(stream, &errors);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[0].type, WatchEventType::kBookmark);
  EXPECT_EQ(events[0].object["metadata"]["resourceVersion"], "15");
  EXPECT_EQ(events[1].type, WatchEventType::kError);
  EXPECT_EQ(WatchErrorStatus(events[1].object).code(), StatusCode::kGone);
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_NE(errors[0].message().find("unknown event type \"SOMETHING\""), std::string::npos) << errors[0].message();
  EXPECT_NE(errors[1].message().find("undecodable watch event (protobuf)"), std::string::npos) << errors[1].message();
  EXPECT_NE(errors[2].message().find("undecodable Pod"), std::string::npos) << errors[2].message();
  for (const Status& e : errors) EXPECT_EQ(e.code(), StatusCode::kDataLoss);
}

TEST(ProtobufWatchDecoder, AFrameOverTheCapBreaksTheStreamWithoutBufferingIt) {
  ProtobufWatchDecoder d(api::PodProtoToJson, 1024);
  std::vector<Status> errors;
  EXPECT_TRUE(d.Feed(std::string("\0\0\x04\x01", 4) + std::string(100, 'x'), &errors).empty());
  EXPECT_TRUE(d.broken());
  EXPECT_EQ(d.pending(), 0u);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_NE(errors[0].message().find("longer than the limit of 1024 bytes"), std::string::npos);
  EXPECT_TRUE(d.Feed(Event("ADDED", "Pod", "")).empty());  // nothing more is read
}

TEST(ProtobufListToJson, ItemsAndListMeta) {
  std::string list = Bytes(1, Bytes(2, "257") + Bytes(3, "next-page")) + Bytes(2, Bytes(1, Bytes(1, "a"))) +
                     Bytes(2, Bytes(1, Bytes(1, "b")));
  auto page = ProtobufListToJson(Envelope("PodList", list), api::PodProtoToJson);
  ASSERT_TRUE(page.ok()) << page.status().message();
  EXPECT_EQ((*page)["metadata"]["resourceVersion"], "257");
  EXPECT_EQ((*page)["metadata"]["continue"], "next-page");
  ASSERT_EQ((*page)["items"].size(), 2u);
  EXPECT_EQ((*page)["items"][1]["metadata"]["name"], "b");

  // The server's answer for an empty namespace, as recorded (magic, PodList, resourceVersion 257).
  const std::string empty(
      "k8s\0\x0a\x0d\x0a\x02v1\x12\x07PodList\x12\x0b\x0a\x09\x0a\x00\x12\x03"
      "257\x1a\x00\x1a\x00\x22\x00",
      36);
  page = ProtobufListToJson(empty, api::PodProtoToJson);
  ASSERT_TRUE(page.ok()) << page.status().message();
  EXPECT_EQ((*page)["metadata"]["resourceVersion"], "257");
  EXPECT_TRUE((*page)["items"].empty());

  auto bad = ProtobufListToJson(Envelope("PodList", Bytes(2, "\x0a\x10")), api::PodProtoToJson);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(bad.status().message().find("PodList"), std::string::npos) << bad.status().message();
  EXPECT_FALSE(ProtobufListToJson("{\"items\":[]}", api::PodProtoToJson).ok());
}

TEST(StatusFromHttp, AProtobufStatusKeepsItsReasonAndMessage) {
  Status s = StatusFromHttp(404, ReadWire("status_not_found.protobuf"));
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_EQ(s.message(), "pods \"nope\" not found");
  s = StatusFromHttp(410, Envelope("Status", Bytes(4, "Expired") + Bytes(3, "too old")));
  EXPECT_EQ(s.code(), StatusCode::kGone);
  EXPECT_EQ(s.message(), "too old");
  s = StatusFromHttp(500, std::string(kProtobufMagic) + "\xff");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "undecodable protobuf answer");
}

}  // namespace
}  // namespace tfjob::kube
