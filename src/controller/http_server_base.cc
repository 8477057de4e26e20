#include "controller/http_server_base.h"

#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <openssl/err.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <string_view>
#include <vector>

#include "controller/http_socket.h"
#include "controller/http_wire.h"
#include "controller/metrics.h"

namespace tfjob::controller {
namespace {

using http_wire::ContentLength;
using http_wire::EqualsIgnoreCase;
using http_wire::ExpectsBody;
using http_wire::FormatAnswer;
using http_wire::kMaxTargetBytes;
using http_wire::ListsToken;
using http_wire::ParseHead;
using http_wire::Reason;

using Clock = HttpServerBase::Connection::Clock;

constexpr std::string_view kBusyAnswer =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

// The bytes of one connection through a buffer: the head of each request, then its body.
class Reader {
 public:
  explicit Reader(HttpServerBase::Connection& c) : c_(c) {}

  bool Buffered() const { return pos_ < buf_.size(); }
  bool timed_out() const { return timed_out_; }

  enum class Head { kOk, kClosed, kTooLarge, kCut };
  // The next request's line and headers (up to and including the blank line), at most
  // `max_bytes`, by `deadline`. kClosed: the peer ended the connection before a byte of it.
  Head ReadHead(std::size_t max_bytes, Clock::time_point deadline, std::string_view* head) {
    buf_.erase(0, pos_);
    pos_ = 0;
    std::size_t scanned = 0;
    for (;;) {
      if (DropEmptyLines()) scanned = 0;
      if (std::size_t end = FindHeadEnd(scanned); end != 0) {
        if (end > max_bytes) return Head::kTooLarge;
        *head = std::string_view(buf_).substr(0, end);
        pos_ = end;
        return Head::kOk;
      }
      scanned = buf_.size() >= 2 ? buf_.size() - 2 : 0;
      if (buf_.size() > max_bytes) return Head::kTooLarge;
      if (!Fill(deadline)) return buf_.empty() && !timed_out_ ? Head::kClosed : Head::kCut;
    }
  }

  // Exactly n body bytes into *body, by `deadline`; `store` false throws them away.
  bool ReadBody(std::size_t n, Clock::time_point deadline, std::string* body, bool store) {
    if (store) body->reserve(n);
    while (n > 0) {
      if (!Buffered()) {
        buf_.clear();
        pos_ = 0;
        if (!Fill(deadline)) return false;
      }
      std::size_t k = std::min(n, buf_.size() - pos_);
      if (store) body->append(buf_, pos_, k);
      pos_ += k;
      n -= k;
    }
    return true;
  }

 private:
  // Drops the empty lines before a request line (RFC 9112 section 2.2); whether there were any.
  bool DropEmptyLines() {
    while (pos_ < buf_.size() && (buf_[pos_] == '\r' || buf_[pos_] == '\n')) ++pos_;
    if (pos_ == 0) return false;
    buf_.erase(0, pos_);
    pos_ = 0;
    return true;
  }

  // Just past the blank line that ends the head, looking for it from buf_[from]; 0 when it has
  // not arrived yet.
  std::size_t FindHeadEnd(std::size_t from) const {
    for (std::size_t i = from; i < buf_.size(); ++i) {
      if (buf_[i] != '\n') continue;
      if (i + 1 < buf_.size() && buf_[i + 1] == '\n') return i + 2;
      if (i + 2 < buf_.size() && buf_[i + 1] == '\r' && buf_[i + 2] == '\n') return i + 3;
    }
    return 0;
  }

