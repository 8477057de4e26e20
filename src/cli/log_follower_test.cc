#include "cli/log_follower.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>

#include "api/time.h"
#include "common/clock.h"
#include "testing/fake_transport.h"

namespace tfjob::cli {
namespace {

using std::chrono::milliseconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A container's log as the kubelet sends it with timestamps=true. Lines 2 and 3 share one
// timestamp, as lines of one write do; 4 and 5 too.
const std::vector<std::string> kLog = {
    "2026-01-01T00:00:01.1Z one",  "2026-01-01T00:00:01.2Z two",  "2026-01-01T00:00:01.2Z three",
    "2026-01-01T00:00:02.5Z four", "2026-01-01T00:00:02.5Z five", "2026-01-01T00:00:03Z six",
};
const std::vector<std::string> kTexts = {"one", "two", "three", "four", "five", "six"};

api::Time TimeOf(const std::string& line) {
  return *api::ParseTime(line.substr(0, line.find(' ')));
}

// What the server sends for `sinceTime` (whole seconds, inclusive), as one body.
std::string BodySince(const std::vector<std::string>& log, std::optional<api::Time> since) {
  std::string body;
  for (const auto& l : log)
    if (!since || TimeOf(l) >= *since) body += l + "\n";
  return body;
}

void FeedInChunks(LogCursor& c, std::string_view bytes, size_t chunk, const LogCursor::Print& print) {
  for (size_t i = 0; i < bytes.size(); i += chunk) c.Feed(bytes.substr(i, chunk), print);
}

// A connection broken after any number of bytes, resumed with the cursor's sinceTime (the
// server sends the whole second again), then once more after the end: every line once.
TEST(LogCursor, ResumedConnectionsPrintEveryLineOnce) {
  const std::string full = BodySince(kLog, std::nullopt);
  for (size_t cut = 0; cut <= full.size(); ++cut) {
    for (size_t chunk : {1, 3, 64}) {
      LogCursor c;
      std::vector<std::string> printed;
      auto print = [&](std::string_view t) { printed.emplace_back(t); };
      c.BeginConnection();
      FeedInChunks(c, std::string_view(full).substr(0, cut), chunk, print);
      c.EndConnection(false, print);  // broken
      c.BeginConnection();
      FeedInChunks(c, BodySince(kLog, c.ResumeTime()), chunk, print);
      c.EndConnection(true, print);
      c.BeginConnection();  // a reconnect that gets nothing new
      FeedInChunks(c, BodySince(kLog, c.ResumeTime()), chunk, print);
      c.EndConnection(true, print);
      ASSERT_EQ(printed, kTexts) << "cut " << cut << " chunk " << chunk;
    }
  }
}

TEST(LogCursor, ResumeTimeIsTheSecondOfTheLastPrintedLine) {
  LogCursor c;
  EXPECT_FALSE(c.ResumeTime());
  c.BeginConnection();
  c.Feed("2026-01-01T00:00:02.5Z four\n2026-01-01T00:00:02.9Z fi", [](std::string_view) {});
  EXPECT_EQ(api::FormatTime(*c.ResumeTime()), "2026-01-01T00:00:02Z");
}

// Within one connection nothing is filtered: lines whose timestamps go back are printed.
TEST(LogCursor, FirstConnectionPrintsEverythingInOrder) {
  LogCursor c;
  std::vector<std::string> printed;
  auto print = [&](std::string_view t) { printed.emplace_back(t); };
  c.BeginConnection();
  c.Feed("2026-01-01T00:00:05Z a\n2026-01-01T00:00:04Z b\r\nno timestamp here\nlast", print);
  c.EndConnection(true, print);
  EXPECT_THAT(printed, ElementsAre("a", "b", "no timestamp here", "last"));
}

// A line longer than kMaxLogLine is printed in pieces (memory stays bounded); when the line is
// sent again after a reconnect, none of its pieces is printed again.
TEST(LogCursor, LongLineInPiecesIsNotRepeated) {
  LogCursor c;
  std::vector<std::string> printed;
  auto print = [&](std::string_view t) { printed.emplace_back(t); };
  std::string long_line = "2026-01-01T00:00:01Z " + std::string(2 * kMaxLogLine, 'x') + "\n";
  std::string next = "2026-01-01T00:00:02Z next\n";
  c.BeginConnection();
  FeedInChunks(c, long_line + next, 4096, print);
  c.EndConnection(false, print);
  size_t pieces = printed.size();
  EXPECT_GE(pieces, 3u);  // two pieces of the long line and "next"
  EXPECT_EQ(printed.back(), "next");
  c.BeginConnection();
  FeedInChunks(c, long_line + next + "2026-01-01T00:00:03Z new\n", 4096, print);
  c.EndConnection(true, print);
  ASSERT_EQ(printed.size(), pieces + 1);
  EXPECT_EQ(printed.back(), "new");
}

// ---- LogFollower against a fake server ----

PodView Pod(const std::string& name, const std::string& state, int restarts = 0) {
  PodView p;
  p.name = name;
  p.uid = "uid-" + name;
  p.phase = "Running";
  ContainerView c;
  c.name = "tensorflow";
  c.state = state;
  c.restarts = restarts;
  p.main = c;
  p.containers = {c};
  return p;
}

std::optional<api::Time> SinceOf(const std::string& path) {
  auto at = path.find("sinceTime=");
  if (at == std::string::npos) return std::nullopt;
  std::string v = path.substr(at + 10, path.find('&', at) - at - 10);
  for (size_t i; (i = v.find("%3A")) != std::string::npos;) v.replace(i, 3, ":");
  return api::ParseTime(v);
}

// The body of a log request as the kubelet sends it: from sinceTime on, with the timestamps
// only when asked for.
std::string Served(const std::string& path, const std::vector<std::string>& log) {
  std::string body = BodySince(log, SinceOf(path));
  if (path.find("timestamps=true") != std::string::npos) return body;
  std::string plain;
  for (size_t start = 0, nl; (nl = body.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string line = body.substr(start, nl - start);
    plain += line.substr(line.find(' ') + 1) + "\n";
  }
  return plain;
}

struct Printed {
  std::mutex mu;
  std::vector<std::string> lines;
  void Add(const std::string& l) {
    std::lock_guard lock(mu);
    lines.push_back(l);
  }
  std::vector<std::string> Get() {
    std::lock_guard lock(mu);
    return lines;
  }
};

// A stream kept open, sending nothing more, until its reader stops it.
Status OpenUntilStopped(const kube::ByteSink& sink) {
  while (sink("")) std::this_thread::sleep_for(milliseconds(5));
  return CancelledError("stopped");
}

struct Fixture {
  kube::FakeTransport transport;
  RealClock clock;
  kube::RestClient client{transport, clock, {.qps = 1e6, .burst = 1000000, .max_retries = 0}};
  Printed printed;

  std::unique_ptr<LogFollower> Follower(int max_requests = kDefaultMaxLogRequests) {
    LogFollowOptions o;
    o.max_requests = max_requests;
    o.reconnect_delay = milliseconds(2);
    return std::make_unique<LogFollower>(
        client, "ns", "j", [this](const std::string& l) { printed.Add(l); }, o);
  }
  // submit --follow's: the containers over `max_requests` wait for a slot.
  std::unique_ptr<LogFollower> Queueing(int max_requests) {
    LogFollowOptions o;
    o.max_requests = max_requests;
    o.queue_excess = true;
    o.reconnect_delay = milliseconds(2);
    return std::make_unique<LogFollower>(
        client, "ns", "j", [this](const std::string& l) { printed.Add(l); }, o);
  }
  int Streams() { return static_cast<int>(transport.requests().size()); }
  void WaitForStreams(int n) {
    for (int i = 0; i < 5000 && Streams() < n; ++i) std::this_thread::sleep_for(milliseconds(2));
  }
};

// The first connection breaks in the middle of a line; the follower reconnects with sinceTime
// and prints the rest; reconnects after the stream ended (the container ran on, then ended)
// print nothing again. Before: the stream was given up after the break ("logs unavailable"),
// and the lines after it were lost.
TEST(LogFollower, ResumesABrokenStreamWithoutRepeatingOrLosingLines) {
  Fixture fx;
  std::mutex mu;
  int connections = 0;
  fx.transport.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) -> Status {
    int n;
    {
      std::lock_guard lock(mu);
      n = ++connections;
    }
    std::string body = Served(r.path, kLog);
    if (n == 1) {  // lines one..three and half of four, then the connection breaks
      sink(std::string_view(body).substr(0, body.find("four") + 2));
      return UnavailableError("GET " + r.path + ": connection reset");
    }
    sink(body);
    return OkStatus();
  });
  auto f = fx.Follower();
  ASSERT_TRUE(f->Update({Pod("j-worker-0", "running")}).ok());
  fx.WaitForStreams(3);
  ASSERT_TRUE(f->Update({Pod("j-worker-0", "terminated")}).ok());
  f->WaitIdle(milliseconds(10000));
  EXPECT_TRUE(f->Idle());
  f->StopAll();
  std::vector<std::string> want;
  for (const auto& t : kTexts) want.push_back("[worker-0] " + t);
  EXPECT_EQ(fx.printed.Get(), want);
  auto requests = fx.transport.requests();
  ASSERT_GE(requests.size(), 3u);
  EXPECT_THAT(requests[0].path, HasSubstr("follow=true&timestamps=true"));
  EXPECT_THAT(requests[0].path, ::testing::Not(HasSubstr("sinceTime")));
  EXPECT_THAT(requests[1].path, HasSubstr("sinceTime=2026-01-01T00"));
}

// A container restarted in place: the new instance is followed from the old one's last line,
// and the old instance's lines (the kubelet serves the last ended one while the container
// waits) are not printed again.
TEST(LogFollower, RestartedContainerContinuesWithoutRepeating) {
  Fixture fx;
  std::mutex mu;
  std::vector<std::string> current(kLog.begin(), kLog.begin() + 3);
  fx.transport.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) -> Status {
    std::lock_guard lock(mu);
    sink(Served(r.path, current));
    return OkStatus();
  });
  auto f = fx.Follower();
  ASSERT_TRUE(f->Update({Pod("j-worker-0", "terminated", 0)}).ok());
  f->WaitIdle(milliseconds(10000));
  ASSERT_TRUE(f->Idle());
  {
    std::lock_guard lock(mu);
    current.assign(kLog.begin() + 3, kLog.end());
  }
  ASSERT_TRUE(f->Update({Pod("j-worker-0", "terminated", 1)}).ok());
  f->WaitIdle(milliseconds(10000));
  ASSERT_TRUE(f->Idle());
  ASSERT_TRUE(f->Update({Pod("j-worker-0", "terminated", 1)}).ok());  // nothing new to read
  f->WaitIdle(milliseconds(10000));
  f->StopAll();
  std::vector<std::string> want;
  for (const auto& t : kTexts) want.push_back("[worker-0] " + t);
  EXPECT_EQ(fx.printed.Get(), want);
  EXPECT_EQ(fx.Streams(), 2);
}

