#include "kube/curl_transport.h"

#include <curl/curl.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "kube/api_error.h"

namespace tfjob::kube {
namespace {

// What aborts a transfer from the progress callback: a stop request (shutdown), no response
// within response_timeout, or (streams) a sink that asked to stop. Shared by Send and Stream.
struct Watchdog {
  const Clock* clock;
  Clock::SteadyTime started;
  std::chrono::milliseconds response_timeout{0};
  std::stop_token abort;   // the request's
  std::stop_token stop;    // the stream's
  bool responded = false;  // a header line arrived
  bool aborted = false;
  bool response_timed_out = false;
};

int Progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* w = static_cast<Watchdog*>(user);
  if (w->abort.stop_requested() || w->stop.stop_requested()) {
    w->aborted = true;
    return 1;
  }
  if (!w->responded && w->response_timeout.count() > 0 && w->clock->SteadyNow() - w->started > w->response_timeout) {
    w->response_timed_out = true;
    return 1;
  }
  return 0;
}

struct Collect {
  Watchdog* watchdog;
  std::string body;
  std::optional<int> retry_after;
  std::vector<std::string> warnings;
  size_t max_bytes = kMaxResponseBytes;
  bool too_large = false;
};

size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  auto* c = static_cast<Collect*>(user);
  const size_t need = c->body.size() + size * n;
  if (need > c->max_bytes) {
    c->too_large = true;
    return 0;  // aborts the transfer (CURLE_WRITE_ERROR)
  }
  // Doubling, but never past the cap: a body near the cap holds at most the cap, not twice it.
  if (need > c->body.capacity()) c->body.reserve(std::min(std::max(need, 2 * c->body.capacity()), c->max_bytes));
  c->body.append(data, size * n);
  return size * n;
}

size_t ReadHeader(char* data, size_t size, size_t n, void* user) {
  auto* c = static_cast<Collect*>(user);
  c->watchdog->responded = true;
  std::string_view line(data, size * n);
  // A body announced larger than the cap is refused before a byte of it is read.
  constexpr std::string_view kLength = "content-length:";
  if (line.size() > kLength.size() && std::equal(kLength.begin(), kLength.end(), line.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      })) {
    std::string v(line.substr(kLength.size()));
    unsigned long long length = std::strtoull(v.c_str(), nullptr, 10);
    if (length > c->max_bytes) {
      c->too_large = true;
      return 0;  // aborts the transfer
    }
  }
  constexpr std::string_view kWarning = "warning:";
  if (line.size() > kWarning.size() && std::equal(kWarning.begin(), kWarning.end(), line.begin(), [](char a, char b) {
        return a == std::tolower(static_cast<unsigned char>(b));
      })) {
    if (c->warnings.size() < kMaxWarnings) {
      std::string v(line.substr(kWarning.size(), kMaxWarningBytes));
      while (!v.empty() && (v.back() == '\n' || v.back() == '\r' || v.back() == ' ')) v.pop_back();
      while (!v.empty() && v.front() == ' ') v.erase(0, 1);
      c->warnings.push_back(std::move(v));
    }
  }
  constexpr std::string_view kRetry = "retry-after:";
  if (line.size() > kRetry.size()) {
    std::string lower(line.substr(0, kRetry.size()));
    for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    if (lower == kRetry) {
      // Seconds only (an HTTP date is ignored); clamped so a hostile value cannot overflow.
      std::string v(line.substr(kRetry.size()));
      long secs = std::strtol(v.c_str(), nullptr, 10);
      c->retry_after = static_cast<int>(std::clamp(secs, 0L, 86400L));
    }
  }
  return size * n;
}

size_t StreamHeader(char*, size_t size, size_t n, void* user) {
  static_cast<Watchdog*>(user)->responded = true;
  return size * n;
}

struct StreamState {
  const ByteSink* sink;
  CURL* handle;
  long status = 0;
  std::string error_body;
  bool sink_stopped = false;
};

size_t WriteStream(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<StreamState*>(user);
  if (st->status == 0) curl_easy_getinfo(st->handle, CURLINFO_RESPONSE_CODE, &st->status);
  if (st->status != 200) {
    if (st->error_body.size() < 65536) st->error_body.append(data, std::min(size * n, 65536 - st->error_body.size()));
    return size * n;
  }
  if (!(*st->sink)(std::string_view(data, size * n))) {
    st->sink_stopped = true;
    return 0;  // aborts the transfer
  }
  return size * n;
}

// The short cause of a curl failure, for logs ("timeout", "connection refused", ...).
std::string Cause(CURLcode code) {
  switch (code) {
    case CURLE_OPERATION_TIMEDOUT: return "timeout";
    case CURLE_COULDNT_CONNECT: return "connection refused";
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY: return "cannot resolve host";
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_USE_SSL_FAILED: return "TLS error";
    case CURLE_GOT_NOTHING:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM: return "connection lost";
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_UNSUPPORTED_PROTOCOL: return "bad server reply";
    default: return "network error";
  }
}

// The Status of a failed transfer; `what` is "GET https://host/path".
Status TransferError(CURLcode code, const char* errbuf, const Watchdog& w, const std::string& what) {
  if (w.aborted) return CancelledError(what + ": aborted: stopping");
  if (w.response_timed_out)
    return DeadlineExceededError(what + ": timeout: no response within " + std::to_string(w.response_timeout.count()) +
                                 "ms");
  std::string detail = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(code);
  std::string message = what + ": " + Cause(code) + ": " + detail;
  if (code == CURLE_OPERATION_TIMEDOUT) return DeadlineExceededError(message);
  return UnavailableError(message);
}

