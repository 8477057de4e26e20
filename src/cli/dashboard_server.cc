#include "cli/dashboard_server.h"

#include <sys/random.h>

#include <httplib.h>

#include <cstdio>
#include <string_view>

#include "api/json_fields.h"
#include "api/manifest.h"
#include "api/object_key.h"

// The pages, compiled in (dashboard_assets.S).
extern "C" {
extern const char tfjob_dash_index_start[], tfjob_dash_index_end[];
extern const char tfjob_dash_js_start[], tfjob_dash_js_end[];
extern const char tfjob_dash_css_start[], tfjob_dash_css_end[];
extern const char tfjob_dash_icon_start[], tfjob_dash_icon_end[];
}

namespace tfjob::cli::dashboard {
namespace {

using nlohmann::json;

constexpr const char* kCsp =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

std::string_view Asset(const char* start, const char* end) {
  return {start, static_cast<size_t>(end - start)};
}

std::string Query(const httplib::Request& req) {
  auto q = req.target.find('?');
  return q == std::string::npos ? "" : req.target.substr(q + 1);
}

int64_t IntParam(const std::string& query, std::string_view key) {
  std::string v = QueryParam(query, key);
  if (v.empty() || v.size() > 18 || v.find_first_not_of("0123456789") != std::string::npos) return 0;
  return std::stoll(v);
}

void SecurityHeaders(httplib::Response& res) {
  res.set_header("Content-Security-Policy", kCsp);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("Cache-Control", "no-store");
  res.set_header("Cross-Origin-Opener-Policy", "same-origin");
  res.set_header("Cross-Origin-Resource-Policy", "same-origin");
}

void Json(httplib::Response& res, const json& body, int status = 200) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void Error(httplib::Response& res, int status, const std::string& message) {
  Json(res, {{"error", message}}, status);
}

bool Named(const std::string& ns, const std::string& name) {
  return !ns.empty() && !name.empty() && ns.size() <= 253 && name.size() <= 253;
}

}  // namespace

controller::HttpServerLimits ServerOptions::DefaultLimits() {
  controller::HttpServerLimits l;
  l.max_body_bytes = 4096;  // an action: {"action":...,"ns":...,"name":...}
  l.max_body_bytes_in_flight = 1 << 20;
  l.max_header_bytes = 16 * 1024;
  l.idle_timeout = std::chrono::milliseconds(30'000);
  l.request_timeout = std::chrono::milliseconds(10'000);
  l.write_timeout = std::chrono::milliseconds(10'000);
  l.max_threads = 96;
  l.max_queued_connections = 32;
  l.backlog = 128;
  return l;
}

StatusOr<bool> LoopbackAddress(const std::string& address) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size())
    return InvalidArgumentError("--address \"" + address + "\" is not HOST:PORT");
  std::string host = address.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  return host == "127.0.0.1" || host == "::1" || host == "localhost";
}

std::string RandomToken() {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n > 0) got += static_cast<size_t>(n);
  }
  std::string out;
  char hex[3];
  for (unsigned char b : bytes) {
    std::snprintf(hex, sizeof hex, "%02x", b);
    out += hex;
  }
  return out;
}

Server::Server(Model& model, ServerOptions options, Actions* actions, LogDemand* logs)
    : model_(model), options_(std::move(options)), actions_(actions), logs_(logs), csrf_(RandomToken()) {}

Server::~Server() {
  Stop();
}

Status Server::Start() {
  TFJOB_ASSIGN_OR_RETURN(loopback_, LoopbackAddress(options_.address));
  if (!loopback_) token_ = RandomToken();
  http_ = std::make_unique<controller::HttpServerBase>(options_.limits);
  Routes();
  TFJOB_RETURN_IF_ERROR(http_->Start(options_.address));
  port_ = http_->port();
  return OkStatus();
}

void Server::Stop() {
  model_.Close();
  if (http_) http_->Stop();
}

std::string Server::Url() const {
  std::string host = options_.address.substr(0, options_.address.rfind(':'));
  if (host.empty() || host == "0.0.0.0" || host == "[::]") host = "127.0.0.1";
  return "http://" + host + ":" + std::to_string(port()) + "/" + (token_.empty() ? "" : "?token=" + token_);
}

Server::Handler Server::Guarded(Handler inner) {
  return [this, inner = std::move(inner)](const httplib::Request& req, httplib::Response& res) {
    SecurityHeaders(res);
    if (!HostAllowed(req.get_header_value("Host"), req.local_port, loopback_)) {
      res.status = 403;
      res.set_content("tfjob dashboard: the Host header must be 127.0.0.1:PORT or localhost:PORT\n", "text/plain");
      return;
    }
    if (!token_.empty()) {
      const std::string query_token = QueryParam(Query(req), "token");
      if (!SameSecret(token_, RequestToken(query_token, req.get_header_value("Cookie")))) {
        res.status = 403;
        res.set_content("tfjob dashboard: open the URL with the access token tfjob printed\n", "text/plain");
        return;
      }
      if (!query_token.empty())
        res.set_header("Set-Cookie", "tfjob_dashboard=" + token_ + "; Path=/; HttpOnly; SameSite=Strict");
    }
    inner(req, res);
  };
}