// A running container's stream ended (as KWOK's and a restarted kubelet's do) and waits out
// reconnect_delay; its container ends meanwhile. The status Update brings wakes the stream at
// once, which reads the ended container to its end. Before: Update woke the streams before it
// refreshed their status, so the stream slept the whole delay (here an hour) and held its
// log request slot: `submit --follow`'s queued containers were read late or not at all.
TEST(LogFollower, AStreamWaitingToReconnectSeesItsContainerEndAtOnce) {
  Fixture fx;
  fx.transport.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) {
    sink(Served(r.path, {"2026-01-01T00:00:01Z hello"}));
    return OkStatus();
  });
  LogFollowOptions o;
  o.reconnect_delay = std::chrono::hours(1);
  LogFollower f(
      fx.client, "ns", "j", [&](const std::string& l) { fx.printed.Add(l); }, o);
  ASSERT_TRUE(f.Update({Pod("j-worker-0", "running")}).ok());
  fx.WaitForStreams(1);
  // Let the stream reach its wait (not an assertion on time: a shorter pause only lets the
  // test pass without the fix).
  std::this_thread::sleep_for(milliseconds(300));
  ASSERT_TRUE(f.Update({Pod("j-worker-0", "terminated")}).ok());
  f.WaitIdle(milliseconds(20000));
  EXPECT_TRUE(f.Idle());
  f.StopAll();
  EXPECT_EQ(fx.printed.Get(), std::vector<std::string>{"[worker-0] hello"});
  EXPECT_EQ(fx.Streams(), 2);
  EXPECT_EQ(f.StreamsStartedForTesting(), 1);
}

