#include "common/time_format.h"

#include <stop_token>

#include <gtest/gtest.h>

#include "common/clock.h"

namespace tfjob {
namespace {

using std::chrono::system_clock;

TEST(FormatRfc3339, SecondsAndFractionsTruncated) {
  const system_clock::time_point t =
      system_clock::time_point(std::chrono::seconds(1764501410)) + std::chrono::microseconds(123456);
  struct Case {
    int digits;
    const char* want;
  };
  const Case cases[] = {
      {0, "2025-11-30T11:16:50Z"},           {3, "2025-11-30T11:16:50.123Z"},        {6, "2025-11-30T11:16:50.123456Z"},
      {9, "2025-11-30T11:16:50.123456000Z"}, {12, "2025-11-30T11:16:50.123456000Z"},
  };
  for (const auto& c : cases) EXPECT_EQ(FormatRfc3339(t, c.digits), c.want) << c.digits;
  EXPECT_EQ(FormatRfc3339(system_clock::time_point{}, 3), "1970-01-01T00:00:00.000Z");
}

TEST(SleepFor, ReturnsFalseWhenStopped) {
  std::stop_source stop;
  stop.request_stop();
  EXPECT_FALSE(SleepFor(std::chrono::hours(1), stop.get_token()));  // at once: a hang fails by the test's time-out
  EXPECT_TRUE(SleepFor(std::chrono::nanoseconds(1), std::stop_token()));
}

}  // namespace
}  // namespace tfjob
