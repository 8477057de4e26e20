#include "controller/webhook_server.h"

#include <httplib.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <sys/stat.h>

#include <condition_variable>
#include <mutex>
#include <vector>

#include "common/thread_annotations.h"

namespace tfjob::controller {
namespace {

std::string OpenSslError() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(e, buf, sizeof buf);
  ERR_clear_error();
  return buf;
}

struct FileStamp {
  timespec mtime{};
  off_t size = -1;
  ino_t inode = 0;
  bool operator==(const FileStamp& o) const {
    return mtime.tv_sec == o.mtime.tv_sec && mtime.tv_nsec == o.mtime.tv_nsec && size == o.size && inode == o.inode;
  }
};

FileStamp Stamp(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return {};
  return {st.st_mtim, st.st_size, st.st_ino};
}

Mutex reviews_mu;
std::condition_variable_any reviews_cv;
std::size_t reviews_running TFJOB_GUARDED_BY(reviews_mu) = 0;

}  // namespace

Status CheckJsonShape(std::string_view json, std::size_t max_depth, std::size_t max_values) {
  std::size_t depth = 0, values = 1;
  bool in_string = false, escaped = false;
  for (char c : json) {
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    switch (c) {
      case '"': in_string = true; break;
      case '[':
      case '{':
        if (++depth > max_depth)
          return InvalidArgumentError("the body nests deeper than " + std::to_string(max_depth) + " levels");
        ++values;
        break;
      case ']':
      case '}':
        if (depth > 0) --depth;
        break;
      case ',':
      case ':':
        if (++values > max_values)
          return InvalidArgumentError("the body holds more than " + std::to_string(max_values) + " JSON values");
        break;
      default: break;
    }
  }
  return OkStatus();
}

std::pair<int, std::string> ServeWebhookBody(
    const std::function<std::pair<int, std::string>(const std::string&)>& handler, const std::string& body) {
  if (Status s = CheckJsonShape(body, kMaxReviewJsonDepth, kMaxReviewJsonValues); !s.ok()) {
    return {400, "{\"error\":\"" + s.message() + "\"}"};  // plain ASCII: nothing to escape
  }
  {
    MutexLock lock(reviews_mu);
    while (reviews_running >= kMaxConcurrentReviews) reviews_cv.wait(reviews_mu);
    ++reviews_running;
  }
  struct Done {
    ~Done() {
      {
        MutexLock lock(reviews_mu);
        --reviews_running;
      }
      reviews_cv.notify_one();
    }
  } done;
  return handler(body);
}

// The current certificate chain and key, reloaded when the files change. OpenSSL asks for them
// on every handshake (SSL_CTX_set_cert_cb), which is where a change is noticed.
class ServingCertificate {
 public:
  ServingCertificate(const std::string& dir, Logger log)
      : cert_path_(dir + "/tls.crt"), key_path_(dir + "/tls.key"), log_(std::move(log)) {}
  ~ServingCertificate() { Clear(); }

  Status Load() {
    FileStamp cert_stamp = Stamp(cert_path_), key_stamp = Stamp(key_path_);
    std::vector<X509*> chain;
    EVP_PKEY* key = nullptr;
    auto cleanup = [&] {
      for (X509* x : chain) X509_free(x);
      EVP_PKEY_free(key);
    };
    BIO* bio = BIO_new_file(cert_path_.c_str(), "r");
    if (bio == nullptr) return InvalidArgumentError("cannot read the webhook certificate " + cert_path_);
    while (X509* x = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) chain.push_back(x);
    BIO_free(bio);
    ERR_clear_error();  // the loop ends on "no start line"
    if (chain.empty()) return InvalidArgumentError(cert_path_ + " holds no PEM certificate");
    bio = BIO_new_file(key_path_.c_str(), "r");
    if (bio == nullptr) {
      cleanup();
      return InvalidArgumentError("cannot read the webhook key " + key_path_);
    }
    key = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
    BIO_free(bio);
    if (key == nullptr) {
      cleanup();
      return InvalidArgumentError(key_path_ + " holds no PEM private key: " + OpenSslError());
    }
    if (X509_check_private_key(chain.front(), key) != 1) {
      ERR_clear_error();
      cleanup();
      return InvalidArgumentError(key_path_ + " does not match the certificate " + cert_path_);
    }
    MutexLock lock(mu_);
    Clear();
    chain_ = std::move(chain);
    key_ = key;
    cert_stamp_ = cert_stamp;
    key_stamp_ = key_stamp;
    return OkStatus();
  }