// More containers to follow than --max-log-requests: refused, naming the flag, and no stream
// is opened (kubectl's behaviour). Before: a thread and a stream per container, unbounded.
TEST(LogFollower, RefusesMoreContainersThanMaxLogRequests) {
  Fixture fx;
  fx.transport.set_stream_handler([&](const kube::HttpRequest&, const kube::ByteSink&) { return OkStatus(); });
  std::vector<PodView> pods;
  for (int i = 0; i < 6; ++i) pods.push_back(Pod("j-worker-" + std::to_string(i), "running"));
  auto f = fx.Follower(5);
  Status s = f->Update(pods);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("6 containers to follow, more than --max-log-requests 5"));
  f->StopAll();
  EXPECT_EQ(fx.Streams(), 0);

  auto g = fx.Follower(6);
  EXPECT_TRUE(g->Update(pods).ok());
  g->StopAll();
}

// submit --follow (queue_excess): the first containers in the pods' order are followed, the
// others when a slot frees; never more than max_requests open.
TEST(LogFollower, QueueExcessFollowsTheFirstThenTheRest) {
  Fixture fx;
  fx.transport.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) {
    sink(Served(r.path, {"2026-01-01T00:00:01Z hello"}));
    return OkStatus();
  });
  LogFollowOptions o;
  o.max_requests = 2;
  o.queue_excess = true;
  LogFollower f(
      fx.client, "ns", "j", [&](const std::string& l) { fx.printed.Add(l); }, o);
  std::vector<PodView> pods = {Pod("j-worker-0", "terminated"), Pod("j-worker-1", "terminated"),
                               Pod("j-worker-2", "terminated")};
  ASSERT_TRUE(f.Update(pods).ok());
  EXPECT_FALSE(f.Idle());  // worker-2 waits
  f.WaitIdle(milliseconds(10000));
  ASSERT_TRUE(f.Update(pods).ok());
  f.WaitIdle(milliseconds(10000));
  EXPECT_TRUE(f.Idle());
  EXPECT_LE(f.PeakOpenStreamsForTesting(), 2);
  f.StopAll();
  auto printed = fx.printed.Get();
  ASSERT_EQ(printed.size(), 4u);
  EXPECT_EQ(printed[0],
            "tfjob: following the logs of 2 of 3 containers (--max-log-requests 2); the others as those streams end");
  EXPECT_THAT(std::vector<std::string>(printed.begin() + 1, printed.begin() + 3),
              ::testing::UnorderedElementsAre("[worker-0] hello", "[worker-1] hello"));
  EXPECT_EQ(printed[3], "[worker-2] hello");
}

