// FakeApiServer through the real RestClient: each case is a behaviour of kube-apiserver the
// operator depends on (see the header), asserted on what the client sees.
#include "testing/fake_api_server.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "controller/informer.h"
#include "kube/rest_client.h"
#include "kube/watch_decoder.h"
#include "testing/fake_clock.h"

namespace tfjob::testing {
namespace {

using nlohmann::json;

const kube::GroupVersionResource kTfJobs{"kubeflow.org", "v1", "tfjobs"};

json Pod(const std::string& name, json labels = json::object()) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}, {"labels", labels}}},
          {"spec", {{"containers", json::array({{{"name", "c"}, {"image", "i"}}})}}}};
}

struct Fixture {
  FakeClock clock;
  FakeApiServer server{clock};
  kube::RestClient client{server, clock, UnthrottledClientOptions()};
};

TEST(FakeApiServer, CreateAssignsIdentityAndRefusesANamesake) {
  Fixture f;
  auto a = f.client.Create(kube::kPods, "ns", Pod("a"));
  ASSERT_TRUE(a.ok()) << a.status().message();
  const json& m = (*a)["metadata"];
  EXPECT_EQ(m["namespace"], "ns");
  EXPECT_FALSE(m["uid"].get<std::string>().empty());
  EXPECT_EQ(m["resourceVersion"], "1");
  EXPECT_EQ(m["creationTimestamp"], "2026-01-01T00:00:00Z");
  EXPECT_EQ((*a)["status"]["phase"], "Pending");
  auto b = f.client.Create(kube::kPods, "ns", Pod("b"));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)["metadata"]["resourceVersion"], "2") << "one counter for every object";
  EXPECT_NE((*b)["metadata"]["uid"], m["uid"]);
  auto again = f.client.Create(kube::kPods, "ns", Pod("a"));
  EXPECT_TRUE(IsAlreadyExists(again.status())) << again.status().message();
  EXPECT_THAT(again.status().message(), ::testing::HasSubstr("pods \"a\" already exists"));
  // The same name in another namespace is another object.
  EXPECT_TRUE(f.client.Create(kube::kPods, "other", Pod("a")).ok());
  auto nameless = f.client.Create(kube::kPods, "ns", Pod(""));
  EXPECT_EQ(nameless.status().code(), StatusCode::kInvalid);
}

TEST(FakeApiServer, CustomResourceStatusIsDroppedOnCreate) {
  Fixture f;
  json job = {{"apiVersion", "kubeflow.org/v1"},
              {"kind", "TFJob"},
              {"metadata", {{"name", "j"}}},
              {"spec", json::object()},
              {"status", {{"conditions", json::array()}}}};
  auto created = f.client.Create(kTfJobs, "ns", job);
  ASSERT_TRUE(created.ok());
  EXPECT_FALSE(created->contains("status"));
  auto dup = f.client.Create(kTfJobs, "ns", job);
  EXPECT_THAT(dup.status().message(), ::testing::HasSubstr("tfjobs.kubeflow.org \"j\" already exists"));
}

TEST(FakeApiServer, GetAndDeleteAnswerNotFound) {
  Fixture f;
  EXPECT_TRUE(IsNotFound(f.client.Get(kube::kPods, "ns", "x").status()));
  EXPECT_TRUE(IsNotFound(f.client.Delete(kube::kPods, "ns", "x")));
  EXPECT_TRUE(IsNotFound(f.client.Patch(kube::kPods, "ns", "x", kube::PatchType::kMerge, json::object()).status()));
}

// A uid precondition protects a namesake: the delete of the old object's uid is a Conflict.
TEST(FakeApiServer, DeleteChecksTheUidPrecondition) {
  Fixture f;
  auto old = f.client.Create(kube::kPods, "ns", Pod("a"));
  std::string old_uid = (*old)["metadata"]["uid"];
  ASSERT_TRUE(f.client.Delete(kube::kPods, "ns", "a", {.precondition_uid = old_uid}).ok());
  auto fresh = f.client.Create(kube::kPods, "ns", Pod("a"));
  Status s = f.client.Delete(kube::kPods, "ns", "a", {.precondition_uid = old_uid});
  EXPECT_TRUE(IsConflict(s)) << s.message();
  EXPECT_THAT(s.message(), ::testing::HasSubstr("Precondition failed: UID in precondition: " + old_uid));
  EXPECT_TRUE(f.server.Get(kube::kPods, "ns", "a").has_value()) << "the namesake was deleted";
  Status stale_rv = f.client.Delete(kube::kPods, "ns", "a", {.precondition_resource_version = "1"});
  EXPECT_TRUE(IsConflict(stale_rv));
}

