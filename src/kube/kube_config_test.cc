#include "kube/kube_config.h"

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "testing/fake_clock.h"

namespace tfjob::kube {
namespace {

namespace fs = std::filesystem;

class KubeconfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tfjob-kubeconfig-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  fs::path dir_;
};

const char* kCaPem = "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n";

const char* kInline = R"(apiVersion: v1
kind: Config
current-context: dev
clusters:
- name: c1
  cluster: {server: "https://127.0.0.1:6443/", certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNBCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K}
users:
- name: u1
  user: {client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNFUlQKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=,
         client-key-data: LS0tLS1CRUdJTiBQUklWQVRFIEtFWS0tLS0tCktFWQotLS0tLUVORCBQUklWQVRFIEtFWS0tLS0tCg==}
- name: u2
  user: {token: abc}
contexts:
- name: dev
  context: {cluster: c1, user: u1, namespace: team}
- name: ops
  context: {cluster: c1, user: u2}
)";

TEST_F(KubeconfigTest, InlineDataAndCurrentContext) {
  auto cfg = ParseKubeconfig(kInline, "", "");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://127.0.0.1:6443");
  EXPECT_EQ(cfg->ca_pem, kCaPem);
  EXPECT_EQ(cfg->client_cert_pem, "-----BEGIN CERTIFICATE-----\nCERT\n-----END CERTIFICATE-----\n");
  EXPECT_EQ(cfg->client_key_pem, "-----BEGIN PRIVATE KEY-----\nKEY\n-----END PRIVATE KEY-----\n");
  EXPECT_EQ(cfg->ns, "team");
  EXPECT_FALSE(cfg->insecure_skip_tls_verify);
}

TEST_F(KubeconfigTest, NamedContextWithToken) {
  auto cfg = ParseKubeconfig(kInline, "", "ops");
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(cfg->token, "abc");
  EXPECT_TRUE(cfg->client_cert_pem.empty());
}