  bool Fill(Clock::time_point deadline) {
    char chunk[16 * 1024];
    long n = c_.Read(chunk, sizeof chunk, deadline);
    if (n <= 0) {
      if (n < 0 && Clock::now() >= deadline) timed_out_ = true;
      return false;
    }
    buf_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  HttpServerBase::Connection& c_;
  std::string buf_;
  std::size_t pos_ = 0;
  bool timed_out_ = false;
};

// The answer of the route for req: the handler's (200 unless it sets a status; 500 when it
// throws), else 404, or 405 with Allow when the path is served for other methods.
httplib::Response Route(const HttpRoutes& routes, const httplib::Request& req) {
  httplib::Response res;
  bool path_known = false;
  const HttpRoutes::Handler* handler = routes.Find(req.method, req.path, &path_known);
  if (handler == nullptr) {
    res.status = path_known ? 405 : 404;
    if (path_known) res.set_header("Allow", routes.Allowed(req.path));
    return res;
  }
  try {
    (*handler)(req, res);
    if (res.status == -1) res.status = 200;
  } catch (const std::exception&) {
    res = httplib::Response();
    res.status = 500;
  }
  return res;
}

}  // namespace

HttpRoutes& HttpRoutes::Get(const std::string& path, Handler handler) {
  by_path_[path]["GET"] = std::move(handler);
  return *this;
}

HttpRoutes& HttpRoutes::Post(const std::string& path, Handler handler) {
  by_path_[path]["POST"] = std::move(handler);
  return *this;
}

const HttpRoutes::Handler* HttpRoutes::Find(const std::string& method, const std::string& path,
                                            bool* path_known) const {
  auto p = by_path_.find(path);
  *path_known = p != by_path_.end();
  if (!*path_known) return nullptr;
  auto m = p->second.find(method == "HEAD" ? "GET" : method);
  return m == p->second.end() ? nullptr : &m->second;
}

std::string HttpRoutes::Allowed(const std::string& path) const {
  std::string out;
  auto p = by_path_.find(path);
  if (p == by_path_.end()) return out;
  for (const auto& [method, handler] : p->second) {
    out += out.empty() ? "" : ", ";
    out += method;
    if (method == "GET") out += ", HEAD";
  }
  return out;
}

// The connection threads: one per connection being served, created when none is free, at most
// `max_threads`; up to `max_queued` more connections wait for one, and Offer refuses the next.
class HttpServerBase::Pool {
 public:
  Pool(HttpServerBase* owner, std::size_t max_threads, std::size_t max_queued)
      : owner_(owner), max_threads_(std::max<std::size_t>(max_threads, 1)), max_queued_(max_queued) {}

  // Takes fd to serve, or false (the caller closes it) when the threads and the queue are full.
  bool Offer(int fd) {
    MutexLock lock(mu_);
    if (shutdown_ || held_ >= max_threads_ + max_queued_) return false;
    ++held_;
    owner_->open_ = held_;
    queued_.push_back(fd);
    if (queued_.size() > idle_ && threads_.size() < max_threads_)
      threads_.emplace_back([this] { Work(); });
    else
      cv_.notify_one();
    return true;
  }

  // Joins the threads (each ends when its connection does: Stop cuts them) and closes the
  // connections still queued.
  void Shutdown() {
    std::vector<std::jthread> threads;
    {
      MutexLock lock(mu_);
      shutdown_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (auto& t : threads) t.join();
    MutexLock lock(mu_);
    for (int fd : queued_) ::close(fd);
    held_ -= queued_.size();
    owner_->open_ = held_;
    queued_.clear();
  }

 private:
  void Work() {
    // A write to a peer that has gone raises SIGPIPE (OpenSSL writes with write(2)); these
    // threads take it as an error return instead.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    mu_.lock();
    for (;;) {
      ++idle_;
      cv_.wait(mu_, [&]() TFJOB_REQUIRES(mu_) { return shutdown_ || !queued_.empty(); });
      --idle_;
      if (shutdown_) break;
      int fd = queued_.front();
      queued_.pop_front();
      mu_.unlock();
      owner_->ServeSocket(fd);
      mu_.lock();
      --held_;
      owner_->open_ = held_;
    }
    mu_.unlock();
  }

  HttpServerBase* const owner_;
  const std::size_t max_threads_, max_queued_;
  Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<int> queued_ TFJOB_GUARDED_BY(mu_);
  std::vector<std::jthread> threads_ TFJOB_GUARDED_BY(mu_);
  std::size_t idle_ TFJOB_GUARDED_BY(mu_) = 0;
  std::size_t held_ TFJOB_GUARDED_BY(mu_) = 0;  // queued or being served
  bool shutdown_ TFJOB_GUARDED_BY(mu_) = false;
};

Counter& RefusedConnectionsCounter(Registry& registry, const std::string& server) {
  return registry
      .AddCounter("tfjob_http_refused_connections_total",
                  "Connections closed at once because all the server's threads were busy and its queue was full.",
                  {"server"})
      .With({server});
}

HttpServerBase::HttpServerBase(HttpServerLimits limits, SSL_CTX* tls)
    : limits_(limits),
      tls_(tls),
      pool_(std::make_unique<Pool>(this, limits.max_threads, limits.max_queued_connections)) {}

HttpServerBase::~HttpServerBase() {
  Stop();
}

Status HttpServerBase::Start(const std::string& address) {
  std::string host, port_text;
  if (Status s = SplitAddress(address, &host, &port_text); !s.ok()) return s;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int e = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found); e != 0)
    return InvalidArgumentError("address \"" + address + "\": " + gai_strerror(e));
  std::string error = "no address";
  if (listen_fd_ < 0) listen_fd_ = ListenOnFirst(found, limits_.backlog, &error);
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) return UnavailableError("cannot bind " + address + ": " + error);
  port_ = LocalPort(listen_fd_);
  acceptor_ = std::jthread([this](std::stop_token stop) { Accept(stop); });
  return OkStatus();
}

