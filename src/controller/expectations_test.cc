#include "controller/expectations.h"

#include <gtest/gtest.h>

#include "testing/fake_clock.h"

namespace tfjob::controller {
namespace {

TEST(Expectations, SatisfiedOnlyWhenAllCreatesAndDeletesAreObserved) {
  FakeClock clock;
  Expectations e(clock);
  EXPECT_TRUE(e.Satisfied("ns/j"));
  e.Expect("ns/j", 2, 1);
  EXPECT_FALSE(e.Satisfied("ns/j"));
  e.CreationObserved("ns/j");
  e.DeletionObserved("ns/j");
  EXPECT_FALSE(e.Satisfied("ns/j"));  // D1: one create still pending
  e.CreationObserved("ns/j");
  EXPECT_TRUE(e.Satisfied("ns/j"));
  e.CreationObserved("ns/j");  // extra observations never go negative
  e.Raise("ns/j", 1, 0);
  EXPECT_FALSE(e.Satisfied("ns/j"));
}

TEST(Expectations, ExpireAfterTheTtl) {
  FakeClock clock;
  Expectations e(clock);
  e.Expect("ns/j", 1, 0);
  clock.Advance(std::chrono::minutes(5));
  EXPECT_FALSE(e.Satisfied("ns/j"));
  clock.Advance(std::chrono::seconds(1));
  EXPECT_TRUE(e.Satisfied("ns/j"));
  e.Delete("ns/j");
  EXPECT_TRUE(e.Satisfied("ns/j"));
}

}  // namespace
}  // namespace tfjob::controller