// Discovery of a group given to ServeVersions, 404 for its other versions, and an upgrade that
// changes the served versions while the objects stay.
TEST(FakeApiServer, ServesTheVersionsItIsGiven) {
  Fixture f;
  const kube::GroupVersionResource alpha{"scheduling.k8s.io", "v1alpha2", "podgroups"};
  const kube::GroupVersionResource beta{"scheduling.k8s.io", "v1beta1", "podgroups"};
  EXPECT_TRUE(IsNotFound(f.client.GetApiGroup("scheduling.k8s.io").status())) << "no discovery before ServeVersions";
  EXPECT_TRUE(f.client.List(beta, "ns", {}).ok()) << "any version before ServeVersions";
  f.server.ServeVersions("scheduling.k8s.io", {"v1", "v1alpha2"});
  auto group = f.client.GetApiGroup("scheduling.k8s.io");
  ASSERT_TRUE(group.ok()) << group.status().message();
  EXPECT_EQ((*group)["kind"], "APIGroup");
  EXPECT_EQ((*group)["versions"], json::parse(R"([{"groupVersion":"scheduling.k8s.io/v1","version":"v1"},
    {"groupVersion":"scheduling.k8s.io/v1alpha2","version":"v1alpha2"}])"));
  ASSERT_TRUE(f.client.Create(alpha, "ns", {{"metadata", {{"name", "g"}}}}).ok());
  EXPECT_TRUE(IsNotFound(f.client.Create(beta, "ns", {{"metadata", {{"name", "h"}}}}).status()));
  EXPECT_TRUE(IsNotFound(f.client.List(beta, "ns", {}).status()));
  f.server.ServeVersions("scheduling.k8s.io", {"v1", "v1beta1"});  // the upgrade
  EXPECT_TRUE(IsNotFound(f.client.Get(alpha, "ns", "g").status()));
  auto kept = f.client.Get(beta, "ns", "g");
  ASSERT_TRUE(kept.ok()) << kept.status().message();
  std::stop_source stop;
  Status watch = f.client.Watch(
      alpha, "ns", {.watch = true}, [](std::string_view) { return true; }, stop.get_token());
  EXPECT_TRUE(IsNotFound(watch)) << watch.message();
  f.server.ServeVersions("scheduling.k8s.io", {});
  EXPECT_TRUE(IsNotFound(f.client.GetApiGroup("scheduling.k8s.io").status()));
}

TEST(FakeApiServer, FinalizersHoldADeletion) {
  Fixture f;
  json pg = {{"metadata", {{"name", "g"}, {"finalizers", {"x/protect"}}}}, {"spec", json::object()}};
  const kube::GroupVersionResource podgroups{"scheduling.k8s.io", "v1alpha2", "podgroups"};
  ASSERT_TRUE(f.client.Create(podgroups, "ns", pg).ok());
  ASSERT_TRUE(f.client.Delete(podgroups, "ns", "g").ok());
  auto held = f.server.Get(podgroups, "ns", "g");
  ASSERT_TRUE(held);
  EXPECT_TRUE((*held)["metadata"].contains("deletionTimestamp"));
  ASSERT_TRUE(
      f.client.Patch(podgroups, "ns", "g", kube::PatchType::kMerge, {{"metadata", {{"finalizers", nullptr}}}}).ok());
  EXPECT_FALSE(f.server.Get(podgroups, "ns", "g"));
}

