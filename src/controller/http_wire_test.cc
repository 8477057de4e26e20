#include "controller/http_wire.h"

#include <gtest/gtest.h>

#include <string>

namespace tfjob::controller::http_wire {
namespace {

TEST(HttpWire, ParseHeadTable) {
  const std::string long_target = "/" + std::string(kMaxTargetBytes, 'a');
  struct Case {
    const char* name;
    std::string head;
    int status;
  } cases[] = {
      {"a GET with headers", "GET /healthz?x=1 HTTP/1.1\r\nHost: a\r\nAccept: */*\r\n", 0},
      {"HTTP/1.0", "GET / HTTP/1.0\r\n", 0},
      {"no version", "GET /\r\n", 400},
      {"two spaces", "GET  / HTTP/1.1\r\n", 400},
      {"a method that is no token", "G(T / HTTP/1.1\r\n", 400},
      {"a control byte in the target", "GET /a\x01 HTTP/1.1\r\n", 400},
      {"a target over the limit", "GET " + long_target + " HTTP/1.1\r\n", 414},
      {"HTTP/2.0", "GET / HTTP/2.0\r\n", 505},
      {"not HTTP", "GET / FTP/1.0\r\n", 400},
      {"a header without a colon", "GET / HTTP/1.1\r\nHost a\r\n", 400},
      {"an obs-fold continuation line", "GET / HTTP/1.1\r\nA: b\r\n c\r\n", 400},
      {"a control byte in a value", "GET / HTTP/1.1\r\nA: b\x7f\r\n", 400},
  };
  for (const auto& c : cases) {
    httplib::Request req;
    EXPECT_EQ(ParseHead(c.head, req), c.status) << c.name;
    if (c.status == 0) {
      EXPECT_EQ(req.method, "GET") << c.name;
      EXPECT_EQ(req.path, c.head.starts_with("GET /healthz") ? "/healthz" : "/") << c.name;
    }
  }
  httplib::Request req;
  ASSERT_EQ(ParseHead("POST /v HTTP/1.1\r\nContent-Type:  text/plain \r\n", req), 0);
  EXPECT_EQ(req.get_header_value("Content-Type"), "text/plain") << "the value is trimmed";
}

TEST(HttpWire, ContentLengthTable) {
  struct Case {
    const char* name;
    std::string head;
    long long length;
    int status;
  } cases[] = {
      {"none", "POST / HTTP/1.1\r\n", -1, 0},
      {"one", "POST / HTTP/1.1\r\nContent-Length: 12\r\n", 12, 0},
      {"two equal", "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n", 3, 0},
      {"two different", "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n", -1, 400},
      {"negative", "POST / HTTP/1.1\r\nContent-Length: -1\r\n", -1, 400},
      {"19 digits", "POST / HTTP/1.1\r\nContent-Length: 1234567890123456789\r\n", -1, 400},
      {"empty", "POST / HTTP/1.1\r\nContent-Length:\r\n", -1, 400},
  };
  for (const auto& c : cases) {
    httplib::Request req;
    ASSERT_EQ(ParseHead(c.head, req), 0) << c.name;
    int status = 0;
    EXPECT_EQ(ContentLength(req, &status), c.length) << c.name;
    EXPECT_EQ(status, c.status) << c.name;
  }
}

TEST(HttpWire, FormatAnswerFramesTheBodyAndDropsTheHandlersFramingHeaders) {
  httplib::Response res;
  res.status = 404;
  res.body = "gone";
  res.set_header("X-A", "1");
  res.set_header("Content-Length", "999");
  res.set_header("Transfer-Encoding", "chunked");
  EXPECT_EQ(FormatAnswer(res, false, true, 5, 0),
            "HTTP/1.1 404 Not Found\r\nX-A: 1\r\nContent-Length: 4\r\nConnection: close\r\n\r\ngone");
  EXPECT_EQ(FormatAnswer(res, true, false, 5, 9),
            "HTTP/1.1 404 Not Found\r\nX-A: 1\r\nContent-Length: 4\r\nConnection: keep-alive\r\n"
            "Keep-Alive: timeout=5, max=9\r\n\r\n");
  EXPECT_TRUE(ListsToken("keep-alive, Close", "close"));
  EXPECT_FALSE(ListsToken("closed", "close"));
  EXPECT_STREQ(Reason(431), "Request Header Fields Too Large");
  EXPECT_STREQ(Reason(299), "");
}

}  // namespace
}  // namespace tfjob::controller::http_wire
