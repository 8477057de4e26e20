#include "kube/kube_config.h"

#include <cctype>
#include <filesystem>
#include <set>

#include "api/json_fields.h"
#include "api/manifest.h"
#include "common/base64.h"
#include "common/file_reader.h"

namespace tfjob::kube {
namespace {

using nlohmann::json;

StatusOr<std::string> ReadFile(const std::string& path, size_t max_bytes) {
  return ReadFileBounded(path, max_bytes);
}

// A token goes into an HTTP header: it must be one line of printable characters.
Status CheckToken(const std::string& token, const std::string& what) {
  for (char c : token)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      return InvalidArgumentError(what + " holds a control character (a token is one line of text)");
  return OkStatus();
}

std::string TrimToken(std::string t) {
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ' || t.back() == '\t')) t.pop_back();
  return t;
}

// A PEM block of the kind curl needs (the CA and client certificate: CERTIFICATE; the key: any
// PRIVATE KEY), so that garbage fails here, naming the field, rather than at every TLS handshake.
Status CheckPem(const std::string& pem, bool key, const std::string& what) {
  if (pem.empty()) return OkStatus();
  bool ok = key ? pem.find("-----BEGIN ") != std::string::npos && pem.find("PRIVATE KEY-----") != std::string::npos
                : pem.find("-----BEGIN CERTIFICATE-----") != std::string::npos;
  if (!ok)
    return InvalidArgumentError(what + " is not PEM (no -----BEGIN " + (key ? "... PRIVATE KEY" : "CERTIFICATE") +
                                "----- block)");
  return OkStatus();
}

// scheme://host[:port][/path]: enough to refuse what curl would misread (spaces, an empty host,
// a bad port, user info, a query).
Status CheckServerUrl(const std::string& url) {
  auto bad = [&](const std::string& why) {
    return InvalidArgumentError("kubeconfig: server \"" + url + "\" is not a usable URL: " + why);
  };
  size_t scheme_end = url.find("://");
  std::string rest = url.substr(scheme_end + 3);
  size_t path_at = rest.find('/');
  std::string authority = rest.substr(0, path_at);
  std::string path = path_at == std::string::npos ? "" : rest.substr(path_at);
  for (char c : url)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f || c == '"' || c == '<' || c == '>' || c == '\\')
      return bad("it holds a space or a control character");
  if (authority.find('@') != std::string::npos) return bad("user info is not supported");
  if (path.find_first_of("?#") != std::string::npos) return bad("a query or fragment is not supported");
  std::string host = authority, port;
  if (!authority.empty() && authority[0] == '[') {
    size_t close = authority.find(']');
    if (close == std::string::npos) return bad("unclosed [ of an IPv6 address");
    host = authority.substr(0, close + 1);
    std::string after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after[0] != ':') return bad("junk after the IPv6 address");
      port = after.substr(1);
      if (port.empty()) return bad("an empty port");
    }
    if (host.size() <= 2) return bad("no host");
  } else {
    size_t colon = authority.find(':');
    if (colon != std::string::npos) {
      host = authority.substr(0, colon);
      port = authority.substr(colon + 1);
      if (port.empty()) return bad("an empty port");
    }
    if (host.empty()) return bad("no host");
    for (char c : host)
      if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_'))
        return bad("the host has a character that is not a letter, digit, '-', '.' or '_'");
  }
  if (!port.empty()) {
    if (port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos || std::stoi(port) < 1 ||
        std::stoi(port) > 65535)
      return bad("the port is not a number from 1 to 65535");
  }
  return OkStatus();
}