// At the job's end a container still waiting for a slot is read: the streams of containers
// still running give way (YieldToWaiting) and are not started again. Before: the chief, whose
// end ends the job, could wait behind PS streams that never end and its lines were never shown
// (the README's quick start, 6 replicas against --max-log-requests 5).
TEST(LogFollower, AtTheEndTheWaitingAreReadInPlaceOfTheRunning) {
  Fixture fx;
  std::atomic<bool> yielded{false};
  fx.transport.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) {
    if (r.path.find("j-ps-0") != std::string::npos) {
      sink(Served(r.path, {"2026-01-01T00:00:01Z serving"}));
      // A live stream: it ends only when its reader stops it (as the real transport does).
      for (int i = 0; i < 5000 && !yielded; ++i) std::this_thread::sleep_for(milliseconds(2));
      return CancelledError("stopped");
    }
    sink(Served(r.path, {"2026-01-01T00:00:02Z trained"}));
    return OkStatus();
  });
  LogFollowOptions o;
  o.max_requests = 1;
  o.queue_excess = true;
  o.reconnect_delay = milliseconds(2);
  LogFollower f(
      fx.client, "ns", "j", [&](const std::string& l) { fx.printed.Add(l); }, o);
  ASSERT_TRUE(f.Update({Pod("j-ps-0", "running")}).ok());
  fx.WaitForStreams(1);
  std::vector<PodView> pods = {Pod("j-ps-0", "running"), Pod("j-worker-0", "terminated")};
  ASSERT_TRUE(f.Update(pods).ok());
  EXPECT_FALSE(f.Idle());  // worker-0 waits behind the PS's stream
  f.YieldToWaiting();
  yielded = true;
  f.WaitIdle(milliseconds(10000));
  ASSERT_TRUE(f.Update(pods).ok());  // worker-0 starts; the PS's stream is not started again
  f.WaitIdle(milliseconds(10000));
  EXPECT_TRUE(f.Idle());
  EXPECT_EQ(fx.Streams(), 2);
  EXPECT_LE(f.PeakOpenStreamsForTesting(), 1);
  f.StopAll();
  EXPECT_THAT(fx.printed.Get(), ::testing::Contains("[worker-0] trained"));
  EXPECT_THAT(fx.printed.Get(), ::testing::Contains("[ps-0] serving"));
}

