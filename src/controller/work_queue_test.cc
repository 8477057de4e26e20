#include "controller/work_queue.h"

#include <atomic>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/fake_clock.h"

namespace tfjob::controller {
namespace {

using std::chrono::milliseconds;

TEST(WorkQueue, FifoAndDeduplicated) {
  FakeClock clock;
  WorkQueue q(clock, "t");
  q.Add("a");
  q.Add("b");
  q.Add("a");
  EXPECT_EQ(q.Len(), 2u);
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_EQ(*q.Get(), "b");
}

TEST(WorkQueue, AddWhileProcessingRequeuesOnceAfterDone) {
  FakeClock clock;
  WorkQueue q(clock, "t");
  q.Add("a");
  auto key = q.Get();
  q.Add("a");
  q.Add("a");
  EXPECT_EQ(q.Len(), 0u);  // never handed out twice at once
  q.Done(*key);
  EXPECT_EQ(q.Len(), 1u);
  EXPECT_EQ(*q.Get(), "a");
  q.Done("a");
  EXPECT_EQ(q.Len(), 0u);
}

TEST(WorkQueue, AddAfterWaitsForItsTimeAndKeepsTheEarliest) {
  FakeClock clock;
  WorkQueue q(clock, "t");
  q.AddAfter("a", milliseconds(100));
  q.AddAfter("a", milliseconds(50));
  q.AddAfter("b", milliseconds(200));
  EXPECT_EQ(q.Len(), 0u);
  clock.Advance(milliseconds(60));
  auto next = q.ProcessDue(clock.SteadyNow());
  EXPECT_EQ(q.Len(), 1u);
  ASSERT_TRUE(next);
  EXPECT_EQ(*next - clock.SteadyNow(), milliseconds(140));
  EXPECT_EQ(*q.Get(), "a");
  clock.Advance(milliseconds(200));
  q.ProcessDue(clock.SteadyNow());
  EXPECT_EQ(*q.Get(), "b");
  EXPECT_EQ(q.DelayedLenForTesting(), 0u);
}

// Keys that become due together are queued in the order of their due times (as client-go's
// heap pops them), not in the order of their names; a later AddAfter with an earlier due time
// moves the key forward, one with a later due time leaves it where it was.
TEST(WorkQueue, DelayedKeysAreQueuedInDueOrderAndKeepTheEarliest) {
  FakeClock clock;
  WorkQueue q(clock, "t");
  q.AddAfter("a", milliseconds(30));
  q.AddAfter("b", milliseconds(20));
  q.AddAfter("c", milliseconds(10));
  q.AddAfter("d", milliseconds(40));
  q.AddAfter("d", milliseconds(5));   // earlier: moves d to the front
  q.AddAfter("c", milliseconds(50));  // later: ignored
  EXPECT_EQ(q.DelayedLenForTesting(), 4u);
  clock.Advance(milliseconds(100));
  EXPECT_FALSE(q.ProcessDue(clock.SteadyNow()));
  std::vector<std::string> order;
  while (q.Len() > 0) order.push_back(*q.Get());
  EXPECT_THAT(order, ::testing::ElementsAre("d", "c", "b", "a"));
  EXPECT_EQ(q.DelayedLenForTesting(), 0u);
}

// Many delayed keys with due times in a scrambled order, the clock stepped through them: each
// ProcessDue queues exactly the keys due (in due order) and names the next due time.
TEST(WorkQueue, ManyDelayedKeysComeDueInOrder) {
  FakeClock clock;
  WorkQueue q(clock, "t");
  constexpr int kKeys = 20000;
  auto delay_of = [](int i) { return milliseconds(1 + (static_cast<long long>(i) * 7919) % kKeys); };
  for (int i = 0; i < kKeys; ++i) q.AddAfter("k" + std::to_string(i), delay_of(i));
  for (int i = 0; i < kKeys; i += 3) q.AddAfter("k" + std::to_string(i), delay_of(i) + milliseconds(5));  // ignored
  ASSERT_EQ(q.DelayedLenForTesting(), static_cast<size_t>(kKeys));
  std::vector<int> by_due(kKeys);  // the delays are a permutation of 1..kKeys ms
  for (int i = 0; i < kKeys; ++i) by_due[delay_of(i).count() - 1] = i;
  auto start = clock.SteadyNow();
  for (int ms = 1; ms <= kKeys; ++ms) {
    clock.Advance(milliseconds(1));
    auto next = q.ProcessDue(clock.SteadyNow());
    ASSERT_EQ(q.Len(), 1u) << ms;
    EXPECT_EQ(*q.Get(), "k" + std::to_string(by_due[ms - 1]));
    if (ms < kKeys) {
      ASSERT_TRUE(next);
      EXPECT_EQ(*next - start, milliseconds(ms + 1));
    } else {
      EXPECT_FALSE(next);
    }
  }
  EXPECT_EQ(q.DelayedLenForTesting(), 0u);
}

TEST(WorkQueue, RateLimitedBackoffSequenceAndForget) {
  FakeClock clock;
  RateLimiter limiter(clock);
  std::vector<long long> delays;
  for (int i = 0; i < 5; ++i) delays.push_back(std::chrono::duration_cast<milliseconds>(limiter.When("k")).count());
  EXPECT_THAT(delays, ::testing::ElementsAre(5, 10, 20, 40, 80));
  EXPECT_EQ(limiter.NumRequeues("k"), 5);
  for (int i = 0; i < 30; ++i) limiter.When("k");
  EXPECT_EQ(limiter.When("k"), std::chrono::seconds(1000));  // capped
  limiter.Forget("k");
  EXPECT_EQ(limiter.NumRequeues("k"), 0);
  EXPECT_EQ(limiter.When("k"), milliseconds(5));
}

TEST(WorkQueue, OverallBucketLimitsManyKeys) {
  FakeClock clock;
  RateLimiter limiter(clock, {.overall_qps = 10, .overall_burst = 2});
  EXPECT_EQ(limiter.When("a"), milliseconds(5));
  EXPECT_EQ(limiter.When("b"), milliseconds(5));
  EXPECT_EQ(limiter.When("c"), milliseconds(100));  // the bucket is empty: 1/10 s
}

TEST(WorkQueue, ShutDownDrainsThenReturnsNothing) {
  FakeClock clock;
  WorkQueue q(clock, "t");
  q.Add("a");
  q.ShutDown();
  q.Add("b");  // ignored
  EXPECT_EQ(*q.Get(), "a");
  EXPECT_FALSE(q.Get());
}

TEST(WorkQueue, GetReturnsWhenStopped) {
  FakeClock clock;
  WorkQueue q(clock, "t");
  std::stop_source stop;
  std::jthread t([&] { EXPECT_FALSE(q.Get(stop.get_token())); });
  stop.request_stop();
}

TEST(WorkQueue, DelayDriverMovesDueKeys) {
  RealClock clock;
  WorkQueue q(clock, "t");
  q.StartDelayDriver();
  q.AddAfter("a", milliseconds(20));
  auto key = q.Get();
  ASSERT_TRUE(key);
  EXPECT_EQ(*key, "a");
}

// Many workers and producers: no key is ever processed by two workers at once, and every key
// added is processed at least once after its last add.
TEST(WorkQueue, StressNoConcurrentProcessingOfAKey) {
  RealClock clock;
  Registry registry;
  WorkQueue q(clock, "stress", &registry);
  constexpr int kKeys = 20;
  std::array<std::atomic<int>, kKeys> in_flight{};
  std::array<std::atomic<int>, kKeys> processed{};
  std::atomic<bool> overlap{false};
  std::vector<std::jthread> workers;
  for (int w = 0; w < 4; ++w) {
    workers.emplace_back([&] {
      while (auto key = q.Get()) {
        int k = std::stoi(*key);
        if (in_flight[k].fetch_add(1) != 0) overlap = true;
        std::this_thread::yield();
        processed[k]++;
        in_flight[k].fetch_sub(1);
        q.Done(*key);
      }
    });
  }
  {
    std::vector<std::jthread> producers;
    for (int p = 0; p < 3; ++p)
      producers.emplace_back([&] {
        for (int i = 0; i < 3000; ++i) q.Add(std::to_string(i % kKeys));
      });
  }
  // Let the queue empty out (every key has been taken at least once), then stop: the workers
  // finish the key in hand before Get returns nothing.
  while (q.Len() > 0) std::this_thread::yield();
  q.ShutDown();
  workers.clear();
  EXPECT_FALSE(overlap.load());
  for (int k = 0; k < kKeys; ++k) EXPECT_GE(processed[k].load(), 1) << k;
  EXPECT_THAT(registry.Expose(), ::testing::HasSubstr("workqueue_adds_total{name=\"stress\"}"));
}

}  // namespace
}  // namespace tfjob::controller
