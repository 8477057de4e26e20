#include "kube/rest_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/fake_clock.h"
#include "testing/fake_transport.h"

namespace tfjob::kube {
namespace {

const GroupVersionResource kTfJobs{"kubeflow.org", "v1", "tfjobs"};  // a custom resource

using nlohmann::json;

RestClientOptions Fast() {
  RestClientOptions o;
  o.initial_backoff = std::chrono::milliseconds(1);
  o.max_backoff = std::chrono::milliseconds(2);
  o.max_retries = 3;
  return o;
}

TEST(RestClient, ListAllFollowsContinueTokens) {
  FakeTransport t;
  t.set_handler([](const HttpRequest& r) -> StatusOr<HttpResponse> {
    if (r.path.find("continue=") == std::string::npos)
      return HttpResponse{200, R"({"metadata":{"resourceVersion":"5","continue":"page2"},"items":[{"n":1},{"n":2}]})"};
    return HttpResponse{200, R"({"metadata":{"resourceVersion":"7"},"items":[{"n":3}]})"};
  });
  FakeClock clock;
  RestClient client(t, clock, Fast());
  std::string rv;
  auto items = client.ListAll(kPods, "ns", {.label_selector = "a=b", .limit = 2}, &rv);
  ASSERT_TRUE(items.ok());
  EXPECT_EQ(items->size(), 3u);
  EXPECT_EQ(rv, "7");
  auto reqs = t.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].path, "/api/v1/namespaces/ns/pods?labelSelector=a%3Db&limit=2");
  EXPECT_EQ(reqs[1].path, "/api/v1/namespaces/ns/pods?labelSelector=a%3Db&continue=page2&limit=2");
}

TEST(RestClient, RetriesTooManyRequestsThenSucceeds) {
  FakeTransport t;
  int calls = 0;
  t.set_handler([&](const HttpRequest&) -> StatusOr<HttpResponse> {
    if (++calls < 3) return HttpResponse{429, R"({"kind":"Status","reason":"TooManyRequests","message":"slow"})", 0};
    return HttpResponse{201, R"({"metadata":{"name":"p"}})"};
  });
  FakeClock clock;
  RestClient client(t, clock, Fast());
  auto created = client.Create(kPods, "ns", json{{"metadata", {{"name", "p"}}}});
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_EQ(calls, 3);
}

// Issue 15 item 2 (API Priority and Fairness): a 429 with Retry-After holds back the client's
// other requests too, until it has passed; then they go at once.
TEST(RestClient, TooManyRequestsPausesEveryRequestUntilRetryAfter) {
  FakeTransport t;
  FakeClock clock;
  std::vector<Clock::SteadyTime> sent;
  t.set_handler([&](const HttpRequest&) -> StatusOr<HttpResponse> {
    sent.push_back(clock.SteadyNow());
    if (sent.size() == 1) return HttpResponse{429, R"({"kind":"Status","reason":"TooManyRequests"})", 7};
    return HttpResponse{200, R"({"metadata":{"name":"p"}})"};
  });
  RestClientOptions options = Fast();
  options.max_retries = 0;  // the refused call gives up: only the pause can delay the next one
  RestClient client(t, clock, options);
  EXPECT_EQ(client.Get(kPods, "ns", "a").status().code(), StatusCode::kTooManyRequests);
  ASSERT_TRUE(client.Get(kPods, "ns", "b").ok());
  ASSERT_TRUE(client.Get(kPods, "ns", "c").ok());
  ASSERT_EQ(sent.size(), 3u);
  EXPECT_GE(sent[1] - sent[0], std::chrono::seconds(7)) << "the next request did not wait for Retry-After";
  EXPECT_LT(sent[2] - sent[1], std::chrono::seconds(1)) << "the pause did not end";
}