// submit --follow's end: the waiting containers are read in turn for as long as the streams make
// progress, even when that takes longer than `quiet` in all. Before: a fixed 5 s per round,
// extended only when a stream started; on a busy machine the last container waiting (the
// README's quick start: worker-0 behind 5 others) was cut off and its lines silently lost.
TEST(LogFollower, DrainReadsTheWaitingWhileTheStreamsMakeProgress) {
  Fixture fx;
  constexpr int kLines = 30;  // 50 ms apart: 1.5 s a container, 3 s in all against 1 s quiet
  fx.transport.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) {
    std::vector<std::string> log;
    for (int i = 0; i < kLines; ++i) log.push_back("2026-01-01T00:00:" + std::to_string(10 + i) + "Z line");
    std::string body = Served(r.path, log);
    for (size_t start = 0, nl; (nl = body.find('\n', start)) != std::string::npos; start = nl + 1) {
      if (!sink(std::string_view(body).substr(start, nl + 1 - start))) return CancelledError("stopped");
      std::this_thread::sleep_for(milliseconds(50));
    }
    return OkStatus();
  });
  auto f = fx.Queueing(1);
  std::vector<PodView> pods = {Pod("j-worker-0", "terminated"), Pod("j-worker-1", "terminated")};
  ASSERT_TRUE(f->Update(pods).ok());
  EXPECT_FALSE(f->Idle());  // worker-1 waits
  EXPECT_THAT(f->Drain(pods, {.silence = milliseconds(60000), .quiet = milliseconds(1000)}), IsEmpty());
  auto printed = fx.printed.Get();
  EXPECT_EQ(std::count(printed.begin(), printed.end(), "[worker-0] line"), kLines);
  EXPECT_EQ(std::count(printed.begin(), printed.end(), "[worker-1] line"), kLines);
  EXPECT_EQ(f->TrackedContainersForTesting(), 0u);
}

