#include "operator/operator.h"

#include <malloc.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <optional>

#include "api/exit_codes.h"
#include "controller/client_metrics.h"
#include "controller/event_recorder.h"
#include "kube/curl_transport.h"
#include "kube/kube_config.h"
#include "operator/crd_check.h"
#include "operator/gang_integration.h"
#include "operator/manager.h"
#include "operator/native_gang_api.h"
#include "operator/resources.h"
#include "operator/tfjob_controller.h"
#include "operator/versioned_apis.h"
#include "tfjob/core/pod_group.h"
#include "tfjob/core/render.h"

namespace tfjob::operator_ {
namespace {

// The longest the operator takes to exit after a stop request, whatever is in flight: below the
// Deployment's terminationGracePeriodSeconds (15 s in config/manager). Normally it is much
// shorter: in-flight requests are aborted at once and the lease release has 2 x 2.5 s at most.
constexpr std::chrono::seconds kShutdownLimit{12};
// How long queued events may take to be written at shutdown.
constexpr std::chrono::seconds kEventFlushLimit{2};

// Ends the process kShutdownLimit after `begin` fires unless the thread is stopped first (by
// RunOperator returning): a hung call cannot keep the pod past its grace period.
std::jthread ShutdownWatchdog(std::stop_token begin, Logger log) {
  return std::jthread([begin, log](std::stop_token done) {
    std::mutex m;
    std::condition_variable_any cv;
    std::stop_callback wake(begin, [&] {
      std::lock_guard lock(m);
      cv.notify_all();
    });
    {
      std::unique_lock lock(m);
      if (!cv.wait(lock, done, [&] { return begin.stop_requested(); })) return;
    }
    if (!SleepFor(kShutdownLimit, done)) return;
    log.Error("shutdown did not finish in time; exiting now", {{"limit", FormatDuration(kShutdownLimit)}});
    std::_Exit(api::kExitFailed);
  });
}

// --kueue-mode operator: Kueue's CRDs serve the version of its API this operator speaks (D34).
std::optional<int> CheckKueueApi(kube::RestClient& client, const OperatorOptions& options, std::stop_token stop,
                                 const Logger& log) {
  if (options.kueue_mode != "operator") return std::nullopt;
  return CheckCrdApi(client, KueueVersionedApi(), "workloads", "Kueue's Workload CRD", stop, log);
}

// D29: does the installed TFJob CRD keep replicaStatuses.<type>.restarts? With upstream's CRD
// the API server prunes it, so the counts go to an annotation too. Said in the log and in
// tfjob_crd_status_schema_ok; /readyz stays ready either way. Returns whether the counts go to
// the annotation; nullopt when stopped meanwhile.
std::optional<bool> CountersInAnnotation(kube::RestClient& client, controller::Registry& registry, std::stop_token stop,
                                         const Logger& log) {
  auto& schema_ok = registry
                        .AddGauge("tfjob_crd_status_schema_ok",
                                  "1 when the installed TFJob CRD keeps replicaStatuses.<type>.restarts and "
                                  ".disruptions; 0 when they are kept in an annotation instead")
                        .With({});
  const std::string tfjobs_crd = CrdName(kTfJobs);
  auto crd = client.Get(kube::kCrds, "", tfjobs_crd);
  if (stop.stop_requested()) return std::nullopt;
  CrdStatusSchema schema = crd.ok() ? CheckCrdStatusSchema(*crd) : CrdStatusSchema{{"restarts", "disruptions"}};
  schema_ok.Set(schema.ok() ? 1 : 0);
  std::string pruned;
  for (const auto& f : schema.pruned) pruned += (pruned.empty() ? "" : ",") + f;
  const std::string annotation(core::kCountersAnnotation);
  if (!crd.ok())
    log.Warning("cannot read the TFJob CRD; restart counts are kept in an annotation too",
                {{"crd", tfjobs_crd}, {"error", crd.status().message()}, {"annotation", annotation}});
  else if (!schema.ok())
    log.Warning(
        "the installed TFJob CRD's status schema drops replicaStatuses fields of this operator (upstream's CRD?): "
        "restart counts are kept in an annotation instead; install this operator's CRD (`tfjob crd | kubectl "
        "apply -f -`, docs/migrate.md)",
        {{"crd", tfjobs_crd}, {"pruned", pruned}, {"annotation", annotation}});
  else
    log.Info("the TFJob CRD keeps replicaStatuses.<type>.restarts and .disruptions", {{"crd", tfjobs_crd}});
  return !schema.ok();
}

// The event recorder as a runnable on every replica: it runs from its construction; its stop
// writes what is queued (at most kEventFlushLimit), then aborts its client's requests.
controller::Runnable EventsRunnable(controller::EventRecorder& events, std::stop_source abort_events,
                                    const Logger& log) {
  return controller::Runnable{.name = "events",
                              .start = [] { return OkStatus(); },
                              .stop =
                                  [&events, abort_events, log] {
                                    if (!events.Flush(kEventFlushLimit))
                                      log.Warning("events still queued at shutdown are dropped", {});
                                    std::stop_source abort = abort_events;
                                    abort.request_stop();
                                    events.Stop();
                                  }};
}

}  // namespace

int RunOperator(const OperatorOptions& options, const std::map<std::string, std::string>& env, std::stop_token stop) {
  Logger log = Logger().With({{"component", "operator"}});
  // Large blocks (webhook bodies of up to 8 MiB) straight from and back to the kernel: glibc's
  // adaptive threshold would otherwise keep each freed one in the arena of the thread that used
  // it, and the server's many threads would each keep their own (docs/operator.md, "Endpoints").
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  // Two arenas, not glibc's 8 per core: the write pool's 32 threads render and send pods, and
  // with an arena each the memory they free stays spread over many arenas (with 5,000 managed
  // pods, 69 MiB against 59 MiB with two; bench/README.md). The allocations are short and rare
  // enough that the contention does not show in the benchmarks.
  mallopt(M_ARENA_MAX, 2);
  auto config = kube::ResolveClientConfig(options.kubeconfig, options.context, env);
  if (!config.ok()) {
    log.Error("no usable Kubernetes configuration", {{"error", config.status().message()}});
    return api::kExitUsage;
  }
  log.Info("starting", {{"server", config->server},
                        {"config", config->source},
                        {"namespace", options.ns.empty() ? "(all)" : options.ns},
                        {"workers", std::to_string(options.workers)}});
  RealClock clock;
  kube::CurlTransport transport(*config, clock);
  controller::Registry registry;
  // `abort` ends every in-flight request of the controller at once when the process stops (or
  // the lease is lost); the lease and the events have their own (see below).
  std::stop_source abort;
  std::stop_callback abort_on_stop(stop, [&] { abort.request_stop(); });
  std::jthread watchdog = ShutdownWatchdog(abort.get_token(), log);
  kube::RestClientOptions client_options{.qps = options.kube_api_qps, .burst = options.kube_api_burst};
  client_options.request_timeout = options.kube_api_timeout;
  client_options.abort = abort.get_token();
  kube::RestClient client(transport, clock, client_options);
  client.set_observer(controller::RestClientMetrics(registry));
  client.set_logger(log.With({{"client", "controller"}}));

  OperatorOptions run_options = options;
  if (auto exit_code = CheckGangApi(client, &run_options, stop, log)) return *exit_code;
  if (auto exit_code = CheckKueueApi(client, run_options, stop, log)) return *exit_code;
  auto counters_in_annotation = CountersInAnnotation(client, registry, stop, log);
  if (!counters_in_annotation) return api::kExitOk;
  run_options.counters_in_annotation = *counters_in_annotation;

  // Events have a client of their own (its own token bucket, as controller-runtime's event
  // broadcaster has): sharing --kube-api-qps with them would slow pod and service creation by a
  // quarter at 20 QPS (bench/README.md). Its rate (--event-qps, default 50) is lower, so that
  // the events of a burst of jobs wait in the recorder's queue instead of taking the API server
  // from the creates. The recorder limits each involved object, not the total (docs/operator.md
  // section 5).
  // Its requests are aborted only after the shutdown flush (kEventFlushLimit).
  std::stop_source abort_events;
  kube::RestClientOptions event_options = client_options;
  event_options.abort = abort_events.get_token();
  event_options.qps = options.event_qps;
  event_options.burst = options.event_burst;
  kube::RestClient event_client(transport, clock, event_options);
  event_client.set_observer(controller::RestClientMetrics(registry));
  event_client.set_logger(log.With({{"client", "events"}}));
  controller::EventRecorder events(event_client, clock, log, &registry);
  // The process's one cache: every informer of the controller and its integrations is registered
  // here, and the Manager starts, syncs and stops them together.
  controller::InformerFactory informers(client, log);
  TfJobController controller(client, clock, registry, events, informers, run_options, log);

  // The rest (servers, events, cache, leadership, workers, and the shutdown in reverse) is the
  // Manager's: operator/manager.h documents the order.
  ManagerConfig manager_config;
  manager_config.leader_elect = options.leader_elect.value_or(config->source == "in-cluster");
  manager_config.lease_namespace = !options.leader_election_namespace.empty() ? options.leader_election_namespace
                                   : !config->ns.empty()                      ? config->ns
                                                                              : "default";
  manager_config.client_options = client_options;
  manager_config.abort = abort;
  Manager manager(options, std::move(manager_config), transport, clock, registry, log);
  manager.Add(EventsRunnable(events, abort_events, log));
  manager.Add(informers.AsRunnable());
  manager.Add(controller.AsRunnable());
  return manager.Run(stop);
}

}  // namespace tfjob::operator_
