#include "common/log_throttle.h"

#include <gtest/gtest.h>

#include "testing/fake_clock.h"

namespace tfjob {
namespace {

TEST(LogThrottle, OneLinePerKeyPerIntervalWithTheCountHeldBack) {
  FakeClock clock;
  LogThrottle throttle(clock, std::chrono::seconds(10));
  EXPECT_EQ(throttle.Allow("get pods timeout"), 0);
  EXPECT_EQ(throttle.Allow("get pods timeout"), std::nullopt);
  EXPECT_EQ(throttle.Allow("get pods timeout"), std::nullopt);
  EXPECT_EQ(throttle.Allow("get pods HTTP 500"), 0);  // another cause is another key
  clock.Advance(std::chrono::seconds(10));
  EXPECT_EQ(throttle.Allow("get pods timeout"), 2);
  EXPECT_EQ(throttle.Allow("get pods timeout"), std::nullopt);
}

TEST(LogThrottle, KeysAreBounded) {
  FakeClock clock;
  LogThrottle throttle(clock, std::chrono::seconds(10), 2);
  EXPECT_EQ(throttle.Allow("a"), 0);
  clock.Advance(std::chrono::seconds(1));
  EXPECT_EQ(throttle.Allow("b"), 0);
  EXPECT_EQ(throttle.Allow("c"), 0);  // evicts "a", the oldest
  EXPECT_EQ(throttle.Allow("a"), 0);  // new again
  EXPECT_EQ(throttle.Allow("c"), std::nullopt);
}

}  // namespace
}  // namespace tfjob
