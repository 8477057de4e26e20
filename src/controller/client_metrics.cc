#include "controller/client_metrics.h"

namespace tfjob::controller {

std::function<void(const kube::RequestRecord&)> RestClientMetrics(Registry& registry) {
  auto& total = registry.AddCounter("rest_client_requests_total", "Number of HTTP requests, by verb and status code",
                                    {"verb", "code"});
  auto& latency =
      registry.AddHistogram("rest_client_request_duration_seconds", "Request latency in seconds, by verb", {"verb"});
  return [&total, &latency](const kube::RequestRecord& r) {
    total.With({r.verb, r.code == 0 ? "<error>" : std::to_string(r.code)}).Inc();
    if (r.verb != "watch") latency.With({r.verb}).Observe(std::chrono::duration<double>(r.latency).count());
  };
}

}  // namespace tfjob::controller
