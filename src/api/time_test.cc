#include "api/time.h"

#include <gtest/gtest.h>

namespace tfjob::api {
namespace {

TEST(Time, FormatsUtcSeconds) {
  Time t = Time(std::chrono::seconds(1767225600)) + std::chrono::milliseconds(900);
  EXPECT_EQ(FormatTime(t), "2026-01-01T00:00:00Z");
}

TEST(Time, ParsesZuluOffsetsAndFractions) {
  auto z = ParseTime("2026-01-01T00:00:00Z");
  ASSERT_TRUE(z);
  EXPECT_EQ(*z, Time(std::chrono::seconds(1767225600)));
  auto off = ParseTime("2026-01-01T02:00:00+02:00");
  ASSERT_TRUE(off);
  EXPECT_EQ(*off, *z);
  auto frac = ParseTime("2026-01-01T00:00:00.5Z");
  ASSERT_TRUE(frac);
  EXPECT_EQ(*frac - *z, std::chrono::milliseconds(500));
}

TEST(Time, RejectsMalformed) {
  for (const char* s : {"", "2026-01-01", "2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-01-01T00:00:00",
                        "2026-01-01T00:00:00Zjunk", "yesterday", "1012-01-01T00:00:00Z",
                        "9999-12-31T23:59:59Z"})  // outside what 64-bit nanoseconds hold
    EXPECT_FALSE(ParseTime(s)) << s;
}

}  // namespace
}  // namespace tfjob::api