TEST_F(KubeconfigTest, FilesResolveRelativeToTheKubeconfig) {
  Write("ca.crt", kCaPem);
  Write("token", "tok\n");
  Write("config", R"(apiVersion: v1
kind: Config
current-context: x
clusters: [{name: c, cluster: {server: "https://h:1", certificate-authority: ca.crt, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {tokenFile: token}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
)");
  auto cfg = LoadKubeconfigFile((dir_ / "config").string(), "");
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->ca_pem, kCaPem);
  EXPECT_TRUE(cfg->insecure_skip_tls_verify);
  FakeClock clock;
  TokenSource tokens(*cfg, clock);
  EXPECT_EQ(tokens.Token(), "tok");
  Write("token", "rotated");
  EXPECT_EQ(tokens.Token(), "tok");  // cached for a minute
  clock.Advance(std::chrono::seconds(61));
  EXPECT_EQ(tokens.Token(), "rotated");
}

TEST_F(KubeconfigTest, BrokenKubeconfigsNameTheProblem) {
  struct Case {
    std::string text;
    std::string context;
    std::string error;
  };
  std::vector<Case> cases = {
      {"", "", "kubeconfig: not a Config object"},
      {"a: [1", "",
       "kubeconfig: invalid YAML: line 2, column 1: while parsing a flow sequence: did not find expected ',' or ']'"},
      {"apiVersion: v1\nkind: Config\n", "", "kubeconfig: no current-context (and no --context given)"},
      {kInline, "nope", "kubeconfig: context \"nope\" not found"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: gone, user: u}}]\n", "",
       "kubeconfig: cluster \"gone\" of context \"x\" not found"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\nclusters: [{name: c, cluster: {server: "
       "ftp://x}}]\n",
       "", "kubeconfig: server \"ftp://x\" is not an http(s) URL"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: "
       "{server: 'https://x'}}]\n"
       "users: [{name: u, user: {client-certificate-data: "
       "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCkNFUlQKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=}}]\n",
       "", "kubeconfig: user \"u\" has a client certificate without a key, or a key without a certificate"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\nclusters: [{name: c, cluster: {server: "
       "'https://x', "
       "certificate-authority: /nonexistent/ca.crt}}]\n",
       "", "cluster CA (certificate-authority): cannot read /nonexistent/ca.crt: No such file or directory"},
      {"current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: "
       "{server: 'https://x'}}]\n"
       "users: [{name: u, user: {exec: {command: aws}}}]\n",
       "",
       "kubeconfig: user \"u\" uses exec/auth-provider credentials, which tfjob does not run; use a token or client "
       "certificate"},
  };
  for (const auto& c : cases) {
    auto cfg = ParseKubeconfig(c.text, "", c.context);
    ASSERT_FALSE(cfg.ok()) << c.error;
    EXPECT_EQ(cfg.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(cfg.status().message(), c.error);
  }
  auto missing = LoadKubeconfigFile((dir_ / "absent").string(), "");
  EXPECT_EQ(missing.status().message(),
            "kubeconfig: cannot read " + (dir_ / "absent").string() + ": No such file or directory");
}

// Issue 17 (hostile kubeconfigs): each of these used to be accepted (garbage CA data, a CA path
// that is a directory, a server URL without a host, a token with a line break) or to read
// without bound (/dev/zero, a huge token file); now each fails naming the field or file.
TEST_F(KubeconfigTest, Issue17HostileReferencesFailNamingTheFieldOrFile) {
  fs::create_directories(dir_ / "cadir");
  std::ofstream(dir_ / "huge-token") << std::string(kMaxTokenBytes + 1, 'a');
  auto with_cluster = [](const std::string& cluster, const std::string& user = "{token: t}") {
    return "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: " +
           cluster + "}]\nusers: [{name: u, user: " + user + "}]\n";
  };
  struct Case {
    std::string text;
    std::string error;
  };
  std::vector<Case> cases = {
      {with_cluster("{server: 'https://x', certificate-authority-data: Q0EtUEVN}"),
       "cluster CA (certificate-authority-data) is not PEM (no -----BEGIN CERTIFICATE----- block)"},
      {with_cluster("{server: 'https://x', certificate-authority: cadir}"),
       "cluster CA (certificate-authority): " + (dir_ / "cadir").string() + " is a directory, not a file"},
      {with_cluster("{server: 'https://x', certificate-authority: /dev/zero}"),
       "cluster CA (certificate-authority): /dev/zero is larger than the limit of 1 MiB"},
      {with_cluster("{server: 'https://'}"), "kubeconfig: server \"https://\" is not a usable URL: no host"},
      {with_cluster("{server: 'https://exa mple:6443'}"),
       "kubeconfig: server \"https://exa mple:6443\" is not a usable URL: it holds a space or a control character"},
      {with_cluster("{server: 'https://h:99999'}"),
       "kubeconfig: server \"https://h:99999\" is not a usable URL: the port is not a number from 1 to 65535"},
      {with_cluster("{server: 'https://x'}", "{token: \"a\\r\\nX-Evil: 1\"}"),
       "kubeconfig: user \"u\" token holds a control character (a token is one line of text)"},
      {with_cluster("{server: 'https://x'}", "{tokenFile: huge-token}"),
       "kubeconfig: user \"u\" tokenFile: " + (dir_ / "huge-token").string() + " is larger than the limit of 64 KiB"},
  };
  for (const auto& c : cases) {
    auto cfg = ParseKubeconfig(c.text, dir_.string(), "");
    ASSERT_FALSE(cfg.ok()) << c.error;
    EXPECT_EQ(cfg.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(cfg.status().message(), c.error);
  }
  auto zero = LoadKubeconfigFile("/dev/zero", "");
  EXPECT_EQ(zero.status().message(), "kubeconfig: /dev/zero is larger than the limit of 4 MiB");
  auto dir = LoadKubeconfigFile(dir_.string(), "");
  EXPECT_EQ(dir.status().message(), "kubeconfig: " + dir_.string() + " is a directory, not a file");
}

TEST_F(KubeconfigTest, InClusterFromEnvironmentAndServiceAccountFolder) {
  EXPECT_EQ(InClusterConfig({}).status().code(), StatusCode::kNotFound);
  Write("token", "sa-token");
  Write("ca.crt", kCaPem);
  Write("namespace", "tfjob-system\n");
  auto cfg =
      InClusterConfig({{"KUBERNETES_SERVICE_HOST", "10.0.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, dir_.string());
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://10.0.0.1:443");
  EXPECT_EQ(cfg->ca_pem, kCaPem);
  EXPECT_EQ(cfg->ns, "tfjob-system");
  EXPECT_EQ(cfg->token_file, (dir_ / "token").string());
  auto v6 =
      InClusterConfig({{"KUBERNETES_SERVICE_HOST", "fd00::1"}, {"KUBERNETES_SERVICE_PORT", "443"}}, dir_.string());
  EXPECT_EQ(v6->server, "https://[fd00::1]:443");
}

TEST_F(KubeconfigTest, ResolveOrder) {
  Write("config", kInline);
  auto from_env = ResolveClientConfig("", "", {{"KUBECONFIG", (dir_ / "config").string()}});
  ASSERT_TRUE(from_env.ok());
  EXPECT_EQ(from_env->ns, "team");
  auto none = ResolveClientConfig("", "", {{"HOME", dir_.string()}});
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  // Issue 28 item 5: one order for the operator and the CLI. $KUBECONFIG comes before the pod's
  // in-cluster variables (the operator's old order tried in-cluster first and failed here on the
  // missing service account folder).
  auto both = ResolveClientConfig("", "",
                                  {{"KUBECONFIG", (dir_ / "config").string()},
                                   {"KUBERNETES_SERVICE_HOST", "10.0.0.1"},
                                   {"KUBERNETES_SERVICE_PORT", "443"}});
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_EQ(both->ns, "team");
}

}  // namespace
}  // namespace tfjob::kube

namespace tfjob::kube {
namespace {

// kubectl's merge of a KUBECONFIG list (the CLI's resolution, docs/cli.md).
TEST_F(KubeconfigTest, KubeconfigListMergesFirstWins) {
  fs::create_directories(dir_ / "a");
  std::ofstream(dir_ / "a" / "ca.crt") << kCaPem;
  Write("a/config", R"(apiVersion: v1
kind: Config
current-context: first
clusters:
- name: c1
  cluster: {server: "https://first:6443", certificate-authority: ca.crt}
contexts:
- name: first
  context: {cluster: c1, user: u1, namespace: ns-first}
users:
- name: u1
  user: {token: one}
)");
  Write("b", R"(apiVersion: v1
kind: Config
current-context: second
clusters:
- name: c1
  cluster: {server: "https://ignored:6443"}
- name: c2
  cluster: {server: "https://second:6443"}
contexts:
- name: first
  context: {cluster: c2, user: u2}
- name: second
  context: {cluster: c2, user: u2}
users:
- name: u2
  user: {token: two}
)");
  std::string list =
      (dir_ / "missing").string() + ":" + (dir_ / "a" / "config").string() + "::" + (dir_ / "b").string();
  std::map<std::string, std::string> env = {{"KUBECONFIG", list}, {"HOME", dir_.string()}};
  auto cfg = ResolveClientConfig("", "", env);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  // current-context, the context, the cluster: each from the first file that has it.
  EXPECT_EQ(cfg->context, "first");
  EXPECT_EQ(cfg->server, "https://first:6443");
  EXPECT_EQ(cfg->ns, "ns-first");
  EXPECT_EQ(cfg->token, "one");
  EXPECT_EQ(cfg->ca_pem, kCaPem);  // relative to a/config, not to the working directory
  cfg = ResolveClientConfig("", "second", env);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->server, "https://second:6443");
  EXPECT_EQ(cfg->token, "two");
  EXPECT_EQ(cfg->ns, "");
  // --kubeconfig is that file only.
  cfg = ResolveClientConfig((dir_ / "b").string(), "", env);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->context, "second");
  EXPECT_EQ(cfg->server, "https://second:6443");
}

TEST_F(KubeconfigTest, KubeconfigListOfMissingFilesFallsBackToHome) {
  fs::create_directories(dir_ / ".kube");
  Write(".kube/config", kInline);
  std::map<std::string, std::string> env = {{"KUBECONFIG", (dir_ / "nope").string()}, {"HOME", dir_.string()}};
  auto cfg = ResolveClientConfig("", "", env);
  ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
  EXPECT_EQ(cfg->context, "dev");
  env = {{"HOME", (dir_ / "empty").string()}};
  cfg = ResolveClientConfig("", "", env);
  EXPECT_EQ(cfg.status().code(), StatusCode::kNotFound);
  EXPECT_NE(cfg.status().message().find("no $KUBECONFIG"), std::string::npos);
}

TEST_F(KubeconfigTest, KubeconfigListIsBounded) {
  std::string list;
  for (size_t i = 0; i <= kMaxKubeconfigFiles; ++i)
    list += (list.empty() ? "" : ":") + std::string("/x") + std::to_string(i);
  auto cfg = LoadKubeconfigFiles(SplitKubeconfigList(list), "");
  EXPECT_EQ(cfg.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(SplitKubeconfigList("a::b:"), (std::vector<std::string>{"a", "b"}));
}

}  // namespace
}  // namespace tfjob::kube