// A server that keeps a followed log open after its container ended (KWOK's does; a kubelet
// ends it): at the job's end such a stream, silent after its lines, is closed as read, and the
// container waiting for its slot is read. Before: the waiting container (the README's quick
// start: worker-0 behind 5 such streams) was never started and its lines were lost without a
// word (the e2e flake of test_readme_quick_start_ps_worker_example).
TEST(LogFollower, DrainClosesStreamsSilentAfterTheirLines) {
  Fixture fx;
  fx.transport.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) {
    if (r.path.find("j-ps-0") != std::string::npos) {
      if (!sink(Served(r.path, {"2026-01-01T00:00:01Z served"}))) return CancelledError("stopped");
      return OpenUntilStopped(sink);
    }
    sink(Served(r.path, {"2026-01-01T00:00:02Z trained"}));
    return OkStatus();
  });
  auto f = fx.Queueing(1);
  std::vector<PodView> pods = {Pod("j-ps-0", "terminated"), Pod("j-worker-0", "terminated")};
  ASSERT_TRUE(f->Update(pods).ok());
  EXPECT_THAT(f->Drain(pods, {.silence = milliseconds(300), .quiet = milliseconds(20000)}), IsEmpty());
  EXPECT_THAT(fx.printed.Get(),
              ElementsAre(HasSubstr("following the logs of 1 of 2"), "[ps-0] served", "[worker-0] trained"));
}

// A stream that makes no progress is cut after `quiet`, and the ended containers not read to
// their end are returned (the one cut, and the one still waiting behind it) for the caller to
// name: none is dropped silently. A container still running when the job ended is not listed.
TEST(LogFollower, DrainNamesTheEndedContainersItCouldNotRead) {
  Fixture fx;
  fx.transport.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) {
    if (r.path.find("j-ps-0") != std::string::npos) return OpenUntilStopped(sink);  // stalls
    sink(Served(r.path, {"2026-01-01T00:00:01Z done"}));
    return OkStatus();
  });
  auto f = fx.Queueing(1);
  PodView sidecar = Pod("j-worker-0", "terminated");
  sidecar.containers.push_back(sidecar.main);
  sidecar.containers.back().name = "log-shipper";
  std::vector<PodView> pods = {Pod("j-ps-0", "terminated"), sidecar};
  ASSERT_TRUE(f->Update(pods).ok());
  fx.WaitForStreams(1);
  EXPECT_THAT(f->Drain(pods, {.silence = milliseconds(60000), .quiet = milliseconds(1000)}),
              ElementsAre("j-ps-0", "j-worker-0", "j-worker-0/log-shipper"));
  EXPECT_THAT(fx.printed.Get(), ElementsAre(HasSubstr("following the logs of 1 of 3 containers")));
}

// Ctrl-C during the last lines ends the wait at once; what was not read is named.
TEST(LogFollower, DrainEndsOnStop) {
  Fixture fx;
  fx.transport.set_stream_handler(
      [&](const kube::HttpRequest&, const kube::ByteSink& sink) { return OpenUntilStopped(sink); });  // no bytes
  auto f = fx.Follower();
  std::vector<PodView> pods = {Pod("j-worker-0", "terminated")};
  ASSERT_TRUE(f->Update(pods).ok());
  std::stop_source ctrl_c;
  std::jthread press([&] {
    fx.WaitForStreams(1);
    ctrl_c.request_stop();
  });
  // Without the stop, the wait would last `quiet`: an hour.
  EXPECT_THAT(f->Drain(pods, {.quiet = std::chrono::hours(1), .limit = std::chrono::hours(2)}, ctrl_c.get_token()),
              ElementsAre("j-worker-0"));
}

// A finished container (its log read to the end) does not count: the limit is on streams open.
TEST(LogFollower, EndedContainersDoNotCountAgainstTheLimit) {
  Fixture fx;
  fx.transport.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) {
    sink(Served(r.path, {"2026-01-01T00:00:01Z done"}));
    return OkStatus();
  });
  auto f = fx.Follower(2);
  ASSERT_TRUE(f->Update({Pod("j-worker-0", "terminated"), Pod("j-worker-1", "terminated")}).ok());
  f->WaitIdle(milliseconds(10000));
  ASSERT_TRUE(f->Idle());
  std::vector<PodView> pods = {Pod("j-worker-0", "terminated"), Pod("j-worker-1", "terminated"),
                               Pod("j-worker-2", "terminated"), Pod("j-worker-3", "terminated")};
  EXPECT_TRUE(f->Update(pods).ok());
  f->WaitIdle(milliseconds(10000));
  EXPECT_LE(f->PeakOpenStreamsForTesting(), 2);
  f->StopAll();
  EXPECT_EQ(fx.printed.Get().size(), 4u);
}

