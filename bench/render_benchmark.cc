// Parse + default + validate + render of a TFJob file: ns per job and per pod.
// Prints figures; asserts nothing (design.md section 6).
#include <benchmark/benchmark.h>

#include <string>

#include "cli/job_file.h"

namespace {

std::string JobYaml(int workers) {
  return "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: bench, namespace: default, uid: u}\n"
         "spec:\n  tfReplicaSpecs:\n    Worker:\n      replicas: " +
         std::to_string(workers) +
         "\n      restartPolicy: OnFailure\n      template:\n        metadata: {labels: {app: bench}}\n"
         "        spec:\n          containers:\n          - name: tensorflow\n            image: "
         "tensorflow/tensorflow:2.16.1\n"
         "            command: [python, /opt/train.py]\n            args: [--epochs, '10']\n"
         "            env: [{name: A, value: b}]\n            resources: {requests: {cpu: '2', memory: 4Gi}}\n";
}

void BM_ParseValidateRender(benchmark::State& state) {
  const int workers = static_cast<int>(state.range(0));
  const std::string yaml = JobYaml(workers);
  for (auto _ : state) {
    auto checked = tfjob::cli::CheckJobs(yaml);
    std::vector<tfjob::core::RenderEvent> events;
    auto list = tfjob::cli::RenderList(std::move(checked).value(), {}, &events);
    benchmark::DoNotOptimize(list);
  }
  state.counters["ns_per_job"] = benchmark::Counter(static_cast<double>(state.iterations()),
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["ns_per_pod"] = benchmark::Counter(static_cast<double>(state.iterations()) * workers,
                                                    benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ParseValidateRender)->Arg(1)->Arg(500)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