std::string Resolve(const std::string& base_dir, const std::string& p) {
  if (p.empty() || p[0] == '/' || base_dir.empty()) return p;
  return (std::filesystem::path(base_dir) / p).string();
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
// Either is checked to be PEM (`key`: a private key, else a certificate).
StatusOr<std::string> InlineOrFile(const json& obj, const std::string& field, const std::string& base_dir,
                                   const std::string& what, bool key) {
  auto data = obj.find(field + "-data");
  if (data != obj.end() && data->is_string()) {
    std::string name = what + " (" + field + "-data)";
    TFJOB_ASSIGN_OR_RETURN(std::string pem, Base64Decode(*data, name));
    TFJOB_RETURN_IF_ERROR(CheckPem(pem, key, name));
    return pem;
  }
  auto file = obj.find(field);
  if (file != obj.end() && file->is_string() && !file->get<std::string>().empty()) {
    std::string path = Resolve(base_dir, *file);
    auto text = ReadFile(path, kMaxReferencedFileBytes);
    if (!text.ok()) return InvalidArgumentError(what + " (" + field + "): " + text.status().message());
    TFJOB_RETURN_IF_ERROR(CheckPem(*text, key, what + " (" + field + " " + path + ")"));
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
  out.context = ctx_name;
  out.ns = api::StringField(*ctx, "namespace");
  out.server = api::StringField(*cluster, "server");
  if (out.server.empty()) return InvalidArgumentError("kubeconfig: cluster \"" + cluster_name + "\" has no server");
  if (!out.server.starts_with("https://") && !out.server.starts_with("http://"))
    return InvalidArgumentError("kubeconfig: server \"" + out.server + "\" is not an http(s) URL");
  TFJOB_RETURN_IF_ERROR(CheckServerUrl(out.server));
  while (!out.server.empty() && out.server.back() == '/') out.server.pop_back();
  TFJOB_ASSIGN_OR_RETURN(out.ca_pem, InlineOrFile(*cluster, "certificate-authority", base_dir, "cluster CA", false));
  auto insecure = cluster->find("insecure-skip-tls-verify");
  out.insecure_skip_tls_verify = insecure != cluster->end() && *insecure == true;
  if (!user_name.empty()) {
    const json* user = Named(cfg, "users", user_name, "user");
    if (user == nullptr)
      return InvalidArgumentError("kubeconfig: user \"" + user_name + "\" of context \"" + ctx_name + "\" not found");
    TFJOB_ASSIGN_OR_RETURN(out.client_cert_pem,
                           InlineOrFile(*user, "client-certificate", base_dir, "client certificate", false));
    TFJOB_ASSIGN_OR_RETURN(out.client_key_pem, InlineOrFile(*user, "client-key", base_dir, "client key", true));
    if (out.client_cert_pem.empty() != out.client_key_pem.empty())
      return InvalidArgumentError("kubeconfig: user \"" + user_name +
                                  "\" has a client certificate without a key, or a key without a certificate");
    out.token = api::StringField(*user, "token");
    TFJOB_RETURN_IF_ERROR(CheckToken(out.token, "kubeconfig: user \"" + user_name + "\" token"));
    if (auto tf = user->find("tokenFile"); tf != user->end() && tf->is_string() && !tf->get<std::string>().empty()) {
      out.token_file = Resolve(base_dir, *tf);
      // Read once now, so that a missing, huge or binary token file fails start-up, naming it.
      auto token = ReadFile(out.token_file, kMaxTokenBytes);
      if (!token.ok())
        return InvalidArgumentError("kubeconfig: user \"" + user_name + "\" tokenFile: " + token.status().message());
      TFJOB_RETURN_IF_ERROR(
          CheckToken(TrimToken(*token), "kubeconfig: user \"" + user_name + "\" tokenFile " + out.token_file));
    }
    if (user->contains("exec") || user->contains("auth-provider"))
      if (out.token.empty() && out.token_file.empty() && out.client_cert_pem.empty())
        return InvalidArgumentError(
            "kubeconfig: user \"" + user_name +
            "\" uses exec/auth-provider credentials, which tfjob does not run; use a token or client certificate");
  }
  return out;
}

StatusOr<KubeConfig> LoadKubeconfigFile(const std::string& path, const std::string& context) {
  auto text = ReadFile(path, kMaxKubeconfigBytes);
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
  auto token = ReadFile(out.token_file, kMaxTokenBytes);
  if (!token.ok()) return InvalidArgumentError("in-cluster config: " + token.status().message());
  TFJOB_RETURN_IF_ERROR(CheckToken(TrimToken(*token), "in-cluster config: " + out.token_file));
  auto ca = ReadFile(sa_dir + "/ca.crt", kMaxReferencedFileBytes);
  if (!ca.ok()) return InvalidArgumentError("in-cluster config: " + ca.status().message());
  TFJOB_RETURN_IF_ERROR(CheckPem(*ca, false, "in-cluster config: " + sa_dir + "/ca.crt"));
  out.ca_pem = *ca;
  if (auto ns = ReadFile(sa_dir + "/namespace", kMaxTokenBytes); ns.ok()) {
    out.ns = *ns;
    while (!out.ns.empty() && (out.ns.back() == '\n' || out.ns.back() == ' ')) out.ns.pop_back();
  }
  out.source = "in-cluster";
  return out;
}

std::vector<std::string> SplitKubeconfigList(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t end = value.find(':', start);
    if (end == std::string::npos) end = value.size();
    if (end > start) out.push_back(value.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

StatusOr<KubeConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths, const std::string& context) {
  if (paths.size() > kMaxKubeconfigFiles)
    return InvalidArgumentError("KUBECONFIG lists " + std::to_string(paths.size()) + " files, more than the limit of " +
                                std::to_string(kMaxKubeconfigFiles));
  json merged = {{"clusters", json::array()}, {"contexts", json::array()}, {"users", json::array()}};
  std::map<std::string, std::set<std::string>> seen;
  std::vector<std::string> used;
  for (const auto& path : paths) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) continue;
    auto text = ReadFile(path, kMaxKubeconfigBytes);
    if (!text.ok()) return InvalidArgumentError("kubeconfig: " + text.status().message());
    used.push_back(path);
    auto docs = api::ParseManifest(*text);
    if (!docs.ok()) return InvalidArgumentError(path + ": kubeconfig: " + docs.status().message());
    if (docs->empty()) continue;
    if (docs->size() != 1 || !(*docs)[0].object.is_object())
      return InvalidArgumentError(path + ": kubeconfig: not a Config object");
    const json& cfg = (*docs)[0].object;
    std::string base = std::filesystem::path(path).parent_path().string();
    if (!merged.contains("current-context")) {
      std::string cc = api::StringField(cfg, "current-context");
      if (!cc.empty()) merged["current-context"] = cc;
    }
    for (const char* list : {"clusters", "contexts", "users"}) {
      auto l = cfg.find(list);
      if (l == cfg.end() || !l->is_array()) continue;
      for (json e : *l) {
        if (!e.is_object() || !e.contains("name") || !e["name"].is_string()) continue;
        if (!seen[list].insert(e["name"].get<std::string>()).second) continue;
        // Paths relative to this file, made absolute before the files are merged.
        for (const char* inner : {"cluster", "user"})
          if (auto it = e.find(inner); it != e.end() && it->is_object())
            for (const char* f : {"certificate-authority", "client-certificate", "client-key", "tokenFile"})
              if (auto v = it->find(f); v != it->end() && v->is_string()) *v = Resolve(base, v->get<std::string>());
        merged[list].push_back(std::move(e));
      }
    }
  }
  std::string names;
  for (const auto& p : used) names += (names.empty() ? "" : ":") + p;
  if (used.empty()) return NotFoundError("kubeconfig: none of the files of KUBECONFIG exists");
  auto cfg = ParseKubeconfig(merged.dump(), "", context);
  if (!cfg.ok()) return Status(cfg.status().code(), names + ": " + cfg.status().message());
  cfg->source = "kubeconfig " + names + " " + cfg->source;
  return cfg;
}

StatusOr<KubeConfig> ResolveClientConfig(const std::string& flag, const std::string& context,
                                         const std::map<std::string, std::string>& env) {
  if (!flag.empty()) return LoadKubeconfigFile(flag, context);
  if (auto kc = env.find("KUBECONFIG"); kc != env.end() && !kc->second.empty()) {
    auto cfg = LoadKubeconfigFiles(SplitKubeconfigList(kc->second), context);
    if (cfg.ok() || !IsNotFound(cfg.status())) return cfg;
  }
  if (auto home = env.find("HOME"); home != env.end()) {
    std::string path = home->second + "/.kube/config";
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return LoadKubeconfigFile(path, context);
  }
  auto in_cluster = InClusterConfig(env);
  if (in_cluster.ok() || !IsNotFound(in_cluster.status())) return in_cluster;
  return NotFoundError(
      "no Kubernetes configuration: no --kubeconfig, no $KUBECONFIG, no ~/.kube/config, not in a cluster");
}

TokenSource::TokenSource(const KubeConfig& config, Clock& clock)
    : clock_(clock), static_token_(config.token), file_(config.token_file) {}

std::string TokenSource::Token() {
  if (file_.empty()) return static_token_;
  MutexLock lock(mu_);
  auto now = clock_.SteadyNow();
  if (!read_ || now - read_at_ >= std::chrono::minutes(1)) {
    // A token that became unreadable, too large or not one line keeps the last good one.
    if (auto t = ReadFile(file_, kMaxTokenBytes); t.ok()) {
      std::string fresh = TrimToken(*t);
      if (CheckToken(fresh, file_).ok()) cached_ = std::move(fresh);
    }
    read_at_ = now;
    read_ = true;
  }
  return cached_.empty() ? static_token_ : cached_;
}

}  // namespace tfjob::kube
