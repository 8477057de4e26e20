#include "controller/http_server_base.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <vector>

namespace tfjob::controller {
namespace {

using Clock = HttpServerBase::Connection::Clock;

// Set by the pre-routing handler and the logger when the connection must not be reused (the
// body was not read, or the request was malformed). Each connection is served on one thread.
thread_local bool close_after_answer = false;
// Body bytes this thread's current request holds of max_body_bytes_in_flight.
thread_local std::size_t reserved_body = 0;

// The connection threads: one per connection being served, created when none is free, at most
// `max` (further connections wait for one). cpp-httplib's own pool is fixed, so N idle
// connections starve it when N >= its size.
class ElasticPool : public httplib::TaskQueue {
 public:
  explicit ElasticPool(std::size_t max) : max_(std::max<std::size_t>(max, 1)) {}

  void enqueue(std::function<void()> fn) override {
    std::lock_guard lock(mu_);
    jobs_.push_back(std::move(fn));
    if (jobs_.size() > idle_ && threads_.size() < max_)
      threads_.emplace_back([this] { Work(); });
    else
      cv_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mu_);
      shutdown_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

 private:
  void Work() {
    // A write to a peer that has gone raises SIGPIPE (OpenSSL writes with write(2)); these
    // threads take it as an error return instead.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    std::unique_lock lock(mu_);
    for (;;) {
      ++idle_;
      cv_.wait(lock, [&] { return shutdown_ || !jobs_.empty(); });
      --idle_;
      if (jobs_.empty()) return;
      auto fn = std::move(jobs_.front());
      jobs_.pop_front();
      lock.unlock();
      fn();
      lock.lock();
    }
  }

  const std::size_t max_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  std::size_t idle_ = 0;
  bool shutdown_ = false;
};

// A TCP connection, plain or TLS, non-blocking underneath; every wait has a deadline and ends
// early when the server stops.
class SocketConnection : public HttpServerBase::Connection {
 public:
  SocketConnection(int fd, SSL* ssl, const std::atomic<bool>& stopping) : fd_(fd), ssl_(ssl), stopping_(stopping) {}

  bool Handshake(Clock::time_point deadline) {
    for (;;) {
      int r = SSL_accept(ssl_);
      if (r == 1) return true;
      if (!WaitFor(SSL_get_error(ssl_, r), deadline)) return false;
    }
  }

  bool WaitReadable(Clock::time_point deadline) override {
    if (ssl_ != nullptr && SSL_pending(ssl_) > 0) return true;
    return Poll(POLLIN, deadline);
  }

  long Read(char* buf, std::size_t n, Clock::time_point deadline) override {
    int chunk = static_cast<int>(std::min<std::size_t>(n, 1 << 20));
    for (;;) {
      if (ssl_ != nullptr) {
        int r = SSL_read(ssl_, buf, chunk);
        if (r > 0) return r;
        int e = SSL_get_error(ssl_, r);
        if (e == SSL_ERROR_ZERO_RETURN) return 0;
        if (!WaitFor(e, deadline)) return -1;
      } else {
        ssize_t r = ::recv(fd_, buf, chunk, 0);
        if (r >= 0) return r;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        if (!Poll(POLLIN, deadline)) return -1;
      }
    }
  }

  bool Write(const char* buf, std::size_t n, Clock::time_point deadline) override {
    while (n > 0) {
      int chunk = static_cast<int>(std::min<std::size_t>(n, 1 << 20));
      long written;
      if (ssl_ != nullptr) {
        int r = SSL_write(ssl_, buf, chunk);
        if (r <= 0) {
          if (!WaitFor(SSL_get_error(ssl_, r), deadline)) return false;
          continue;
        }
        written = r;
      } else {
        ssize_t r = ::send(fd_, buf, chunk, MSG_NOSIGNAL);
        if (r < 0) {
          if (errno == EINTR) continue;
          if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
          if (!Poll(POLLOUT, deadline)) return false;
          continue;
        }
        written = r;
      }
      buf += written;
      n -= static_cast<std::size_t>(written);
    }
    return true;
  }

