#include "controller/leader_elector.h"

#include <gtest/gtest.h>

#include "testing/fake_clock.h"

namespace tfjob::controller {
namespace {

// An in-memory lease with resourceVersion semantics like the API server's.
class FakeLeaseLock final : public LeaseLock {
 public:
  StatusOr<LeaderRecord> Get() override {
    if (!exists_) return NotFoundError("lease not found");
    return record_;
  }
  Status Create(const LeaderRecord& r) override {
    if (exists_) return AlreadyExistsError("lease exists");
    exists_ = true;
    record_ = r;
    record_.resource_version = std::to_string(++version_);
    return OkStatus();
  }
  Status Update(const LeaderRecord& r) override {
    if (fail_updates_) return UnavailableError("apiserver down");
    if (r.resource_version != record_.resource_version) return ConflictError("stale");
    record_ = r;
    record_.resource_version = std::to_string(++version_);
    return OkStatus();
  }
  std::string Describe() const override { return "fake/lease"; }

  LeaderRecord record_;
  bool exists_ = false;
  bool fail_updates_ = false;
  int version_ = 0;
};

LeaderElectionConfig Config(const std::string& id) {
  LeaderElectionConfig c;
  c.identity = id;
  return c;
}

TEST(LeaderElector, FirstCandidateAcquiresOthersWait) {
  FakeClock clock;
  FakeLeaseLock lock;
  LeaderElector a(lock, clock, Config("a"), Logger());
  LeaderElector b(lock, clock, Config("b"), Logger());
  EXPECT_TRUE(a.TryOnce());
  EXPECT_FALSE(b.TryOnce());
  EXPECT_EQ(lock.record_.holder_identity, "a");
  clock.Advance(std::chrono::seconds(2));
  EXPECT_TRUE(a.TryOnce());  // renew
  EXPECT_FALSE(b.TryOnce());
  EXPECT_EQ(lock.record_.leader_transitions, 0);
}

TEST(LeaderElector, TakesOverAnExpiredLease) {
  FakeClock clock;
  FakeLeaseLock lock;
  LeaderElector a(lock, clock, Config("a"), Logger());
  LeaderElector b(lock, clock, Config("b"), Logger());
  ASSERT_TRUE(a.TryOnce());
  EXPECT_FALSE(b.TryOnce());  // b starts watching the record now
  clock.Advance(std::chrono::seconds(15));
  EXPECT_FALSE(b.TryOnce());  // not yet past the lease duration
  clock.Advance(std::chrono::seconds(1));
  EXPECT_TRUE(b.TryOnce());
  EXPECT_EQ(lock.record_.holder_identity, "b");
  EXPECT_EQ(lock.record_.leader_transitions, 1);
  EXPECT_FALSE(a.TryOnce());  // a lost it
}

TEST(LeaderElector, ReleaseLetsTheNextCandidateInAtOnce) {
  FakeClock clock;
  FakeLeaseLock lock;
  std::stop_source stop;
  LeaderElectionConfig ca = Config("a");
  bool started = false;
  ca.on_started_leading = [&] {
    started = true;
    stop.request_stop();
  };
  Registry registry;
  LeaderElector a(lock, clock, ca, Logger(), &registry);
  a.Run(stop.get_token());  // acquires, then stops and releases
  EXPECT_TRUE(started);
  EXPECT_EQ(registry.AddGauge("leader_election_master_status", "", {"name"}).With({"fake/lease"}).value(), 0);
  EXPECT_EQ(lock.record_.holder_identity, "");
  LeaderElector b(lock, clock, Config("b"), Logger());
  EXPECT_TRUE(b.TryOnce());
}

// Issue 28 item 4: Run waits on the injected clock. A leader whose renewals fail steps down once
// renew_deadline has passed since its last renewal, by that clock: with the FakeClock the whole
// run takes no real time (on real time it took renew_deadline; before, with a FakeClock that
// never moved, it never ended).
TEST(LeaderElector, ALeaderThatCannotRenewStepsDownAfterTheRenewDeadlineByTheInjectedClock) {
  FakeClock clock;
  FakeLeaseLock lock;
  LeaderElectionConfig c = Config("a");
  bool lost = false;
  c.on_started_leading = [&] { lock.fail_updates_ = true; };
  c.on_stopped_leading = [&] { lost = true; };
  LeaderElector a(lock, clock, c, Logger());
  a.Run({});
  EXPECT_TRUE(lost);
  EXPECT_FALSE(a.IsLeader());
  EXPECT_GT(clock.slept(), c.renew_deadline);
  EXPECT_LE(clock.slept(), c.renew_deadline + 2 * c.retry_period);
}

TEST(LeaderElector, ConflictingCreateLosesCleanly) {
  FakeClock clock;
  FakeLeaseLock lock;
  lock.exists_ = true;
  lock.record_ = {"other", 15, clock.Now(), clock.Now(), 0, "1"};
  lock.version_ = 1;
  LeaderElector a(lock, clock, Config("a"), Logger());
  EXPECT_FALSE(a.TryOnce());
  lock.fail_updates_ = true;
  clock.Advance(std::chrono::seconds(20));
  EXPECT_FALSE(a.TryOnce());  // expired, but the update failed: not leading
}

}  // namespace
}  // namespace tfjob::controller
