#include "kube/rest_client.h"

#include <gtest/gtest.h>

#include "common/fake_clock.h"
#include "kube/fake_transport.h"

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

}  // namespace
}  // namespace tfjob::kube
