// Integration tests of the client and runtime against the real control plane started by
// tests/e2e/run (scripts/test-cluster): CRUD and the status subresource, pagination,
// conflicts, watches across an API server restart (410 and relist), pods read in protobuf,
// leader election.
#include <cstdlib>
#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/crd.h"
#include "api/manifest.h"
#include "api/pod_json.h"
#include "api/pod_proto.h"
#include "common/clock.h"
#include "controller/informer.h"
#include "controller/kube_lease_lock.h"
#include "controller/leader_elector.h"
#include "kube/curl_transport.h"
#include "kube/rest_client.h"

namespace tfjob {
namespace {

using nlohmann::json;
using ::testing::UnorderedElementsAre;

const kube::GroupVersionResource kTfJobs{"kubeflow.org", "v1", "tfjobs"};

std::string ClusterDir() {
  const char* d = std::getenv("TFJOB_TEST_CLUSTER");
  return d != nullptr ? d : "";
}

class Cluster : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_FALSE(ClusterDir().empty()) << "run through tests/e2e/run (TFJOB_TEST_CLUSTER unset)";
    auto cfg = kube::LoadKubeconfigFile(ClusterDir() + "/kubeconfig", "");
    ASSERT_TRUE(cfg.ok()) << cfg.status().ToString();
    config_ = new kube::KubeConfig(*cfg);
  }
  void SetUp() override {
    transport_ = std::make_unique<kube::CurlTransport>(*config_, clock_);
    client_ = std::make_unique<kube::RestClient>(*transport_, clock_);
    ns_ = "it-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++);
    ASSERT_TRUE(client_->Create(kube::kNamespaces, "", json{{"metadata", {{"name", ns_}}}}).ok());
  }
  void TearDown() override { (void)client_->Delete(kube::kNamespaces, "", ns_); }

