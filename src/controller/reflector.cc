#include "controller/reflector.h"

#include "api/json_fields.h"

#include <optional>
#include <random>

namespace tfjob::controller {

namespace {
// An operator is one client: reconnecting every few seconds during an outage costs the server
// nothing, while a long backoff delays recovery (R13) by as much.
constexpr std::chrono::milliseconds kInitialBackoff{800};
constexpr std::chrono::milliseconds kMaxBackoff{5000};
}  // namespace

using nlohmann::json;

Reflector::Reflector(kube::RestClient& client, ListWatchSpec spec, ReflectorSink& sink, Logger log)
    : client_(client), spec_(std::move(spec)), sink_(sink), log_(log.With({{"resource", spec_.gvr.resource}})) {}

std::string Reflector::last_resource_version() const {
  MutexLock lock(mu_);
  return version_;
}

void Reflector::SetVersion(const std::string& rv) {
  MutexLock lock(mu_);
  version_ = rv;
}

Status Reflector::ListOnce() {
  kube::ListOptions options{
      .label_selector = spec_.label_selector, .field_selector = spec_.field_selector, .limit = spec_.page_size};
  std::string rv;
  listed_ = Resource();
  const kube::ObjectToJson* protobuf = spec_.protobuf.empty() ? nullptr : &spec_.protobuf.to_json;
  TFJOB_ASSIGN_OR_RETURN(std::vector<json> items, client_.ListAll(listed_, spec_.ns, options, &rv, protobuf));
  ++lists_;
  sink_.Replace(std::move(items));
  SetVersion(rv);
  synced_ = true;
  return OkStatus();
}

Status Reflector::WatchOnce(std::stop_token stop) {
  static thread_local std::mt19937 rng{std::random_device{}()};
  // Like client-go: the server ends each watch after 5-10 minutes, spreading reconnects.
  std::uniform_int_distribution<int> seconds(300, 600);
  kube::ListOptions options{.label_selector = spec_.label_selector,
                            .field_selector = spec_.field_selector,
                            .resource_version = last_resource_version(),
                            .allow_watch_bookmarks = true,
                            .timeout = std::chrono::seconds(seconds(rng))};
  kube::WatchDecoder decoder(kube::kMaxWatchEventBytes, spec_.watch_prune);
  // Asked for in protobuf, the stream is protobuf when it starts with a frame's length (whose
  // first byte is 0 under the 16 MiB cap), JSON when it starts with '{'.
  std::optional<kube::ProtobufWatchDecoder> protobuf;
  bool format_known = spec_.protobuf.empty();
  auto feed = [&](std::string_view chunk, std::vector<Status>* errors) {
    if (!format_known && !chunk.empty()) {
      format_known = true;
      if (chunk.front() == '\0') protobuf.emplace(spec_.protobuf.to_json);
    }
    return protobuf ? protobuf->Feed(chunk, errors) : decoder.Feed(chunk, errors);
  };
  Status event_error = OkStatus();
  int events = 0;
  ++watches_;
  auto started = client_.clock().SteadyNow();
  Status s = client_.Watch(
      listed_, spec_.ns, options,
      [&](std::string_view chunk) {
        std::vector<Status> errors;
        for (auto& e : feed(chunk, &errors)) {
          ++events;
          if (e.type == kube::WatchEventType::kError) {
            event_error = kube::WatchErrorStatus(e.object);
            return false;
          }
          std::string rv = api::StringField(api::ObjectField(e.object, "metadata"), "resourceVersion");
          if (e.type != kube::WatchEventType::kBookmark) sink_.Apply(e.type, std::move(e.object));
          if (!rv.empty()) SetVersion(rv);
        }
        // An undecodable line may have been a change: skipping it would leave the cache wrong
        // until the next relist. End the watch; the next one resumes from the last version.
        if (!errors.empty()) {
          event_error = errors.front();
          return false;
        }
        return true;
      },
      stop, spec_.protobuf.empty() ? "application/json" : kube::kProtobufWatchAccept);
  if (!event_error.ok()) return event_error;
  // A watch the server ends at once without a single event is a broken server, not a normal
  // timeout: back off rather than reconnect in a loop (client-go does the same).
  if (s.ok() && events == 0 && client_.clock().SteadyNow() - started < std::chrono::seconds(1))
    return UnavailableError("the server ended the watch at once, without an event");
  return s;
}

void Reflector::Run(std::stop_token stop) {
  Clock& clock = client_.clock();
  std::chrono::milliseconds backoff = kInitialBackoff;
  // The delay logged is the one slept; `elapsed` is how long the failed call took (a list
  // includes the REST client's own retries), so the log matches the time between its lines.
  auto retry_later = [&](const char* what, const Status& s, Clock::SteadyTime started) {
    sink_.Failed(s);
    if (spec_.on_failure) spec_.on_failure(listed_, s);
    log_.Warning(what, {{"error", s.message()},
                        {"elapsed", FormatDuration(clock.SteadyNow() - started)},
                        {"retry_in", FormatDuration(backoff)}});
    clock.SleepFor(backoff, stop);
    backoff = std::min(backoff * 2, kMaxBackoff);
  };
  bool need_list = true;
  while (!stop.stop_requested()) {
    if (need_list) {
      auto started = clock.SteadyNow();
      Status s = ListOnce();
      if (stop.stop_requested()) break;
      if (!s.ok()) {
        retry_later("list failed; retrying", s, started);
        continue;
      }
      need_list = false;
      backoff = kInitialBackoff;
    }
    if (spec_.gvr_source && Resource() != listed_) {
      log_.Info("the resource's version changed; relisting", {{"from", listed_.version}, {"to", Resource().version}});
      need_list = true;
      continue;
    }
    auto started = clock.SteadyNow();
    Status s = WatchOnce(stop);
    if (stop.stop_requested()) break;
    if (s.ok()) {
      backoff = kInitialBackoff;
      continue;  // the server closed the watch: resume from the last version
    }
    if (IsGone(s)) {
      log_.Info("watch version too old; relisting", {{"error", s.message()}});
      need_list = true;
      continue;
    }
    retry_later("watch failed; retrying", s, started);
  }
}

}  // namespace tfjob::controller
