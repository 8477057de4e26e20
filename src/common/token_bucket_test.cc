#include "common/token_bucket.h"

#include <gtest/gtest.h>

#include "testing/fake_clock.h"

namespace tfjob {
namespace {

using std::chrono::milliseconds;

TEST(TokenBucket, BurstThenRate) {
  FakeClock clock;
  TokenBucket bucket(clock, 10, 3);
  EXPECT_TRUE(bucket.TryAccept());
  EXPECT_TRUE(bucket.TryAccept());
  EXPECT_TRUE(bucket.TryAccept());
  EXPECT_FALSE(bucket.TryAccept());
  clock.Advance(milliseconds(100));  // one token at 10/s
  EXPECT_TRUE(bucket.TryAccept());
  EXPECT_FALSE(bucket.TryAccept());
  clock.Advance(std::chrono::seconds(10));  // refills to the burst, not beyond
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(bucket.TryAccept());
  EXPECT_FALSE(bucket.TryAccept());
}

TEST(TokenBucket, ReserveQueuesCallersBehindEachOther) {
  FakeClock clock;
  TokenBucket bucket(clock, 10, 1);
  EXPECT_EQ(bucket.Reserve(), std::chrono::nanoseconds(0));
  EXPECT_EQ(bucket.Reserve(), milliseconds(100));
  EXPECT_EQ(bucket.Reserve(), milliseconds(200));
  clock.Advance(milliseconds(250));  // the two reservations are paid off, half a token left
  EXPECT_EQ(bucket.Reserve(), milliseconds(50));
}

}  // namespace
}  // namespace tfjob
