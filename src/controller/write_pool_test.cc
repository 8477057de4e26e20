#include "controller/write_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <mutex>
#include <string>
#include <vector>
#include <stdexcept>
#include <thread>

namespace tfjob::controller {
namespace {

// Counts tasks running at once; each holds its slot until `release` (or a short while).
struct Gauge {
  std::atomic<int> now{0}, peak{0}, ran{0};
  void Run() {
    int n = ++now;
    for (int p = peak.load(); n > p && !peak.compare_exchange_weak(p, n);) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    --now;
    ++ran;
  }
};

TEST(WritePool, RunAllWaitsForEveryTask) {
  WritePool pool(3);
  Gauge g;
  std::vector<std::function<void()>> tasks(10, [&g] { g.Run(); });
  pool.RunAll(std::move(tasks));
  EXPECT_EQ(g.ran.load(), 10);
  EXPECT_EQ(g.now.load(), 0);
}

// Four callers (reconcile workers) with batches of 8 share 3 threads: never more than 3 at once.
TEST(WritePool, SharedByCallersNeverRunsMoreThanItsSize) {
  WritePool pool(3);
  Gauge g;
  {
    std::vector<std::jthread> callers;
    for (int c = 0; c < 4; ++c)
      callers.emplace_back([&] { pool.RunAll(std::vector<std::function<void()>>(8, [&g] { g.Run(); })); });
  }
  EXPECT_EQ(g.ran.load(), 32);
  EXPECT_LE(g.peak.load(), 3);
  EXPECT_GE(g.peak.load(), 2) << "the batches did not run concurrently at all";
}

TEST(WritePool, ExceptionIsRethrownAfterTheBatch) {
  WritePool pool(2);
  std::atomic<int> ran{0};
  std::vector<std::function<void()>> tasks;
  tasks.push_back([] { throw std::runtime_error("boom"); });
  for (int i = 0; i < 5; ++i) tasks.push_back([&ran] { ++ran; });
  EXPECT_THROW(pool.RunAll(std::move(tasks)), std::runtime_error);
  EXPECT_EQ(ran.load(), 5);
  pool.RunAll({[&ran] { ++ran; }});  // the pool still works
  EXPECT_EQ(ran.load(), 6);
}

TEST(WritePool, StopRunsWhatIsQueuedThenRunsOnTheCaller) {
  WritePool pool(1);
  std::atomic<int> ran{0};
  for (int i = 0; i < 5; ++i) pool.Submit([&ran] { ++ran; });
  pool.Stop();
  EXPECT_EQ(ran.load(), 5);
  std::thread::id where;
  pool.RunAll({[&where] { where = std::this_thread::get_id(); }});
  EXPECT_EQ(where, std::this_thread::get_id());
  pool.Stop();  // idempotent
}

// A big job's 200 creates are queued before a small job's 5: with one thread, the small job's
// run interleaved with the big job's (one each in turn), not after all 200. Within a lane, FIFO.
TEST(WritePool, LanesTakeTurns) {
  WritePool pool(1);
  std::mutex mu;
  std::vector<std::string> order;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> gate_started;
  pool.Submit([&gate_started, released] {  // holds the only thread while we queue
    gate_started.set_value();
    released.wait();
  }, "gate");
  gate_started.get_future().wait();
  for (int i = 0; i < 200; ++i)
    pool.Submit([&, i] {
      std::lock_guard lock(mu);
      order.push_back("big-" + std::to_string(i));
    }, "ns/big");
  for (int i = 0; i < 5; ++i)
    pool.Submit([&, i] {
      std::lock_guard lock(mu);
      order.push_back("small-" + std::to_string(i));
    }, "ns/small");
  EXPECT_EQ(pool.Queued(), 205u);
  release.set_value();
  pool.Stop();
  ASSERT_EQ(order.size(), 205u);
  std::vector<std::string> first_ten(order.begin(), order.begin() + 10);
  EXPECT_EQ(first_ten, (std::vector<std::string>{"big-0", "small-0", "big-1", "small-1", "big-2", "small-2", "big-3",
                                                 "small-3", "big-4", "small-4"}));
  for (int i = 0; i < 200; ++i) EXPECT_EQ(order[i < 5 ? 2 * i : i + 5], "big-" + std::to_string(i));
  EXPECT_EQ(pool.Queued(), 0u);
}

}  // namespace
}  // namespace tfjob::controller