  static json ConfigMap(const std::string& name) {
    return json{{"apiVersion", "v1"}, {"kind", "ConfigMap"}, {"metadata", {{"name", name}}}, {"data", {{"k", "v"}}}};
  }
  static void RunScript(const std::string& command) {
    std::string cmd =
        std::string(TFJOB_SOURCE_DIR) + "/scripts/test-cluster " + command + " " + ClusterDir() + " >/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  }
  template <typename F>
  static bool Eventually(F f, std::chrono::seconds timeout = std::chrono::seconds(30)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      if (f()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return f();
  }

  static inline kube::KubeConfig* config_ = nullptr;
  static inline int counter_ = 0;
  RealClock clock_;
  std::unique_ptr<kube::CurlTransport> transport_;
  std::unique_ptr<kube::RestClient> client_;
  std::string ns_;
};

kube::CurlGlobal g_curl;

TEST_F(Cluster, CrudOfPodsAndServicesWithTheirErrors) {
  json pod = {{"apiVersion", "v1"},
              {"kind", "Pod"},
              {"metadata", {{"name", "p"}}},
              {"spec", {{"containers", json::array({{{"name", "tensorflow"}, {"image", "tf"}}})}}}};
  auto created = client_->Create(kube::kPods, ns_, pod);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  EXPECT_TRUE(IsAlreadyExists(client_->Create(kube::kPods, ns_, pod).status()));
  auto got = client_->Get(kube::kPods, ns_, "p");
  ASSERT_TRUE(got.ok());
  EXPECT_EQ((*got)["metadata"]["uid"], (*created)["metadata"]["uid"]);
  json svc = {{"apiVersion", "v1"},
              {"kind", "Service"},
              {"metadata", {{"name", "p"}}},
              {"spec",
               {{"clusterIP", "None"},
                {"selector", {{"a", "b"}}},
                {"ports", json::array({{{"name", "tfjob-port"}, {"port", 2222}}})}}}};
  auto s = client_->Create(kube::kServices, ns_, svc);
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  EXPECT_EQ((*s)["spec"]["clusterIP"], "None");
  EXPECT_EQ((*s)["spec"]["ports"][0]["targetPort"], 2222);  // defaulted by the server
  ASSERT_TRUE(client_->Delete(kube::kServices, ns_, "p").ok());
  EXPECT_TRUE(IsNotFound(client_->Get(kube::kServices, ns_, "p").status()));
  EXPECT_TRUE(IsNotFound(client_->Delete(kube::kServices, ns_, "p")));
  // A stale resourceVersion is a Conflict, not a lost write.
  auto cm = client_->Create(kube::kConfigMaps, ns_, ConfigMap("c"));
  ASSERT_TRUE(cm.ok());
  json stale = *cm;
  json fresh = *cm;
  fresh["data"]["k"] = "v2";
  ASSERT_TRUE(client_->Update(kube::kConfigMaps, ns_, "c", fresh).ok());
  stale["data"]["k"] = "v3";
  EXPECT_TRUE(IsConflict(client_->Update(kube::kConfigMaps, ns_, "c", stale).status()));
  // Preconditions on delete.
  EXPECT_TRUE(IsConflict(client_->Delete(kube::kConfigMaps, ns_, "c", {.precondition_uid = "not-the-uid"})));
}

TEST_F(Cluster, TfJobStatusSubresourceByMergePatch) {
  auto crd = api::ParseManifest(api::CrdYaml());
  ASSERT_TRUE(crd.ok());
  auto created = client_->Create(kube::kCrds, "", (*crd)[0].object);
  ASSERT_TRUE(created.ok() || IsAlreadyExists(created.status())) << created.status().ToString();
  ASSERT_TRUE(Eventually([&] {
    auto c = client_->Get(kube::kCrds, "", "tfjobs.kubeflow.org");
    if (!c.ok()) return false;
    for (const auto& cond : c->value("status", json::object()).value("conditions", json::array()))
      if (cond.value("type", "") == "Established" && cond.value("status", "") == "True") return true;
    return false;
  }));
  json job = {
      {"apiVersion", "kubeflow.org/v1"},
      {"kind", "TFJob"},
      {"metadata", {{"name", "j"}}},
      {"spec",
       {{"tfReplicaSpecs",
         {{"Worker",
           {{"template", {{"spec", {{"containers", json::array({{{"name", "tensorflow"}, {"image", "tf"}}})}}}}}}}}}}}};
  ASSERT_TRUE(Eventually([&] { return client_->Create(kTfJobs, ns_, job).ok(); }));
  json patch = {{"status",
                 {{"conditions", json::array({{{"type", "Created"}, {"status", "True"}, {"reason", "TFJobCreated"}}})},
                  {"replicaStatuses", {{"Worker", {{"active", 1}, {"restarts", 2}}}}}}}};
  auto patched = client_->Patch(kTfJobs, ns_, "j", kube::PatchType::kMerge, patch, "status");
  ASSERT_TRUE(patched.ok()) << patched.status().ToString();
  EXPECT_EQ((*patched)["status"]["replicaStatuses"]["Worker"]["restarts"], 2);  // our field is in the schema
  // Writes to the main resource do not touch status, and vice versa.
  auto spec_patch = client_->Patch(kTfJobs, ns_, "j", kube::PatchType::kMerge,
                                   json{{"status", {{"startTime", "2026-01-01T00:00:00Z"}}}});
  ASSERT_TRUE(spec_patch.ok());
  EXPECT_FALSE((*spec_patch)["status"].contains("startTime"));
  // Deleted explicitly: a namespace deleted right after its CRD appeared can leave custom
  // resources behind (the namespace controller's discovery is not yet aware of the CRD).
  EXPECT_TRUE(client_->Delete(kTfJobs, ns_, "j").ok());
}

TEST_F(Cluster, ListAllPagesThroughMoreObjectsThanThePageSize) {
  for (int i = 0; i < 25; ++i)
    ASSERT_TRUE(client_->Create(kube::kConfigMaps, ns_, ConfigMap("c" + std::to_string(i))).ok());
  std::string rv;
  auto items = client_->ListAll(kube::kConfigMaps, ns_, {.limit = 10}, &rv);
  ASSERT_TRUE(items.ok());
  int ours = 0;
  for (const auto& i : *items) ours += i["metadata"]["name"].get<std::string>().starts_with("c") ? 1 : 0;
  EXPECT_EQ(ours, 25);
  EXPECT_FALSE(rv.empty());
}

TEST_F(Cluster, InformerResumesAcrossAnApiServerRestartAndRelistsOnGone) {
  controller::Informer<json> informer(
      *client_, {kube::kConfigMaps, ns_}, [](const json& j) -> StatusOr<json> { return j; },
      [](const json& j) { return j["metadata"]["name"].get<std::string>(); }, Logger());
  std::mutex mu;
  std::map<std::string, int> adds;
  informer.AddHandlers({[&](const auto& o) {
                          std::lock_guard lock(mu);
                          adds[(*o)["metadata"]["name"]]++;
                        },
                        nullptr, nullptr});
  ASSERT_TRUE(client_->Create(kube::kConfigMaps, ns_, ConfigMap("a")).ok());
  informer.Start();
  ASSERT_TRUE(Eventually([&] { return informer.HasSynced() && informer.store().Get("a") != nullptr; }));
  ASSERT_TRUE(client_->Create(kube::kConfigMaps, ns_, ConfigMap("b")).ok());
  ASSERT_TRUE(Eventually([&] { return informer.store().Get("b") != nullptr; }));
  // A write elsewhere moves the global resourceVersion past the informer's, so the restarted
  // server's watch cache starts after it: the resumed watch gets 410 Gone.
  ASSERT_TRUE(client_->Create(kube::kNamespaces, "", json{{"metadata", {{"name", ns_ + "-x"}}}}).ok());
  RunScript("stop-apiserver");
  std::this_thread::sleep_for(std::chrono::seconds(2));
  RunScript("start-apiserver");
  ASSERT_TRUE(Eventually([&] { return client_->Create(kube::kConfigMaps, ns_, ConfigMap("c")).ok(); },
                         std::chrono::seconds(60)));
  ASSERT_TRUE(client_->Delete(kube::kConfigMaps, ns_, "a").ok());
  ASSERT_TRUE(Eventually([&] { return informer.store().Get("c") != nullptr && informer.store().Get("a") == nullptr; },
                         std::chrono::seconds(90)));
  informer.Stop();
  std::vector<std::string> names;
  for (const auto& o : informer.store().List()) names.push_back((*o)["metadata"]["name"]);
  EXPECT_THAT(names, UnorderedElementsAre("b", "c", "kube-root-ca.crt"));
  EXPECT_GE(informer.reflector().lists(), 2);  // relisted after 410
  std::lock_guard lock(mu);
  EXPECT_EQ(adds["b"], 1);  // no duplicate add across the relist
  EXPECT_EQ(adds["c"], 1);
  (void)client_->Delete(kube::kNamespaces, "", ns_ + "-x");
}

// The operator's pod informer reads pods in protobuf (kube/protobuf.h): against the real server
// its store holds the same decoded pods as a JSON informer's, through a paged list, a status
// written with a terminated container, and a delete.
TEST_F(Cluster, PodsReadInProtobufDecodeAsInJson) {
  auto pod = [](const std::string& name) {
    json p = json::parse(R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"labels": {"training.kubeflow.org/replica-index": "2"}},
      "spec": {"containers": [{"name": "c", "image": "busybox", "env": [{"name": "TF_CONFIG"}]}]}})");
    p["metadata"]["name"] = name;
    p["spec"]["containers"][0]["env"][0]["value"] = std::string(4000, 'x');
    return p;
  };
  for (const char* name : {"p1", "p2", "p3"}) ASSERT_TRUE(client_->Create(kube::kPods, ns_, pod(name)).ok());
  controller::ListWatchSpec in_protobuf{kube::kPods, ns_};
  in_protobuf.page_size = 2;  // a continue token in protobuf
  in_protobuf.protobuf = kube::ProtobufView{.name = "pod", .to_json = api::PodProtoToJson};
  controller::Informer<api::Pod> proto(*client_, in_protobuf, api::DecodePod, controller::NamespacedKey, Logger());
  controller::Informer<api::Pod> plain(*client_, {kube::kPods, ns_}, api::DecodePod, controller::NamespacedKey,
                                       Logger());
  proto.Start();
  plain.Start();
  auto same = [&](size_t n) {
    auto a = proto.store().List();
    if (a.size() != n || plain.store().List().size() != n) return false;
    for (const auto& p : a) {
      auto q = plain.store().Get(ns_ + "/" + p->meta.name);
      if (q == nullptr || !(*p == *q)) return false;
    }
    return true;
  };
  ASSERT_TRUE(Eventually([&] { return proto.HasSynced() && plain.HasSynced() && same(3); }));
  ASSERT_TRUE(client_->Create(kube::kPods, ns_, pod("p4")).ok());
  json status = json::parse(R"({"status": {"phase": "Failed", "containerStatuses": [{"name": "c",
      "image": "busybox", "imageID": "", "ready": false, "restartCount": 3,
      "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled"}}}]}})");
  ASSERT_TRUE(client_->Patch(kube::kPods, ns_, "p2", kube::PatchType::kMerge, status, "status").ok());
  ASSERT_TRUE(client_->Delete(kube::kPods, ns_, "p1").ok());
  ASSERT_TRUE(Eventually([&] {
    auto p2 = proto.store().Get(ns_ + "/p2");
    return p2 != nullptr && p2->phase == api::PodPhase::kFailed && proto.store().Get(ns_ + "/p4") != nullptr &&
           proto.store().Get(ns_ + "/p1") == nullptr && same(3);
  }));
  auto p2 = proto.store().Get(ns_ + "/p2");
  ASSERT_EQ(p2->container_statuses.size(), 1u);
  EXPECT_EQ(p2->container_statuses[0].exit_code, 137);
  EXPECT_EQ(p2->container_statuses[0].restart_count, 3);
  EXPECT_EQ(p2->meta.replica_index, 2);
  EXPECT_GE(proto.reflector().watches(), 1);
  proto.Stop();
  plain.Stop();
}

