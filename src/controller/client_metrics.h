#pragma once
// Metrics of the REST client (docs/semantics.md D12): rest_client_requests_total{verb,code} and
// rest_client_request_duration_seconds{verb}, the names client-go's metrics adapter uses.

#include <functional>

#include "controller/metrics.h"
#include "kube/rest_client.h"

namespace tfjob::controller {

// An observer for RestClient::set_observer that records into `registry`. REQUIRES: the registry
// outlives the client.
std::function<void(const kube::RequestRecord&)> RestClientMetrics(Registry& registry);

}  // namespace tfjob::controller
