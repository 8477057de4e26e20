#pragma once
// HttpServerBase: the one HTTP/1.1 server under the probe/metrics endpoint and the admission
// webhook (docs/operator.md, "Endpoints"). It accepts, queues, reads, parses, routes and answers
// on its own, and uses cpp-httplib only for its public value types (httplib::Request and
// httplib::Response, what the handlers see), so that no client, however slow, idle or numerous,
// can hold a server thread for long or make it allocate, and no library upgrade can change that:
//   - the listen backlog is `backlog`;
//   - each connection gets a thread of its own, up to `max_threads` (created on demand); up to
//     `max_queued_connections` more wait for one; a connection beyond those is closed at once
//     (plain HTTP: after a 503), and counted in refused_connections();
//   - a connection must start a request within `idle_timeout` of being accepted (TLS: of its
//     handshake, which must end within `request_timeout`) or of the previous answer;
//   - a request, from its first byte to the last byte of its body, must arrive within
//     `request_timeout` (slow drips of bytes are cut there, not at each byte), its request line
//     and headers within `max_header_bytes` (else 431 and the connection is closed);
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
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>

#include "common/status.h"
#include "common/thread_annotations.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace tfjob::controller {

class Counter;
class Registry;

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
  // Accepted connections that wait for a thread while all `max_threads` serve others; one more
  // is closed at once.
  std::size_t max_queued_connections = 128;
  int backlog = 1024;
};

// The handlers, by path (exact match) and method. Register them before Start.
class HttpRoutes {
 public:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  HttpRoutes& Get(const std::string& path, Handler handler);
  HttpRoutes& Post(const std::string& path, Handler handler);

  // The handler for `method` on `path` (HEAD finds GET's), or nullptr; *path_known tells
  // whether any method is served on `path`.
  const Handler* Find(const std::string& method, const std::string& path, bool* path_known) const;
  // The methods served on `path`, comma-separated (for 405's Allow).
  std::string Allowed(const std::string& path) const;

 private:
  std::map<std::string, std::map<std::string, Handler>> by_path_;
};

class HttpServerBase {
 public:
  // `tls`: serve HTTPS with this context (the caller keeps it alive until Stop), or nullptr.
  explicit HttpServerBase(HttpServerLimits limits, SSL_CTX* tls = nullptr);
  ~HttpServerBase();
  HttpServerBase(const HttpServerBase&) = delete;
  HttpServerBase& operator=(const HttpServerBase&) = delete;

  // Register routes here before Start.
  HttpRoutes& routes() { return routes_; }
  // Counts the refused connections there too (REQUIRES: before Start; lives until Stop).
  void CountRefusedIn(Counter* counter) { refused_counter_ = counter; }

  // Binds "host:port" (empty host: all interfaces; port 0: a free one; kInvalidArgument for a
  // malformed address, kUnavailable when the port cannot be bound) and serves on background
  // threads.
  Status Start(const std::string& address);
  // Stops accepting, cuts the open connections and joins every thread. Idempotent.
  void Stop();
  int port() const { return port_; }
  const HttpServerLimits& limits() const { return limits_; }

  // Serves one connection until it closes or a limit ends it (what the server threads run; the
  // fuzzer drives it with bytes in memory).
  class Connection;
  void Serve(Connection& connection);

  // Connections served so far (given a thread), those ended by a limit (time-outs, header size),
  // those refused because the threads and the queue were full, and those held now (served or
  // queued).
  std::size_t connections() const { return connections_.load(); }
  std::size_t cut_connections() const { return cut_.load(); }
  std::size_t refused_connections() const { return refused_.load(); }
  std::size_t open_connections() const { return open_.load(); }

 private:
  class Pool;
  class Session;
  void Accept(std::stop_token stop);
  void Refuse(int fd);
  void ServeSocket(int fd);
  bool ReserveBody(std::size_t bytes);
  void ReleaseBody(std::size_t bytes);

  HttpServerLimits limits_;
  SSL_CTX* tls_;
  HttpRoutes routes_;
  Counter* refused_counter_ = nullptr;
  int listen_fd_ = -1;
  std::unique_ptr<Pool> pool_;
  std::jthread acceptor_;
  std::atomic<bool> stopping_{false};
  std::atomic<std::size_t> connections_{0}, cut_{0}, refused_{0}, open_{0};
  Mutex body_mu_;
  std::condition_variable_any body_cv_;
  std::size_t body_bytes_ TFJOB_GUARDED_BY(body_mu_) = 0;
  int port_ = 0;
};

// tfjob_http_refused_connections_total{server}: for HttpServerBase::CountRefusedIn.
Counter& RefusedConnectionsCounter(Registry& registry, const std::string& server);

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