  void Addresses(std::string& remote_ip, int& remote_port, std::string& local_ip, int& local_port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    remote_ip = local_ip = "";
    remote_port = local_port = 0;
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) Format(addr, remote_ip, remote_port);
    len = sizeof addr;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) Format(addr, local_ip, local_port);
  }

  int fd() const override { return fd_; }

 private:
  static void Format(const sockaddr_storage& addr, std::string& ip, int& port) {
    char text[INET6_ADDRSTRLEN] = {0};
    if (addr.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
      inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }

  // After an OpenSSL call returned `error`: waits for what it needs; false on a real error.
  bool WaitFor(int error, Clock::time_point deadline) {
    if (error == SSL_ERROR_WANT_READ) return Poll(POLLIN, deadline);
    if (error == SSL_ERROR_WANT_WRITE) return Poll(POLLOUT, deadline);
    ERR_clear_error();
    return false;
  }

  // Polls in slices so that Stop is noticed within 100 ms.
  bool Poll(short events, Clock::time_point deadline) {
    for (;;) {
      if (stopping_) return false;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, events, 0};
      int r = ::poll(&p, 1, static_cast<int>(std::min<long>(left, 100)));
      if (r > 0) return true;  // ready, or an error/hang-up the next call reports
      if (r < 0 && errno != EINTR) return false;
    }
  }

  int fd_;
  SSL* ssl_;
  const std::atomic<bool>& stopping_;
};

// What cpp-httplib parses one request from: the connection's bytes through a buffer, under the
// request's deadline and header-size limit.
class RequestStream : public httplib::Stream {
 public:
  RequestStream(HttpServerBase::Connection& c, const HttpServerLimits& limits) : c_(c), limits_(limits) {}

  void BeginRequest() {
    deadline_ = Clock::now() + limits_.request_timeout;
    in_head_ = true;
    head_bytes_ = 0;
    line_len_ = 0;
    lines_ = 0;
    last_ = 0;
  }
  bool Buffered() const { return pos_ < end_; }
  bool limit_hit() const { return limit_hit_; }

  bool is_readable() const override { return pos_ < end_; }
  bool is_writable() const override { return true; }

