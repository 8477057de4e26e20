// The shared cache: one informer per resource whoever asks, listers on its store, one start,
// sync and stop; against the FakeApiServer.
#include "controller/informer_factory.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "kube/tfjob_resources.h"
#include "testing/fake_api_server.h"
#include "testing/fake_clock.h"

namespace tfjob::controller {
namespace {

using nlohmann::json;
using ::tfjob::testing::WaitUntil;

struct Server {
  FakeClock clock;
  ::tfjob::testing::FakeApiServer server{clock};
  kube::RestClient client{server, clock, ::tfjob::testing::UnthrottledClientOptions()};
};

json PriorityClass(const std::string& name, int value, bool global_default = false) {
  return {{"apiVersion", "scheduling.k8s.io/v1"},
          {"kind", "PriorityClass"},
          {"metadata", {{"name", name}}},
          {"value", value},
          {"globalDefault", global_default}};
}

TEST(InformerFactory, OneInformerPerResourceWhoeverAsks) {
  Server s;
  ASSERT_TRUE(s.server.Create(kube::kPriorityClasses, "", PriorityClass("high", 1000, true)).ok());
  InformerFactory factory(s.client, Logger());
  Informer<api::PriorityClass>& a = PriorityClassInformer(factory);
  Informer<api::PriorityClass>& b = PriorityClassInformer(factory);
  EXPECT_EQ(&a, &b);
  Informer<json>& pods = factory.For<json>(ListWatchSpec{kube::kPods, "ns"}, KeepJson, NamespacedKey);
  Informer<json>& other_ns = factory.For<json>(ListWatchSpec{kube::kPods, "other"}, KeepJson, NamespacedKey);
  EXPECT_NE(&pods, &other_ns) << "another namespace is another watch";
  EXPECT_EQ(factory.size(), 3u);
  EXPECT_EQ(factory.CountOf("priorityclasses"), 1u);

  factory.Start();
  ASSERT_TRUE(WaitUntil([&] { return factory.HasSynced(); }));
  Lister<api::PriorityClass> classes(a.store());
  ASSERT_TRUE(classes.Get("high"));
  EXPECT_EQ(*classes.Get("high"), (api::PriorityClass{1000, true}));
  int lists = 0;
  for (const auto& r : s.server.requests())
    if (r.verb == "list" && r.resource == "priorityclasses") ++lists;
  EXPECT_EQ(lists, 1) << "one list for both asks";

  ASSERT_TRUE(s.server.Create(kube::kPriorityClasses, "", PriorityClass("low", -5)).ok());
  EXPECT_TRUE(WaitUntil([&] { return classes.Get("low") != nullptr; })) << "the watch";
  factory.Stop();
  EXPECT_EQ(classes.size(), 2u) << "the store stays readable after Stop";
  factory.Stop();  // idempotent
}

// An informer asked for after Start starts at the next Start; HasSynced waits for it.
TEST(InformerFactory, ALateRegistrationStartsAtTheNextStart) {
  Server s;
  InformerFactory factory(s.client, Logger());
  PriorityClassInformer(factory);
  factory.Start();
  ASSERT_TRUE(WaitUntil([&] { return factory.HasSynced(); }));
  Informer<json>& pods = factory.For<json>(ListWatchSpec{kube::kPods, ""}, KeepJson, NamespacedKey);
  EXPECT_FALSE(factory.HasSynced());
  factory.Start();
  ASSERT_TRUE(WaitUntil([&] { return factory.HasSynced(); }));
  EXPECT_TRUE(pods.HasSynced());
}

TEST(PriorityClass, DecodesTheValueAndGlobalDefault) {
  EXPECT_EQ(*api::DecodePriorityClass(PriorityClass("a", 7)), (api::PriorityClass{7, false}));
  EXPECT_EQ(*api::DecodePriorityClass(PriorityClass("a", -7, true)), (api::PriorityClass{-7, true}));
  for (const json& bad : {json{{"value", "1"}}, json::object(), json{{"value", 3000000000LL}}}) {
    auto decoded = api::DecodePriorityClass(bad);
    ASSERT_FALSE(decoded.ok()) << bad.dump();
    EXPECT_EQ(decoded.status().message(), "a priority class without an int32 value");
  }
}

}  // namespace
}  // namespace tfjob::controller