void HttpServerBase::Accept(std::stop_token stop) {
  while (!stop.stop_requested() && !stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;  // slices, so that Stop is noticed within 100 ms
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors or memory: the connection stays in the backlog; try again shortly.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (!pool_->Offer(fd)) Refuse(fd);
  }
}

void HttpServerBase::Refuse(int fd) {
  ++refused_;
  if (refused_counter_ != nullptr) refused_counter_->Inc();
  // A plain HTTP client learns why; a TLS one sees its handshake end.
  if (tls_ == nullptr) (void)::send(fd, kBusyAnswer.data(), kBusyAnswer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
}

void HttpServerBase::Stop() {
  stopping_ = true;
  if (acceptor_.joinable()) {
    acceptor_.request_stop();
    acceptor_.join();
  }
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  { MutexLock lock(body_mu_); }
  body_cv_.notify_all();
  if (pool_) pool_->Shutdown();
}

void HttpServerBase::ServeSocket(int fd) {
  ++connections_;
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
  MutexLock lock(body_mu_);
  if (!body_cv_.wait_for(body_mu_, limits_.request_timeout,
                         [&]() TFJOB_REQUIRES(body_mu_) {
                           return stopping_ || body_bytes_ + bytes <= limits_.max_body_bytes_in_flight;
                         }) ||
      stopping_)
    return false;
  body_bytes_ += bytes;
  return true;
}

void HttpServerBase::ReleaseBody(std::size_t bytes) {
  {
    MutexLock lock(body_mu_);
    body_bytes_ -= bytes;
  }
  body_cv_.notify_all();
}

// One connection being served (HttpServerBase::Serve): its requests one after the other, each
// step a function; a step that returns false has ended the connection (after an answer, when the
// request deserves one).
class HttpServerBase::Session {
 public:
  Session(HttpServerBase& server, Connection& connection)
      : server_(server),
        limits_(server.limits_),
        connection_(connection),
        reader_(connection),
        idle_seconds_(
            std::max<long>(1, std::chrono::duration_cast<std::chrono::seconds>(limits_.idle_timeout).count())) {
    connection.Addresses(remote_ip_, remote_port_, local_ip_, local_port_);
  }

  // The request after `served` others; whether the connection goes on to the next one.
  bool ServeOne(std::size_t served) {
    if (!AwaitRequest()) return false;
    const auto deadline = Clock::now() + limits_.request_timeout;
    httplib::Request req;
    if (!ReadHead(deadline, req)) return false;
    const bool close = ClosesAfter(req, served);
    std::size_t body_bytes = 0;
    if (!CheckFraming(req, &body_bytes) || !ReadBody(req, body_bytes, deadline)) return false;
    httplib::Response res = Route(server_.routes_, req);
    ReleaseReserved();
    const bool head_only = req.method == "HEAD";
    req = httplib::Request();  // the body goes before the answer is written
    return Write(res, head_only, close || server_.stopping_, limits_.max_requests_per_connection - served - 1) &&
           !close;
  }

 private:
  // Waits up to idle_timeout for the first byte of a request.
  bool AwaitRequest() {
    if (reader_.Buffered() || connection_.WaitReadable(Clock::now() + limits_.idle_timeout)) return true;
    if (!server_.stopping_) ++server_.cut_;
    return false;
  }

  // Reads the request line and headers by `deadline`, within max_header_bytes, and parses them
  // into req.
  bool ReadHead(Clock::time_point deadline, httplib::Request& req) {
    std::string_view head;
    switch (reader_.ReadHead(limits_.max_header_bytes, deadline, &head)) {
      case Reader::Head::kClosed: return false;
      case Reader::Head::kCut: CountIfTimedOut(); return false;
      case Reader::Head::kTooLarge:
        ++server_.cut_;
        return Refuse(431,
                      "the request line and headers are over " + std::to_string(limits_.max_header_bytes) + " bytes\n");
      case Reader::Head::kOk: break;
    }
    return Parse(head, req);
  }

  bool Parse(std::string_view head, httplib::Request& req) {
    int status = ParseHead(head, req);
    if (status == 400) return Refuse(400, "malformed request\n");
    if (status == 414) return Refuse(414, "the request target is over " + std::to_string(kMaxTargetBytes) + " bytes\n");
    if (status != 0) return Refuse(status, "only HTTP/1.0 and HTTP/1.1 are served\n");
    req.remote_addr = remote_ip_;
    req.remote_port = remote_port_;
    req.local_addr = local_ip_;
    req.local_port = local_port_;
    return true;
  }

  // Whether the connection closes after this request's answer: its last one, or the client's wish.
  bool ClosesAfter(const httplib::Request& req, std::size_t served) const {
    const std::string connection_header = req.get_header_value("Connection");
    return served + 1 == limits_.max_requests_per_connection || ListsToken(connection_header, "close") ||
           (req.version == "HTTP/1.0" && !ListsToken(connection_header, "keep-alive"));
  }

  // Bodies that cannot be bounded before they are read are refused unread; *body_bytes: the
  // Content-Length (0 without one).
  bool CheckFraming(const httplib::Request& req, std::size_t* body_bytes) {
    int status = 0;
    long long length = ContentLength(req, &status);
    if (status != 0) return Refuse(400, "malformed Content-Length\n");
    if (req.has_header("Transfer-Encoding"))
      return Refuse(411, "a body needs a Content-Length (Transfer-Encoding is not accepted)\n");
    if (ExpectsBody(req.method) && length < 0) return Refuse(411, "a body needs a Content-Length\n");
    std::string encoding = req.get_header_value("Content-Encoding");
    if (!encoding.empty() && !EqualsIgnoreCase(encoding, "identity"))
      return Refuse(415, "compressed bodies are not accepted\n");
    *body_bytes = length > 0 ? static_cast<std::size_t>(length) : 0;
    return true;
  }

  // Reads the body into req.body by `deadline`: within max_body_bytes, with room in
  // max_body_bytes_in_flight (reserved until ReleaseReserved), after a 100 Continue when the
  // client waits for one.
  bool ReadBody(httplib::Request& req, std::size_t body_bytes, Clock::time_point deadline) {
    const bool expects_continue =
        req.version == "HTTP/1.1" && ListsToken(req.get_header_value("Expect"), "100-continue");
    if (body_bytes > limits_.max_body_bytes) return RefuseTooLarge(body_bytes, expects_continue, deadline);
    if (ExpectsBody(req.method) && limits_.max_body_bytes_in_flight > 0) {
      if (!server_.ReserveBody(body_bytes)) return Refuse(503, "too many requests at once; try again\n");
      reserved_ = body_bytes;
    }
    if (expects_continue && body_bytes > 0 && !WriteContinue()) {
      ReleaseReserved();
      return false;
    }
    if (body_bytes > 0 && !reader_.ReadBody(body_bytes, deadline, &req.body, true)) {
      ReleaseReserved();
      CountIfTimedOut();
      return false;
    }
    return true;
  }

  // Answered at once; the body is then read and thrown away (unless the client waits for a 100
  // Continue), so that closing does not reset the connection under the answer.
  bool RefuseTooLarge(std::size_t body_bytes, bool expects_continue, Clock::time_point deadline) {
    Refuse(413, "the body is over " + std::to_string(limits_.max_body_bytes) + " bytes\n");
    if (!expects_continue) reader_.ReadBody(body_bytes, deadline, nullptr, false);
    return false;
  }

  bool WriteContinue() {
    constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    return connection_.Write(kContinue.data(), kContinue.size(), Clock::now() + limits_.write_timeout);
  }

  void ReleaseReserved() {
    if (reserved_ > 0) server_.ReleaseBody(reserved_);
    reserved_ = 0;
  }

  // A read that ran out of time (not one the server's stop ended) cuts the connection.
  void CountIfTimedOut() {
    if (reader_.timed_out() && !server_.stopping_) ++server_.cut_;
  }

  // Writes res with the framing headers (Keep-Alive: `left` more requests); false when it cannot
  // be written.
  bool Write(const httplib::Response& res, bool head_only, bool close, std::size_t left) {
    std::string out = FormatAnswer(res, head_only, close, idle_seconds_, left);
    return connection_.Write(out.data(), out.size(), Clock::now() + limits_.write_timeout);
  }

  // Answers `status` with the text `why` and closes; false, to end the connection.
  bool Refuse(int status, const std::string& why) {
    httplib::Response res;
    res.status = status;
    res.set_content(why, "text/plain");
    Write(res, false, true, 0);
    return false;
  }

  HttpServerBase& server_;
  const HttpServerLimits& limits_;
  Connection& connection_;
  Reader reader_;
  const long idle_seconds_;
  std::string remote_ip_, local_ip_;
  int remote_port_ = 0, local_port_ = 0;
  std::size_t reserved_ = 0;  // of max_body_bytes_in_flight, by the current request
};

void HttpServerBase::Serve(Connection& connection) {
  Session session(*this, connection);
  for (std::size_t served = 0; served < limits_.max_requests_per_connection && !stopping_; ++served)
    if (!session.ServeOne(served)) return;
}

}  // namespace tfjob::controller
