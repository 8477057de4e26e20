#include "controller/http_server_base.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "controller/health_server.h"

namespace tfjob::controller {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool SendAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// Everything the server sends until it closes, or until nothing came for `timeout_ms` (a hang).
std::string ReadAnswer(int fd, int timeout_ms = 5000) {
  std::string out;
  char buf[4096];
  for (;;) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) <= 0) return out + "<no answer>";
    ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

long PeakRssKiB() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

// A connection's bytes in memory: what the client sent, and what the server wrote back.
class MemoryConnection : public HttpServerBase::Connection {
 public:
  explicit MemoryConnection(std::string in) : in_(std::move(in)) {}
  bool WaitReadable(Clock::time_point) override { return true; }
  long Read(char* buf, std::size_t n, Clock::time_point) override {
    std::size_t k = std::min(n, in_.size() - pos_);
    std::memcpy(buf, in_.data() + pos_, k);
    pos_ += k;
    return static_cast<long>(k);
  }
  bool Write(const char* buf, std::size_t n, Clock::time_point) override {
    out_.append(buf, n);
    return true;
  }
  const std::string& out() const { return out_; }

 private:
  std::string in_, out_;
  std::size_t pos_ = 0;
};

std::size_t Count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class HttpServerBaseTest : public ::testing::Test {
 protected:
  void Serve(HttpServerLimits limits) {
    server_ = std::make_unique<HttpServerBase>(limits);
    server_->routes().Get(
        "/healthz", [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
    server_->routes().Post("/review", [this](const httplib::Request& req, httplib::Response& res) {
      ++handled_;
      res.set_content(std::to_string(req.body.size()), "text/plain");
    });
    ASSERT_TRUE(server_->Start("127.0.0.1:0").ok());
  }
  void TearDown() override {
    if (server_) server_->Stop();
  }
  // GET /healthz on a fresh connection with a 3 s client time-out (hang detection).
  bool Healthy() {
    httplib::Client c("127.0.0.1", server_->port());
    c.set_connection_timeout(3);
    c.set_read_timeout(3);
    auto r = c.Get("/healthz");
    return r && r->status == 200;
  }

  std::unique_ptr<HttpServerBase> server_;
  std::atomic<int> handled_{0};
};

TEST_F(HttpServerBaseTest, ABodyOverTheCapIs413AndNeverStored) {
  Serve({.max_body_bytes = 1024 * 1024});
  long before = PeakRssKiB();
  int fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  const size_t size = 100 * 1024 * 1024;
  std::string chunk(1024 * 1024, 'x');
  std::jthread sender([&] {
    std::string head = "POST /review HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(size) + "\r\n\r\n";
    if (!SendAll(fd, head)) return;
    for (size_t sent = 0; sent < size; sent += chunk.size())
      if (!SendAll(fd, chunk)) return;
  });
  std::string answer = ReadAnswer(fd);
  sender.join();
  ::close(fd);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 413"));
  EXPECT_EQ(handled_, 0);
  EXPECT_LT(PeakRssKiB() - before, 32 * 1024) << "the 100 MiB body was kept in memory";
  EXPECT_TRUE(Healthy());
}

TEST_F(HttpServerBaseTest, BodiesThatCannotBeBoundedAreRefusedUnread) {
  Serve({.max_body_bytes = 1024});
  struct Case {
    std::string request;
    std::string status;
  } cases[] = {
      {"POST /review HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n", "HTTP/1.1 411"},
      {"POST /review HTTP/1.1\r\nHost: x\r\n\r\nxxxx", "HTTP/1.1 411"},
      {"POST /review HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nxxxx", "HTTP/1.1 415"},
      {"POST /review HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nxxxx", "HTTP/1.1 200"},
  };
  for (const auto& c : cases) {
    int fd = Connect(server_->port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, c.request));
    if (c.status == "HTTP/1.1 200") ::shutdown(fd, SHUT_WR);
    EXPECT_THAT(ReadAnswer(fd), StartsWith(c.status)) << c.request;
    ::close(fd);
  }
  EXPECT_EQ(handled_, 1);
}

TEST_F(HttpServerBaseTest, IdleConnectionsDoNotStarveTheProbe) {
  // cpp-httplib's own server: 8 threads, each idle connection holds one for 5 s, backlog 5.
  Serve({.idle_timeout = std::chrono::seconds(5)});
  std::vector<int> idle;
  for (int i = 0; i < 64; ++i) {
    int fd = Connect(server_->port());
    ASSERT_GE(fd, 0);
    idle.push_back(fd);
  }
  EXPECT_TRUE(Healthy()) << "64 idle connections silenced /healthz";
  for (int fd : idle) ::close(fd);
}

TEST_F(HttpServerBaseTest, ASlowHeaderDripIsCutAtTheRequestTimeout) {
  Serve({.request_timeout = std::chrono::seconds(1)});
  std::vector<int> drips;
  for (int i = 0; i < 16; ++i) {
    int fd = Connect(server_->port());
    ASSERT_GE(fd, 0);
    ASSERT_TRUE(SendAll(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\n"));
    drips.push_back(fd);
  }
  // One header line every 100 ms: each read is quick, the request never ends. 100 lines (10 s)
  // are far more than the 1 s deadline; the server must have closed every connection by then.
  std::vector<bool> closed(drips.size(), false);
  bool probe_ok = true;
  for (int line = 0; line < 100; ++line) {
    size_t open = 0;
    for (size_t i = 0; i < drips.size(); ++i) {
      if (closed[i]) continue;
      if (!SendAll(drips[i], "X-Drip: " + std::to_string(line) + "\r\n")) closed[i] = true;
      pollfd p{drips[i], POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) closed[i] = true;  // an answer (400) or the close
      open += closed[i] ? 0 : 1;
    }
    if (line == 5) probe_ok = Healthy();
    if (open == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int fd : drips) ::close(fd);
  EXPECT_TRUE(probe_ok) << "/healthz did not answer while 16 clients dripped headers";
  for (size_t i = 0; i < closed.size(); ++i) EXPECT_TRUE(closed[i]) << "drip " << i << " was never cut";
}

TEST_F(HttpServerBaseTest, HeadersOverTheLimitEndTheConnection) {
  Serve({.max_header_bytes = 16 * 1024});
  long before = PeakRssKiB();
  int fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  std::jthread sender([&] {
    if (!SendAll(fd, "GET /healthz HTTP/1.1\r\nX-Huge: ")) return;
    std::string chunk(64 * 1024, 'a');
    for (int i = 0; i < 1024; ++i)  // 64 MiB of one header line, no end of line
      if (!SendAll(fd, chunk)) return;
  });
  std::string answer = ReadAnswer(fd);
  ::shutdown(fd, SHUT_RDWR);
  sender.join();
  ::close(fd);
  EXPECT_THAT(answer, ::testing::Not(HasSubstr("<no answer>")));
  EXPECT_THAT(answer, ::testing::Not(HasSubstr("200 OK")));
  EXPECT_LT(PeakRssKiB() - before, 32 * 1024);

  // Many small headers count the same.
  fd = Connect(server_->port());
  std::string many = "GET /healthz HTTP/1.1\r\n";
  for (int i = 0; i < 10000; ++i) many += "X-" + std::to_string(i) + ": y\r\n";
  SendAll(fd, many + "\r\n");
  EXPECT_THAT(ReadAnswer(fd), ::testing::Not(HasSubstr("200 OK")));
  ::close(fd);
  EXPECT_TRUE(Healthy());
}

TEST_F(HttpServerBaseTest, KeepAliveAndPipeliningStillWork) {
  Serve({});
  int fd = Connect(server_->port());
  ASSERT_GE(fd, 0);
  std::string two =
      "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
  ASSERT_TRUE(SendAll(fd, two));
  std::string answer = ReadAnswer(fd);
  ::close(fd);
  EXPECT_EQ(answer.find("HTTP/1.1 200"), 0u);
  EXPECT_NE(answer.find("HTTP/1.1 200", 10), std::string::npos) << answer;
}

TEST_F(HttpServerBaseTest, TheListenBacklogIsRaised) {
  Serve({.backlog = 1024});
  // ss shows a listening socket's backlog as its Send-Q.
  std::string cmd = "ss -ltnH 'sport = :" + std::to_string(server_->port()) + "' 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char line[512] = {0};
  std::string out;
  while (fgets(line, sizeof line, p)) out += line;
  pclose(p);
  if (out.empty()) GTEST_SKIP() << "no ss(8)";
  EXPECT_THAT(out, HasSubstr(" 1024 ")) << out;
}

TEST_F(HttpServerBaseTest, ConnectionsBeyondTheQueueAreRefusedWhileTheThreadsAreBusy) {
  // Two threads, each held by an idle connection (the idle time-out is far away), and room for
  // two more in the queue: the fifth connection must be closed at once, not queued unbounded.
  Serve({.idle_timeout = std::chrono::seconds(60), .max_threads = 2, .max_queued_connections = 2});
  std::vector<int> held;
  for (int i = 0; i < 4; ++i) {
    int fd = Connect(server_->port());
    ASSERT_GE(fd, 0);
    held.push_back(fd);
  }
  int extra = Connect(server_->port());
  ASSERT_GE(extra, 0);
  ASSERT_TRUE(SendAll(extra, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
  std::string answer = ReadAnswer(extra);  // 5 s without a byte or the close: a hang
  ::close(extra);
  EXPECT_THAT(answer, StartsWith("HTTP/1.1 503")) << "the connection beyond the queue was not refused";
  EXPECT_EQ(server_->refused_connections(), 1u);
  EXPECT_EQ(server_->open_connections(), 4u);

  // Once the held connections end, the server takes new ones again.
  for (int fd : held) ::close(fd);
  for (int i = 0; i < 500 && server_->open_connections() > 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(server_->open_connections(), 0u);
  EXPECT_TRUE(Healthy());
  EXPECT_EQ(server_->refused_connections(), 1u);
}

TEST(HttpServerBaseServe, ParsesRoutesAndFramesTheAnswers) {
  HttpServerBase server({.max_body_bytes = 16});
  server.routes().Get("/healthz",
                      [](const httplib::Request&, httplib::Response& res) { res.set_content("ok\n", "text/plain"); });
  server.routes().Post("/review", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content("got " + req.body, "text/plain");
  });
  struct Case {
    std::string in;
    std::vector<std::string> want;  // substrings of what the server wrote
    std::size_t answers;            // final answers (each has a Content-Length)
  } cases[] = {
      {"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", {"HTTP/1.1 200 OK\r\n", "Content-Length: 3\r\n", "\r\n\r\nok\n"}, 1},
      {"HEAD /healthz HTTP/1.1\r\n\r\n", {"HTTP/1.1 200 OK\r\n", "Content-Length: 3\r\n"}, 1},
      {"GET /healthz?verbose=1 HTTP/1.1\r\n\r\n", {"HTTP/1.1 200 OK\r\n"}, 1},
      {"GET /nope HTTP/1.1\r\n\r\n", {"HTTP/1.1 404 Not Found\r\n"}, 1},
      {"PUT /healthz HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
       {"HTTP/1.1 405 Method Not Allowed\r\n", "Allow: GET, HEAD\r\n"},
       1},
      {"GET /healthz\r\n\r\n", {"HTTP/1.1 400 Bad Request\r\n", "Connection: close\r\n"}, 1},
      {"GET /healthz HTTP/2.0\r\n\r\n", {"HTTP/1.1 505 "}, 1},
      {"GET /healthz HTTP/1.1\r\nA: b\r\n folded\r\n\r\n", {"HTTP/1.1 400 "}, 1},
      {"GET /healthz HTTP/1.1\r\nBad Name: x\r\n\r\n", {"HTTP/1.1 400 "}, 1},
      {"GET /" + std::string(9000, 'a') + " HTTP/1.1\r\n\r\n", {"HTTP/1.1 414 "}, 1},
      {"POST /review HTTP/1.1\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcd", {"HTTP/1.1 400 "}, 1},
      {"POST /review HTTP/1.1\r\nContent-Length: -4\r\n\r\n", {"HTTP/1.1 400 "}, 1},
      {"POST /review HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd", {"HTTP/1.1 200 OK\r\n", "\r\n\r\ngot abcd"}, 1},
      {"POST /review HTTP/1.1\r\nContent-Length: 17\r\n\r\n" + std::string(17, 'x'), {"HTTP/1.1 413 "}, 1},
      {"POST /review HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi",
       {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", "got hi"},
       1},
      // Keep-alive: two HTTP/1.1 requests in one write, both answered; HTTP/1.0 closes after one.
      {"GET /healthz HTTP/1.1\r\n\r\nPOST /review HTTP/1.1\r\nContent-Length: 1\r\n\r\nz",
       {"Keep-Alive: timeout=5, max=99\r\n", "got z"},
       2},
      {"GET /healthz HTTP/1.0\r\n\r\nGET /healthz HTTP/1.0\r\n\r\n", {"Connection: close\r\n"}, 1},
      {"GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\nGET /healthz HTTP/1.1\r\n\r\n", {"Connection: close\r\n"}, 1},
      // Empty lines before a request are skipped; bare LF line ends are read.
      {"\r\n\r\nGET /healthz HTTP/1.1\n\n", {"HTTP/1.1 200 OK\r\n"}, 1},
      {"", {}, 0},
      {"GET /healthz HTTP/1.1\r\nHost: x\r\n", {}, 0},  // cut off before the end of the head
  };
  for (const auto& c : cases) {
    MemoryConnection connection(c.in);
    server.Serve(connection);
    for (const auto& w : c.want) EXPECT_THAT(connection.out(), HasSubstr(w)) << c.in.substr(0, 80);
    EXPECT_EQ(Count(connection.out(), "Content-Length: "), c.answers) << c.in.substr(0, 80) << "\n" << connection.out();
  }
  MemoryConnection head("HEAD /healthz HTTP/1.1\r\n\r\n");
  server.Serve(head);
  EXPECT_THAT(head.out(), ::testing::EndsWith("\r\n\r\n")) << "HEAD got a body";
}

TEST(HttpEndpoint, ProbeBodiesAreCapped) {
  HttpEndpoint ep;
  ep.AddLivenessCheck("ping", [] { return OkStatus(); });
  ASSERT_TRUE(ep.Start("127.0.0.1:0").ok());
  int fd = Connect(ep.port());
  ASSERT_GE(fd, 0);
  ASSERT_TRUE(
      SendAll(fd, "POST /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n" + std::string(1000000, 'x')));
  EXPECT_THAT(ReadAnswer(fd), StartsWith("HTTP/1.1 413"));
  ::close(fd);
  ep.Stop();
}

}  // namespace
}  // namespace tfjob::controller