TEST(FakeApiServer, ListSelectsByLabelsAndCarriesTheVersion) {
  Fixture f;
  (void)f.client.Create(kube::kPods, "ns", Pod("w0", {{"app", "tf"}, {"role", "worker"}}));
  (void)f.client.Create(kube::kPods, "ns", Pod("p0", {{"app", "tf"}, {"role", "ps"}}));
  (void)f.client.Create(kube::kPods, "ns", Pod("x", {{"app", "other"}}));
  (void)f.client.Create(kube::kPods, "ns2", Pod("w1", {{"app", "tf"}, {"role", "worker"}}));
  auto names = [&](const std::string& ns, const std::string& selector) {
    auto list = f.client.List(kube::kPods, ns, {.label_selector = selector});
    EXPECT_TRUE(list.ok()) << list.status().message();
    std::vector<std::string> out;
    for (const auto& item : (*list)["items"]) out.push_back(item["metadata"]["name"]);
    return out;
  };
  using ::testing::ElementsAre;
  EXPECT_THAT(names("ns", "app=tf"), ElementsAre("p0", "w0"));
  EXPECT_THAT(names("", "app==tf"), ElementsAre("p0", "w0", "w1"));
  EXPECT_THAT(names("ns", "app=tf,role!=ps"), ElementsAre("w0"));
  EXPECT_THAT(names("ns", "role in (ps, worker)"), ElementsAre("p0", "w0"));
  EXPECT_THAT(names("ns", "role notin (ps)"), ElementsAre("w0", "x"));
  EXPECT_THAT(names("ns", "role"), ElementsAre("p0", "w0"));
  EXPECT_THAT(names("ns", "!role"), ElementsAre("x"));
  auto list = f.client.List(kube::kPods, "ns", {});
  EXPECT_EQ((*list)["metadata"]["resourceVersion"], "4");
  EXPECT_EQ((*list)["kind"], "PodList");
  auto bad = f.client.List(kube::kPods, "ns", {.label_selector = "role in ps"});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  // Pages: ListAll follows continue tokens.
  std::string rv;
  auto all = f.client.ListAll(kube::kPods, "", {.limit = 1}, &rv);
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), 4u);
  EXPECT_EQ(f.server.CountRequests("list", "pods"), 9 + 4);
  auto by_name = f.client.List(kube::kPods, "ns", {.field_selector = "metadata.name=x"});
  EXPECT_EQ((*by_name)["items"].size(), 1u);
}

// The main resource keeps the status and /status keeps the rest (D14 writes status this way).
TEST(FakeApiServer, PatchesRespectTheStatusSubresource) {
  Fixture f;
  (void)f.client.Create(kTfJobs, "ns", {{"metadata", {{"name", "j"}}}, {"spec", {{"a", 1}}}});
  auto st = f.client.Patch(kTfJobs, "ns", "j", kube::PatchType::kMerge, {{"status", {{"x", 1}}}, {"spec", {{"a", 2}}}},
                           "status");
  ASSERT_TRUE(st.ok()) << st.status().message();
  EXPECT_EQ((*st)["status"]["x"], 1);
  EXPECT_EQ((*st)["spec"]["a"], 1) << "/status changed the spec";
  EXPECT_EQ((*st)["metadata"]["generation"], 1);
  auto main = f.client.Patch(kTfJobs, "ns", "j", kube::PatchType::kMerge, {{"status", nullptr}, {"spec", {{"a", 3}}}});
  ASSERT_TRUE(main.ok());
  EXPECT_EQ((*main)["status"]["x"], 1) << "the main resource changed the status";
  EXPECT_EQ((*main)["spec"]["a"], 3);
  EXPECT_EQ((*main)["metadata"]["generation"], 2);
  // A patch that changes nothing writes nothing: no new version.
  std::string rv = (*main)["metadata"]["resourceVersion"];
  auto same = f.client.Patch(kTfJobs, "ns", "j", kube::PatchType::kMerge, {{"spec", {{"a", 3}}}});
  EXPECT_EQ((*same)["metadata"]["resourceVersion"], rv);
  // JSON patch; a failed test is 422.
  auto jp = f.client.Patch(kTfJobs, "ns", "j", kube::PatchType::kJson,
                           json::array({{{"op", "replace"}, {"path", "/spec/a"}, {"value", 4}}}));
  ASSERT_TRUE(jp.ok()) << jp.status().message();
  EXPECT_EQ((*jp)["spec"]["a"], 4);
  auto failed = f.client.Patch(kTfJobs, "ns", "j", kube::PatchType::kJson,
                               json::array({{{"op", "test"}, {"path", "/spec/a"}, {"value", 9}}}));
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalid);
  // A patch naming an old resourceVersion is a Conflict.
  auto stale = f.client.Patch(kTfJobs, "ns", "j", kube::PatchType::kMerge, {{"metadata", {{"resourceVersion", "1"}}}});
  EXPECT_TRUE(IsConflict(stale.status()));
}

