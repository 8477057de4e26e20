#include "local/restart_backoff.h"

#include <gtest/gtest.h>

#include <vector>

namespace tfjob::local {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Time = RestartBackoff::Time;

const Time kT0 = Time(std::chrono::hours(1));

// A replica that fails `runs[i]` after each start, restarted as soon as its back-off allows: the
// start times, as offsets from the first start.
std::vector<seconds> StartsOf(const std::vector<seconds>& runs, BackoffPolicy policy = {}) {
  RestartBackoff backoff(policy);
  std::vector<seconds> starts = {seconds(0)};
  Time start = kT0;
  for (size_t i = 0; i + 1 < runs.size(); ++i) {
    const Time ended = start + runs[i];
    const Time due = backoff.DueAt(ended);
    backoff.Started(ended, due);
    start = due;
    starts.push_back(std::chrono::duration_cast<seconds>(start - kT0));
  }
  return starts;
}

TEST(RestartBackoff, TheFirstRestartIsAtOnceThenTenSecondsDoublingToFiveMinutes) {
  // A command that fails at once (the typo job of issue 35): starts at 0, 0, 10, 30, 70, ...
  std::vector<seconds> runs(12, seconds(0));
  EXPECT_EQ(StartsOf(runs), (std::vector<seconds>{seconds(0), seconds(0), seconds(10), seconds(30), seconds(70),
                                                  seconds(150), seconds(310), seconds(610), seconds(910), seconds(1210),
                                                  seconds(1510), seconds(1810)}));
}

TEST(RestartBackoff, AtMostThreeStartsInTheFirst25Seconds) {
  std::vector<seconds> starts = StartsOf(std::vector<seconds>(10, seconds(0)));
  int within = 0;
  for (seconds s : starts) within += s < seconds(25) ? 1 : 0;
  EXPECT_EQ(within, 3);
}

TEST(RestartBackoff, TheWaitCountsFromTheEndOfTheFailedAttempt) {
  RestartBackoff backoff;
  backoff.Started(kT0, kT0);  // the first restart: back-off 10 s from now on
  const Time ended = kT0 + seconds(4);
  EXPECT_EQ(backoff.WaitAfter(ended), seconds(10));
  EXPECT_EQ(backoff.DueAt(ended), ended + seconds(10));
}

TEST(RestartBackoff, TenMinutesWithoutAFailureStartsOver) {
  struct Case {
    seconds ran;   // how long the attempt after the 4th restart ran
    seconds wait;  // what the restart after it waits
  };
  // The 4th restart set the back-off to 80 s; at 2 x max (600 s) after the last start it resets.
  for (const Case& c :
       {Case{seconds(30), seconds(80)}, Case{seconds(600), seconds(80)}, Case{seconds(601), seconds(0)}}) {
    RestartBackoff backoff;
    Time now = kT0;
    for (int i = 0; i < 4; ++i) {
      const Time due = backoff.DueAt(now);
      backoff.Started(now, due);
      now = due;
    }
    EXPECT_EQ(backoff.WaitAfter(now + c.ran), c.wait) << c.ran.count();
    // After a reset the restart is at once and the one after waits `initial` again.
    backoff.Started(now + c.ran, backoff.DueAt(now + c.ran));
    if (c.wait == seconds(0)) {
      EXPECT_EQ(backoff.WaitAfter(now + c.ran), seconds(10));
    }
  }
}

TEST(RestartBackoff, AShorterPolicyAndNone) {
  EXPECT_EQ(StartsOf(std::vector<seconds>(6, seconds(0)), {seconds(1), seconds(3)}),
            (std::vector<seconds>{seconds(0), seconds(0), seconds(1), seconds(3), seconds(6), seconds(9)}));
  EXPECT_EQ(StartsOf(std::vector<seconds>(4, seconds(0)), {milliseconds(0), milliseconds(0)}),
            (std::vector<seconds>(4, seconds(0))));
}

}  // namespace
}  // namespace tfjob::local
