// Client-side hot paths of the operator, measured on synthetic but realistic pods (about 4 KiB
// of JSON each, with managedFields, as the API server sends them):
//   1. watch-stream decode: bytes -> events -> trimmed Pod records (MB/s, objects/s);
//   2. list-page decode: one 500-pod List -> trimmed records;
//   3. memory per cached pod: RSS growth of a Store filled with 10,000 trimmed pods;
//   4. work-queue throughput with 4 workers.
// Prints figures; asserts nothing.
#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/pod_json.h"
#include "common/clock.h"
#include "controller/store.h"
#include "controller/work_queue.h"
#include "kube/watch_decoder.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

json RealisticPod(int i) {
  std::string name = "bench-job-" + std::to_string(i / 100) + "-worker-" + std::to_string(i % 100);
  json managed = json::array();
  for (const char* manager : {"tfjob-controller", "kube-scheduler", "kubelet"})
    managed.push_back(
        {{"manager", manager},
         {"operation", "Update"},
         {"apiVersion", "v1"},
         {"time", "2026-11-30T12:00:00Z"},
         {"fieldsType", "FieldsV1"},
         {"fieldsV1",
          {{"f:metadata",
            {{"f:labels", {{".", json::object()}, {"f:training.kubeflow.org/job-name", json::object()}}}}},
           {"f:spec",
            {{"f:containers",
              {{"k:{\"name\":\"tensorflow\"}",
                {{".", json::object()}, {"f:image", json::object()}, {"f:env", json::object()}}}}}}},
           {"f:status",
            {{"f:conditions", json::object()},
             {"f:containerStatuses", json::object()},
             {"f:phase", json::object()}}}}}});
  std::string tf_config(600, 'x');
  return json{
      {"kind", "Pod"},
      {"apiVersion", "v1"},
      {"metadata",
       {{"name", name},
        {"namespace", "team-a"},
        {"uid", "5f3c2a10-1b2c-4d5e-8f90-" + std::to_string(100000000000 + i)},
        {"resourceVersion", std::to_string(1000 + i)},
        {"creationTimestamp", "2026-11-30T12:00:00Z"},
        {"labels",
         {{"training.kubeflow.org/job-name", "bench-job-" + std::to_string(i / 100)},
          {"training.kubeflow.org/operator-name", "tfjob-controller"},
          {"training.kubeflow.org/replica-type", "worker"},
          {"training.kubeflow.org/replica-index", std::to_string(i % 100)},
          {"team", "vision"}}},
        {"annotations", {{"sidecar.istio.io/inject", "false"}}},
        {"ownerReferences", json::array({{{"apiVersion", "kubeflow.org/v1"},
                                          {"kind", "TFJob"},
                                          {"name", "bench-job"},
                                          {"uid", "0c0ffee0-0000-4000-8000-000000000000"},
                                          {"controller", true},
                                          {"blockOwnerDeletion", true}}})},
        {"managedFields", managed}}},
      {"spec",
       {{"containers",
         json::array({{{"name", "tensorflow"},
                       {"image", "tensorflow/tensorflow:2.16.1"},
                       {"command", json::array({"python", "/opt/train.py"})},
                       {"env", json::array({{{"name", "TF_CONFIG"}, {"value", tf_config}}})},
                       {"ports", json::array({{{"name", "tfjob-port"}, {"containerPort", 2222}, {"protocol", "TCP"}}})},
                       {"resources", {{"requests", {{"cpu", "2"}, {"memory", "4Gi"}}}}},
                       {"volumeMounts", json::array({{{"name", "kube-api-access"},
                                                      {"mountPath", "/var/run/secrets/kubernetes.io/serviceaccount"},
                                                      {"readOnly", true}}})}}})},
        {"restartPolicy", "OnFailure"},
        {"nodeName", "kwok-node-3"},
        {"schedulerName", "default-scheduler"},
        {"tolerations", json::array({{{"key", "node.kubernetes.io/not-ready"},
                                      {"operator", "Exists"},
                                      {"effect", "NoExecute"},
                                      {"tolerationSeconds", 300}}})}}},
      {"status",
       {{"phase", "Running"},
        {"podIP", "10.244.0.7"},
        {"hostIP", "10.243.0.1"},
        {"startTime", "2026-11-30T12:00:01Z"},
        {"conditions",
         json::array({{{"type", "Ready"}, {"status", "True"}, {"lastTransitionTime", "2026-11-30T12:00:02Z"}},
                      {{"type", "PodScheduled"}, {"status", "True"}, {"lastTransitionTime", "2026-11-30T12:00:00Z"}}})},
        {"containerStatuses", json::array({{{"name", "tensorflow"},
                                            {"ready", true},
                                            {"restartCount", 0},
                                            {"image", "tensorflow/tensorflow:2.16.1"},
                                            {"state", {{"running", {{"startedAt", "2026-11-30T12:00:02Z"}}}}}}})}}}};
}