TEST(RestClient, WritesAreNotRetriedOnServerErrorsAndErrorsKeepTheirCode) {
  FakeTransport t;
  int calls = 0;
  t.set_handler([&](const HttpRequest&) -> StatusOr<HttpResponse> {
    ++calls;
    return HttpResponse{500, R"({"kind":"Status","reason":"InternalError","message":"boom"})"};
  });
  FakeClock clock;
  RestClient client(t, clock, Fast());
  auto created = client.Create(kPods, "ns", json::object());
  EXPECT_EQ(created.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(created.status().message(), "create /api/v1/namespaces/ns/pods: boom");
  EXPECT_EQ(calls, 1);
  auto got = client.Get(kPods, "ns", "p");
  EXPECT_EQ(calls, 1 + 4);  // reads retry: 1 + max_retries
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
}

TEST(RestClient, ConflictAndAlreadyExistsSurface) {
  FakeTransport t;
  t.set_handler([](const HttpRequest& r) -> StatusOr<HttpResponse> {
    if (r.method == "POST")
      return HttpResponse{409, R"({"kind":"Status","reason":"AlreadyExists","message":"exists"})"};
    return HttpResponse{409, R"({"kind":"Status","reason":"Conflict","message":"modified"})"};
  });
  FakeClock clock;
  RestClient client(t, clock, Fast());
  EXPECT_TRUE(IsAlreadyExists(client.Create(kPods, "ns", json::object()).status()));
  EXPECT_TRUE(IsConflict(client.Update(kTfJobs, "ns", "j", json::object(), "status").status()));
  auto reqs = t.requests();
  EXPECT_EQ(reqs.back().method, "PUT");
  EXPECT_EQ(reqs.back().path, "/apis/kubeflow.org/v1/namespaces/ns/tfjobs/j/status");
}

// Issue 38: a child's create asks for the created object's metadata alone (the API server then
// encodes about 1 KB instead of a whole pod), with the whole object as the fallback; its errors
// are the API's as for any create, and the answer is never decoded.
TEST(RestClient, CreateDiscardingResponseAsksForMetadataOnly) {
  FakeTransport t;
  int calls = 0;
  t.set_handler([&](const HttpRequest&) -> StatusOr<HttpResponse> {
    if (++calls == 1) return HttpResponse{201, R"({"kind":"PartialObjectMetadata","metadata":{"name":"p"}})"};
    if (calls == 2) return HttpResponse{201, "not JSON: never decoded"};
    return HttpResponse{409, R"({"kind":"Status","reason":"AlreadyExists","message":"exists"})"};
  });
  FakeClock clock;
  RestClient client(t, clock, Fast());
  EXPECT_TRUE(client.CreateDiscardingResponse(kPods, "ns", json{{"metadata", {{"name", "p"}}}}).ok());
  EXPECT_TRUE(client.CreateDiscardingResponse(kPods, "ns", json{{"metadata", {{"name", "q"}}}}).ok());
  EXPECT_TRUE(IsAlreadyExists(client.CreateDiscardingResponse(kPods, "ns", json::object())));
  auto reqs = t.requests();
  ASSERT_EQ(reqs.size(), 3u);
  for (const auto& r : reqs) {
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.path, "/api/v1/namespaces/ns/pods");
    EXPECT_EQ(r.accept, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json");
  }
  // A create whose answer is read asks for the whole object.
  ASSERT_FALSE(client.Create(kPods, "ns", json::object()).ok());
  EXPECT_EQ(t.requests().back().accept, "application/json");
}

TEST(RestClient, PatchContentTypesAndDeleteOptions) {
  FakeTransport t;
  t.set_handler([](const HttpRequest&) -> StatusOr<HttpResponse> { return HttpResponse{200, "{}"}; });
  FakeClock clock;
  RestClient client(t, clock, Fast());
  ASSERT_TRUE(client.Patch(kTfJobs, "ns", "j", PatchType::kMerge, json{{"status", json::object()}}, "status").ok());
  ASSERT_TRUE(client.Patch(kPods, "ns", "p", PatchType::kJson, json::array()).ok());
  ASSERT_TRUE(client.Delete(kPods, "ns", "p", {.propagation_policy = "Foreground", .precondition_uid = "u1"}).ok());
  auto reqs = t.requests();
  EXPECT_EQ(reqs[0].content_type, "application/merge-patch+json");
  EXPECT_EQ(reqs[1].content_type, "application/json-patch+json");
  EXPECT_EQ(
      json::parse(reqs[2].body),
      json::parse(
          R"({"apiVersion":"v1","kind":"DeleteOptions","propagationPolicy":"Foreground","preconditions":{"uid":"u1"}})"));
}

TEST(RestClient, ObserverSeesEveryRequest) {
  FakeTransport t;
  t.set_handler([](const HttpRequest&) -> StatusOr<HttpResponse> { return HttpResponse{404, "{}"}; });
  FakeClock clock;
  RestClient client(t, clock, Fast());
  std::vector<std::string> seen;
  client.set_observer([&](const RequestRecord& r) { seen.push_back(r.verb + " " + std::to_string(r.code)); });
  (void)client.Get(kPods, "ns", "p");
  (void)client.Delete(kPods, "ns", "p");
  EXPECT_EQ(seen, (std::vector<std::string>{"get 404", "delete 404"}));
}

TEST(RestClient, NetworkFailureIsUnavailableWithContext) {
  FakeTransport t;
  t.set_handler([](const HttpRequest&) -> StatusOr<HttpResponse> {
    return UnavailableError("Failed to connect to 127.0.0.1 port 1: Couldn't connect to server");
  });
  FakeClock clock;
  RestClient client(t, clock, Fast());
  auto r = client.Create(kPods, "ns", json::object());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(t.requests().size(), 4u);  // nothing reached the server: safe to retry a create
}

// Issue 17 item 16: failing requests used to be silent (six minutes against a server that never
// answers). Each is now logged with its cause and the attempt's elapsed time, at most once per
// verb+resource+cause per interval, with the count held back.
TEST(RestClient, Issue17FailuresAreLoggedWithCauseElapsedAndRetryDelayRateLimited) {
  FakeTransport t;
  FakeClock clock;
  t.set_handler([&](const HttpRequest&) -> StatusOr<HttpResponse> {
    clock.Advance(std::chrono::seconds(3));  // the attempt took 3 s
    return DeadlineExceededError("GET https://h/api/v1/namespaces/ns/pods/p: timeout: Operation timed out");
  });
  RestClientOptions o = Fast();
  o.max_retries = 2;
  o.initial_backoff = std::chrono::milliseconds(800);
  RestClient client(t, clock, o);
  ::testing::internal::CaptureStderr();
  auto r = client.Get(kPods, "ns", "p");  // attempts at 0 s, 3.8 s, 8.6 s: one line, two held back
  clock.Advance(std::chrono::seconds(20));
  auto r2 = client.Get(kPods, "ns", "q");  // a new interval: logged with suppressed=2
  std::string log = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(r2.status().code(), StatusCode::kDeadlineExceeded);
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = log.find('\n', at)) != std::string::npos; at = nl + 1)
    if (log.find("API request failed", at) < nl) lines.push_back(log.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 2u) << log;
  EXPECT_THAT(lines[0], ::testing::HasSubstr("cause=timeout"));
  EXPECT_THAT(lines[0], ::testing::HasSubstr("path=/api/v1/namespaces/ns/pods/p"));
  EXPECT_THAT(lines[0], ::testing::HasSubstr("elapsed=3s"));
  EXPECT_THAT(lines[0], ::testing::HasSubstr("retry_in=800ms"));
  EXPECT_THAT(lines[1], ::testing::HasSubstr("suppressed=2"));
  EXPECT_THAT(lines[1], ::testing::HasSubstr("attempt=1"));
}

