#include "controller/informer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "api/pod_json.h"
#include "testing/fake_clock.h"
#include "testing/fake_transport.h"

namespace tfjob::controller {
namespace {

using nlohmann::json;

json PodJson(const std::string& name, const std::string& rv, const std::string& phase = "Running",
             const std::string& job = "j") {
  return json{{"metadata",
               {{"name", name},
                {"namespace", "ns"},
                {"resourceVersion", rv},
                {"uid", name + "-uid"},
                {"labels", {{"training.kubeflow.org/job-name", job}, {"app", "ignored"}}},
                {"managedFields", json::array({json{{"manager", "kubelet"}}})}}},
              {"status", {{"phase", phase}}}};
}

struct Recorder {
  std::vector<std::string> log;
  InformerHandlers<api::Pod> Handlers() {
    return {[this](const auto& p) { log.push_back("add " + p->meta.name); },
            [this](const auto& o, const auto& n) {
              log.push_back("update " + o->meta.name + " " + std::string(api::PodPhaseName(n->phase)));
            },
            [this](const auto& p) { log.push_back("delete " + p->meta.name); }};
  }
};

std::unique_ptr<Informer<api::Pod>> MakeInformer(kube::RestClient& client) {
  auto inf = std::make_unique<Informer<api::Pod>>(
      client, ListWatchSpec{kube::kPods, "", "training.kubeflow.org/operator-name=tfjob-controller"}, api::DecodePod,
      NamespacedKey, Logger());
  inf->AddIndex("job", [](const api::Pod& p) {
    return p.meta.job_name.empty() ? std::vector<std::string>{}
                                   : std::vector<std::string>{p.meta.ns + "/" + p.meta.job_name};
  });
  return inf;
}

TEST(Informer, ReplaceAndApplyKeepTheStoreAndCallHandlers) {
  kube::FakeTransport t;
  FakeClock clock;
  kube::RestClient client(t, clock);
  auto inf = MakeInformer(client);
  Recorder rec;
  inf->AddHandlers(rec.Handlers());
  inf->Replace({PodJson("a", "1"), PodJson("b", "2", "Pending")});
  inf->Apply(kube::WatchEventType::kModified, PodJson("b", "3", "Running"));
  inf->Apply(kube::WatchEventType::kAdded, PodJson("c", "4", "Pending", "other"));
  inf->Apply(kube::WatchEventType::kDeleted, PodJson("a", "5"));
  // A relist that misses "c" (deleted while disconnected) reports it deleted: a tombstone.
  inf->Replace({PodJson("b", "6", "Succeeded")});
  EXPECT_THAT(rec.log, ::testing::ElementsAre("add a", "add b", "update b Running", "add c", "delete a", "delete c",
                                              "update b Succeeded"));
  EXPECT_EQ(inf->store().size(), 1u);
  EXPECT_EQ(inf->store().ByIndex("job", "ns/j").size(), 1u);
  EXPECT_TRUE(inf->store().ByIndex("job", "ns/other").empty());
  auto b = inf->store().Get("ns/b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->meta.job_name, "j");  // trimmed: the job label is kept, "app" is not
}

// An object that stops decoding (another writer's status, say) is dropped as if deleted, and so
// is one whose deletion event does not decode: before, the last good version stayed cached
// after the object was gone, and the controller kept recreating its children.
TEST(Informer, AnUndecodableObjectIsDroppedByItsKey) {
  kube::FakeTransport t;
  FakeClock clock;
  kube::RestClient client(t, clock);
  Informer<api::Pod> inf(
      client, ListWatchSpec{kube::kPods, ""},
      [](const json& j) -> StatusOr<api::Pod> {
        if (j["metadata"].contains("undecodable")) return DataLossError("undecodable");
        return api::DecodePod(j);
      },
      NamespacedKey, Logger());
  Recorder rec;
  inf.AddHandlers(rec.Handlers());
  json bad_a = PodJson("a", "3");
  bad_a["metadata"]["undecodable"] = true;
  json bad_b = PodJson("b", "4");
  bad_b["metadata"]["undecodable"] = true;
  inf.Replace({PodJson("a", "1"), PodJson("b", "2")});
  inf.Apply(kube::WatchEventType::kModified, bad_a);
  inf.Apply(kube::WatchEventType::kDeleted, bad_b);
  inf.Apply(kube::WatchEventType::kDeleted, bad_b);  // nothing left to drop: no handler call
  EXPECT_THAT(rec.log, ::testing::ElementsAre("add a", "add b", "delete a", "delete b"));
  EXPECT_EQ(inf.store().size(), 0u);
}

TEST(Informer, NamespacedKeyReadsTheMetadata) {
  EXPECT_EQ(NamespacedKey(PodJson("a", "1")), "ns/a");
  EXPECT_EQ(NamespacedKey(json{{"metadata", {{"name", "n"}}}}), "/n");
  EXPECT_EQ(NamespacedKey(json{{"metadata", 5}}), "/");
  EXPECT_EQ(NamespacedKey(json::array()), "/");
}

TEST(Informer, ListsThenWatchesAndRelistsOnGone) {
  kube::FakeTransport t;
  std::atomic<int> lists{0};
  t.set_handler([&](const kube::HttpRequest&) -> StatusOr<kube::HttpResponse> {
    int n = ++lists;
    json list = {{"metadata", {{"resourceVersion", n == 1 ? "10" : "20"}}},
                 {"items", n == 1 ? json::array({PodJson("a", "10")}) : json::array({PodJson("b", "20")})}};
    return kube::HttpResponse{200, list.dump()};
  });
  std::atomic<int> watches{0};
  std::vector<std::string> watch_paths;
  std::mutex mu;
  t.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) -> Status {
    {
      std::lock_guard lock(mu);
      watch_paths.push_back(r.path);
    }
    int n = ++watches;
    if (n == 1) {
      sink(R"({"type":"ADDED","object":)" + PodJson("c", "11").dump() + "}\n");
      sink(R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old"}})"
           "\n");
      return OkStatus();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return CancelledError("stopped");
  });
  FakeClock clock;
  kube::RestClient client(t, clock);
  auto inf = MakeInformer(client);
  inf->Start();
  for (int i = 0; i < 2000 && watches.load() < 2; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  inf->Stop();
  EXPECT_EQ(lists.load(), 2);
  EXPECT_TRUE(inf->HasSynced());
  auto keys = inf->store().Keys();
  EXPECT_THAT(keys, ::testing::ElementsAre("ns/b"));  // after the relist, a and c are gone
  std::lock_guard lock(mu);
  ASSERT_GE(watch_paths.size(), 2u);
  EXPECT_THAT(watch_paths[0], ::testing::HasSubstr("resourceVersion=10"));
  EXPECT_THAT(watch_paths[1], ::testing::HasSubstr("resourceVersion=20"));
}

}  // namespace
}  // namespace tfjob::controller