  ssize_t read(char* ptr, std::size_t size) override {
    if (limit_hit_) return -1;
    if (pos_ == end_) {
      long n = c_.Read(buf_, sizeof buf_, deadline_);
      if (n <= 0) {
        if (n < 0 && Clock::now() >= deadline_) limit_hit_ = true;
        return n;
      }
      pos_ = 0;
      end_ = static_cast<std::size_t>(n);
    }
    std::size_t n = std::min(size, end_ - pos_);
    if (in_head_) n = CountHead(n);
    if (n == 0) return -1;
    std::memcpy(ptr, buf_ + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, std::size_t size) override {
    return c_.Write(ptr, size, Clock::now() + limits_.write_timeout) ? static_cast<ssize_t>(size) : -1;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    std::string local_ip;
    int local_port;
    c_.Addresses(ip, port, local_ip, local_port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    std::string remote_ip;
    int remote_port;
    c_.Addresses(remote_ip, remote_port, ip, port);
  }
  socket_t socket() const override { return c_.fd(); }

 private:
  // Of the next n buffered bytes, how many may be handed out: all up to the end of the head (the
  // first line that is exactly CRLF after the request line, as cpp-httplib reads it), none once
  // the head has grown past the limit.
  std::size_t CountHead(std::size_t n) {
    for (std::size_t i = 0; i < n; ++i) {
      char ch = buf_[pos_ + i];
      if (++head_bytes_ > limits_.max_header_bytes) {
        limit_hit_ = true;
        return i;
      }
      if (ch == '\n') {
        bool blank = line_len_ == 1 && last_ == '\r';
        if (blank && lines_ > 0) {
          in_head_ = false;
          return i + 1;
        }
        ++lines_;
        line_len_ = 0;
      } else {
        ++line_len_;
      }
      last_ = ch;
    }
    return n;
  }

  HttpServerBase::Connection& c_;
  const HttpServerLimits& limits_;
  char buf_[16 * 1024];
  std::size_t pos_ = 0, end_ = 0;
  Clock::time_point deadline_{};
  bool in_head_ = true, limit_hit_ = false;
  std::size_t head_bytes_ = 0, line_len_ = 0, lines_ = 0;
  char last_ = 0;
};

// One request held in memory, its answer discarded: see HttpServerBase::Start.
class WarmUpStream : public httplib::Stream {
 public:
  bool is_readable() const override { return pos_ < kRequest.size(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, std::size_t size) override {
    std::size_t n = std::min(size, kRequest.size() - pos_);
    std::memcpy(ptr, kRequest.data() + pos_, n);
    pos_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char*, std::size_t size) override { return static_cast<ssize_t>(size); }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 0;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override { get_remote_ip_and_port(ip, port); }
  socket_t socket() const override { return INVALID_SOCKET; }

 private:
  static constexpr std::string_view kRequest = "OPTIONS * HTTP/1.1\r\nHost: warm-up\r\n\r\n";
  std::size_t pos_ = 0;
};

bool ExpectsBody(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE" || method == "PRI";
}

}  // namespace

Status BindHttpServer(httplib::Server& server, const std::string& address, int* port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("address \"" + address + "\" is not host:port");
  std::string host = address.substr(0, colon);
  if (host.empty()) host = "0.0.0.0";
  int wanted = 0;
  try {
    size_t used = 0;
    wanted = std::stoi(address.substr(colon + 1), &used);
    if (used != address.size() - colon - 1 || wanted < 0 || wanted > 65535) throw std::out_of_range("port");
  } catch (const std::exception&) {
    return InvalidArgumentError("address \"" + address + "\" has no valid port");
  }
  if (wanted == 0) {
    *port = server.bind_to_any_port(host);
    if (*port <= 0) return UnavailableError("cannot bind " + address);
  } else {
    if (!server.bind_to_port(host, wanted)) return UnavailableError("cannot bind " + address + " (in use?)");
    *port = wanted;
  }
  return OkStatus();
}

// cpp-httplib's server with the connection handling replaced: the library accepts and hands
// each socket to ServeSocket, which runs the library's request parser on a RequestStream.
class HttpServerBase::Core : public httplib::Server {
 public:
  explicit Core(HttpServerBase* owner) : owner_(owner) {}
  bool ProcessRequest(httplib::Stream& stream, bool last, bool& closed) {
    return process_request(stream, last, closed, nullptr);
  }
  int listen_fd() const { return svr_sock_; }

 private:
  bool process_and_close_socket(socket_t sock) override {
    owner_->ServeSocket(sock);
    return true;
  }
  HttpServerBase* owner_;
};

HttpServerBase::HttpServerBase(HttpServerLimits limits, SSL_CTX* tls)
    : limits_(limits), tls_(tls), core_(std::make_unique<Core>(this)) {
  std::size_t threads = limits_.max_threads;
  core_->new_task_queue = [threads] { return new ElasticPool(threads); };
  core_->set_payload_max_length(limits_.max_body_bytes);
  core_->set_keep_alive_max_count(std::max<std::size_t>(limits_.max_requests_per_connection, 1));
  core_->set_keep_alive_timeout(
      std::max<long>(1, std::chrono::duration_cast<std::chrono::seconds>(limits_.idle_timeout).count()));
  // Bodies that cannot be bounded before they are read are refused before routing reads them.
  core_->set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    auto refuse = [&](int status, const char* why) {
      close_after_answer = true;
      res.status = status;
      res.set_content(why, "text/plain");
      return httplib::Server::HandlerResponse::Handled;
    };
    if (req.has_header("Transfer-Encoding"))
      return refuse(411, "a body needs a Content-Length (Transfer-Encoding is not accepted)\n");
    if (ExpectsBody(req.method) && !req.has_header("Content-Length"))
      return refuse(411, "a body needs a Content-Length\n");
    std::string encoding = req.get_header_value("Content-Encoding");
    if (!encoding.empty() && encoding != "identity") return refuse(415, "compressed bodies are not accepted\n");
    if (ExpectsBody(req.method) && limits_.max_body_bytes_in_flight > 0) {
      std::size_t length = 0;
      try {
        length = std::stoull(req.get_header_value("Content-Length"));
      } catch (const std::exception&) {
        length = 0;
      }
      if (length <= limits_.max_body_bytes && !ReserveBody(length))  // larger: 413, skipped unread
        return refuse(503, "too many requests at once; try again\n");
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  core_->set_logger([](const httplib::Request&, const httplib::Response& res) {
    // 413: the body was skipped, not read into memory. 400/414: a malformed request.
    if (res.status == 400 || res.status == 413 || res.status == 414) close_after_answer = true;
  });
}

HttpServerBase::~HttpServerBase() {
  Stop();
}

httplib::Server& HttpServerBase::routes() {
  return *core_;
}

Status HttpServerBase::Start(const std::string& address) {
  TFJOB_RETURN_IF_ERROR(BindHttpServer(*core_, address, &port_));
  // The library listens with a backlog of 5; listen(2) again on a listening socket sets it.
  if (::listen(core_->listen_fd(), limits_.backlog) != 0)
    return UnavailableError("cannot set the listen backlog on " + address + ": " + std::strerror(errno));
  // cpp-httplib builds function-local static tables (the request methods it knows) on the first
  // request it parses. The library is not built for ThreadSanitizer, which cannot see the guard
  // that orders that build before the reads of later connection threads and reports a race.
  // One request parsed here, before any connection thread exists, builds them first.
  {
    WarmUpStream warm_up;
    bool closed = false;
    core_->ProcessRequest(warm_up, true, closed);
    close_after_answer = false;
  }
  thread_ = std::jthread([this](std::stop_token) { core_->listen_after_bind(); });
  return OkStatus();
}

void HttpServerBase::Stop() {
  stopping_ = true;
  if (core_) core_->stop();
  if (thread_.joinable()) thread_.join();
}

void HttpServerBase::ServeSocket(int fd) {
  ++connections_;
  int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  SSL* ssl = nullptr;
  bool ok = true;
  if (tls_ != nullptr) {
    ssl = SSL_new(tls_);
    ok = ssl != nullptr && SSL_set_fd(ssl, fd) == 1;
    if (ok) SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  }
  SocketConnection connection(fd, ssl, stopping_);
  if (ok && ssl != nullptr) {
    auto deadline = Clock::now() + limits_.request_timeout;
    ok = connection.Handshake(deadline);
    if (!ok && Clock::now() >= deadline) ++cut_;
  }
  if (ok) Serve(connection);
  if (ssl != nullptr) {
    if (ok) SSL_shutdown(ssl);  // one close_notify, not waiting for the peer's
    SSL_free(ssl);
  }
  ERR_clear_error();
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

bool HttpServerBase::ReserveBody(std::size_t bytes) {
  std::unique_lock lock(body_mu_);
  if (!body_cv_.wait_for(lock, limits_.request_timeout,
                         [&] { return stopping_ || body_bytes_ + bytes <= limits_.max_body_bytes_in_flight; }) ||
      stopping_)
    return false;
  body_bytes_ += bytes;
  reserved_body = bytes;
  return true;
}

void HttpServerBase::ReleaseBody(std::size_t bytes) {
  {
    std::lock_guard lock(body_mu_);
    body_bytes_ -= bytes;
  }
  reserved_body = 0;
  body_cv_.notify_all();
}

void HttpServerBase::Serve(Connection& connection) {
  RequestStream stream(connection, limits_);
  for (std::size_t served = 0; served < limits_.max_requests_per_connection && !stopping_; ++served) {
    if (!stream.Buffered() && !connection.WaitReadable(Clock::now() + limits_.idle_timeout)) {
      if (!stopping_) ++cut_;
      return;
    }
    stream.BeginRequest();
    close_after_answer = false;
    bool last = served + 1 == limits_.max_requests_per_connection;
    bool closed = false;
    bool ok = core_->ProcessRequest(stream, last, closed);
    if (reserved_body > 0) ReleaseBody(reserved_body);
    if (stream.limit_hit()) ++cut_;
    if (!ok || closed || close_after_answer || stream.limit_hit()) return;
  }
}

}  // namespace tfjob::controller
