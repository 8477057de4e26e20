#include "cli/log_follower.h"

#include <algorithm>

#include "api/field_error.h"
#include "kube/resource_path.h"
#include "local/replica_view.h"

namespace tfjob::cli {

// ---- LogCursor ----

void LogCursor::BeginConnection() {
  partial_.clear();
  in_line_ = false;
  printing_ = false;
  caught_up_ = !last_.has_value();
  resent_at_last_ = 0;
}

void LogCursor::Feed(std::string_view bytes, const Print& print) {
  partial_.append(bytes);
  size_t start = 0, nl;
  while ((nl = partial_.find('\n', start)) != std::string::npos) {
    Piece(std::string_view(partial_).substr(start, nl - start), true, print);
    start = nl + 1;
  }
  partial_.erase(0, start);
  if (partial_.size() > kMaxLogLine) {
    Piece(partial_, false, print);
    partial_.clear();
  }
}

void LogCursor::EndConnection(bool complete, const Print& print) {
  if (complete && !partial_.empty()) Piece(partial_, true, print);
  partial_.clear();
  in_line_ = false;
}

std::optional<api::Time> LogCursor::ResumeTime() const {
  if (!last_) return std::nullopt;
  return api::TruncateToSeconds(*last_);
}

void LogCursor::Piece(std::string_view text, bool ends_line, const Print& print) {
  if (!in_line_) printing_ = Admit(text);
  if (printing_) {
    if (ends_line && !text.empty() && text.back() == '\r') text.remove_suffix(1);
    print(text);
  }
  in_line_ = !ends_line;
}

bool LogCursor::Admit(std::string_view& text) {
  size_t sp = text.find(' ');
  std::optional<api::Time> t;
  if (sp != std::string_view::npos && sp <= 40) t = api::ParseTime(text.substr(0, sp));
  if (!t) return true;  // no timestamp: nothing to compare; printed
  text.remove_prefix(sp + 1);
  if (!caught_up_) {
    // The server sends again from the second of the last printed line: skip up to that line.
    if (*t < *last_) return false;
    if (*t == *last_ && resent_at_last_ < printed_at_last_) {
      ++resent_at_last_;
      return false;
    }
    caught_up_ = true;
  }
  if (last_ && *t == *last_) {
    ++printed_at_last_;
  } else {
    last_ = *t;
    printed_at_last_ = 1;
  }
  return true;
}

// ---- LogFollower ----

// One container of one pod. The status fields are written by Update and read by the thread
// (under mu_); the cursor and `failures` belong to the thread while it runs.
struct LogFollower::Follow {
  std::string pod, container, prefix;
  const char* color = "";
  int restarts = 0;
  bool terminated = false;
  bool gone = false;       // the pod is deleting or no longer listed: no new connection
  int done_restarts = -1;  // instances up to this one were read to their end (or given up)
  bool thread_running = false;
  // When the current connection last sent bytes (steady clock, ns); 0 before its first.
  std::atomic<int64_t> last_bytes_ns{0};
  LogCursor cursor;
  std::jthread thread;
};

namespace {

std::string LogPath(const std::string& ns, const std::string& pod, const std::string& container,
                    const std::string& extra) {
  return kube::ResourcePath(kube::kPods, ns, pod, "log") + "?container=" + kube::UrlEncode(container) + extra;
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool Followable(const ContainerView& c) {
  return c.state == "running" || c.state == "terminated";
}

}  // namespace

LogFollower::LogFollower(kube::RestClient& client, std::string ns, std::string job, LineSink sink,
                         LogFollowOptions options)
    : client_(client), ns_(std::move(ns)), job_(std::move(job)), sink_(std::move(sink)), options_(std::move(options)) {}

LogFollower::~LogFollower() {
  StopAll();
}

// The containers of the pods not deleting, each once, keyed "pod uid/container".
struct LogFollower::Listing {
  std::map<std::string, const ContainerView*> containers;
  std::map<std::string, const PodView*> pod_of;
  std::vector<std::string> order;  // the pods' order (by name), then their containers'
};

// The containers to follow now: those streamed, and those with an instance not yet read.
struct LogFollower::Plan {
  std::vector<std::string> start;  // the streams to start, in the pods' order
  int wanted = 0;                  // containers to follow at once
  int streaming = 0;               // of them, those streamed already
  int pending = 0;                 // of them, those left waiting for a slot (queue_excess)
};

Status LogFollower::Update(const std::vector<PodView>& pods) {
  ReapEnded();
  const Listing listing = ListContainers(pods);
  MutexLock lock(mu_);
  ForgetGone(listing);
  Plan plan = PlanStarts(listing);
  if (Status s = FitSlots(plan); !s.ok()) {
    changed_.notify_all();
    return s;
  }
  SetPending(plan);
  RefreshStatus(listing);
  // After the status is refreshed: a stream waiting out reconnect_delay for its container's
  // state to change (CloseConnection) must see the new state now, not after the delay.
  changed_.notify_all();
  for (const auto& key : plan.start) Start(key, listing);
  started_ += static_cast<int>(plan.start.size());
  progress_ += plan.start.size();
  return OkStatus();
}

// Joins the threads that ended (their instance read to its end, given up, or the pod gone).
void LogFollower::ReapEnded() {
  MutexLock lock(mu_);
  for (auto& [key, f] : follows_)
    if (!f->thread_running && f->thread.joinable()) f->thread.join();
}

LogFollower::Listing LogFollower::ListContainers(const std::vector<PodView>& pods) {
  Listing listing;
  for (const auto& p : pods) {
    if (p.deleting) continue;
    for (const auto& c : p.containers) {
      std::string key = p.uid + "/" + c.name;
      if (!listing.containers.emplace(key, &c).second) continue;
      listing.pod_of[key] = &p;
      listing.order.push_back(key);
    }
  }
  return listing;
}

// Forgets the containers of pods gone once their streams ended; the others no longer reconnect.
void LogFollower::ForgetGone(const Listing& listing) {
  for (auto it = follows_.begin(); it != follows_.end();) {
    Follow& f = *it->second;
    if (!listing.containers.contains(it->first)) {
      f.gone = true;
      if (!f.thread_running) {
        it = follows_.erase(it);
        continue;
      }
    }
    ++it;
  }
}

LogFollower::Plan LogFollower::PlanStarts(const Listing& listing) const {
  Plan plan;
  for (const auto& key : listing.order) {
    const ContainerView& c = *listing.containers.at(key);
    auto it = follows_.find(key);
    bool running = it != follows_.end() && it->second->thread_running;
    int done = it == follows_.end() ? -1 : it->second->done_restarts;
    if (running) {
      ++plan.wanted;
      ++plan.streaming;
    } else if (Followable(c) && c.restarts > done) {
      ++plan.wanted;
      plan.start.push_back(key);
    }
  }
  return plan;
}

// More containers than max_requests: refused, or (queue_excess) the ones over the free slots
// left pending.
Status LogFollower::FitSlots(Plan& plan) const {
  if (plan.wanted <= options_.max_requests) return OkStatus();
  if (!options_.queue_excess)
    return InvalidArgumentError("there are " + std::to_string(plan.wanted) +
                                " containers to follow, more than --max-log-requests " +
                                std::to_string(options_.max_requests) + " allows: raise it (--max-log-requests " +
                                std::to_string(plan.wanted) + ") or follow fewer replicas (--replica, --type)");
  size_t room = static_cast<size_t>(std::max(0, options_.max_requests - plan.streaming));
  if (plan.start.size() > room) {
    plan.pending = static_cast<int>(plan.start.size() - room);
    plan.start.resize(room);
  }
  return OkStatus();
}

// Says once (per number pending) that some containers wait for a slot.
void LogFollower::SetPending(const Plan& plan) {
  if (plan.pending > 0 && plan.pending != pending_)
    sink_("tfjob: following the logs of " + std::to_string(plan.wanted - plan.pending) + " of " +
          std::to_string(plan.wanted) + " containers (--max-log-requests " + std::to_string(options_.max_requests) +
          "); the others as those streams end");
  pending_ = plan.pending;
}

// The status the streams' threads read: the listed containers' restarts and state.
void LogFollower::RefreshStatus(const Listing& listing) {
  for (const auto& [key, c] : listing.containers) {
    auto it = follows_.find(key);
    if (it == follows_.end()) continue;
    it->second->restarts = c->restarts;
    it->second->terminated = c->state == "terminated";
  }
}

// Starts the thread of a listed container (its state made on its first stream).
void LogFollower::Start(const std::string& key, const Listing& listing) {
  const ContainerView& c = *listing.containers.at(key);
  auto& slot = follows_[key];
  if (!slot) {
    slot = std::make_unique<Follow>();
    const PodView& p = *listing.pod_of.at(key);
    slot->pod = p.name;
    slot->container = c.name;
    slot->prefix = LogPrefix(job_, p.name, slot->container, slot->container == p.main.name);
    slot->color = options_.color ? local::PrefixColor(p.name) : "";
  }
  Follow& f = *slot;
  f.restarts = c.restarts;
  f.terminated = c.state == "terminated";
  f.thread_running = true;
  f.thread = std::jthread([this, &f](std::stop_token stop) { Run(f, std::move(stop)); });
}

void LogFollower::Run(Follow& f, std::stop_token stop) {
  const LogCursor::Print print = [&](std::string_view text) {
    sink_(local::PrefixedLine(f.prefix, f.color, local::ShownOutputLine(text)));
    ++progress_;
  };
  int failures = 0;
  while (std::optional<Instance> instance = TakeSlot(f, stop)) {
    Status s = Connect(f, print, stop);
    After next = CloseConnection(f, *instance, s, failures, stop);
    if (next == After::kGiveUp) print("tfjob: logs unavailable: " + s.message());
    if (next != After::kReconnect) break;
  }
  MutexLock lock(mu_);
  f.thread_running = false;
  changed_.notify_all();
}

// Waits for a slot among the max_requests log requests (one held by a draining stream frees
// soon) and takes it; nullopt when the container has no instance left to read, or is gone.
std::optional<LogFollower::Instance> LogFollower::TakeSlot(Follow& f, std::stop_token stop) {
  MutexLock lock(mu_);
  if (f.gone || f.restarts <= f.done_restarts) return std::nullopt;
  if (!changed_.wait(mu_, stop, [&]() TFJOB_REQUIRES(mu_) { return open_ < options_.max_requests || f.gone; }) ||
      f.gone)
    return std::nullopt;
  ++open_;
  peak_open_ = std::max(peak_open_, open_);
  return Instance{f.restarts, f.terminated};
}

// One connection to the container's log, resumed after the last printed line; its lines printed.
Status LogFollower::Connect(Follow& f, const LogCursor::Print& print, std::stop_token stop) {
  std::string query = "&follow=true&timestamps=true";
  if (auto since = f.cursor.ResumeTime())
    query += "&sinceTime=" + kube::UrlEncode(api::FormatTime(*since));
  else
    query += options_.first_query;
  f.cursor.BeginConnection();
  f.last_bytes_ns = 0;
  Status s = client_.StreamText(
      LogPath(ns_, f.pod, f.container, query),
      [&](std::string_view bytes) {
        if (!bytes.empty()) f.last_bytes_ns = SteadyNs();
        f.cursor.Feed(bytes, print);
        return !stop.stop_requested();  // a stopped stream ends at its next bytes at the latest
      },
      stop);
  f.cursor.EndConnection(s.ok(), print);
  return s;
}

// Frees the connection's slot and decides what follows it; before a reconnection, waits
// reconnect_delay or until the container's status changes.
LogFollower::After LogFollower::CloseConnection(Follow& f, const Instance& instance, const Status& s, int& failures,
                                                std::stop_token stop) {
  MutexLock lock(mu_);
  --open_;
  ++progress_;
  changed_.notify_all();
  if (s.code() == StatusCode::kCancelled || stop.stop_requested()) return After::kStop;
  if (s.ok()) {
    failures = 0;
    // A log asked for when its container had ended is read to its end; a running one that
    // ended may have ended with its container (the status tells soon) or with the connection.
    if (instance.terminated) {
      f.done_restarts = std::max(f.done_restarts, instance.restarts);
      return After::kReconnect;
    }
  } else if (!IsRetryable(s) || ++failures >= options_.max_failures) {
    f.done_restarts = std::max(f.done_restarts, instance.restarts);  // until a new instance
    return After::kGiveUp;
  }
  changed_.wait_for(mu_, stop, options_.reconnect_delay,
                    [&] { return f.gone || f.restarts != instance.restarts || f.terminated != instance.terminated; });
  return After::kReconnect;
}

bool LogFollower::Idle() const {
  MutexLock lock(mu_);
  if (pending_ > 0) return false;
  for (const auto& [key, f] : follows_)
    if (f->thread_running) return false;
  return true;
}

void LogFollower::WaitIdle(std::chrono::milliseconds limit) {
  MutexLock lock(mu_);
  changed_.wait_for(mu_, limit, [&] {
    for (const auto& [key, f] : follows_)
      if (f->thread_running) return false;
    return true;
  });
}

void LogFollower::YieldToWaiting() {
  std::vector<Follow*> ending;
  {
    MutexLock lock(mu_);
    if (pending_ == 0) return;
    for (auto& [key, f] : follows_)
      if (f->thread_running && !f->terminated) {
        f->done_restarts = std::max(f->done_restarts, f->restarts);  // not started again
        ending.push_back(f.get());
      }
  }
  for (Follow* f : ending) f->thread.request_stop();
  MutexLock lock(mu_);
  changed_.notify_all();
}

std::vector<std::string> LogFollower::Drain(const std::vector<PodView>& pods, const DrainLimits& limits,
                                            std::stop_token stop) {
  using Clock = std::chrono::steady_clock;
  YieldToWaiting();
  const auto start = Clock::now();
  auto progressed_at = start;
  uint64_t seen = progress_;
  for (auto now = start; now < start + limits.limit && now < progressed_at + limits.quiet && !stop.stop_requested();
       now = Clock::now()) {
    WaitIdle(std::chrono::milliseconds(200));
    if (Idle()) break;
    CloseSilent(limits.silence);
    (void)Update(pods);  // starts the waiting ones as slots free
    if (uint64_t p = progress_; p != seen) {
      seen = p;
      progressed_at = Clock::now();
    }
  }
  StopThreads();
  std::vector<std::string> unread = Unread(ListContainers(pods));
  follows_.clear();
  return unread;
}

void LogFollower::CloseSilent(std::chrono::milliseconds silence) {
  const int64_t before = SteadyNs() - std::chrono::duration_cast<std::chrono::nanoseconds>(silence).count();
  std::vector<Follow*> silent;
  {
    MutexLock lock(mu_);
    for (auto& [key, f] : follows_) {
      int64_t last = f->last_bytes_ns;
      if (f->thread_running && last != 0 && last <= before) {
        f->done_restarts = std::max(f->done_restarts, f->restarts);  // read: not started again
        silent.push_back(f.get());
      }
    }
  }
  for (Follow* f : silent) f->thread.request_stop();
  if (silent.empty()) return;
  MutexLock lock(mu_);
  changed_.notify_all();
}

// The ended containers of `listing` whose last instance was not read to its end (never started,
// or stopped while reading); given-up streams count as read (their error was printed).
std::vector<std::string> LogFollower::Unread(const Listing& listing) const {
  std::vector<std::string> unread;
  for (const auto& key : listing.order) {
    const ContainerView& c = *listing.containers.at(key);
    if (c.state != "terminated") continue;
    auto it = follows_.find(key);
    if (it != follows_.end() && it->second->done_restarts >= c.restarts) continue;
    const PodView& p = *listing.pod_of.at(key);
    unread.push_back(c.name == p.main.name ? p.name : p.name + "/" + c.name);
  }
  return unread;
}

void LogFollower::StopThreads() {
  for (auto& [key, f] : follows_) f->thread.request_stop();
  {
    MutexLock lock(mu_);
    changed_.notify_all();
  }
  for (auto& [key, f] : follows_)
    if (f->thread.joinable()) f->thread.join();
}

void LogFollower::StopAll() {
  StopThreads();
  follows_.clear();
}

int LogFollower::StreamsStartedForTesting() const {
  MutexLock lock(mu_);
  return started_;
}

size_t LogFollower::TrackedContainersForTesting() const {
  return follows_.size();
}

int LogFollower::PeakOpenStreamsForTesting() const {
  MutexLock lock(mu_);
  return peak_open_;
}

}  // namespace tfjob::cli
