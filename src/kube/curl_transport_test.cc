#include "kube/curl_transport.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::kube {
namespace {

using ::testing::HasSubstr;

// A TCP server on 127.0.0.1:0 that accepts one connection, reads the request and then sends
// `reply` (nothing at all when empty) and keeps the connection open until destroyed.
class OneShotServer {
 public:
  explicit OneShotServer(std::string reply) : reply_(std::move(reply)) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    ::listen(fd_, 4);
    socklen_t len = sizeof addr;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      client_ = c;
      char buf[4096];
      std::string req;
      while (req.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::read(c, buf, sizeof buf);
        if (n <= 0) return;
        req.append(buf, static_cast<size_t>(n));
      }
      for (size_t off = 0; off < reply_.size();) {
        ssize_t n = ::write(c, reply_.data() + off, reply_.size() - off);
        if (n <= 0) return;
        off += static_cast<size_t>(n);
      }
    });
  }
  ~OneShotServer() {
    ::shutdown(fd_, SHUT_RDWR);
    ::close(fd_);
    thread_.join();
    if (client_ >= 0) ::close(client_);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::string reply_;
  int fd_ = -1;
  std::atomic<int> client_{-1};
  int port_ = 0;
  std::thread thread_;
};

KubeConfig ConfigFor(const OneShotServer& s) {
  KubeConfig c;
  c.server = s.url();
  return c;
}

CurlGlobal curl_global;

// Issue 17 item 16: SIGTERM used to wait for whatever was in flight (75 s against a silent
// server). A requested abort now ends the request at once.
TEST(CurlTransport, Issue17AbortEndsARequestInFlight) {
  OneShotServer silent("");
  RealClock clock;
  CurlTransport transport(ConfigFor(silent), clock);
  std::stop_source abort;
  HttpRequest r{"GET", "/api/v1/pods"};
  r.timeout = std::chrono::minutes(10);  // the test binary's time-out catches a hang
  r.abort = abort.get_token();
  std::jthread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    abort.request_stop();
  });
  auto response = transport.Send(r);
  EXPECT_EQ(response.status().code(), StatusCode::kCancelled);
  EXPECT_THAT(response.status().message(), HasSubstr("aborted: stopping"));
}

TEST(CurlTransport, Issue17AWatchWithoutAResponseTimesOutAndNamesTheCause) {
  OneShotServer silent("");
  RealClock clock;
  CurlTransport transport(ConfigFor(silent), clock);
  HttpRequest r{"GET", "/api/v1/pods?watch=true"};
  r.timeout = std::chrono::milliseconds(0);
  r.response_timeout = std::chrono::milliseconds(300);
  Status s = transport.Stream(r, [](std::string_view) { return true; }, {});
  EXPECT_EQ(s.code(), StatusCode::kDeadlineExceeded);
  EXPECT_THAT(s.message(), HasSubstr("watch " + silent.url() + "/api/v1/pods: timeout: no response within 300ms"));
}

// A body over the cap is refused: by its Content-Length before it is read, or, without one
// (the body ends when the server closes), counted while it arrives.
TEST(CurlTransport, Issue17AResponseOverTheCapIsRefused) {
  const std::string body(2 * 1024 * 1024, 'x');
  for (const std::string& head :
       {"Content-Length: " + std::to_string(body.size()) + "\r\n", std::string("Connection: close\r\n")}) {
    OneShotServer big("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n" + head + "\r\n" + body);
    RealClock clock;
    CurlTransport transport(ConfigFor(big), clock);
    HttpRequest r{"GET", "/api/v1/pods"};
    r.max_response_bytes = 1024 * 1024;
    auto response = transport.Send(r);
    EXPECT_EQ(response.status().code(), StatusCode::kDataLoss) << head;
    EXPECT_THAT(response.status().message(), HasSubstr("response body larger than the limit of 1048576 bytes")) << head;
  }
}

TEST(CurlTransport, Issue17ConnectionRefusedNamesTheCause) {
  int port;
  {
    OneShotServer gone("");
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  KubeConfig c;
  c.server = "http://127.0.0.1:" + std::to_string(port);
  RealClock clock;
  CurlTransport transport(c, clock);
  auto response = transport.Send({"GET", "/api/v1/pods"});
  EXPECT_EQ(response.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(response.status().message(), HasSubstr("GET " + c.server + "/api/v1/pods: connection refused: "));
}

}  // namespace
}  // namespace tfjob::kube