TEST_F(Cluster, TwoElectorsOneLeaderThenTakeover) {
  controller::KubeLeaseLock lock_a(*client_, ns_, "tfjob-operator");
  kube::RestClient client_b(*transport_, clock_);
  controller::KubeLeaseLock lock_b(client_b, ns_, "tfjob-operator");
  auto config = [](const std::string& id, std::atomic<bool>* leading) {
    controller::LeaderElectionConfig c;
    c.identity = id;
    c.lease_duration = std::chrono::seconds(3);
    c.renew_deadline = std::chrono::seconds(2);
    c.retry_period = std::chrono::seconds(1);
    c.on_started_leading = [leading] { *leading = true; };
    c.on_stopped_leading = [leading] { *leading = false; };
    return c;
  };
  std::atomic<bool> a_leads{false}, b_leads{false};
  controller::LeaderElector a(lock_a, clock_, config("a", &a_leads), Logger());
  controller::LeaderElector b(lock_b, clock_, config("b", &b_leads), Logger());
  std::jthread ta([&](std::stop_token s) { a.Run(s); });
  ASSERT_TRUE(Eventually([&] { return a_leads.load(); }, std::chrono::seconds(10)));
  std::jthread tb([&](std::stop_token s) { b.Run(s); });
  std::this_thread::sleep_for(std::chrono::seconds(4));  // longer than the lease: a renews, b waits
  EXPECT_TRUE(a.IsLeader());
  EXPECT_FALSE(b_leads.load());
  auto start = std::chrono::steady_clock::now();
  ta.request_stop();  // a releases the lease on a clean stop
  ta.join();
  ASSERT_TRUE(Eventually([&] { return b_leads.load(); }, std::chrono::seconds(10)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(4));  // within the lease duration
  auto lease = client_->Get(kube::kLeases, ns_, "tfjob-operator");
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ((*lease)["spec"]["holderIdentity"], "b");
  EXPECT_EQ((*lease)["spec"]["leaseTransitions"], 1);
}

}  // namespace
}  // namespace tfjob
