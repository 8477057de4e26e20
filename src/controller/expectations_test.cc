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
  e.Expect("ns/j", 1, 0);
  EXPECT_FALSE(e.Satisfied("ns/j"));
}

// Issue 25: one pass's totals replace what an earlier pass left (a create whose ADDED event was
// never seen), so a lost event costs one wait, not a wait after every later pass.
TEST(Expectations, EachPassSetsItsOwnTotals) {
  FakeClock clock;
  Expectations e(clock);
  e.Expect("ns/j", 3, 0);
  e.CreationObserved("ns/j");
  e.CreationObserved("ns/j");  // the third create's event is lost
  clock.Advance(std::chrono::minutes(5) + std::chrono::seconds(1));
  ASSERT_TRUE(e.Satisfied("ns/j"));  // expired: one pass runs
  e.Expect("ns/j", 2, 1);            // it creates 2 and deletes 1
  e.CreationObserved("ns/j");
  e.CreationObserved("ns/j");
  e.DeletionObserved("ns/j");
  EXPECT_TRUE(e.Satisfied("ns/j"));  // the lost event of the first pass is not carried over
  e.Expect("ns/j", 0, 0);            // a pass that writes no children clears the key
  EXPECT_TRUE(e.Satisfied("ns/j"));
  EXPECT_FALSE(e.TimeLeft("ns/j"));
}

TEST(Expectations, TimeLeftIsTheTtlsEnd) {
  FakeClock clock;
  Expectations e(clock);
  EXPECT_FALSE(e.TimeLeft("ns/j"));
  e.Expect("ns/j", 1, 0);
  clock.Advance(std::chrono::minutes(2));
  auto left = e.TimeLeft("ns/j");
  ASSERT_TRUE(left);
  EXPECT_GE(*left, std::chrono::minutes(3));
  EXPECT_LE(*left, std::chrono::minutes(3) + std::chrono::milliseconds(1));
  clock.Advance(*left);
  EXPECT_TRUE(e.Satisfied("ns/j"));  // requeued at the TTL's end, the pass runs
  EXPECT_FALSE(e.TimeLeft("ns/j"));
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
