#pragma once
// HttpServerBase: the one HTTP/1.1 server under the probe/metrics endpoint and the admission
// webhook (docs/operator.md, "Endpoints"). cpp-httplib parses requests, routes them and writes
// the answers; the connections themselves are served here, so that no client, however slow or
// idle, can hold a server thread for long or make it allocate:
//   - the listen backlog is `backlog` (the library's own is 5);
//   - each connection gets a thread of its own, up to `max_threads` (created on demand);
//   - a connection must start a request within `idle_timeout` of being accepted (TLS: of its
//     handshake, which must end within `request_timeout`) or of the previous answer;
//   - a request, from its first byte to the last byte of its body, must arrive within
//     `request_timeout` (slow drips of bytes are cut there, not at each byte), its request line
//     and headers within `max_header_bytes`;
//   - a body over `max_body_bytes` (by Content-Length) is answered 413 and never stored; a body
//     without a Content-Length (chunked, or read to the end) is answered 411 and a compressed
//     one 415, because neither could be bounded before it is read;
//   - all bodies held at once stay within `max_body_bytes_in_flight` (others wait, then 503);
//   - an answer must be written within `write_timeout`; a connection serves at most
//     `max_requests_per_connection` requests.

#include <openssl/ssl.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/status.h"

namespace httplib {
class Server;
class Stream;
}  // namespace httplib

namespace tfjob::controller {

struct HttpServerLimits {
  std::size_t max_body_bytes = 64 * 1024;
  // Bodies held by all requests at once (by Content-Length; 0: no limit beyond max_body_bytes per
  // thread). A request over it waits up to `request_timeout` for room, then gets 503.
  std::size_t max_body_bytes_in_flight = 0;
  std::size_t max_header_bytes = 64 * 1024;
  std::chrono::milliseconds idle_timeout{5'000};
  std::chrono::milliseconds request_timeout{10'000};
  std::chrono::milliseconds write_timeout{10'000};
  std::size_t max_requests_per_connection = 100;
  std::size_t max_threads = 128;
  int backlog = 1024;
};

// Binds `server` to "host:port" (empty host: all interfaces; port 0: a free one) and sets *port.
// kInvalidArgument for a malformed address, kUnavailable when the port cannot be bound.
Status BindHttpServer(httplib::Server& server, const std::string& address, int* port);

class HttpServerBase {
 public:
  // `tls`: serve HTTPS with this context (the caller keeps it alive until Stop), or nullptr.
  explicit HttpServerBase(HttpServerLimits limits, SSL_CTX* tls = nullptr);
  ~HttpServerBase();
  HttpServerBase(const HttpServerBase&) = delete;
  HttpServerBase& operator=(const HttpServerBase&) = delete;

  // Register routes here before Start.
  httplib::Server& routes();

  // Binds "host:port" ("host:0" picks a free port; see BindHttpServer) and serves on a
  // background thread.
  Status Start(const std::string& address);
  // Stops accepting, cuts the open connections and joins every thread. Idempotent.
  void Stop();
  int port() const { return port_; }
  const HttpServerLimits& limits() const { return limits_; }

  // Serves one connection on `stream` until it closes or a limit ends it (what the server
  // threads run; the fuzzer drives it with bytes in memory).
  class Connection;
  void Serve(Connection& connection);

  // Connections accepted so far and those ended by a limit (time-outs, header size), for tests.
  std::size_t connections() const { return connections_.load(); }
  std::size_t cut_connections() const { return cut_.load(); }

 private:
  class Core;
  friend class Core;
  void ServeSocket(int fd);
  bool ReserveBody(std::size_t bytes);
  void ReleaseBody(std::size_t bytes);

  HttpServerLimits limits_;
  SSL_CTX* tls_;
  std::unique_ptr<Core> core_;
  std::jthread thread_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> connections_{0}, cut_{0};
  std::mutex body_mu_;
  std::condition_variable body_cv_;
  std::size_t body_bytes_ = 0;  // guarded by body_mu_
  int port_ = 0;
};

// One connection's byte transport: a socket (plain or TLS) with deadlines, or bytes in memory.
class HttpServerBase::Connection {
 public:
  using Clock = std::chrono::steady_clock;
  virtual ~Connection() = default;
  // Waits until a byte can be read, the peer closed (true: a read will tell) or `deadline`.
  virtual bool WaitReadable(Clock::time_point deadline) = 0;
  // Up to n bytes; 0 at the end, -1 on an error or at `deadline`.
  virtual long Read(char* buf, std::size_t n, Clock::time_point deadline) = 0;
  // All n bytes or false (error or `deadline`).
  virtual bool Write(const char* buf, std::size_t n, Clock::time_point deadline) = 0;
  virtual void Addresses(std::string& remote_ip, int& remote_port, std::string& local_ip, int& local_port) const {
    remote_ip = local_ip = "";
    remote_port = local_port = 0;
  }
  virtual int fd() const { return -1; }
};

}  // namespace tfjob::controller
