#include "controller/reflector.h"

#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/pod_proto.h"
#include "testing/fake_clock.h"
#include "testing/fake_transport.h"

namespace tfjob::controller {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

struct NullSink final : ReflectorSink {
  int replaced = 0, applied = 0;
  // ReflectorSink:
  void Replace(std::vector<json>) override { ++replaced; }
  void Apply(kube::WatchEventType, json) override { ++applied; }
};

std::vector<std::string> LinesWith(const std::string& log, const std::string& what) {
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = log.find('\n', at)) != std::string::npos; at = nl + 1)
    if (log.find(what, at) < nl) lines.push_back(log.substr(at, nl - at));
  return lines;
}

// Issue 17 item 17: the retry log said "backoff=800ms, 1600ms" while its lines came ~7 s apart,
// because each list spends time in the REST client's own retries. It now logs the failed
// call's elapsed time and the delay it really waits next.
TEST(Reflector, Issue17RetryLogSaysTheElapsedTimeAndTheRealDelay) {
  kube::FakeTransport t;
  FakeClock clock;
  std::stop_source stop;
  int requests = 0;
  t.set_handler([&](const kube::HttpRequest&) -> StatusOr<kube::HttpResponse> {
    clock.Advance(std::chrono::seconds(2));
    if (++requests == 7) stop.request_stop();  // during the third list
    return kube::HttpResponse{503, "{}"};
  });
  kube::RestClientOptions o;
  o.max_retries = 2;
  o.initial_backoff = std::chrono::seconds(1);  // each list: 2 + 1 + 2 + 2 + 2 = 9 s
  kube::RestClient client(t, clock, o);
  NullSink sink;
  Reflector reflector(client, {kube::kPods, "ns"}, sink, Logger());
  ::testing::internal::CaptureStderr();
  reflector.Run(stop.get_token());
  auto lines = LinesWith(::testing::internal::GetCapturedStderr(), "list failed; retrying");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("elapsed=9s"));
  EXPECT_THAT(lines[0], HasSubstr("retry_in=800ms"));
  EXPECT_THAT(lines[1], HasSubstr("retry_in=1.6s"));
  EXPECT_THAT(lines[0], ::testing::Not(HasSubstr("backoff=")));
}

// Issue 17 (hostile watch stream): one line of 100 MB without a newline used to be buffered
// whole. The decoder's cap now ends that watch with an error; the next one resumes from the
// last version.
TEST(Reflector, Issue17AnOversizedEventEndsTheWatchWhichResumes) {
  kube::FakeTransport t;
  FakeClock clock;
  std::stop_source stop;
  t.set_handler([&](const kube::HttpRequest&) -> StatusOr<kube::HttpResponse> {
    return kube::HttpResponse{200, R"({"metadata":{"resourceVersion":"42"},"items":[]})"};
  });
  std::vector<std::string> paths;
  int chunks = 0;
  t.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) -> Status {
    paths.push_back(r.path);
    if (paths.size() > 1) {
      stop.request_stop();
      return CancelledError("stopped");
    }
    std::string mib(1024 * 1024, ' ');
    for (chunks = 1; chunks <= 100; ++chunks)
      if (!sink(mib)) return CancelledError("the sink stopped the stream");
    return OkStatus();
  });
  kube::RestClient client(t, clock);
  NullSink sink;
  Reflector reflector(client, {kube::kPods, "ns"}, sink, Logger());
  ::testing::internal::CaptureStderr();
  reflector.Run(stop.get_token());
  auto lines = LinesWith(::testing::internal::GetCapturedStderr(), "watch failed; retrying");
  EXPECT_EQ(chunks, 17);  // stopped at the 16 MiB cap, not after 100 MiB
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_THAT(lines[0], HasSubstr("watch event longer than the limit of 16777216 bytes"));
  ASSERT_EQ(paths.size(), 2u);
  EXPECT_THAT(paths[1], HasSubstr("resourceVersion=42"));
  EXPECT_EQ(reflector.lists(), 1);
}