TEST(FakeApiServer, UpdateNeedsTheCurrentVersion) {
  Fixture f;
  auto created = f.client.Create(kTfJobs, "ns", {{"metadata", {{"name", "j"}}}, {"spec", {{"a", 1}}}});
  json object = *created;
  object["spec"]["a"] = 2;
  auto updated = f.client.Update(kTfJobs, "ns", "j", object);
  ASSERT_TRUE(updated.ok()) << updated.status().message();
  auto stale = f.client.Update(kTfJobs, "ns", "j", object);  // still the first version
  EXPECT_TRUE(IsConflict(stale.status())) << stale.status().message();
  EXPECT_THAT(stale.status().message(), ::testing::HasSubstr("the object has been modified"));
  object["metadata"].erase("resourceVersion");
  EXPECT_EQ(f.client.Update(kTfJobs, "ns", "j", object).status().code(), StatusCode::kInvalid)
      << "a custom resource's update needs a resourceVersion";
}

// Kueue's Workload (kueue.x-k8s.io/v1beta2, a namespaced custom resource with a status
// subresource), as the operator's Kueue mode writes it (docs/kueue.md): created without status,
// admitted through /status by Kueue, its status patched at a resourceVersion, updated only with
// one, and held by Kueue's finalizer when deleted.
TEST(FakeApiServer, ServesKueueWorkloads) {
  Fixture f;
  const kube::GroupVersionResource workloads{"kueue.x-k8s.io", "v1beta2", "workloads"};
  json wl = {{"apiVersion", "kueue.x-k8s.io/v1beta2"},
             {"kind", "Workload"},
             {"metadata", {{"name", "tfjob-mnist-817ee"}, {"finalizers", {"kueue.x-k8s.io/resource-in-use"}}}},
             {"spec", {{"queueName", "user-queue"}, {"podSets", {{{"name", "worker"}, {"count", 2}}}}}},
             {"status", {{"conditions", {{{"type", "Admitted"}, {"status", "True"}}}}}}};
  auto created = f.client.Create(workloads, "ns", wl);
  ASSERT_TRUE(created.ok()) << created.status().message();
  EXPECT_FALSE(created->contains("status")) << "the status subresource: a create carries none";
  EXPECT_EQ((*created)["metadata"]["namespace"], "ns");
  EXPECT_THAT(f.client.Create(workloads, "ns", wl).status().message(),
              ::testing::HasSubstr("workloads.kueue.x-k8s.io \"tfjob-mnist-817ee\" already exists"));

  // Kueue admits it through /status; the spec stays.
  auto admitted = f.client.Patch(
      workloads, "ns", "tfjob-mnist-817ee", kube::PatchType::kMerge,
      {{"status", {{"admission", {{"clusterQueue", "cq"}}}, {"conditions", {{{"type", "Admitted"}, {"status", "True"}}}}}},
       {"spec", {{"queueName", "changed"}}}},
      "status");
  ASSERT_TRUE(admitted.ok()) << admitted.status().message();
  EXPECT_EQ((*admitted)["status"]["admission"]["clusterQueue"], "cq");
  EXPECT_EQ((*admitted)["spec"]["queueName"], "user-queue");

  // The operator's status patch at the version it read: a stale one is a conflict.
  const json stale_patch = {{"metadata", {{"resourceVersion", (*created)["metadata"]["resourceVersion"]}}},
                            {"status", {{"admission", nullptr}}}};
  EXPECT_TRUE(IsConflict(
      f.client.Patch(workloads, "ns", "tfjob-mnist-817ee", kube::PatchType::kMerge, stale_patch, "status").status()));
  const json fresh_patch = {{"metadata", {{"resourceVersion", (*admitted)["metadata"]["resourceVersion"]}}},
                            {"status", {{"admission", nullptr}}}};
  auto cleared = f.client.Patch(workloads, "ns", "tfjob-mnist-817ee", kube::PatchType::kMerge, fresh_patch, "status");
  ASSERT_TRUE(cleared.ok()) << cleared.status().message();
  EXPECT_FALSE((*cleared)["status"].contains("admission"));

  // An update needs the resourceVersion (a custom resource) and keeps the status.
  json update = *cleared;
  update["spec"]["queueName"] = "other";
  update["status"] = {{"x", 1}};
  update["metadata"].erase("resourceVersion");
  EXPECT_EQ(f.client.Update(workloads, "ns", "tfjob-mnist-817ee", update).status().code(), StatusCode::kInvalid);
  update["metadata"]["resourceVersion"] = (*cleared)["metadata"]["resourceVersion"];
  auto updated = f.client.Update(workloads, "ns", "tfjob-mnist-817ee", update);
  ASSERT_TRUE(updated.ok()) << updated.status().message();
  EXPECT_EQ((*updated)["spec"]["queueName"], "other");
  EXPECT_FALSE((*updated)["status"].contains("x"));

  // Deleted: Kueue's finalizer holds it until it is removed.
  ASSERT_TRUE(f.client.Delete(workloads, "ns", "tfjob-mnist-817ee").ok());
  auto held = f.server.Get(workloads, "ns", "tfjob-mnist-817ee");
  ASSERT_TRUE(held);
  EXPECT_TRUE((*held)["metadata"].contains("deletionTimestamp"));
  ASSERT_TRUE(f.client
                  .Patch(workloads, "ns", "tfjob-mnist-817ee", kube::PatchType::kMerge,
                         {{"metadata", {{"finalizers", nullptr}}}})
                  .ok());
  EXPECT_FALSE(f.server.Get(workloads, "ns", "tfjob-mnist-817ee"));
}