// Strips the query: URLs in messages name the endpoint, and queries can be long.
std::string Endpoint(const std::string& server, const std::string& path) {
  return server + path.substr(0, path.find('?'));
}

}  // namespace

CurlGlobal::CurlGlobal() {
  curl_global_init(CURL_GLOBAL_DEFAULT);
}
CurlGlobal::~CurlGlobal() {
  curl_global_cleanup();
}

CurlTransport::CurlTransport(KubeConfig config, Clock& clock)
    : config_(std::move(config)), clock_(clock), tokens_(config_, clock) {}

CurlTransport::~CurlTransport() {
  for (void* h : pool_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* CurlTransport::Acquire() {
  {
    MutexLock lock(mu_);
    if (!pool_.empty()) {
      void* h = pool_.back();
      pool_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void CurlTransport::Release(void* handle) {
  MutexLock lock(mu_);
  pool_.push_back(handle);
}

void CurlTransport::Prepare(void* handle, const HttpRequest& request, void** header_list) {
  CURL* h = static_cast<CURL*>(handle);
  curl_slist** headers = reinterpret_cast<curl_slist**>(header_list);
  curl_easy_reset(h);
  std::string url = config_.server + request.path;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  // HTTP/1.1: each handle holds its own connection, so HTTP/2 would multiplex nothing here and
  // only add its framing at both ends (bench/README.md, "HTTP/1.1").
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(kConnectTimeout.count()));
  curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "tfjob-operator");
  if (!config_.ca_pem.empty()) {
    curl_blob ca{const_cast<char*>(config_.ca_pem.data()), config_.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_CAINFO_BLOB, &ca);
  }
  if (config_.insecure_skip_tls_verify) {
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!config_.client_cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(config_.client_cert_pem.data()), config_.client_cert_pem.size(), CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(config_.client_key_pem.data()), config_.client_key_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(h, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(h, CURLOPT_SSLKEYTYPE, "PEM");
    curl_easy_setopt(h, CURLOPT_SSLKEY_BLOB, &key);
  }
  *headers = curl_slist_append(*headers, ("Accept: " + request.accept).c_str());
  std::string token = tokens_.Token();
  if (!token.empty()) *headers = curl_slist_append(*headers, ("Authorization: Bearer " + token).c_str());
  if (request.method == "GET") {
    curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, request.method.c_str());
    if (!request.body.empty() || request.method != "DELETE") {
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, request.body.c_str());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
      *headers = curl_slist_append(*headers, ("Content-Type: " + request.content_type).c_str());
      // No `Expect: 100-continue` (libcurl's for large HTTP/1.1 bodies): one round trip, not two.
      *headers = curl_slist_append(*headers, "Expect:");
    }
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, *headers);
}

StatusOr<HttpResponse> CurlTransport::Send(const HttpRequest& request) {
  const std::string what = request.method + " " + Endpoint(config_.server, request.path);
  if (request.abort.stop_requested()) return CancelledError(what + ": aborted: stopping");
  CURL* h = static_cast<CURL*>(Acquire());
  if (h == nullptr) return InternalError("curl_easy_init failed");
  curl_slist* headers = nullptr;
  Prepare(h, request, reinterpret_cast<void**>(&headers));
  Watchdog watchdog{&clock_, clock_.SteadyNow(), request.response_timeout, request.abort, {}};
  Collect collect{&watchdog, {}, std::nullopt, {}, request.max_response_bytes};
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &collect);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, ReadHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &collect);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &watchdog);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    // A handle whose transfer failed may hold a half-read connection: do not pool it.
    curl_easy_cleanup(h);
    if (collect.too_large)
      return DataLossError(what + ": response body larger than the limit of " +
                           std::to_string(request.max_response_bytes) + " bytes");
    return TransferError(rc, errbuf, watchdog, what);
  }
  Release(h);
  return HttpResponse{status, std::move(collect.body), collect.retry_after, std::move(collect.warnings)};
}

Status CurlTransport::Stream(const HttpRequest& request, const ByteSink& on_bytes, std::stop_token stop) {
  const std::string what = "watch " + Endpoint(config_.server, request.path);
  if (request.abort.stop_requested() || stop.stop_requested()) return CancelledError(what + ": aborted: stopping");
  // A dedicated handle: a watch holds its connection for minutes.
  CURL* h = curl_easy_init();
  if (h == nullptr) return InternalError("curl_easy_init failed");
  curl_slist* headers = nullptr;
  Prepare(h, request, reinterpret_cast<void**>(&headers));
  Watchdog watchdog{&clock_, clock_.SteadyNow(), request.response_timeout, request.abort, stop};
  StreamState st{&on_bytes, h, 0, {}, false};
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteStream);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, StreamHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &watchdog);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &watchdog);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  // A silent connection (a server gone without a FIN) is dropped: fewer than 1 byte a second
  // over idle_timeout. The server sends bookmarks about once a minute and ends every watch
  // itself (timeoutSeconds).
  if (request.idle_timeout.count() > 0) {
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME,
                     static_cast<long>(std::max<long long>(1, request.idle_timeout.count() / 1000)));
  }
  CURLcode rc = curl_easy_perform(h);
  if (st.status == 0) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  if (watchdog.aborted || stop.stop_requested() || st.sink_stopped) return CancelledError(what + ": stopped");
  if (st.status != 0 && st.status != 200) return StatusFromHttp(st.status, st.error_body);
  if (rc != CURLE_OK) return TransferError(rc, errbuf, watchdog, what);
  return OkStatus();
}

}  // namespace tfjob::kube
