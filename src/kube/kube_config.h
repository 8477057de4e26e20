#pragma once
// Where the API server is and how to authenticate: a kubeconfig file (current context or a
// named one; CA, client certificate and key, bearer token, each inline or by file) or the
// in-cluster service account (token re-read as it rotates). client-go's rest.Config, reduced.

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "common/thread_annotations.h"

namespace tfjob::kube {

// Byte caps of the files the configuration reads (docs/operator.md, section 1): a larger file
// is refused with kInvalidArgument naming it, so a huge file or /dev/zero cannot exhaust memory.
inline constexpr size_t kMaxKubeconfigBytes = 4 * 1024 * 1024;      // the kubeconfig itself
inline constexpr size_t kMaxReferencedFileBytes = 1 * 1024 * 1024;  // CA, client certificate, key
inline constexpr size_t kMaxTokenBytes = 64 * 1024;                 // token files, the namespace file

struct KubeConfig {
  std::string server;  // "https://127.0.0.1:6443"
  std::string ca_pem;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;                      // static bearer token
  std::string token_file;                 // re-read periodically (projected, rotating tokens)
  bool insecure_skip_tls_verify = false;  // honoured only when set explicitly
  std::string ns;                         // the context's (or the pod's) namespace
  std::string source;                     // "kubeconfig <path> context <name>" / "in-cluster"
  std::string context;                    // the kubeconfig context used ("" in-cluster)
};

// At most this many files in a $KUBECONFIG list (each bounded by kMaxKubeconfigBytes).
inline constexpr size_t kMaxKubeconfigFiles = 64;

// Parses kubeconfig text. Relative file paths resolve against `base_dir`. `context` "" = the
// current-context. kInvalidArgument names what is missing or broken.
StatusOr<KubeConfig> ParseKubeconfig(std::string_view text, const std::string& base_dir, const std::string& context);
StatusOr<KubeConfig> LoadKubeconfigFile(const std::string& path, const std::string& context);

// kubectl's merge of a $KUBECONFIG list (docs/cli.md): files that do not exist are skipped;
// the first file that sets current-context decides it; a cluster, context or user defined in
// several files is taken from the first; relative paths resolve against the file that holds
// them. kNotFound when no file of the list exists.
StatusOr<KubeConfig> LoadKubeconfigFiles(const std::vector<std::string>& paths, const std::string& context);
// The ':'-separated $KUBECONFIG value as a list (empty entries dropped).
std::vector<std::string> SplitKubeconfigList(const std::string& value);

// In-cluster config from the environment (KUBERNETES_SERVICE_HOST/PORT) and the service
// account folder (token, ca.crt, namespace). kNotFound when not running in a pod.
StatusOr<KubeConfig> InClusterConfig(const std::map<std::string, std::string>& env,
                                     const std::string& sa_dir = "/var/run/secrets/kubernetes.io/serviceaccount");

// The one resolution order, `tfjob operator`'s and the cluster commands' alike (kubectl's,
// docs/operator.md "Configuration"): --kubeconfig (that one file), else the $KUBECONFIG list
// (merged), else ~/.kube/config, else in-cluster.
StatusOr<KubeConfig> ResolveClientConfig(const std::string& kubeconfig_flag, const std::string& context,
                                         const std::map<std::string, std::string>& env);

// The bearer token to send now: the static token, or the token file re-read at most once a
// minute (kubelet rotates projected tokens well before they expire). Thread-safe.
class TokenSource {
 public:
  TokenSource(const KubeConfig& config, Clock& clock);
  std::string Token();

 private:
  Clock& clock_;
  const std::string static_token_;
  const std::string file_;
  Mutex mu_;
  std::string cached_ TFJOB_GUARDED_BY(mu_);
  Clock::SteadyTime read_at_ TFJOB_GUARDED_BY(mu_){};
  bool read_ TFJOB_GUARDED_BY(mu_) = false;
};

}  // namespace tfjob::kube
