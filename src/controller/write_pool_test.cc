#include "controller/write_pool.h"

#include <gtest/gtest.h>

#include <atomic>
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

}  // namespace
}  // namespace tfjob::controller