long RssBytes() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int main() {
  constexpr int kPods = 10000;
  // 1. Watch stream.
  std::string stream;
  for (int i = 0; i < kPods; ++i) stream += json{{"type", "MODIFIED"}, {"object", RealisticPod(i)}}.dump() + "\n";
  const double mb = static_cast<double>(stream.size()) / 1e6;
  auto t0 = Clock::now();
  size_t decoded = 0;
  {
    tfjob::kube::WatchDecoder decoder;
    for (size_t off = 0; off < stream.size(); off += 16384) {  // curl-sized chunks
      for (auto& e : decoder.Feed(std::string_view(stream).substr(off, 16384)))
        if (tfjob::api::DecodePod(e.object).ok()) ++decoded;
    }
  }
  double watch_s = Seconds(t0);
  // 2. List page.
  json list = {{"kind", "PodList"}, {"items", json::array()}};
  for (int i = 0; i < 500; ++i) list["items"].push_back(RealisticPod(i));
  std::string page = list.dump();
  t0 = Clock::now();
  int page_rounds = 20;
  for (int r = 0; r < page_rounds; ++r) {
    auto j = json::parse(page);
    for (const auto& item : j["items"]) (void)tfjob::api::DecodePod(item);
  }
  double page_s = Seconds(t0);
  // 3. Memory per cached pod.
  std::vector<std::string> lines;
  for (int i = 0; i < kPods; ++i) lines.push_back(RealisticPod(i).dump());
  malloc_trim(0);
  long rss0 = RssBytes();
  tfjob::controller::Store<tfjob::api::Pod> store;
  store.AddIndex("job",
                 [](const tfjob::api::Pod& p) { return std::vector<std::string>{p.meta.ns + "/" + p.meta.job_name}; });
  for (const auto& l : lines) {
    auto pod = tfjob::api::DecodePod(json::parse(l));
    std::string key = pod->meta.ns + "/" + pod->meta.name;
    store.Upsert(key, std::make_shared<const tfjob::api::Pod>(std::move(pod).value()));
  }
  malloc_trim(0);
  long rss1 = RssBytes();
  // 4. Work queue.
  tfjob::RealClock clock;
  tfjob::controller::WorkQueue queue(clock, "bench");
  constexpr int kOps = 400000;
  std::atomic<int> done{0};
  t0 = Clock::now();
  {
    std::vector<std::jthread> workers;
    for (int w = 0; w < 4; ++w)
      workers.emplace_back([&] {
        while (auto k = queue.Get()) {
          queue.Done(*k);
          ++done;
        }
      });
    for (int i = 0; i < kOps; ++i) queue.Add(std::to_string(i % 5000));
    while (queue.Len() > 0) std::this_thread::yield();
    queue.ShutDown();
  }
  double queue_s = Seconds(t0);

  std::printf("%-44s %14s\n", "measure", "value");
  std::printf("%-44s %14.1f\n", "watch decode, MB/s (4.3 KiB pods)", mb / watch_s);
  std::printf("%-44s %14.0f\n", "watch decode, pods/s", static_cast<double>(decoded) / watch_s);
  std::printf("%-44s %14.0f\n", "list page decode (500 pods), pods/s", 500.0 * page_rounds / page_s);
  std::printf("%-44s %14.0f\n", "average pod JSON size, bytes", static_cast<double>(stream.size()) / kPods);
  std::printf("%-44s %14ld\n", "cached pods", static_cast<long>(store.size()));
  std::printf("%-44s %14.0f\n", "RSS growth per cached pod, bytes", static_cast<double>(rss1 - rss0) / kPods);
  std::printf("%-44s %14.0f\n", "work queue adds+gets per second (4 workers)", (kOps + done.load()) / queue_s);
  return 0;
}
