// The limit (issue 7, table 3): creates the objects of a v1 List (pods and services, as
// `tfjob render` prints them, owner references removed) through the same REST client and
// transport the operator uses, but with no operator logic and no client rate limit: N threads
// take the next object and create it. What it reaches is what this API server can take, so the
// operator's creation rate divided by it shows what the operator adds.
//
//   limit_client KUBECONFIG NAMESPACE OBJECTS.json CONCURRENCY
//
// Objects of kind TFJob are created too (the bench submits its jobs this way).
// Prints one JSON line: {"objects", "created", "errors", "seconds", "per_second", "first_error"}.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "kube/curl_transport.h"
#include "kube/kube_config.h"
#include "kube/resource_path.h"
#include "kube/rest_client.h"

namespace {
// The bench also submits the TFJobs themselves with this client (all at once).
const tfjob::kube::GroupVersionResource kTfJobs{"kubeflow.org", "v1", "tfjobs"};
}  // namespace

int main(int argc, char** argv) {
  using nlohmann::json;
  if (argc != 5) {
    std::fprintf(stderr, "usage: limit_client KUBECONFIG NAMESPACE OBJECTS.json CONCURRENCY\n");
    return 2;
  }
  const std::string ns = argv[2];
  const int concurrency = std::max(1, std::atoi(argv[4]));
  std::ifstream in(argv[3]);
  std::stringstream text;
  text << in.rdbuf();
  json list = json::parse(text.str(), nullptr, false);
  if (list.is_discarded() || !list.contains("items") || !list["items"].is_array()) {
    std::fprintf(stderr, "limit_client: %s is not a JSON v1 List\n", argv[3]);
    return 2;
  }
  tfjob::kube::CurlGlobal curl;
  auto config = tfjob::kube::LoadKubeconfigFile(argv[1], "");
  if (!config.ok()) {
    std::fprintf(stderr, "limit_client: %s\n", config.status().ToString().c_str());
    return 2;
  }
  tfjob::RealClock clock;
  tfjob::kube::CurlTransport transport(*config, clock);
  tfjob::kube::RestClient client(transport, clock, {.qps = 1e9, .burst = 1000000000});

  const auto& items = list["items"];
  std::atomic<size_t> next{0};
  std::atomic<int> created{0}, errors{0};
  std::mutex mu;
  std::string first_error;
  auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < concurrency; ++t)
    threads.emplace_back([&] {
      for (size_t i = next++; i < items.size(); i = next++) {
        const json& obj = items[i];
        const std::string kind = obj.value("kind", "");
        const auto& gvr = kind == "Service" ? tfjob::kube::kServices : kind == "TFJob" ? kTfJobs : tfjob::kube::kPods;
        auto r = client.Create(gvr, ns, obj);
        if (r.ok()) {
          ++created;
        } else {
          ++errors;
          std::lock_guard lock(mu);
          if (first_error.empty()) first_error = r.status().ToString();
        }
      }
    });
  for (auto& t : threads) t.join();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << json{{"objects", items.size()}, {"created", created.load()},       {"errors", errors.load()},
                    {"seconds", seconds},      {"per_second", created / seconds}, {"first_error", first_error}}
                   .dump()
            << "\n";
  return errors == 0 ? 0 : 1;
}
