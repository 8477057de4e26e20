#include "api/pod_proto.h"

#include <gtest/gtest.h>

#include "api/pod_json.h"
#include "api/proto_wire.h"
#include "testing/proto_writer.h"

namespace tfjob::api {
namespace {

// Shorter names for the writers (testing/proto_writer.h), as the messages below nest deeply.
constexpr auto* Varint = &tfjob::testing::ProtoVarint;
constexpr auto* Bytes = &tfjob::testing::ProtoBytes;
constexpr auto* Int = &tfjob::testing::ProtoInt;
std::string Entry(std::string_view k, std::string_view v) {
  return Bytes(1, k) + Bytes(2, v);
}

TEST(ProtoReader, ReadsEveryWireType) {
  std::string m = Int(1, 300) + Bytes(2, "abc") + Varint(3 << 3 | 1) + std::string("\x01\0\0\0\0\0\0\0", 8) +
                  Varint(4 << 3 | 5) + std::string("\x02\0\0\0", 4) + Int(5, -1);
  ProtoReader r(m);
  ProtoReader::Field f;
  ASSERT_TRUE(r.Next(&f));
  EXPECT_EQ(f.number, 1u);
  EXPECT_EQ(f.Int(), 300);
  ASSERT_TRUE(r.Next(&f));
  EXPECT_EQ(f.String(), "abc");
  ASSERT_TRUE(r.Next(&f));
  EXPECT_EQ(f.type, ProtoReader::WireType::kFixed64);
  EXPECT_EQ(f.value, 1u);
  ASSERT_TRUE(r.Next(&f));
  EXPECT_EQ(f.type, ProtoReader::WireType::kFixed32);
  EXPECT_EQ(f.value, 2u);
  ASSERT_TRUE(r.Next(&f));
  EXPECT_EQ(static_cast<int32_t>(f.Int()), -1);  // an int32's -1 is ten bytes on the wire
  EXPECT_FALSE(r.Next(&f));
  EXPECT_TRUE(r.ok());
}

TEST(ProtoReader, MalformedInputEndsTheMessage) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"length past the end", Varint(2 << 3 | 2) + Varint(10) + "abc"},
      {"truncated varint", std::string("\x08\x80", 2)},
      {"varint over 64 bits", "\x08" + std::string(10, '\xff') + "\x01"},
      {"field number 0", Int(0, 1)},
      {"group wire type", Varint(1 << 3 | 3)},
      {"truncated fixed64", Varint(1 << 3 | 1) + "abc"},
      {"length over 2^63", Varint(2 << 3 | 2) + Varint(~0ULL)},
  };
  for (const auto& [name, m] : cases) {
    ProtoReader r(m);
    ProtoReader::Field f;
    while (r.Next(&f)) {
    }
    EXPECT_FALSE(r.ok()) << name;
    EXPECT_FALSE(r.Next(&f)) << name;
  }
}

TEST(ProtoTimeText, SecondsAsTheApiWritesThem) {
  EXPECT_EQ(ProtoTimeText(Int(1, 1796477400) + Int(2, 5)), "2026-12-05T13:30:00Z");
  EXPECT_EQ(ProtoTimeText(""), "1970-01-01T00:00:00Z");
  EXPECT_EQ(ProtoTimeText(Int(1, int64_t{1} << 62)), std::nullopt);  // out of a time_point's range
  EXPECT_EQ(ProtoTimeText("\x08"), std::nullopt);
}