  // Called by OpenSSL for each handshake: reload when the files changed, then install.
  int Install(SSL* ssl) {
    MaybeReload();
    MutexLock lock(mu_);
    if (chain_.empty() || key_ == nullptr) return 0;
    if (SSL_use_certificate(ssl, chain_.front()) != 1 || SSL_use_PrivateKey(ssl, key_) != 1) return 0;
    for (size_t i = 1; i < chain_.size(); ++i)
      if (SSL_add1_chain_cert(ssl, chain_[i]) != 1) return 0;
    return 1;
  }

 private:
  void MaybeReload() {
    FileStamp cert_stamp = Stamp(cert_path_), key_stamp = Stamp(key_path_);
    {
      MutexLock lock(mu_);
      if (cert_stamp == cert_stamp_ && key_stamp == key_stamp_) return;
    }
    // A rotation writes two files: until both are in place the pair may not match; keep serving
    // the old one and try again on the next handshake.
    if (Status s = Load(); !s.ok())
      log_.Warning("webhook certificate changed but cannot be loaded yet", {{"error", s.message()}});
    else
      log_.Info("webhook certificate reloaded", {{"file", cert_path_}});
  }

  void Clear() TFJOB_REQUIRES(mu_) {
    for (X509* x : chain_) X509_free(x);
    chain_.clear();
    EVP_PKEY_free(key_);
    key_ = nullptr;
  }

  const std::string cert_path_, key_path_;
  Logger log_;
  Mutex mu_;
  std::vector<X509*> chain_ TFJOB_GUARDED_BY(mu_);
  EVP_PKEY* key_ TFJOB_GUARDED_BY(mu_) = nullptr;
  FileStamp cert_stamp_ TFJOB_GUARDED_BY(mu_), key_stamp_ TFJOB_GUARDED_BY(mu_);
};

WebhookServer::WebhookServer(std::string cert_dir, Logger log, Registry* registry, HttpServerLimits limits)
    : cert_dir_(std::move(cert_dir)),
      log_(std::move(log)),
      registry_(registry),
      cert_(std::make_unique<ServingCertificate>(cert_dir_, log_)) {
  ctx_ = SSL_CTX_new(TLS_server_method());
  if (ctx_ != nullptr) {
    SSL_CTX_set_min_proto_version(ctx_, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx_, SSL_OP_NO_COMPRESSION | SSL_OP_NO_SESSION_RESUMPTION_ON_RENEGOTIATION);
    SSL_CTX_set_cert_cb(
        ctx_, [](SSL* ssl, void* arg) { return static_cast<ServingCertificate*>(arg)->Install(ssl); }, cert_.get());
  }
  server_ = std::make_unique<HttpServerBase>(limits, ctx_);
  if (registry_ != nullptr) server_->CountRefusedIn(&RefusedConnectionsCounter(*registry_, "webhook"));
}

WebhookServer::~WebhookServer() {
  Stop();
  server_.reset();
  SSL_CTX_free(ctx_);
}

void WebhookServer::Handle(const std::string& path, Handler handler) {
  Family<Counter>* requests =
      registry_ != nullptr
          ? &registry_->AddCounter("controller_runtime_webhook_requests_total",
                                   "Admission requests served, by HTTP status code.", {"webhook", "code"})
          : nullptr;
  server_->routes().Post(
      path, [path, handler = std::move(handler), requests](const httplib::Request& req, httplib::Response& res) {
        auto [code, body] = ServeWebhookBody(handler, req.body);
        res.status = code;
        res.set_content(body, "application/json");
        if (requests != nullptr) requests->With({path, std::to_string(code)}).Inc();
      });
}

Status WebhookServer::Start(const std::string& address) {
  TFJOB_RETURN_IF_ERROR(cert_->Load());
  if (ctx_ == nullptr) return InternalError("cannot set up TLS for the webhook server: " + OpenSslError());
  return server_->Start(address);
}

void WebhookServer::Stop() {
  if (server_) server_->Stop();
}

}  // namespace tfjob::controller