TEST(RestClient, Issue17RequestsCarryTheTimeoutAndAHostileRetryAfterIsCapped) {
  FakeTransport t;
  int calls = 0;
  t.set_handler([&](const HttpRequest&) -> StatusOr<HttpResponse> {
    if (++calls == 1) return HttpResponse{429, R"({"kind":"Status","reason":"TooManyRequests"})", 1000000};
    return HttpResponse{200, "{}"};
  });
  FakeClock clock;
  RestClientOptions o = Fast();
  o.request_timeout = std::chrono::seconds(7);
  RestClient client(t, clock, o);
  ::testing::internal::CaptureStderr();
  ASSERT_TRUE(client.Get(kPods, "ns", "p").ok());
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_EQ(clock.slept(), std::chrono::seconds(30));  // max_retry_after, not 11 days
  ASSERT_TRUE(client.List(kPods, "ns", {}).ok());
  auto reqs = t.requests();
  ASSERT_EQ(reqs.size(), 3u);
  EXPECT_EQ(reqs[0].timeout, std::chrono::seconds(7));
  EXPECT_EQ(reqs[2].timeout, std::chrono::seconds(14));  // a list page: twice
}

// Issue 25 item 6: `--request-timeout 2s` failed after about 12.6 s against a server that never
// answers (a list page gets twice the timeout, then two retries and their backoff). With
// call_timeout the bound covers the whole call: the attempt gets what is left, and no retry
// starts once it is used up.
TEST(RestClient, Issue25CallTimeoutBoundsTheAttemptsAndTheRetriesOfOneCall) {
  FakeTransport t;
  FakeClock clock;
  t.set_handler([&](const HttpRequest& r) -> StatusOr<HttpResponse> {
    clock.Advance(r.timeout);  // a server that accepts and never answers
    return DeadlineExceededError("GET https://server/apis/kubeflow.org/v1/tfjobs: timeout");
  });
  RestClientOptions o;
  o.max_retries = 2;
  o.request_timeout = std::chrono::seconds(2);
  o.call_timeout = std::chrono::seconds(2);
  RestClient client(t, clock, o);
  const auto start = clock.SteadyNow();
  ::testing::internal::CaptureStderr();
  auto r = client.List(kPods, "ns", {});
  (void)::testing::internal::GetCapturedStderr();
  ASSERT_EQ(t.requests().size(), 1u);  // a page's doubled timeout is cut to the call's
  EXPECT_EQ(t.requests()[0].timeout, std::chrono::seconds(2));
  EXPECT_EQ(clock.SteadyNow() - start, std::chrono::seconds(2));
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(
      r.status().message(),
      ::testing::HasSubstr("timeout (gave up after 1 attempt: the request timeout of 2s covers the whole call)"));
}

