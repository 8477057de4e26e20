#include "controller/reflector.h"

#include "api/json_fields.h"

#include <condition_variable>
#include <random>

namespace tfjob::controller {

namespace {
// An operator is one client: reconnecting every few seconds during an outage costs the server
// nothing, while a long backoff delays recovery (R13) by as much.
constexpr std::chrono::milliseconds kMaxBackoff{5000};
}  // namespace

using nlohmann::json;

Reflector::Reflector(kube::RestClient& client, ListWatchSpec spec, ReflectorSink& sink, Logger log)
    : client_(client), spec_(std::move(spec)), sink_(sink), log_(log.With({{"resource", spec_.gvr.resource}})) {}

std::string Reflector::last_resource_version() const {
  std::lock_guard lock(mu_);
  return version_;
}

void Reflector::SetVersion(const std::string& rv) {
  std::lock_guard lock(mu_);
  version_ = rv;
}

Status Reflector::ListOnce() {
  kube::ListOptions options{
      .label_selector = spec_.label_selector, .field_selector = spec_.field_selector, .limit = spec_.page_size};
  std::string rv;
  TFJOB_ASSIGN_OR_RETURN(std::vector<json> items, client_.ListAll(spec_.gvr, spec_.ns, options, &rv));
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
  kube::WatchDecoder decoder;
  Status event_error = OkStatus();
  ++watches_;
  Status s = client_.Watch(
      spec_.gvr, spec_.ns, options,
      [&](std::string_view chunk) {
        std::vector<Status> errors;
        for (auto& e : decoder.Feed(chunk, &errors)) {
          if (e.type == kube::WatchEventType::kError) {
            event_error = kube::WatchErrorStatus(e.object);
            return false;
          }
          std::string rv = api::StringField(api::ObjectField(e.object, "metadata"), "resourceVersion");
          if (e.type != kube::WatchEventType::kBookmark) sink_.Apply(e.type, std::move(e.object));
          if (!rv.empty()) SetVersion(rv);
        }
        for (const auto& err : errors) log_.Warning("skipping a watch event", {{"error", err.message()}});
        return true;
      },
      stop);
  if (!event_error.ok()) return event_error;
  return s;
}

void Reflector::Run(std::stop_token stop) {
  std::chrono::milliseconds backoff(800);
  std::mutex m;
  std::condition_variable_any cv;
  auto sleep = [&](std::chrono::milliseconds d) {
    std::unique_lock lock(m);
    cv.wait_for(lock, stop, d, [] { return false; });
  };
  bool need_list = true;
  while (!stop.stop_requested()) {
    if (need_list) {
      Status s = ListOnce();
      if (!s.ok()) {
        log_.Warning("list failed; retrying",
                     {{"error", s.message()}, {"backoff", std::to_string(backoff.count()) + "ms"}});
        sleep(backoff);
        backoff = std::min(backoff * 2, kMaxBackoff);
        continue;
      }
      need_list = false;
      backoff = std::chrono::milliseconds(800);
    }
    Status s = WatchOnce(stop);
    if (stop.stop_requested()) break;
    if (s.ok()) {
      backoff = std::chrono::milliseconds(800);
      continue;  // the server closed the watch: resume from the last version
    }
    if (IsGone(s)) {
      log_.Info("watch version too old; relisting", {{"error", s.message()}});
      need_list = true;
      continue;
    }
    log_.Warning("watch failed; retrying",
                 {{"error", s.message()}, {"backoff", std::to_string(backoff.count()) + "ms"}});
    sleep(backoff);
    backoff = std::min(backoff * 2, kMaxBackoff);
  }
}

}  // namespace tfjob::controller
