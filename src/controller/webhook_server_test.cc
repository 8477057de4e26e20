#include "controller/webhook_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::controller {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class WebhookServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("webhook-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A self-signed pair for 127.0.0.1, written the way a Secret volume update lands: new files
  // first, then renamed over the old ones.
  void WritePair(const std::string& cn) {
    std::string cmd = "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=" + cn +
                      " -addext subjectAltName=IP:127.0.0.1 -keyout " + (dir_ / "new.key").string() + " -out " +
                      (dir_ / "new.crt").string() + " 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    fs::copy_file(dir_ / "new.crt", dir_ / (cn + ".crt"), fs::copy_options::overwrite_existing);
    fs::rename(dir_ / "new.key", dir_ / "tls.key");
    fs::rename(dir_ / "new.crt", dir_ / "tls.crt");
  }

  // POSTs through TLS, trusting only the certificate saved under `cn`.
  httplib::Result Post(int port, const std::string& cn, const std::string& body) {
    httplib::SSLClient client("127.0.0.1", port);
    client.set_ca_cert_path((dir_ / (cn + ".crt")).c_str());
    client.enable_server_certificate_verification(true);
    client.set_connection_timeout(5);
    return client.Post("/echo", body, "application/json");
  }

  fs::path dir_;
};

TEST_F(WebhookServerTest, ServesHandlersOverVerifiedTls) {
  WritePair("first");
  Registry registry;
  WebhookServer server(dir_.string(), Logger(), &registry);
  server.Handle("/echo", [](const std::string& body) { return std::make_pair(200, "{\"got\":" + body + "}"); });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  auto r = Post(server.port(), "first", "42");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "{\"got\":42}");
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_THAT(registry.Expose(),
              HasSubstr("controller_runtime_webhook_requests_total{webhook=\"/echo\",code=\"200\"} 1"));
  server.Stop();
}

TEST_F(WebhookServerTest, AReviewOverTheCapIs413AndTheHandlerNeverRuns) {
  WritePair("first");
  WebhookServer server(dir_.string(), Logger());
  std::atomic<int> calls{0};
  server.Handle("/echo", [&](const std::string&) {
    ++calls;
    return std::make_pair(200, std::string("{}"));
  });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  auto r = Post(server.port(), "first", std::string(kMaxReviewBodyBytes + 1, ' '));
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(calls, 0);
  auto ok = Post(server.port(), "first", std::string(1024 * 1024, ' '));
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  server.Stop();
}

TEST_F(WebhookServerTest, IdleAndGarbageConnectionsDoNotDelayAReview) {
  WritePair("first");
  WebhookServer server(dir_.string(), Logger());
  server.Handle("/echo", [](const std::string&) { return std::make_pair(200, std::string("{}")); });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  std::vector<int> fds;  // plain TCP: no handshake, or not TLS at all
  for (int i = 0; i < 16; ++i) {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(server.port()));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    if (i % 2 == 1) (void)!::write(fd, "GET / HTTP/1.1\r\n\r\n", 18);  // not TLS
    fds.push_back(fd);
  }
  auto r = Post(server.port(), "first", "{}");  // 5 s client time-out: hang detection
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  for (int fd : fds) ::close(fd);
  server.Stop();
}

TEST_F(WebhookServerTest, ARotatedCertificateIsServedWithoutARestart) {
  WritePair("first");
  WebhookServer server(dir_.string(), Logger());
  server.Handle("/echo", [](const std::string&) { return std::make_pair(200, std::string("{}")); });
  ASSERT_TRUE(server.Start("127.0.0.1:0").ok());
  ASSERT_TRUE(Post(server.port(), "first", "{}"));
  WritePair("second");
  auto r = Post(server.port(), "second", "{}");
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, 200);
  EXPECT_FALSE(Post(server.port(), "first", "{}")) << "still serving the old certificate";
  server.Stop();
}

TEST_F(WebhookServerTest, MissingOrMismatchedFilesAreNamed) {
  WebhookServer none(dir_.string(), Logger());
  Status s = none.Start("127.0.0.1:0");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr((dir_ / "tls.crt").string()));

  WritePair("first");
  fs::copy_file(dir_ / "tls.key", dir_ / "first.key");
  WritePair("second");
  fs::copy_file(dir_ / "first.key", dir_ / "tls.key", fs::copy_options::overwrite_existing);
  WebhookServer mismatched(dir_.string(), Logger());
  s = mismatched.Start("127.0.0.1:0");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("does not match the certificate"));
}

TEST(CheckJsonShape, RefusesDeepOrHugeDocumentsWithoutParsing) {
  EXPECT_TRUE(CheckJsonShape(R"({"a":[1,2,{"b":"[[[[,,,,"}]})", 3, 10).ok());
  EXPECT_FALSE(CheckJsonShape(std::string(4, '['), 3, 10).ok());
  EXPECT_FALSE(CheckJsonShape("[" + std::string(20, ',') + "]", 3, 10).ok());
  EXPECT_TRUE(CheckJsonShape(R"(["\"[[[[[["])", 3, 10).ok()) << "an escaped quote does not end the string";
  auto [code, body] = ServeWebhookBody([](const std::string&) { return std::make_pair(200, std::string("{}")); },
                                       std::string(kMaxReviewJsonDepth + 1, '['));
  EXPECT_EQ(code, 400);
  EXPECT_THAT(body, HasSubstr("nests deeper than"));
}

}  // namespace
}  // namespace tfjob::controller
