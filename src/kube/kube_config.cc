#include "kube/kube_config.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "api/json_fields.h"
#include "api/manifest.h"

namespace tfjob::kube {
namespace {

using nlohmann::json;

StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot read " + path + ": " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty() || p[0] == '/' || base_dir.empty()) return p;
  return (std::filesystem::path(base_dir) / p).string();
}

StatusOr<std::string> Base64Decode(const std::string& in, const std::string& what) {
  static const std::string kChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -8;
  for (char c : in) {
    if (c == '=' || c == '\n' || c == '\r' || c == ' ') continue;
    auto pos = kChars.find(c);
    if (pos == std::string::npos) return InvalidArgumentError(what + " is not valid base64");
    val = (val << 6) + static_cast<int>(pos);
    bits += 6;
    if (bits >= 0) {
      out.push_back(static_cast<char>((val >> bits) & 0xFF));
      bits -= 8;
    }
  }
  return out;
}

// The `inner` object of the entry called `name` in the list cfg[list_key] (no copies: the
// result points into `cfg`).
const json* Named(const json& cfg, const char* list_key, const std::string& name, const char* inner) {
  auto list = cfg.find(list_key);
  if (list == cfg.end() || !list->is_array()) return nullptr;
  for (const json& e : *list)
    if (e.is_object() && e.value("name", json()) == name && e.contains(inner) && e[inner].is_object()) return &e[inner];
  return nullptr;
}

// `<field>-data` (base64, inline) or `<field>` (a path).
StatusOr<std::string> InlineOrFile(const json& obj, const std::string& field, const std::string& base_dir,
                                   const std::string& what) {
  auto data = obj.find(field + "-data");
  if (data != obj.end() && data->is_string()) return Base64Decode(*data, what + " (" + field + "-data)");
  auto file = obj.find(field);
  if (file != obj.end() && file->is_string() && !file->get<std::string>().empty()) {
    auto text = ReadFile(Resolve(base_dir, *file));
    if (!text.ok()) return InvalidArgumentError(what + ": " + text.status().message());
    return text;
  }
  return std::string();
}

}  // namespace

StatusOr<KubeConfig> ParseKubeconfig(std::string_view text, const std::string& base_dir, const std::string& context) {
  auto docs = api::ParseManifest(text);
  if (!docs.ok()) return InvalidArgumentError("kubeconfig: " + docs.status().message());
  if (docs->size() != 1 || !(*docs)[0].object.is_object())
    return InvalidArgumentError("kubeconfig: not a Config object");
  const json& cfg = (*docs)[0].object;
  std::string ctx_name = context;
  if (ctx_name.empty()) ctx_name = api::StringField(cfg, "current-context");
  if (ctx_name.empty()) return InvalidArgumentError("kubeconfig: no current-context (and no --context given)");
  const json* ctx = Named(cfg, "contexts", ctx_name, "context");
  if (ctx == nullptr) return InvalidArgumentError("kubeconfig: context \"" + ctx_name + "\" not found");
  std::string cluster_name = api::StringField(*ctx, "cluster");
  std::string user_name = api::StringField(*ctx, "user");
  const json* cluster = Named(cfg, "clusters", cluster_name, "cluster");
  if (cluster == nullptr)
    return InvalidArgumentError("kubeconfig: cluster \"" + cluster_name + "\" of context \"" + ctx_name +
                                "\" not found");
  KubeConfig out;
  out.source = "context " + ctx_name;
  out.ns = api::StringField(*ctx, "namespace");
  out.server = api::StringField(*cluster, "server");
  if (out.server.empty()) return InvalidArgumentError("kubeconfig: cluster \"" + cluster_name + "\" has no server");
  if (!out.server.starts_with("https://") && !out.server.starts_with("http://"))
    return InvalidArgumentError("kubeconfig: server \"" + out.server + "\" is not an http(s) URL");
  while (!out.server.empty() && out.server.back() == '/') out.server.pop_back();
  TFJOB_ASSIGN_OR_RETURN(out.ca_pem, InlineOrFile(*cluster, "certificate-authority", base_dir, "cluster CA"));
  auto insecure = cluster->find("insecure-skip-tls-verify");
  out.insecure_skip_tls_verify = insecure != cluster->end() && *insecure == true;
  if (!user_name.empty()) {
    const json* user = Named(cfg, "users", user_name, "user");
    if (user == nullptr)
      return InvalidArgumentError("kubeconfig: user \"" + user_name + "\" of context \"" + ctx_name + "\" not found");
    TFJOB_ASSIGN_OR_RETURN(out.client_cert_pem,
                           InlineOrFile(*user, "client-certificate", base_dir, "client certificate"));
    TFJOB_ASSIGN_OR_RETURN(out.client_key_pem, InlineOrFile(*user, "client-key", base_dir, "client key"));
    if (out.client_cert_pem.empty() != out.client_key_pem.empty())
      return InvalidArgumentError("kubeconfig: user \"" + user_name +
                                  "\" has a client certificate without a key, or a key without a certificate");
    out.token = api::StringField(*user, "token");
    if (auto tf = user->find("tokenFile"); tf != user->end() && tf->is_string())
      out.token_file = Resolve(base_dir, *tf);
    if (user->contains("exec") || user->contains("auth-provider"))
      if (out.token.empty() && out.token_file.empty() && out.client_cert_pem.empty())
        return InvalidArgumentError(
            "kubeconfig: user \"" + user_name +
            "\" uses exec/auth-provider credentials, which tfjob does not run; use a token or client certificate");
  }
  return out;
}