// A pod with every field DecodePod reads, built in protobuf, decodes as the same pod in JSON.
TEST(PodProtoToJson, DecodesAsTheSamePodInJson) {
  std::string meta = Bytes(1, "w-3") + Bytes(3, "ns") + Bytes(5, "uid-1") + Bytes(6, "42") +
                     Bytes(9, Int(1, 1796477400)) + Bytes(11, Entry("training.kubeflow.org/job-name", "j")) +
                     Bytes(11, Entry("training.kubeflow.org/replica-type", "worker")) +
                     Bytes(11, Entry("training.kubeflow.org/replica-index", "3")) + Bytes(12, Entry("a", "b")) +
                     Bytes(13, Bytes(4, "other") + Int(6, 0)) + Bytes(13, Bytes(4, "owner") + Int(6, 1));
  std::string spec = Bytes(2, Bytes(1, "tensorflow") + Bytes(2, std::string(5000, 'x'))) + Bytes(10, "node-1");
  std::string status =
      Bytes(1, "Failed") + Bytes(3, "low on memory") + Bytes(4, "Evicted") +
      Bytes(2, Bytes(1, "Ready") + Bytes(2, "False") + Bytes(4, Int(1, 1796477401)) + Bytes(5, "PodFailed") +
                   Bytes(6, "m")) +
      Bytes(2, Bytes(1, "DisruptionTarget") + Bytes(2, "True") + Bytes(5, "TerminationByKubelet") + Bytes(6, "bye")) +
      Bytes(8, Bytes(1, "tensorflow") + Int(5, 4) +
                   Bytes(2, Bytes(3, Int(1, 137) + Bytes(3, "OOMKilled") + Bytes(4, "out of memory")))) +
      Bytes(8, Bytes(1, "side") + Int(5, 2) + Bytes(2, Bytes(1, Bytes(1, "CrashLoopBackOff") + Bytes(2, "10s")))) +
      Bytes(10, Bytes(1, "init") + Bytes(2, Bytes(3, Int(1, -1))));
  auto j = PodProtoToJson(Bytes(1, meta) + Bytes(2, spec) + Bytes(3, status));
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_FALSE(j->at("spec").contains("containers"));  // only nodeName of the spec
  auto from_proto = DecodePod(*j);
  ASSERT_TRUE(from_proto.ok());

  auto from_json = DecodePod(nlohmann::json::parse(R"({
    "metadata": {"name": "w-3", "namespace": "ns", "uid": "uid-1", "resourceVersion": "42",
      "deletionTimestamp": "2026-12-05T13:30:00Z", "annotations": {"a": "b"},
      "labels": {"training.kubeflow.org/job-name": "j", "training.kubeflow.org/replica-type": "worker",
                 "training.kubeflow.org/replica-index": "3"},
      "ownerReferences": [{"uid": "other", "controller": false}, {"uid": "owner", "controller": true}]},
    "spec": {"nodeName": "node-1"},
    "status": {"phase": "Failed", "message": "low on memory", "reason": "Evicted",
      "conditions": [{"type": "Ready", "status": "False", "lastTransitionTime": "2026-12-05T13:30:01Z",
                      "reason": "PodFailed", "message": "m"},
                     {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet", "message": "bye"}],
      "containerStatuses": [
        {"name": "tensorflow", "restartCount": 4,
         "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "message": "out of memory"}}},
        {"name": "side", "restartCount": 2, "state": {"waiting": {"reason": "CrashLoopBackOff", "message": "10s"}}}],
      "initContainerStatuses": [{"name": "init", "state": {"terminated": {"exitCode": -1}}}]}})"));
  ASSERT_TRUE(from_json.ok());
  EXPECT_EQ(*from_proto, *from_json);
  EXPECT_EQ(from_proto->meta.controller_uid, "owner");
  EXPECT_EQ(from_proto->container_statuses.at(0).exit_code, 137);
  EXPECT_EQ(from_proto->init_container_statuses.at(0).exit_code, -1);
  EXPECT_EQ(from_proto->disruption_reason, "TerminationByKubelet");
}

TEST(PodProtoToJson, FieldsOfTheWrongWireTypeReadAsAbsent) {
  // name as a varint, labels as a varint, restartCount as bytes: skipped, as the JSON decoders
  // skip a field of the wrong type.
  std::string meta = Int(1, 7) + Bytes(3, "ns") + Int(11, 1);
  std::string status = Bytes(8, Bytes(1, "c") + Bytes(5, "x"));
  auto j = PodProtoToJson(Bytes(1, meta) + Bytes(3, status) + Int(2, 1));
  ASSERT_TRUE(j.ok()) << j.status().message();
  auto pod = DecodePod(*j);
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->meta.name, "");
  EXPECT_EQ(pod->meta.ns, "ns");
  ASSERT_EQ(pod->container_statuses.size(), 1u);
  EXPECT_EQ(pod->container_statuses[0].restart_count, 0);
}

TEST(PodProtoToJson, MalformedNestedMessagesAreDataLoss) {
  for (const std::string& m : {Bytes(1, Bytes(11,
                                              "\x0a\x05"
                                              "ab")),                           // a label entry cut short
                               Bytes(3, Bytes(8, Bytes(2, Bytes(3, "\x08")))),  // an exit code cut short
                               Bytes(1, Bytes(9, Int(1, int64_t{1} << 62))),    // a time out of range
                               std::string("\x0a\x10", 2)}) {
    auto j = PodProtoToJson(m);
    ASSERT_FALSE(j.ok());
    EXPECT_EQ(j.status().code(), StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace tfjob::api
