#include "kube/curl_transport.h"

#include <curl/curl.h>

#include <cstring>

#include "kube/api_error.h"

namespace tfjob::kube {
namespace {

struct Collect {
  std::string body;
  std::optional<int> retry_after;
};

size_t WriteBody(char* data, size_t size, size_t n, void* user) {
  static_cast<Collect*>(user)->body.append(data, size * n);
  return size * n;
}

size_t ReadHeader(char* data, size_t size, size_t n, void* user) {
  std::string_view line(data, size * n);
  constexpr std::string_view kRetry = "retry-after:";
  if (line.size() > kRetry.size()) {
    std::string lower(line.substr(0, kRetry.size()));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == kRetry)
      static_cast<Collect*>(user)->retry_after = std::atoi(std::string(line.substr(kRetry.size())).c_str());
  }
  return size * n;
}

struct StreamState {
  const ByteSink* sink;
  CURL* handle;
  std::stop_token stop;
  long status = 0;
  std::string error_body;
  bool sink_stopped = false;
};

size_t WriteStream(char* data, size_t size, size_t n, void* user) {
  auto* st = static_cast<StreamState*>(user);
  if (st->status == 0) curl_easy_getinfo(st->handle, CURLINFO_RESPONSE_CODE, &st->status);
  if (st->status != 200) {
    if (st->error_body.size() < 65536) st->error_body.append(data, size * n);
    return size * n;
  }
  if (!(*st->sink)(std::string_view(data, size * n))) {
    st->sink_stopped = true;
    return 0;  // aborts the transfer
  }
  return size * n;
}

int Progress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  return static_cast<StreamState*>(user)->stop.stop_requested() ? 1 : 0;
}

Status NetworkError(CURLcode code, const char* errbuf, const std::string& what) {
  std::string detail = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(code);
  StatusCode sc = code == CURLE_OPERATION_TIMEDOUT ? StatusCode::kDeadlineExceeded : StatusCode::kUnavailable;
  return Status(sc, what + ": " + detail);
}

}  // namespace

CurlGlobal::CurlGlobal() {
  curl_global_init(CURL_GLOBAL_DEFAULT);
}
CurlGlobal::~CurlGlobal() {
  curl_global_cleanup();
}

CurlTransport::CurlTransport(KubeConfig config, Clock& clock) : config_(std::move(config)), tokens_(config_, clock) {}

CurlTransport::~CurlTransport() {
  for (void* h : pool_) curl_easy_cleanup(static_cast<CURL*>(h));
}

void* CurlTransport::Acquire() {
  {
    std::lock_guard lock(mu_);
    if (!pool_.empty()) {
      void* h = pool_.back();
      pool_.pop_back();
      return h;
    }
  }
  return curl_easy_init();
}

void CurlTransport::Release(void* handle) {
  std::lock_guard lock(mu_);
  pool_.push_back(handle);
}

void CurlTransport::Prepare(void* handle, const HttpRequest& request, void** header_list) {
  CURL* h = static_cast<CURL*>(handle);
  curl_slist** headers = reinterpret_cast<curl_slist**>(header_list);
  curl_easy_reset(h);
  std::string url = config_.server + request.path;
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
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
  *headers = curl_slist_append(*headers, "Accept: application/json");
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
    }
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, *headers);
}

StatusOr<HttpResponse> CurlTransport::Send(const HttpRequest& request) {
  CURL* h = static_cast<CURL*>(Acquire());
  if (h == nullptr) return InternalError("curl_easy_init failed");
  curl_slist* headers = nullptr;
  Prepare(h, request, reinterpret_cast<void**>(&headers));
  Collect collect;
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteBody);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &collect);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, ReadHeader);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, &collect);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout.count()));
  CURLcode rc = curl_easy_perform(h);
  long status = 0;
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, nullptr);
  curl_slist_free_all(headers);
  Release(h);
  if (rc != CURLE_OK) return NetworkError(rc, errbuf, request.method + " " + config_.server + request.path);
  return HttpResponse{status, std::move(collect.body), collect.retry_after};
}

Status CurlTransport::Stream(const HttpRequest& request, const ByteSink& on_bytes, std::stop_token stop) {
  // A dedicated handle: a watch holds its connection for minutes.
  CURL* h = curl_easy_init();
  if (h == nullptr) return InternalError("curl_easy_init failed");
  curl_slist* headers = nullptr;
  Prepare(h, request, reinterpret_cast<void**>(&headers));
  StreamState st{&on_bytes, h, stop, 0, {}, false};
  char errbuf[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, WriteStream);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &st);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, Progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, &st);
  // A silent connection (server gone without a FIN) is dropped after 2 minutes; the server
  // ends every watch earlier (timeoutSeconds) and sends bookmarks.
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 120L);
  CURLcode rc = curl_easy_perform(h);
  if (st.status == 0) curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &st.status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(h);
  if (stop.stop_requested() || st.sink_stopped) return CancelledError("watch stopped");
  if (st.status != 0 && st.status != 200) return StatusFromHttp(st.status, st.error_body);
  if (rc != CURLE_OK) return NetworkError(rc, errbuf, "watch " + config_.server + request.path);
  return OkStatus();
}

}  // namespace tfjob::kube
