#pragma once
// The dashboard's HTTP server (docs/dashboard.md): the pages compiled into tfjob
// (dashboard_assets.S) and a JSON API over a Model, on controller::HttpServerBase (the bounded
// server the operator's endpoints share: connections, threads, header and body bytes, time-outs).
// Safe by default: 127.0.0.1 only; any other address gets a random access token the URL carries
// (then a cookie); the Host header must name the server (DNS rebinding); no CORS header is ever
// sent; a strict Content-Security-Policy (scripts and styles from the server only, no inline
// code); actions only with --allow-actions, each with the page's CSRF token. Live updates are long
// polls answered from the model when it changes (no polling of the API server).

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "cli/dashboard_model.h"
#include "common/status.h"
#include "controller/http_server_base.h"

namespace tfjob::cli::dashboard {

// Suspend, resume, delete (cluster only).
class Actions {
 public:
  virtual ~Actions() = default;
  // `action`: "suspend", "resume" or "delete". The message to show on success.
  virtual StatusOr<std::string> Act(const std::string& action, const std::string& ns, const std::string& name) = 0;
};

// Told when a page reads a job's logs, so that the source streams them (cluster: LogFollower).
class LogDemand {
 public:
  virtual ~LogDemand() = default;
  virtual void Want(const std::string& ns, const std::string& name) = 0;
};

struct ServerOptions {
  std::string address = "127.0.0.1:8090";
  bool allow_actions = false;
  std::string mode = "cluster";  // "cluster" or "local" (tfjob run)
  std::string title;             // the context, or the job file
  std::chrono::milliseconds long_poll{20000};
  size_t max_waiters = 64;  // long polls held at once; more are answered at once
  controller::HttpServerLimits limits = DefaultLimits();
  static controller::HttpServerLimits DefaultLimits();
};

// "127.0.0.1:8090", "localhost:80", "[::1]:80" -> true; any other host ("0.0.0.0", "10.0.0.5",
// even "127.0.0.2") -> false: it gets an access token. kInvalidArgument when the address is not
// HOST:PORT.
StatusOr<bool> LoopbackAddress(const std::string& address);
// 32 random hex digits (getrandom).
std::string RandomToken();

class Server {
 public:
  Server(Model& model, ServerOptions options, Actions* actions = nullptr, LogDemand* logs = nullptr);
  ~Server();
  Status Start();
  void Stop();
  int port() const { return port_.load(); }
  // What to open: "http://127.0.0.1:PORT/" (with "?token=..." when one is needed).
  std::string Url() const;
  const std::string& token() const { return token_; }
  const std::string& csrf() const { return csrf_; }

 private:
  using Handler = std::function<void(const httplib::Request&, httplib::Response&)>;
  Handler Guarded(Handler inner);
  void Routes();
  void Config(const httplib::Request& req, httplib::Response& res);
  void Jobs(const httplib::Request& req, httplib::Response& res);
  void Job(const httplib::Request& req, httplib::Response& res);
  void JobLogs(const httplib::Request& req, httplib::Response& res);
  void Action(const httplib::Request& req, httplib::Response& res);
  // Waits for a change when the request asks (wait=1) and a waiter slot is free.
  void MaybeWait(const httplib::Request& req, Model::Watched what, const std::string& key, int64_t since);

  Model& model_;
  const ServerOptions options_;
  Actions* const actions_;
  LogDemand* const logs_;
  bool loopback_ = true;
  std::string token_;  // empty on 127.0.0.1
  const std::string csrf_;
  std::atomic<int> port_{0};
  std::atomic<size_t> waiters_{0};
  std::unique_ptr<controller::HttpServerBase> http_;
};

}  // namespace tfjob::cli::dashboard