// Collects a watch's events on a thread until stopped.
struct Watcher {
  kube::RestClient& client;
  std::vector<kube::WatchEvent> events;
  std::mutex mu;
  Status result;
  std::stop_source stop;
  std::jthread thread;
  Watcher(kube::RestClient& c, const std::string& rv, const std::string& selector = "") : client(c) {
    thread = std::jthread([this, rv, selector] {
      kube::WatchDecoder decoder;
      result = client.Watch(
          kube::kPods, "ns", {.label_selector = selector, .resource_version = rv},
          [&](std::string_view chunk) {
            std::lock_guard lock(mu);
            for (auto& e : decoder.Feed(chunk)) events.push_back(std::move(e));
            return true;
          },
          stop.get_token());
    });
  }
  size_t size() {
    std::lock_guard lock(mu);
    return events.size();
  }
  void WaitFor(size_t n) {
    for (int i = 0; i < 2000 && size() < n; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::vector<std::pair<kube::WatchEventType, std::string>> Seen() {
    std::lock_guard lock(mu);
    std::vector<std::pair<kube::WatchEventType, std::string>> out;
    for (const auto& e : events)
      out.emplace_back(e.type, e.type == kube::WatchEventType::kError
                                   ? e.object.value("reason", "")
                                   : e.object["metadata"]["name"].get<std::string>());
    return out;
  }
  ~Watcher() {
    stop.request_stop();
    thread.join();
  }
};

TEST(FakeApiServer, WatchStreamsChangesFromAVersion) {
  using T = kube::WatchEventType;
  Fixture f;
  (void)f.client.Create(kube::kPods, "ns", Pod("before"));
  auto list = f.client.List(kube::kPods, "ns", {});
  std::string rv = (*list)["metadata"]["resourceVersion"];
  Watcher w(f.client, rv);
  (void)f.client.Create(kube::kPods, "ns", Pod("a"));
  (void)f.client.Create(kube::kPods, "other", Pod("elsewhere"));
  (void)f.client.Patch(kube::kPods, "ns", "a", kube::PatchType::kMerge, {{"status", {{"phase", "Running"}}}}, "status");
  (void)f.client.Delete(kube::kPods, "ns", "a");
  w.WaitFor(3);
  EXPECT_THAT(w.Seen(), ::testing::ElementsAre(std::pair{T::kAdded, "a"}, std::pair{T::kModified, "a"},
                                               std::pair{T::kDeleted, "a"}));
  std::lock_guard lock(w.mu);
  EXPECT_EQ(w.events[1].object["status"]["phase"], "Running");
  EXPECT_EQ(w.events[2].object["metadata"]["resourceVersion"], std::to_string(f.server.resource_version()))
      << "a DELETED event carries the deletion's version";
}

TEST(FakeApiServer, WatchFromZeroStartsWithTheCurrentObjects) {
  using T = kube::WatchEventType;
  Fixture f;
  (void)f.client.Create(kube::kPods, "ns", Pod("a"));
  Watcher w(f.client, "0");
  w.WaitFor(1);
  (void)f.client.Create(kube::kPods, "ns", Pod("b"));
  w.WaitFor(2);
  EXPECT_THAT(w.Seen(), ::testing::ElementsAre(std::pair{T::kAdded, "a"}, std::pair{T::kAdded, "b"}));
}

// A dropped change reaches no watch (a gap), but the store and a list have it.
TEST(FakeApiServer, DroppedWatchEventsReachNoWatch) {
  using T = kube::WatchEventType;
  Fixture f;
  f.server.set_watch_event_drop(
      [](const std::string&, const json& o) { return o["metadata"].value("name", "") == "lost"; });
  (void)f.client.Create(kube::kPods, "other", Pod("before"));  // a version to watch from ("0" lists)
  auto list = f.client.List(kube::kPods, "ns", {});
  Watcher w(f.client, (*list)["metadata"]["resourceVersion"]);
  (void)f.client.Create(kube::kPods, "ns", Pod("lost"));
  (void)f.client.Create(kube::kPods, "ns", Pod("kept"));
  w.WaitFor(1);
  EXPECT_THAT(w.Seen(), ::testing::ElementsAre(std::pair{T::kAdded, "kept"}));
  EXPECT_TRUE(f.server.Get(kube::kPods, "ns", "lost"));
  EXPECT_EQ(f.client.List(kube::kPods, "ns", {})->at("items").size(), 2u);
  f.server.set_watch_event_drop(nullptr);
  (void)f.client.Delete(kube::kPods, "ns", "lost");
  w.WaitFor(2);
  EXPECT_THAT(w.Seen(), ::testing::ElementsAre(std::pair{T::kAdded, "kept"}, std::pair{T::kDeleted, "lost"}));
}

// A label-filtered watch sees an object leave the selection as DELETED and enter it as ADDED.
TEST(FakeApiServer, WatchFollowsTheSelector) {
  using T = kube::WatchEventType;
  Fixture f;
  Watcher w(f.client, "0", "app=tf");
  for (int i = 0; i < 5000 && f.server.open_watches() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  (void)f.client.Create(kube::kPods, "ns", Pod("a", {{"app", "tf"}}));
  (void)f.client.Create(kube::kPods, "ns", Pod("b"));
  (void)f.client.Patch(kube::kPods, "ns", "a", kube::PatchType::kMerge, {{"metadata", {{"labels", {{"app", "x"}}}}}});
  (void)f.client.Patch(kube::kPods, "ns", "b", kube::PatchType::kMerge, {{"metadata", {{"labels", {{"app", "tf"}}}}}});
  w.WaitFor(3);
  EXPECT_THAT(w.Seen(), ::testing::ElementsAre(std::pair{T::kAdded, "a"}, std::pair{T::kDeleted, "a"},
                                               std::pair{T::kAdded, "b"}));
}

// A version older than the history: one ERROR event (Expired, 410), then the server ends the watch.
TEST(FakeApiServer, WatchFromACompactedVersionIsExpired) {
  Fixture f;
  f.server.set_history_limit(2);
  for (const char* n : {"a", "b", "c", "d"}) (void)f.client.Create(kube::kPods, "ns", Pod(n));
  kube::WatchDecoder decoder;
  std::vector<kube::WatchEvent> events;
  Status s = f.client.Watch(kube::kPods, "ns", {.resource_version = "1"},
                            [&](std::string_view chunk) {
                              for (auto& e : decoder.Feed(chunk)) events.push_back(std::move(e));
                              return true;
                            },
                            {});
  EXPECT_TRUE(s.ok()) << s.message();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].type, kube::WatchEventType::kError);
  EXPECT_TRUE(IsGone(kube::WatchErrorStatus(events[0].object)));
  EXPECT_EQ(events[0].object["message"], "too old resource version: 1 (2)");
}

TEST(FakeApiServer, CloseWatchesEndsThemAndAnInformerResumes) {
  Fixture f;
  controller::Informer<json> informer(
      f.client, controller::ListWatchSpec{kube::kPods, "ns"}, [](const json& j) -> StatusOr<json> { return j; },
      controller::NamespacedKey, Logger());
  (void)f.client.Create(kube::kPods, "ns", Pod("a"));
  informer.Start();
  for (int i = 0; i < 2000 && !informer.HasSynced(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  ASSERT_TRUE(informer.HasSynced());
  EXPECT_TRUE(informer.store().Get("ns/a"));
  for (int i = 0; i < 2000 && f.server.open_watches() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  f.server.CloseWatches();
  (void)f.client.Create(kube::kPods, "ns", Pod("b"));
  for (int i = 0; i < 2000 && !informer.store().Get("ns/b"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(informer.store().Get("ns/b")) << "the informer did not resume";
  EXPECT_GE(f.server.CountRequests("watch", "pods"), 2);
  EXPECT_EQ(f.server.CountRequests("list", "pods"), 1) << "a resumed watch needs no relist";
  informer.Stop();
}

TEST(FakeApiServer, InjectedFaultsAnswerAsTheServer) {
  Fixture f;
  f.server.AddFault({.verb = "create", .resource = "pods", .code = 500, .times = 2});
  f.server.AddFault({.verb = "create",
                     .resource = "services",
                     .when = [](const FakeRequest& r) { return r.body.find("\"bad\"") != std::string::npos; },
                     .code = 422,
                     .message = "spec.ports: Required value",
                     .times = -1});
  EXPECT_EQ(f.client.Create(kube::kPods, "ns", Pod("a")).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(f.client.Create(kube::kPods, "ns", Pod("a")).status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(f.client.Create(kube::kPods, "ns", Pod("a")).ok()) << "the fault was for two requests";
  json svc = {{"metadata", {{"name", "bad"}}}};
  auto invalid = f.client.Create(kube::kServices, "ns", svc);
  EXPECT_EQ(invalid.status().code(), StatusCode::kInvalid);
  EXPECT_THAT(invalid.status().message(), ::testing::HasSubstr("spec.ports: Required value"));
  EXPECT_EQ(f.client.Create(kube::kServices, "ns", svc).status().code(), StatusCode::kInvalid) << "times -1: always";
  EXPECT_TRUE(f.client.Create(kube::kServices, "ns", {{"metadata", {{"name", "good"}}}}).ok());
  // A lost response: the write happened, the client saw an error.
  f.server.AddFault({.verb = "create", .code = 504, .after_write = true});
  EXPECT_EQ(f.client.Create(kube::kPods, "ns", Pod("lost")).status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(f.server.Get(kube::kPods, "ns", "lost"));
  // The log has every answer.
  auto log = f.server.requests();
  ASSERT_EQ(log.size(), 7u);
  EXPECT_EQ(log[0].code, 500);
  EXPECT_EQ(log[2].code, 201);
  EXPECT_EQ(log[2].verb, "create");
  EXPECT_EQ(log[2].resource, "pods");
  EXPECT_EQ(log[2].ns, "ns");
  EXPECT_EQ(log[6].code, 504);
}

// A 429 with Retry-After is retried by the client after that delay (on the fake clock).
TEST(FakeApiServer, TooManyRequestsCarriesRetryAfter) {
  FakeClock clock;
  FakeApiServer server(clock);
  kube::RestClientOptions o;
  o.max_retries = 1;
  kube::RestClient client(server, clock, o);
  server.AddFault({.verb = "get", .code = 429, .retry_after = 3});
  (void)server.Create(kube::kPods, "ns", Pod("a"));
  EXPECT_TRUE(client.Get(kube::kPods, "ns", "a").ok());
  EXPECT_EQ(clock.slept(), std::chrono::seconds(3));
}

TEST(FakeApiServer, LatencyHookSeesEveryRequestInFlight) {
  Fixture f;
  std::atomic<int> in_flight{0}, peak{0};
  f.server.set_latency_hook([&](const FakeRequest&) {
    int now = ++in_flight;
    for (int p = peak.load(); now > p && !peak.compare_exchange_weak(p, now);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    --in_flight;
  });
  std::vector<std::jthread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] { (void)f.client.Create(kube::kPods, "ns", Pod("p" + std::to_string(i))); });
  threads.clear();
  EXPECT_GE(peak.load(), 2) << "the hook runs outside the server's lock";
  EXPECT_EQ(f.server.List(kube::kPods).size(), 4u);
}

TEST(FakeApiServer, ParsesSelectors) {
  EXPECT_TRUE(ParseLabelSelector(""));
  EXPECT_TRUE(ParseLabelSelector("training.kubeflow.org/operator-name=tfjob-controller"));
  EXPECT_TRUE(ParseLabelSelector("a in (x,y),!b,c"));
  EXPECT_FALSE(ParseLabelSelector("a in x"));
  EXPECT_FALSE(ParseLabelSelector("a b"));
  EXPECT_FALSE(ParseLabelSelector("=x"));
  auto s = ParseLabelSelector("a!=x");
  ASSERT_TRUE(s);
  EXPECT_TRUE(SelectorMatches(*s, json::object())) << "!= matches an object without the label";
  EXPECT_FALSE(SelectorMatches(*s, {{"a", "x"}}));
}

}  // namespace
}  // namespace tfjob::testing