// State is kept only for the pods listed: the containers of pods gone are forgotten. Before:
// a set of every container instance ever seen, cleared at 100,000 entries (and then every
// running container's log was printed again from its start).
TEST(LogFollower, ForgetsTheContainersOfPodsGone) {
  Fixture fx;
  fx.transport.set_stream_handler([&](const kube::HttpRequest&, const kube::ByteSink&) { return OkStatus(); });
  auto f = fx.Follower();
  ASSERT_TRUE(f->Update({Pod("j-worker-0", "terminated"), Pod("j-worker-1", "terminated")}).ok());
  f->WaitIdle(milliseconds(10000));
  EXPECT_EQ(f->TrackedContainersForTesting(), 2u);
  ASSERT_TRUE(f->Update({Pod("j-worker-1", "terminated")}).ok());
  EXPECT_EQ(f->TrackedContainersForTesting(), 1u);
  ASSERT_TRUE(f->Update({}).ok());
  EXPECT_EQ(f->TrackedContainersForTesting(), 0u);
  f->StopAll();
  EXPECT_EQ(fx.Streams(), 2);
}

// A pod replaced while its log is still streaming: the old stream (draining) keeps its slot,
// so the new pod's stream waits for it and no more than max_requests are ever open at once.
TEST(LogFollower, ADrainingStreamHoldsItsSlot) {
  Fixture fx;
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  fx.transport.set_stream_handler([&](const kube::HttpRequest& r, const kube::ByteSink& sink) {
    if (r.path.find("j-worker-0-old") != std::string::npos) {
      sink(Served(r.path, {"2026-01-01T00:00:01Z old"}));
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return release; });
      return OkStatus();
    }
    sink(Served(r.path, {"2026-01-01T00:00:02Z new"}));
    return OkStatus();
  });
  auto f = fx.Follower(1);
  ASSERT_TRUE(f->Update({Pod("j-worker-0-old", "running")}).ok());
  fx.WaitForStreams(1);
  PodView replaced = Pod("j-worker-0-new", "terminated");
  ASSERT_TRUE(f->Update({replaced}).ok());          // the old pod is gone: one container to follow
  EXPECT_EQ(f->TrackedContainersForTesting(), 2u);  // the old one still draining
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  f->WaitIdle(milliseconds(10000));
  ASSERT_TRUE(f->Idle());
  EXPECT_EQ(f->PeakOpenStreamsForTesting(), 1);
  ASSERT_TRUE(f->Update({replaced}).ok());
  EXPECT_EQ(f->TrackedContainersForTesting(), 1u);
  f->StopAll();
  EXPECT_THAT(fx.printed.Get(), ElementsAre("[worker-0-old] old", "[worker-0-new] new"));
}

// A stream that keeps failing is given up after max_failures attempts, saying why.
TEST(LogFollower, GivesUpAfterRepeatedFailures) {
  Fixture fx;
  fx.transport.set_stream_handler(
      [&](const kube::HttpRequest&, const kube::ByteSink&) { return UnavailableError("connection refused"); });
  auto f = fx.Follower();
  ASSERT_TRUE(f->Update({Pod("j-worker-0", "running")}).ok());
  f->WaitIdle(milliseconds(10000));
  EXPECT_TRUE(f->Idle());
  ASSERT_TRUE(f->Update({Pod("j-worker-0", "running")}).ok());  // not again for the same instance
  f->StopAll();
  EXPECT_EQ(fx.Streams(), 3);
  EXPECT_THAT(fx.printed.Get(), ElementsAre("[worker-0] tfjob: logs unavailable: connection refused"));
}

}  // namespace
}  // namespace tfjob::cli