TEST(RestClient, Issue25CallTimeoutCutsTheLaterAttemptsAndStopsBeforeABackoffPastIt) {
  FakeTransport t;
  FakeClock clock;
  t.set_handler([&](const HttpRequest&) -> StatusOr<HttpResponse> {
    clock.Advance(std::chrono::milliseconds(700));  // refused after 0.7 s each time
    return UnavailableError("GET x: connection refused: nothing listens");
  });
  RestClientOptions o;
  o.max_retries = 5;
  o.initial_backoff = std::chrono::milliseconds(200);
  o.request_timeout = std::chrono::seconds(30);
  o.call_timeout = std::chrono::seconds(2);
  RestClient client(t, clock, o);
  ::testing::internal::CaptureStderr();
  auto r = client.Get(kPods, "ns", "p");
  (void)::testing::internal::GetCapturedStderr();
  // 0.7 s, a 0.2 s wait, 0.7 s (it had 1.1 s), then a 0.4 s wait would end at the bound: done.
  auto reqs = t.requests();
  ASSERT_EQ(reqs.size(), 2u);
  EXPECT_EQ(reqs[0].timeout, std::chrono::seconds(2));
  EXPECT_EQ(reqs[1].timeout, std::chrono::milliseconds(1100));
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(r.status().message(),
              ::testing::HasSubstr("connection refused: nothing listens (gave up after 2 attempts: the request "
                                   "timeout of 2s covers the whole call)"));
}

// Issue 17 item 16: SIGTERM must end what is in flight. A requested abort ends a retry wait and
// refuses new requests, with kCancelled and no log line.
TEST(RestClient, Issue17AbortEndsRetriesAndNewRequests) {
  FakeTransport t;
  std::stop_source abort;
  t.set_handler([&](const HttpRequest& r) -> StatusOr<HttpResponse> {
    EXPECT_FALSE(r.abort.stop_requested());
    abort.request_stop();  // SIGTERM arrives during the first attempt
    return HttpResponse{503, "{}"};
  });
  FakeClock clock;
  RestClientOptions o = Fast();
  o.abort = abort.get_token();
  RestClient client(t, clock, o);
  ::testing::internal::CaptureStderr();
  auto r = client.Get(kPods, "ns", "p");
  auto r2 = client.Get(kPods, "ns", "p");
  (void)::testing::internal::GetCapturedStderr();
  EXPECT_EQ(t.requests().size(), 1u);  // no retry after the abort
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(r2.status().code(), StatusCode::kCancelled);
  EXPECT_TRUE(t.requests()[0].abort.stop_possible());  // the transport sees the abort too
}

}  // namespace
}  // namespace tfjob::kube
