#include "controller/write_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

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

// The drain hook of tests: WaitIdle returns once nothing is queued or running, tasks queued by
// running tasks included, so a test need not poll or sleep for the pool's work.
TEST(WritePool, WaitIdleWaitsForQueuedRunningAndChainedTasks) {
  WritePool pool(2);
  pool.WaitIdle();  // idle from the start: returns at once
  std::atomic<int> ran{0};
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  for (int i = 0; i < 4; ++i)
    pool.Submit(
        [&pool, &ran, released, i] {
          released.wait();
          if (i == 0) pool.Submit([&ran] { ++ran; }, "chained");  // queued while this one runs
          ++ran;
        },
        "lane-" + std::to_string(i % 2));
  std::jthread releaser([&release] { release.set_value(); });
  pool.WaitIdle();
  EXPECT_EQ(ran.load(), 5);
}

// Queues tasks that record their lane and number, behind `threads` gates; Release runs them.
struct Recorder {
  explicit Recorder(WritePool& p, int threads) : pool(p) {
    for (int i = 0; i < threads; ++i) {
      auto started = std::make_shared<std::promise<void>>();
      auto f = started->get_future();
      pool.Submit(
          [started, released = released] {  // holds a thread while the test queues
            started->set_value();
            released.wait();
          },
          "gate");
      f.wait();
    }
  }
  void Queue(const std::string& lane, int n) {
    for (int i = 0; i < n; ++i)
      pool.Submit(
          [this, lane, i] {
            std::lock_guard lock(mu);
            order.push_back(lane + "-" + std::to_string(i));
          },
          lane);
  }
  std::vector<std::string> Release() {
    release.set_value();
    pool.Stop();
    return order;
  }
  WritePool& pool;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::mutex mu;
  std::vector<std::string> order;
};

size_t Position(const std::vector<std::string>& order, const std::string& entry) {
  return static_cast<size_t>(std::find(order.begin(), order.end(), entry) - order.begin());
}

// A burst: the oldest lane's work goes first, so the first job is done first (one thread).
TEST(WritePool, OldestLaneFirst) {
  WritePool pool(1);
  Recorder r(pool, 1);
  r.Queue("a", 3);
  r.Queue("b", 3);
  r.Queue("a", 1);  // a's next batch, queued after b's: still before it
  r.Queue("c", 2);
  EXPECT_EQ(pool.Queued(), 9u);
  EXPECT_EQ(r.Release(), (std::vector<std::string>{"a-0", "a-1", "a-2", "a-0", "b-0", "b-1", "b-2", "c-0", "c-1"}));
}

// A big job's 200 creates are queued before a small job's 5, on 2 threads. The big job's
// creates block until the small job is done (or 5 s: a bound, not a measurement): the big job
// may hold only one of the threads while the small job has work, so the other one runs all of
// the small job's. Oldest-first without the share, or one FIFO queue, gives both threads to the
// big job and the small job waits out the bound, after big-0 and big-1.
TEST(WritePool, AYoungLaneGetsAThreadBesideABigOldOne) {
  WritePool pool(2);
  Recorder r(pool, 2);
  std::promise<void> small_done;
  std::shared_future<void> small = small_done.get_future().share();
  for (int i = 0; i < 200; ++i)
    pool.Submit(
        [&r, small, i] {
          small.wait_for(std::chrono::seconds(5));
          std::lock_guard lock(r.mu);
          r.order.push_back("big-" + std::to_string(i));
        },
        "big");
  r.Queue("small", 4);
  pool.Submit(
      [&r, &small_done] {
        {
          std::lock_guard lock(r.mu);
          r.order.push_back("small-4");
        }
        small_done.set_value();
      },
      "small");
  std::vector<std::string> order = r.Release();
  ASSERT_EQ(order.size(), 205u);
  EXPECT_EQ(Position(order, "small-4"), 4u);
  EXPECT_EQ(pool.Queued(), 0u);
}

}  // namespace
}  // namespace tfjob::controller