StatusOr<KubeConfig> LoadKubeconfigFile(const std::string& path, const std::string& context) {
  auto text = ReadFile(path);
  if (!text.ok()) return InvalidArgumentError("kubeconfig: " + text.status().message());
  auto cfg = ParseKubeconfig(*text, std::filesystem::path(path).parent_path().string(), context);
  if (!cfg.ok()) return Status(cfg.status().code(), path + ": " + cfg.status().message());
  cfg->source = "kubeconfig " + path + " " + cfg->source;
  return cfg;
}

StatusOr<KubeConfig> InClusterConfig(const std::map<std::string, std::string>& env, const std::string& sa_dir) {
  auto host = env.find("KUBERNETES_SERVICE_HOST");
  auto port = env.find("KUBERNETES_SERVICE_PORT");
  if (host == env.end() || port == env.end() || host->second.empty() || port->second.empty())
    return NotFoundError("not in a cluster (KUBERNETES_SERVICE_HOST/PORT unset)");
  KubeConfig out;
  std::string h = host->second;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  out.server = "https://" + h + ":" + port->second;
  out.token_file = sa_dir + "/token";
  auto token = ReadFile(out.token_file);
  if (!token.ok()) return InvalidArgumentError("in-cluster config: " + token.status().message());
  auto ca = ReadFile(sa_dir + "/ca.crt");
  if (!ca.ok()) return InvalidArgumentError("in-cluster config: " + ca.status().message());
  out.ca_pem = *ca;
  if (auto ns = ReadFile(sa_dir + "/namespace"); ns.ok()) {
    out.ns = *ns;
    while (!out.ns.empty() && (out.ns.back() == '\n' || out.ns.back() == ' ')) out.ns.pop_back();
  }
  out.source = "in-cluster";
  return out;
}

StatusOr<KubeConfig> ResolveConfig(const std::string& flag, const std::string& context,
                                   const std::map<std::string, std::string>& env) {
  if (!flag.empty()) return LoadKubeconfigFile(flag, context);
  auto in_cluster = InClusterConfig(env);
  if (in_cluster.ok() || !IsNotFound(in_cluster.status())) return in_cluster;
  if (auto kc = env.find("KUBECONFIG"); kc != env.end() && !kc->second.empty()) {
    std::string first = kc->second.substr(0, kc->second.find(':'));
    return LoadKubeconfigFile(first, context);
  }
  if (auto home = env.find("HOME"); home != env.end()) {
    std::string path = home->second + "/.kube/config";
    if (std::filesystem::exists(path)) return LoadKubeconfigFile(path, context);
  }
  return NotFoundError(
      "no Kubernetes configuration: not in a cluster, no --kubeconfig, no $KUBECONFIG, no ~/.kube/config");
}

TokenSource::TokenSource(const KubeConfig& config, Clock& clock)
    : clock_(clock), static_token_(config.token), file_(config.token_file) {}

std::string TokenSource::Token() {
  if (file_.empty()) return static_token_;
  std::lock_guard lock(mu_);
  auto now = clock_.SteadyNow();
  if (!read_ || now - read_at_ >= std::chrono::minutes(1)) {
    if (auto t = ReadFile(file_); t.ok()) {
      cached_ = *t;
      while (!cached_.empty() && (cached_.back() == '\n' || cached_.back() == ' ')) cached_.pop_back();
    }
    read_at_ = now;
    read_ = true;
  }
  return cached_.empty() ? static_token_ : cached_;
}

}  // namespace tfjob::kube
