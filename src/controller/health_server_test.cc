#include "controller/health_server.h"

#include <httplib.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::controller {
namespace {

TEST(HttpEndpoint, ServesMetricsHealthAndReadiness) {
  Registry registry;
  registry.AddCounter("x_total", "x").With({}).Inc();
  HttpEndpoint ep;
  ep.ServeMetrics(&registry);
  std::atomic<bool> synced{false};
  ep.AddLivenessCheck("ping", [] { return OkStatus(); });
  ep.AddReadinessCheck("informers", [&] { return synced ? OkStatus() : UnavailableError("caches not synced"); });
  ASSERT_TRUE(ep.Start("127.0.0.1:0").ok());
  ASSERT_GT(ep.port(), 0);
  httplib::Client c("127.0.0.1", ep.port());
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_THAT(m->body, ::testing::HasSubstr("x_total 1\n"));
  EXPECT_EQ(c.Get("/healthz")->status, 200);
  auto not_ready = c.Get("/readyz");
  EXPECT_EQ(not_ready->status, 500);
  EXPECT_THAT(not_ready->body, ::testing::HasSubstr("[-]informers failed: caches not synced"));
  synced = true;
  EXPECT_EQ(c.Get("/readyz")->status, 200);
  ep.Stop();
}

TEST(HttpEndpoint, BadAddressesAreClearErrors) {
  HttpEndpoint ep;
  EXPECT_EQ(ep.Start("nonsense").code(), StatusCode::kInvalidArgument);
  HttpEndpoint ep2;
  EXPECT_EQ(ep2.Start("127.0.0.1:http").code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfjob::controller