TEST(Reflector, Issue17UndecodableOrUnknownEventsEndTheWatch) {
  kube::FakeTransport t;
  FakeClock clock;
  std::stop_source stop;
  t.set_handler([&](const kube::HttpRequest&) -> StatusOr<kube::HttpResponse> {
    return kube::HttpResponse{200, R"({"metadata":{"resourceVersion":"42"},"items":[]})"};
  });
  int watches = 0;
  t.set_stream_handler([&](const kube::HttpRequest&, const kube::ByteSink& sink) -> Status {
    if (++watches == 3) {
      stop.request_stop();
      return CancelledError("stopped");
    }
    std::string bad = watches == 1 ? "{not json\n"
                                   : R"({"type":"EXPLODED","object":{}})"
                                     "\n";
    if (!sink(bad)) return CancelledError("the sink stopped the stream");
    ADD_FAILURE() << "the watch went on after an undecodable event";
    return OkStatus();
  });
  kube::RestClient client(t, clock);
  NullSink sink;
  Reflector reflector(client, {kube::kPods, "ns"}, sink, Logger());
  ::testing::internal::CaptureStderr();
  reflector.Run(stop.get_token());
  auto lines = LinesWith(::testing::internal::GetCapturedStderr(), "watch failed; retrying");
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("undecodable watch event"));
  EXPECT_THAT(lines[1], HasSubstr("unknown event type"));
  EXPECT_EQ(sink.applied, 0);
}

// A view in protobuf (the operator's pods): the list and the watch ask for protobuf, the
// recorded protobuf watch of a pod (tests/wire) reaches the sink as the pod's JSON, and the next
// watch resumes from its last version; a server that answers JSON is read as before.
TEST(Reflector, ListsAndWatchesInProtobufAndReadsAJsonAnswerToo) {
  std::ifstream in(std::string(TFJOB_SOURCE_DIR) + "/tests/wire/pod_watch.protobuf", std::ios::binary);
  const std::string recorded{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  ASSERT_GT(recorded.size(), 10000u);
  // An empty PodList at resourceVersion 257, as the server answered it.
  const std::string empty_list(
      "k8s\0\x0a\x0d\x0a\x02v1\x12\x07PodList\x12\x0b\x0a\x09\x0a\x00\x12\x03"
      "257\x1a\x00\x1a\x00\x22\x00",
      36);
  for (bool server_speaks_protobuf : {true, false}) {
    SCOPED_TRACE(server_speaks_protobuf ? "protobuf server" : "JSON server");
    kube::FakeTransport t;
    FakeClock clock;
    std::stop_source stop;
    std::vector<std::string> accepts, paths;
    t.set_handler([&](const kube::HttpRequest& r) -> StatusOr<kube::HttpResponse> {
      accepts.push_back(r.accept);
      return kube::HttpResponse{
          200, server_speaks_protobuf ? empty_list : R"({"metadata":{"resourceVersion":"257"},"items":[]})"};
    });
    t.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) -> Status {
      accepts.push_back(r.accept);
      paths.push_back(r.path);
      if (paths.size() > 1) {
        stop.request_stop();
        return CancelledError("stopped");
      }
      const std::string body =
          server_speaks_protobuf
              ? recorded
              : R"({"type":"ADDED","object":{"metadata":{"name":"a","namespace":"ns","resourceVersion":"300"},"spec":{"nodeName":"n"}}})"
                "\n";
      for (size_t at = 0; at < body.size(); at += 1000)
        if (!sink(std::string_view(body).substr(at, 1000))) return CancelledError("the sink stopped the stream");
      return OkStatus();
    });
    kube::RestClient client(t, clock);
    struct Sink final : ReflectorSink {
      std::vector<std::pair<kube::WatchEventType, json>> events;
      void Replace(std::vector<json>) override {}
      void Apply(kube::WatchEventType type, json object) override { events.emplace_back(type, std::move(object)); }
    } sink;
    ListWatchSpec spec{kube::kPods, "ns"};
    spec.protobuf = kube::ProtobufView{.name = "pod", .to_json = api::PodProtoToJson};
    Reflector reflector(client, spec, sink, Logger());
    reflector.Run(stop.get_token());
    ASSERT_EQ(accepts.size(), 3u);
    EXPECT_EQ(accepts[0], kube::kProtobufAccept);
    EXPECT_EQ(accepts[1], kube::kProtobufWatchAccept);
    EXPECT_THAT(paths[0], HasSubstr("resourceVersion=257"));
    if (server_speaks_protobuf) {
      ASSERT_EQ(sink.events.size(), 6u);
      EXPECT_EQ(sink.events[0].first, kube::WatchEventType::kAdded);
      EXPECT_EQ(sink.events[5].first, kube::WatchEventType::kDeleted);
      EXPECT_EQ(sink.events[3].second["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
      EXPECT_THAT(paths[1], HasSubstr("resourceVersion=290"));
    } else {
      ASSERT_EQ(sink.events.size(), 1u);
      EXPECT_EQ(sink.events[0].second["spec"]["nodeName"], "n");
      EXPECT_THAT(paths[1], HasSubstr("resourceVersion=300"));
    }
  }
}

}  // namespace
}  // namespace tfjob::controller
