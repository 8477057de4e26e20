#include "controller/busy_workers.h"

#include <gtest/gtest.h>

#include <chrono>

#include "testing/fake_clock.h"

namespace tfjob::controller {
namespace {

using std::chrono::minutes;
using std::chrono::seconds;

TEST(BusyWorkers, AWorkerStuckInOnePassFailsTheCheckAndNamesItsKey) {
  FakeClock clock;
  BusyWorkers busy(clock, 3);
  EXPECT_TRUE(busy.Check(minutes(10)).ok()) << "idle workers";
  busy.Begin(0, "team-a/quick");
  clock.Advance(minutes(30));
  busy.End(0);  // a long pass that ended is no failure
  busy.Begin(2, "team-b/stuck");
  clock.Advance(minutes(10));
  EXPECT_TRUE(busy.Check(minutes(10)).ok()) << "exactly at the limit is not over it";
  clock.Advance(seconds(1));
  Status s = busy.Check(minutes(10));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_NE(s.message().find("worker 2"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("team-b/stuck"), std::string::npos) << s.message();
  busy.End(2);
  EXPECT_TRUE(busy.Check(minutes(10)).ok()) << "the stuck pass ended";
}

TEST(BusyWorkers, NamesTheLongestOfSeveralAndIgnoresOutOfRangeSlots) {
  FakeClock clock;
  BusyWorkers busy(clock, 2);
  busy.Begin(1, "ns/older");
  clock.Advance(minutes(1));
  busy.Begin(0, "ns/newer");
  busy.Begin(5, "ns/nowhere");
  busy.Begin(-1, "ns/nowhere");
  clock.Advance(minutes(20));
  Status s = busy.Check(minutes(10));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("ns/older"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().find("nowhere"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace tfjob::controller
