#include "kube/api_error.h"

#include <gtest/gtest.h>

namespace tfjob::kube {
namespace {

std::string Body(const char* reason, const char* message, int code) {
  return std::string(R"({"kind":"Status","apiVersion":"v1","status":"Failure","reason":")") + reason +
         R"(","message":")" + message + R"(","code":)" + std::to_string(code) + "}";
}

TEST(StatusFromHttp, MapsReasonsAndKeepsTheServerMessage) {
  struct Case {
    long code;
    const char* reason;
    StatusCode expected;
  };
  for (const Case& c :
       {Case{404, "NotFound", StatusCode::kNotFound}, Case{409, "AlreadyExists", StatusCode::kAlreadyExists},
        Case{409, "Conflict", StatusCode::kConflict}, Case{410, "Expired", StatusCode::kGone},
        Case{422, "Invalid", StatusCode::kInvalid}, Case{403, "Forbidden", StatusCode::kForbidden},
        Case{401, "Unauthorized", StatusCode::kUnauthorized},
        Case{429, "TooManyRequests", StatusCode::kTooManyRequests},
        Case{500, "InternalError", StatusCode::kUnavailable},
        Case{503, "ServiceUnavailable", StatusCode::kUnavailable}}) {
    Status s = StatusFromHttp(c.code, Body(c.reason, "the message", static_cast<int>(c.code)));
    EXPECT_EQ(s.code(), c.expected) << c.reason;
    EXPECT_EQ(s.message(), "the message") << c.reason;
  }
  EXPECT_TRUE(StatusFromHttp(201, "").ok());
}

TEST(StatusFromHttp, NonStatusBodiesAndRetryAfter) {
  Status s = StatusFromHttp(502, "<html>bad gateway</html>");
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(s.message(), "<html>bad gateway</html>");
  Status r = StatusFromHttp(429, Body("TooManyRequests", "slow", 429), 7);
  ASSERT_TRUE(r.retry_after());
  EXPECT_EQ(*r.retry_after(), std::chrono::seconds(7));
  // A watch's 410 arrives as reason Expired with code 410; some proxies send only "Gone".
  EXPECT_EQ(StatusFromHttp(500, Body("Expired", "too old resource version: 1 (5)", 500)).code(), StatusCode::kGone);
}

}  // namespace
}  // namespace tfjob::kube
