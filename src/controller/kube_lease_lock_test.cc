#include "controller/kube_lease_lock.h"

#include <gtest/gtest.h>

#include "controller/leader_elector.h"
#include "testing/fake_clock.h"
#include "testing/fake_transport.h"

namespace tfjob::controller {
namespace {

// Issue 17 item 16: lease requests used the client's defaults (30 s time-out, 5 retries with
// backoff), so one renew attempt against a silent server outlasted the 10 s renew deadline and
// a release at shutdown outlasted the grace period. Each lease request now has a quarter of the
// renew deadline and no retries: a read plus a write fit in half the deadline.
TEST(KubeLeaseLock, Issue17RequestsFitTheRenewDeadline) {
  kube::FakeTransport t;
  t.set_handler([](const kube::HttpRequest& r) -> StatusOr<kube::HttpResponse> {
    return DeadlineExceededError("GET https://h" + r.path + ": timeout: no response");
  });
  FakeClock clock;
  LeaderElectionConfig config;
  std::stop_source abort;
  kube::RestClientOptions base;
  base.abort = abort.get_token();
  kube::RestClient client(t, clock, KubeLeaseLock::ClientOptions(config.renew_deadline, base));
  KubeLeaseLock lock(client, "ns", "tfjob-operator");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(lock.Get().status().code(), StatusCode::kDeadlineExceeded);
  abort.request_stop();  // shutdown: the lease client still works, to release the lease
  EXPECT_EQ(lock.Get().status().code(), StatusCode::kDeadlineExceeded);
  (void)::testing::internal::GetCapturedStderr();
  auto reqs = t.requests();
  ASSERT_EQ(reqs.size(), 2u);  // no retries of its own
  EXPECT_EQ(reqs[0].timeout, std::chrono::milliseconds(2500));
  EXPECT_LE(2 * reqs[0].timeout, config.renew_deadline / 2);
  EXPECT_FALSE(reqs[1].abort.stop_requested());
}

}  // namespace
}  // namespace tfjob::controller