void Server::Routes() {
  auto asset = [this](const char* start, const char* end, const char* type) {
    return Guarded([body = Asset(start, end), type](const httplib::Request&, httplib::Response& res) {
      res.set_content(std::string(body), type);
    });
  };
  auto& r = http_->routes();
  r.Get("/", asset(tfjob_dash_index_start, tfjob_dash_index_end, "text/html; charset=utf-8"));
  r.Get("/job", asset(tfjob_dash_index_start, tfjob_dash_index_end, "text/html; charset=utf-8"));
  r.Get("/app.js", asset(tfjob_dash_js_start, tfjob_dash_js_end, "text/javascript; charset=utf-8"));
  r.Get("/app.css", asset(tfjob_dash_css_start, tfjob_dash_css_end, "text/css; charset=utf-8"));
  r.Get("/favicon.svg", asset(tfjob_dash_icon_start, tfjob_dash_icon_end, "image/svg+xml"));
  r.Get("/api/config", Guarded([this](const auto& req, auto& res) { Config(req, res); }));
  r.Get("/api/jobs", Guarded([this](const auto& req, auto& res) { Jobs(req, res); }));
  r.Get("/api/job", Guarded([this](const auto& req, auto& res) { Job(req, res); }));
  r.Get("/api/logs", Guarded([this](const auto& req, auto& res) { JobLogs(req, res); }));
  r.Post("/api/action", Guarded([this](const auto& req, auto& res) { Action(req, res); }));
}

void Server::Config(const httplib::Request&, httplib::Response& res) {
  Json(res, {{"mode", options_.mode},
             {"title", options_.title},
             {"actions", options_.allow_actions && actions_ != nullptr},
             {"csrf", csrf_}});
}

void Server::MaybeWait(const httplib::Request& req, Model::Watched what, const std::string& key, int64_t since) {
  if (QueryParam(Query(req), "wait") != "1") return;
  if (waiters_.fetch_add(1) < options_.max_waiters) model_.WaitAfter(what, key, since, options_.long_poll);
  waiters_.fetch_sub(1);
}

void Server::Jobs(const httplib::Request& req, httplib::Response& res) {
  const int64_t since = IntParam(Query(req), "since");
  MaybeWait(req, Model::Watched::kList, "", since);
  Json(res, model_.List(since));
}

void Server::Job(const httplib::Request& req, httplib::Response& res) {
  const std::string q = Query(req), ns = QueryParam(q, "ns"), name = QueryParam(q, "name");
  if (!Named(ns, name)) return Error(res, 400, "ns and name are required");
  const std::string key = api::ObjectKey{ns, name}.String();
  MaybeWait(req, Model::Watched::kJob, key, IntParam(q, "since"));
  auto page = model_.Page(ns, name);
  if (!page) return Error(res, 404, "no TFJob " + key + " (deleted, or not watched)");
  Json(res, *page);
}

void Server::JobLogs(const httplib::Request& req, httplib::Response& res) {
  const std::string q = Query(req), ns = QueryParam(q, "ns"), name = QueryParam(q, "name");
  if (!Named(ns, name)) return Error(res, 400, "ns and name are required");
  if (logs_ != nullptr) logs_->Want(ns, name);
  const int64_t after = IntParam(q, "after");
  MaybeWait(req, Model::Watched::kLogs, api::ObjectKey{ns, name}.String(), after);
  Json(res, model_.Logs(ns, name, after));
}

void Server::Action(const httplib::Request& req, httplib::Response& res) {
  if (!options_.allow_actions || actions_ == nullptr)
    return Error(res, 403, "this dashboard is read-only (start it with --allow-actions)");
  ActionRequest a{req.get_header_value("Content-Type"), req.get_header_value("X-Tfjob-Csrf"),
                  req.get_header_value("Origin"), req.get_header_value("Host")};
  if (Status s = CheckAction(a, csrf_); !s.ok()) return Error(res, 403, s.message());
  auto body = api::ParseJsonStrict(req.body);
  if (!body.ok() || !body->is_object()) return Error(res, 400, "the body must be a JSON object");
  const std::string action = api::StringField(*body, "action"), ns = api::StringField(*body, "ns"),
                    name = api::StringField(*body, "name");
  if (action != "suspend" && action != "resume" && action != "delete")
    return Error(res, 400, "action must be suspend, resume or delete");
  if (!Named(ns, name)) return Error(res, 400, "ns and name are required");
  auto done = actions_->Act(action, ns, name);
  if (!done.ok()) return Error(res, done.status().code() == StatusCode::kNotFound ? 404 : 502, done.status().message());
  Json(res, {{"message", *done}});
}

}  // namespace tfjob::cli::dashboard
